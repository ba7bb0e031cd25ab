// Command compare puts finished runs side by side: for every grid point the runs share
// (matched by its values) and every method, each run's mean joint KL with its 95% CI
// and each later run's difference from the first, paired per task where the tasks are
// the same (the same seed: e.g. two versions' regression checks, or a user's model
// evaluated against jemcheck's methods). It writes compare.html and compare.json.
//
//	go run ./pipelines/compare out/regress-v1 out/regress-v2 --out=out/compare
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/stages/render"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/verdict"
)

var (
	out       = flag.String("out", "./compare", "output location (a path or a gocloud.dev URL): compare.html and compare.json")
	overwrite = flag.Bool("overwrite", false, "write into a non-empty --out that holds no jemcheck manifest.json, replacing only compare.html and compare.json")
)

func main() {
	launch.ShortUsage(flag.CommandLine)
	flag.Parse()
	// Flags may follow the runs (compare A B --out=C): parse what comes after each run.
	var runs []string
	for args := flag.Args(); len(args) > 0; args = flag.Args() {
		runs = append(runs, args[0])
		if err := flag.CommandLine.Parse(args[1:]); err != nil {
			os.Exit(2)
		}
	}
	launch.Exit("compare", run(context.Background(), runs, *out, *overwrite, os.Stdout))
}

// owned are compare's output names.
var owned = stages.CompareOutputs

// run reads the runs, compares them and publishes the page into out.
func run(ctx context.Context, runs []string, out string, overwrite bool, w io.Writer) error {
	if len(runs) < 2 {
		return launch.BadInput("give two or more finished runs' output folders to compare (got %d)", len(runs))
	}
	// compare never writes where it reads, checked before anything is read.
	for _, loc := range runs {
		if rel := storage.Overlap(out, loc); rel != "" {
			return launch.BadInput("out: --out %s %s the run %s, which compare reads: compare never writes into the runs it "+
				"compares; choose an --out outside them", out, rel, loc)
		}
	}
	var rs []verdict.Run
	for _, loc := range runs {
		r, err := readRun(ctx, loc)
		if err != nil {
			return launch.BadInput("%v", err)
		}
		rs = append(rs, r)
	}
	c := verdict.Compare(rs)
	page, err := render.Compare(c)
	if err != nil {
		return fmt.Errorf("render compare.html: %w", err)
	}
	js, err := finiteJSON(c)
	if err != nil {
		return fmt.Errorf("encode compare.json: %w", err)
	}
	if err := launch.PublishFiles(ctx, out, "compare", owned.MatchString, overwrite, runs, map[string][]byte{"compare.html": page, "compare.json": append(js, '\n')}); err != nil {
		return err
	}
	shared := 0
	for _, p := range c.Points {
		if !slices.Contains(p.Verdicts, "") {
			shared++
		}
	}
	fmt.Fprintf(w, "compare: %d runs, %d grid point(s), %d in every run\n", len(runs), len(c.Points), shared)
	for _, line := range render.CompareAnswer(c) {
		fmt.Fprintf(w, "answer: %s\n", line)
	}
	fmt.Fprintf(w, "report: %s\n", launch.Location(out, "compare.html"))
	return nil
}

// readRun reads a finished run's summary.json and result rows: only files its
// manifest lists, each checked against the manifest's size and SHA-256 as it is read.
// A folder without a valid manifest is not a finished run (an interrupted run, a copy
// put together by hand); a file that does not match is one changed since jemcheck
// wrote it; neither is compared.
func readRun(ctx context.Context, loc string) (verdict.Run, error) {
	r := verdict.Run{Name: loc}
	if err := storage.CheckNoLinks(loc, "run "+loc); err != nil {
		return r, err
	}
	b, err := storage.OpenExistingBucket(ctx, loc)
	if err != nil {
		return r, fmt.Errorf("run %s: %w", loc, err)
	}
	defer b.Close()
	m, err := storage.ReadManifest(ctx, b)
	if storage.IsNotFound(err) {
		return r, fmt.Errorf("run %s: no %s, so it is not a finished jemcheck run (an interrupted run or a folder put together "+
			"by hand); give the output folder of a finished run", loc, storage.ManifestKey)
	}
	if err != nil {
		return r, fmt.Errorf("run %s: %s is not a valid jemcheck manifest: %w", loc, storage.ManifestKey, err)
	}
	if !m.Has("summary.json") {
		return r, fmt.Errorf("run %s: no summary.json in its %s (a %s run): give the output folder of a finished control, sweep, "+
			"regress or evaluate run", loc, storage.ManifestKey, m.Pipeline)
	}
	data, err := storage.ReadListed(ctx, b, m, "summary.json")
	if err != nil {
		return r, fmt.Errorf("run %s: %w", loc, err)
	}
	if err := json.Unmarshal(data, &r.Summary); err != nil {
		return r, fmt.Errorf("run %s: summary.json: %w", loc, err)
	}
	r.Seed = r.Summary.Seed
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Path, "results/") || path.Ext(f.Path) != ".parquet" {
			continue
		}
		data, err := storage.ReadListed(ctx, b, m, f.Path)
		if err != nil {
			return r, fmt.Errorf("run %s: %w", loc, err)
		}
		rows, err := schemas.DecodeParquet[schemas.ResultRow](data)
		if err != nil {
			return r, fmt.Errorf("run %s: %s: %w", loc, f.Path, err)
		}
		r.Rows = append(r.Rows, rows...)
	}
	if len(r.Rows) == 0 {
		return r, fmt.Errorf("run %s: its %s lists no results/*.parquet", loc, storage.ManifestKey)
	}
	return r, nil
}

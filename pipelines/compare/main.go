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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
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
var owned = regexp.MustCompile(`^(compare\.html|compare\.json)$`)

// run reads the runs, compares them and publishes the page into out.
func run(ctx context.Context, runs []string, out string, overwrite bool, w io.Writer) error {
	if len(runs) < 2 {
		return launch.BadInput("give two or more finished runs' output folders to compare (got %d)", len(runs))
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
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode compare.json: %w", err)
	}
	if err := publish(ctx, out, overwrite, runs, map[string][]byte{"compare.html": page, "compare.json": append(js, '\n')}); err != nil {
		return err
	}
	shared := 0
	for _, p := range c.Points {
		if !slices.Contains(p.Verdicts, "") {
			shared++
		}
	}
	fmt.Fprintf(w, "compare: %d runs, %d grid point(s), %d in every run\n", len(runs), len(c.Points), shared)
	fmt.Fprintf(w, "report: %s\n", launch.Location(out, "compare.html"))
	return nil
}

// readRun reads a finished run's summary.json, config.json's seed and result rows.
func readRun(ctx context.Context, loc string) (verdict.Run, error) {
	b, err := storage.OpenExistingBucket(ctx, loc)
	if err != nil {
		return verdict.Run{}, fmt.Errorf("run %s: %w", loc, err)
	}
	defer b.Close()
	r := verdict.Run{Name: loc}
	data, err := b.ReadAll(ctx, "summary.json")
	if err != nil {
		return r, fmt.Errorf("run %s: no summary.json: give the output folder of a finished run", loc)
	}
	if err := json.Unmarshal(data, &r.Summary); err != nil {
		return r, fmt.Errorf("run %s: summary.json: %w", loc, err)
	}
	r.Seed = r.Summary.Seed
	it := b.List(&blob.ListOptions{Prefix: "results/"})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return r, fmt.Errorf("run %s: %w", loc, err)
		}
		if path.Ext(o.Key) != ".parquet" {
			continue
		}
		rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, o.Key)
		if err != nil {
			return r, fmt.Errorf("run %s: %s: %w", loc, o.Key, err)
		}
		r.Rows = append(r.Rows, rows...)
	}
	if len(r.Rows) == 0 {
		return r, fmt.Errorf("run %s: no results/*.parquet", loc)
	}
	return r, nil
}

// publish writes files into out as a run does: checked ownership, the lock, a staging
// folder committed with a manifest (an earlier compare's files are replaced, nothing
// else is touched).
func publish(ctx context.Context, out string, overwrite bool, inputs []string, files map[string][]byte) error {
	if err := storage.CheckWritable(ctx, out); err != nil {
		return launch.BadInput("out: %v", err)
	}
	layout := storage.Layout{Owned: owned.MatchString}
	if _, err := storage.CheckOwnership(ctx, out, layout, inputs, overwrite); err != nil {
		var oe *storage.OwnershipError
		if errors.As(err, &oe) {
			return launch.BadInput("%v", err)
		}
		return err
	}
	runID := storage.NewRunID(time.Now())
	host, _ := os.Hostname()
	if _, err := storage.AcquireLock(ctx, out, storage.LockInfo{RunID: runID, Pipeline: "compare", Host: host, PID: os.Getpid(), Started: time.Now().UTC()}); err != nil {
		var le *storage.LockedError
		if errors.As(err, &le) {
			return launch.BadInput("%v", err)
		}
		return err
	}
	defer storage.ReleaseLock(context.WithoutCancel(ctx), out, runID)
	staging, err := storage.SubLocation(out, storage.StagingKey(runID))
	if err != nil {
		return err
	}
	st, err := storage.OpenBucket(ctx, staging)
	if err != nil {
		return err
	}
	for key, data := range files {
		if err := st.WriteAll(ctx, key, data, nil); err != nil {
			st.Close()
			return fmt.Errorf("write %s: %w", key, err)
		}
	}
	if err := st.Close(); err != nil {
		return err
	}
	if _, err := storage.Commit(ctx, out, storage.CommitInfo{RunID: runID, Pipeline: "compare", Overwrite: overwrite}); err != nil {
		return fmt.Errorf("publish into %s: %w", out, err)
	}
	return nil
}

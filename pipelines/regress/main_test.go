package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/verdict"
)

func TestMain(m *testing.M) { launchtest.Main(m, "regress", main) }

// small is a fast regression check at the defaults (2×2 uniform tables, N = 1000, 300
// full-batch steps, px weight 1) with 2000 tables: the verdict's CIs need about that
// many tables for the defaults' heavy-tailed optimisation gap (a few tables with
// extreme cell ratios carry most of it) to sit clearly inside the 10% margin.
func small(out string, change func(p *stages.Point)) launch.Config {
	p := stages.Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 300, PxWeight: 1}, Tables: 2000, Methods: []string{"baseline", "jem"}}
	change(&p)
	return launch.Config{
		Pipeline: "regress", Runner: "prism",
		Options: stages.Options{Seed: 3, Out: out, TrainBatch: 4096, ReportTables: 1, Thresholds: stages.DefaultThresholds()},
		Points:  []stages.Point{p},
	}
}

// TestRegressVerdict: the verdict holds where JEM has converged (the defaults, and N = 30
// once it has run long enough) and fails, naming the true cause, for every way of
// breaking it the scientific audit found: too few steps, a small px weight (or none),
// minibatch noise, and a model family that cannot represent the tables.
func TestRegressVerdict(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *stages.Point)
		holds  bool
		cause  string
	}{
		{"defaults hold", func(p *stages.Point) {}, true, ""},
		{"N=30 converged holds", func(p *stages.Point) { p.Samples, p.Steps, p.Tables = 30, 10000, 1000 }, true, ""},
		{"100 steps fail", func(p *stages.Point) { p.Steps, p.Tables = 100, 1000 }, false, verdict.CauseSteps},
		{"px weight 0.1 fails", func(p *stages.Point) { p.PxWeight = 0.1 }, false, verdict.CausePxWeight},
		{"px weight 0 fails", func(p *stages.Point) { p.PxWeight, p.Tables = 0, 500 }, false, verdict.CausePxWeight},
		{"minibatch noise fails", func(p *stages.Point) { p.BatchSize, p.Tables = 32, 500 }, false, verdict.CauseMinibatch},
		{"scalar 4x3 fails on the family", func(p *stages.Point) { p.XValues, p.Classes, p.Tables = 4, 3, 500 }, false, verdict.CauseModelFamily},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			out := "mem://regress-" + strings.ReplaceAll(tt.name, " ", "-")
			var buf bytes.Buffer
			cfg := small(out, tt.change)
			holds, err := run(ctx, cfg, &buf)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, buf.String())
			}
			if holds != tt.holds {
				t.Fatalf("holds = %v, want %v\n%s", holds, tt.holds, buf.String())
			}
			raw, err := launchtest.Bucket(t, out).ReadAll(ctx, "verdict.json")
			if err != nil {
				t.Fatal(err)
			}
			var v schemas.VerdictFile
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			p := cfg.Points[0]
			if v.Holds != tt.holds || v.Cause != tt.cause || !v.Decided || v.Tables != p.Tables || v.PxWeight != p.PxWeight || len(v.Checks) != 5 {
				t.Errorf("verdict.json = %+v, want holds %v, cause %q", v, tt.holds, tt.cause)
			}
			t.Logf("%s", v.Reason)
		})
	}
}

// TestExitStatus runs the command: 0 when the claim holds, 1 when it fails, 2 on bad input.
func TestExitStatus(t *testing.T) {
	testenv.Slow(t, "runs the command three times")
	tests := []struct {
		name    string
		args    string
		code    int
		verdict bool // verdict.json written
	}{
		{"holds", "--tables=2000", 0, true},
		{"px weight 0 fails", "--tables=200 --jem_px_weight=0", 1, true},
		{"undecided", "--tables=50 --lr=1e308", 2, true},
		{"bad input", "--tables=0", 2, false},
		{"needs jem", "--tables=10 --methods=baseline,oracle", 2, false},
		{"unknown runner", "--tables=10 --runner=foo", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+tt.args+" --report_tables=0 --write_samples=false --out="+out)
			msg, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Fatalf("exit status %d, want %d; output:\n%s", code, tt.code, msg)
			}
			if tt.verdict && !bytes.Contains(msg, []byte("verdict: ")) {
				t.Errorf("no verdict line in output:\n%s", msg)
			}
			if _, err := os.Stat(filepath.Join(out, "verdict.json")); (err == nil) != tt.verdict {
				t.Errorf("verdict.json present = %v, want %v", err == nil, tt.verdict)
			}
			if _, err := os.Stat(out); !tt.verdict && !os.IsNotExist(err) {
				t.Errorf("%s was created for bad input", out)
			}
		})
	}
}

// squash drops whitespace and quote escaping: protobuf's text format inserts random
// spaces (per binary, by design) so the printed pipeline is compared without them.
func squash(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), ""), `\"`, `"`)
}

// TestDataflowDryRun submits to the Dataflow runner with --dry_run: the job is printed
// (environment, GPU resource hint, custom worker container) with no credentials, no
// network and nothing written.
func TestDataflowDryRun(t *testing.T) {
	image := "us-docker.pkg.dev/my-proj/jemcheck/worker-gpu:2.77.0"
	hint := "type:nvidia-tesla-t4;count:1;install-nvidia-driver"
	args := strings.Join([]string{"--runner=dataflow", "--dry_run", "--project=my-proj", "--region=us-central1",
		"--staging_location=gs://my-bucket/staging", "--out=gs://my-bucket/regress", "--tables=50",
		"--resource_hints=accelerator=" + hint, "--sdk_container_image=" + image, "--backend=xla:cuda",
		"--worker_machine_type=n1-standard-8", "--max_num_workers=4"}, " ")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+args)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dry run failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Dry-run: not submitting job",
		`beam:resources:accelerator:v1\" value:\"` + hint,
		`"containerImage": "` + image,
		`"machineType": "n1-standard-8"`,
		`"maxNumWorkers": 4`,
		"stages.Train/stages.trainBlockFn",
		"stages.WriteVerdict/stages.writeVerdictFn",
		"stages.Publish/stages.publishFn",
		"dry run, nothing submitted or written",
	} {
		if !strings.Contains(squash(string(out)), squash(want)) {
			t.Errorf("dry run output lacks %q", want)
		}
	}
}

// TestOtherPipelinesRunKept: a run into an --out that holds another pipeline's run (here
// a control run's manifest) is refused, naming that run, and leaves it as it was;
// with --overwrite it replaces it; a rerun of the same pipeline replaces its own run.
func TestOtherPipelinesRunKept(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	other := small(out, func(p *stages.Point) { p.Tables = 20 })
	other.Pipeline = "control" // what a control run's manifest records
	if _, err := run(ctx, other, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(ctx, small(out, func(p *stages.Point) { p.Tables = 20 }), &bytes.Buffer{})
	if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "(control, started") || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("regress into a control run's --out = %v, want bad input naming the control run and --overwrite", err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, "manifest.json")); !bytes.Equal(before, after) {
		t.Errorf("the refused run changed the control run's manifest")
	}
	for _, overwrite := range []bool{true, false} { // --overwrite replaces it; then a regress rerun replaces its own
		cfg := small(out, func(p *stages.Point) { p.Tables = 20 })
		cfg.Overwrite = overwrite
		if _, err := run(ctx, cfg, &bytes.Buffer{}); err != nil {
			t.Fatalf("regress (--overwrite %v): %v", overwrite, err)
		}
	}
}

// TestOtherToolsOutputKept: a regress --out that holds compare's or leaderboard's
// output is refused with a true message naming that tool ("holds a compare output;
// choose another --out", never "the manifest was edited"), exit 2, before anything is
// written; the other tool's files are left as they were.
func TestOtherToolsOutputKept(t *testing.T) {
	sha := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	tests := []struct {
		name      string
		files     map[string]string // the folder's files
		manifest  string            // its manifest's pipeline ("": none)
		overwrite bool
		want      []string
	}{
		{"compare", map[string]string{"compare.html": "<html></html>", "compare.json": "{}"}, "compare", false,
			[]string{"holds a compare output", "choose another --out"}},
		{"compare, --overwrite", map[string]string{"compare.html": "<html></html>", "compare.json": "{}"}, "compare", true,
			[]string{"holds a compare output", "choose another --out"}},
		{"leaderboard report", map[string]string{"leaderboard.md": "# board", "leaderboard.json": "{}"}, "", false,
			[]string{"holds a leaderboard output", "choose another --out", "--overwrite"}},
		{"leaderboard pick", map[string]string{"picks.json": "{}", "tuned-ed.yaml": "name: x"}, "", false,
			[]string{"holds a leaderboard output"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			m := storage.Manifest{Format: storage.ManifestFormat, RunID: "20261127T110000Z-0123abcd", Pipeline: tt.manifest}
			for _, k := range slices.Sorted(maps.Keys(tt.files)) {
				if err := os.WriteFile(filepath.Join(out, k), []byte(tt.files[k]), 0o644); err != nil {
					t.Fatal(err)
				}
				m.Files = append(m.Files, storage.ManifestFile{Path: k, Size: int64(len(tt.files[k])), SHA256: sha([]byte(tt.files[k]))})
			}
			if tt.manifest != "" {
				raw, _ := json.Marshal(m)
				if err := os.WriteFile(filepath.Join(out, storage.ManifestKey), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadDir(out)
			cfg := small(out, func(p *stages.Point) { p.Tables = 20 })
			cfg.Overwrite = tt.overwrite
			_, err := run(context.Background(), cfg, &bytes.Buffer{})
			if !errors.Is(err, launch.ErrBadInput) {
				t.Fatalf("regress into a %s output = %v, want bad input", tt.name, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "edited") {
				t.Errorf("error %q says the manifest was edited", err)
			}
			if after, _ := os.ReadDir(out); len(after) != len(before) {
				t.Errorf("the refused run changed the folder: %d entries, was %d", len(after), len(before))
			}
		})
	}
}

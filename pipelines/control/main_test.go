package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// TestMain runs the pipelines on prism in-process; with launchtest.EnvArgs set, the
// test binary is the control command itself (for exit-status tests).
func TestMain(m *testing.M) { launchtest.Main(m, "control", main) }

// tiny is a small configuration that runs in a few seconds. It trains 1000 steps, so
// the verdict on only 24 tables holds: at 300 steps the few tables with extreme cell
// ratios keep a heavy-tailed optimisation gap that 24 tables cannot bound by 10%.
func tiny(out string) launch.Config {
	return launch.Config{
		Pipeline: "control", Runner: "prism",
		Options: stages.Options{Seed: 7, Out: out, TrainBatch: 16, WriteSamples: true, ReportTables: 2,
			Thresholds: stages.DefaultThresholds()},
		Points: []stages.Point{{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 500, Model: "linear", LR: 0.05, Steps: 1000, PxWeight: 1}, Tables: 24, Methods: []string{"baseline", "jem", "oracle"}}},
	}
}

func TestControlPipelineMem(t *testing.T) {
	ctx := context.Background()
	out := "mem://control-test"
	var buf bytes.Buffer
	if err := run(ctx, tiny(out), &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "verdict: HOLDS") {
		t.Errorf("want the claim to hold on the tiny run, got:\n%s", buf.String())
	}
	launchtest.ExpectFiles(t, out, "config.json", "tables.parquet", stages.SamplePath(0, 0), stages.ResultsPath(0, 0),
		stages.LearnedPath(0, 0), "summary.json", "report.html")
	b := launchtest.Bucket(t, out)
	results := launchtest.Results(t, out)
	if got, want := len(results), 24*3; got != want {
		t.Fatalf("results rows = %d, want %d", got, want)
	}
	launchtest.CheckTemperature(t, results)
	// One learned/ file per block, like samples/: 5 tables a block.
	var learned []schemas.LearnedRow
	for block := range int64(5) {
		rows, err := schemas.ReadParquet[schemas.LearnedRow](ctx, b, stages.LearnedPath(0, block))
		if err != nil {
			t.Fatal(err)
		}
		if want := min(5, 24-5*int(block)) * 3 * 4; len(rows) != want {
			t.Errorf("block %d: %d learned rows, want %d", block, len(rows), want)
		}
		learned = append(learned, rows...)
	}
	if got, want := len(learned), 24*3*4; got != want {
		t.Errorf("learned rows = %d, want %d", got, want)
	}
	// One samples/ file per block: 16 runs per batch over 3 methods is 5 tables a block.
	var samples []schemas.SampleRow
	for block := range int64(5) {
		rows, err := schemas.ReadParquet[schemas.SampleRow](ctx, b, stages.SamplePath(0, block))
		if err != nil {
			t.Fatal(err)
		}
		if want := min(5, 24-5*int(block)) * 500; len(rows) != want {
			t.Errorf("block %d: %d sample rows, want %d", block, len(rows), want)
		}
		samples = append(samples, rows...)
	}
	if got, want := len(samples), 24*500; got != want {
		t.Errorf("sample rows = %d, want %d", got, want)
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].TableID < samples[i-1].TableID {
			t.Fatalf("sample rows are not in table order at row %d", i)
		}
	}
	var sum schemas.Summary
	raw, err := b.ReadAll(ctx, "summary.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	for _, m := range sum.Points[0].Methods {
		t.Logf("%-8s mean joint KL %.5f (%.2f× floor %.5f)", m.Method, m.KLJoint.Mean, m.FloorRatio, sum.Points[0].Floor)
	}
}

// TestControlDeterministic runs twice into two directories and compares every Parquet
// file byte for byte.
func TestControlDeterministic(t *testing.T) {
	testenv.Slow(t, "two pipeline runs")
	ctx := context.Background()
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, d := range dirs {
		cfg := tiny(d)
		cfg.Points[0].Tables = 8
		if err := run(ctx, cfg, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dirs[0], "*.parquet"))
	more, _ := filepath.Glob(filepath.Join(dirs[0], "samples", "*.parquet"))
	for _, dir := range []string{"learned", "results"} {
		blockFiles, _ := filepath.Glob(filepath.Join(dirs[0], dir, "*.parquet"))
		more = append(more, blockFiles...)
	}
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(dirs[0], f)
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(dirs[1], rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between runs with the same seed (err %v)", rel, err)
		}
		if _, err := parquet.OpenFile(bytes.NewReader(a), int64(len(a))); err != nil {
			t.Errorf("%s: not a valid Parquet file: %v", rel, err)
		}
	}
}

func TestBadInput(t *testing.T) {
	tmp := t.TempDir()
	write := writer(t, tmp)
	okCSV := "table_id,x,y,p\n0,0,0,0.1\n0,0,1,0.2\n0,1,0,0.3\n0,1,1,0.4\n"
	tests := []struct {
		name   string
		mutate func(c *launch.Config)
		want   string
	}{
		{"zero tables", func(c *launch.Config) { c.Points[0].Tables = 0 }, "tables must be >= 1"},
		{"negative samples", func(c *launch.Config) { c.Points[0].Samples = -3 }, "samples must be >= 1"},
		{"zero steps", func(c *launch.Config) { c.Points[0].Steps = 0 }, "steps must be >= 1"},
		{"one class", func(c *launch.Config) { c.Points[0].Classes = 1 }, "classes must be >= 2"},
		{"zero lr", func(c *launch.Config) { c.Points[0].LR = 0 }, "lr must be"},
		{"nan lr", func(c *launch.Config) { c.Points[0].LR = nan() }, "lr must be"},
		{"unknown model", func(c *launch.Config) { c.Points[0].Model = "resnet" }, "model"},
		{"bad mlp", func(c *launch.Config) { c.Points[0].Model = "mlp:8,x" }, "model"},
		{"unknown generator", func(c *launch.Config) { c.Points[0].Generator = "gauss" }, "generator"},
		{"bad dirichlet", func(c *launch.Config) { c.Points[0].Generator = "dirichlet:-1" }, "generator"},
		{"unknown encoding", func(c *launch.Config) { c.Points[0].Encoding = "binary" }, "unknown encoding"},
		{"unknown method", func(c *launch.Config) { c.Points[0].Methods = []string{"jem", "vae"} }, "unknown method"},
		{"batch over samples", func(c *launch.Config) { c.Points[0].BatchSize = 10000 }, "batch_size"},
		{"zero train batch", func(c *launch.Config) { c.Options.TrainBatch = 0 }, "train_batch"},
		{"unknown backend", func(c *launch.Config) { c.Options.Backend = "tpu" }, `unknown backend "tpu"`},
		{"bad backend option", func(c *launch.Config) { c.Options.Backend = "go:turbo" }, "turbo"},
		{"unknown scheme", func(c *launch.Config) { c.Options.Out = "ftp://host/x" }, "ftp"},
		{"unwritable out", func(c *launch.Config) { c.Options.Out = filepath.Join(write("afile", "x"), "sub") }, "out"},
		{"tables missing", func(c *launch.Config) { c.Options.TablesFrom = filepath.Join(tmp, "nope.csv") }, "nope.csv"},
		{"tables unnormalised", func(c *launch.Config) {
			c.Options.TablesFrom = write("unnorm.csv", "table_id,x,y,p\n0,0,0,0.2\n0,0,1,0.2\n0,1,0,0.3\n0,1,1,0.4\n")
		}, "sums to"},
		{"tables negative", func(c *launch.Config) {
			c.Options.TablesFrom = write("neg.csv", "table_id,x,y,p\n0,0,0,-0.1\n0,0,1,0.4\n0,1,0,0.3\n0,1,1,0.4\n")
		}, "negative"},
		{"tables NaN", func(c *launch.Config) {
			c.Options.TablesFrom = write("nan.csv", "table_id,x,y,p\n0,0,0,NaN\n0,0,1,0.2\n0,1,0,0.3\n0,1,1,0.4\n")
		}, "NaN"},
		{"tables incomplete", func(c *launch.Config) {
			c.Options.TablesFrom = write("inc.csv", okCSV+"1,0,0,0.5\n1,1,1,0.5\n")
		}, "table 1"},
		{"tables malformed", func(c *launch.Config) { c.Options.TablesFrom = write("bad.csv", "table_id,x,y,p\n0,0,zero,1\n") }, "bad.csv"},
		{"tables corrupted parquet", func(c *launch.Config) {
			c.Options.TablesFrom = write("bad.parquet", "PAR1 this is not parquet PAR1")
		}, "bad.parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(tmp, "out-"+strings.ReplaceAll(tt.name, " ", "-"))
			cfg := tiny(out)
			tt.mutate(&cfg)
			expectBadInput(t, cfg, out, tt.want)
		})
	}
}

// expectBadInput runs cfg and expects a bad-input error mentioning want, with nothing
// created at out (when cfg still writes there).
func expectBadInput(t *testing.T, cfg launch.Config, out, want string) {
	t.Helper()
	err := run(context.Background(), cfg, &bytes.Buffer{})
	if err == nil {
		t.Fatalf("run succeeded, want an error mentioning %q", want)
	}
	if !errors.Is(err, launch.ErrBadInput) {
		t.Errorf("error %v is not marked bad input", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not mention %q", err, want)
	}
	if _, statErr := os.Stat(out); !os.IsNotExist(statErr) && cfg.Options.Out == out {
		t.Errorf("output %s was created for bad input", out)
	}
}

// TestExitStatus runs the command itself with bad flags: status 2, a message naming
// the problem, nothing written.
func TestExitStatus(t *testing.T) {
	tests := []struct{ name, args, want string }{
		{"negative tables", "--tables=-5", "tables must be >= 1"},
		{"nan lr", "--lr=NaN", "lr must be"},
		{"unknown method", "--methods=baseline,magic", "unknown method"},
		{"unknown model", "--model=transformer", "model"},
		// One line naming the nearest flags, the reference implementation's hints, its aliases.
		{"mistyped flag", "--sampels=10", "error: flag provided but not defined: -sampels: did you mean --samples? (run with -help for the flags)\n"},
		{"mistyped alias", "--n_step=5", "-n_step: did you mean --n_steps?"},
		{"reference epochs", "--n_epochs=200", "-n_epochs: jemcheck counts optimiser steps, not epochs: use --steps"},
		{"reference dataset", "--dataset=cifar10", "-dataset: jemcheck's data are its tasks: use --task"},
		{"alias and target", "--task=gmm:2,1 --n_steps=5 --sgld_steps=5", "n_steps: alias of --sgld_steps, which is given too"},
		{"alias checked", "--task=gmm:2,1 --n_steps=-1", "sgld_steps must be in [0, 10000], got -1"},
		// An S3 bucket behind a closed local port: the run stops before writing anything.
		// rate_limiter_capacity=1 leaves the SDK no token for a retry: one refused
		// connection (4 ms) instead of three with their back-off (2–3 s).
		{"unreachable bucket", "--out=s3://bucket/run?region=us-east-1&endpoint=http://127.0.0.1:9&use_path_style=true&rate_limiter_capacity=1",
			"cannot be listed"},
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command(os.Args[0])
			args := tt.args
			if !strings.Contains(args, "--out=") {
				args += " --out=" + out
			}
			cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+args)
			msg, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit = %v, want status 2; output:\n%s", err, msg)
			}
			if !strings.Contains(string(msg), tt.want) {
				t.Errorf("output %q does not mention %q", msg, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("output directory was created")
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

// TestDivergedRunsRecorded: a learning rate that overflows float32 makes every run
// diverge; the pipeline still finishes, records diverged=true and reports no verdict.
func TestDivergedRunsRecorded(t *testing.T) {
	ctx := context.Background()
	out := "mem://control-diverged"
	cfg := tiny(out)
	cfg.Points[0].LR = 1e300
	cfg.Points[0].Tables = 4
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	for _, r := range launchtest.Results(t, out) {
		if !r.Diverged {
			t.Errorf("run %s not recorded as diverged: %+v", r.RunID, r)
		}
	}
	if !strings.Contains(buf.String(), "verdict: undecided") {
		t.Errorf("want an undecided verdict, got:\n%s", buf.String())
	}
}

// writer returns a function that writes a named file into dir and returns its path.
func writer(t *testing.T, dir string) func(name, content string) string {
	return func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// sameFiles checks that every file of run a (relative paths) has the same bytes in run b.
func sameFiles(t *testing.T, a, b string, files []string) {
	t.Helper()
	for _, f := range files {
		rel, _ := filepath.Rel(a, f)
		x, _ := os.ReadFile(f)
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs with the same seed (err %v)", rel, err)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks"
)

// tiny2D is a small 2-D run: 4 gmm:2,1 tasks on a 20×20 grid over [−5, 5]² (the least that resolves sd 0.3), every 2-D method, 80
// steps, curves every 40 steps.
func tiny2D(out string) launch.Config {
	p := stages.Point{Grid: schemas.Grid{Samples: 300, Model: "mlp:8", LR: 0.01, Steps: 80, BatchSize: 32, PxWeight: 1,
		Task: "gmm:2,1", GridCells: 20, Box: 5, TrainGrid: 20, SGLDPreset: "official", SGLDLR: 1, SGLDSteps: 5,
		BufferSize: 200, ReinitFreq: 0.05},
		Tables: 4, Methods: []string{"baseline", "jem", "jem-converged", "oracle", "sgld"}}
	return launch.Config{
		Pipeline: "control", Runner: "prism",
		Options: stages.Options{Seed: 3, Out: out, TrainBatch: 8, WriteSamples: true, ReportTables: 1, EvalEvery: 40,
			OOD: tasks.OODUniform, AttackEps: 0.3, PurifySteps: 5, PurifyLR: 0.01, Thresholds: stages.DefaultThresholds(),
			Select: tasks.SelectHeldout, Holdout: 0.2},
		Points: []stages.Point{p},
	}
}

// TestControl2D: a 2-D run writes the truth, the learned grids, the curves, the
// report's buffers and the samples, with one result row per task and method, the
// promise columns filled, the references' gap and best step, and the sampler's
// comparison in the verdict line (undecided: 4 tasks are below verdict.MinTables).
func TestControl2D(t *testing.T) {
	ctx := context.Background()
	out := "mem://control-2d"
	var buf bytes.Buffer
	if err := run(ctx, tiny2D(out), &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "sgld's joint KL") {
		t.Errorf("verdict line without the sampler comparison:\n%s", buf.String())
	}
	// 8 runs a block over 5 methods: 1 task a block.
	launchtest.ExpectFiles(t, out, "truth.parquet", stages.SamplePath(0, 0), stages.SamplePath(0, 3), stages.ResultsPath(0, 3),
		stages.LearnedGridPath(0, 0), stages.CurvesPath(0, 1), stages.BuffersPath(0, 0), "summary.json", "report.html",
		"figures/task2d_p0_t0.svg", "figures/curves_p0.svg")
	b := launchtest.Bucket(t, out)
	truth, err := schemas.ReadParquet[schemas.TruthRow](ctx, b, "truth.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(truth), 4*400*2; got != want {
		t.Errorf("truth rows = %d, want %d", got, want)
	}
	sum := map[int64]float64{}
	for _, r := range truth {
		sum[r.TaskID] += r.P
	}
	for id, s := range sum {
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("task %d: truth sums to %v", id, s)
		}
	}
	grid, err := schemas.ReadParquet[schemas.LearnedGridRow](ctx, b, stages.LearnedGridPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(grid), 5*400*2; got != want {
		t.Errorf("learned grid rows of block 0 = %d, want %d", got, want)
	}
	curves, err := schemas.ReadParquet[schemas.CurveRow](ctx, b, stages.CurvesPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	conv := 0 // the converged yardstick's checks: every 40 steps to where its rule held, or its cap of 800 steps
	for _, c := range curves {
		if c.Method == "jem-converged" {
			conv++
		}
	}
	if got, want := len(curves)-conv, 4*2; got != want || conv < 2 || conv > 20 { // 1 task × 4 methods × steps 40, 80
		t.Errorf("curve rows of block 0 = %d and %d of jem-converged, want %d and 2 to 20", got, conv, want)
	}
	curveAt := map[string]map[int64]schemas.CurveRow{}
	for b := range int64(4) {
		cs, err := schemas.ReadParquet[schemas.CurveRow](ctx, launchtest.Bucket(t, out), stages.CurvesPath(0, b))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if curveAt[c.RunID] == nil {
				curveAt[c.RunID] = map[int64]schemas.CurveRow{}
			}
			curveAt[c.RunID][c.Step] = c
		}
	}
	bufs, err := schemas.ReadParquet[schemas.BufferRow](ctx, b, stages.BuffersPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(bufs), 200; got != want { // task 0's sgld run only (--report_tables=1)
		t.Errorf("buffer rows = %d, want %d", got, want)
	}
	samples, err := schemas.ReadParquet[schemas.SampleRow2D](ctx, b, stages.SamplePath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(samples), 300; got != want {
		t.Errorf("sample rows of block 0 = %d, want %d", got, want)
	}
	rows := launchtest.Results(t, out)
	if got, want := len(rows), 4*5; got != want {
		t.Fatalf("results rows = %d, want %d", got, want)
	}
	launchtest.CheckTemperature(t, rows)
	for _, r := range rows {
		if r.Task != "gmm:2,1" || r.XValues != 400 || r.Classes != 2 || r.GridCells != 20 {
			t.Errorf("%s: grid columns %q %d×%d grid %d", r.RunID, r.Task, r.XValues, r.Classes, r.GridCells)
		}
		if r.Diverged {
			continue
		}
		for name, v := range map[string]float64{"kl_joint": r.KLJoint, "auroc_px": r.AUROCPx, "auroc_pxgrad": r.AUROCPxGrad,
			"auroc_true_px": r.AUROCTruePx, "ece": r.ECE, "acc_clean": r.AccClean, "acc_attacked": r.AccAttacked,
			"acc_purified": r.AccPurified, "acc_bayes_purified": r.AccBayesPurified, "calibration_error_true": r.CalibrationErrorTrue} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Errorf("%s: %s = %v", r.RunID, name, v)
			}
		}
		if !math.IsNaN(r.Floor) || !math.IsNaN(r.KLReferenceExpected) {
			t.Errorf("%s: a 2-D row has a floor %v or a reference %v", r.RunID, r.Floor, r.KLReferenceExpected)
		}
		sampler := r.Method == "sgld"
		if sampler == math.IsNaN(r.BufferTVTruth) {
			t.Errorf("%s: buffer_tv_truth %v", r.RunID, r.BufferTVTruth)
		}
		if report := r.TableID == 0; report == math.IsNaN(r.SamplesTVNoise) {
			t.Errorf("%s: samples_tv_noise %v (report run %v)", r.RunID, r.SamplesTVNoise, report)
		}
		if r.AUROCTruePx < r.AUROCPx-0.1 {
			t.Errorf("%s: AUROC %v far above the true density's %v", r.RunID, r.AUROCPx, r.AUROCTruePx)
		}
		ref := r.Method == "jem" || r.Method == "jem-converged" || r.Method == "oracle"
		if (!ref && !math.IsNaN(r.RefGap)) || r.RefGap < 0 { // NaN for a reference too: no check in the first third of 80 steps
			t.Errorf("%s: ref_gap %v (reference %v)", r.RunID, r.RefGap, ref)
		}
		// The protocol: every run is scored at its selected step, whose curve point
		// carries the row's KL and held-out NLL; every method but jem-converged trained
		// with the point's batch and rate.
		c, ok := curveAt[r.RunID][r.SelectedStep]
		if r.Method != "jem-converged" && r.SelectedStep != 40 && r.SelectedStep != 80 || r.SelectedStep%40 != 0 || !ok {
			t.Errorf("%s: selected_step %d not on its curve", r.RunID, r.SelectedStep)
		} else if c.KLJoint != r.KLJoint || c.HeldoutNLL != r.HeldoutNLL || c.GradEvals != r.GradEvalsSelected {
			t.Errorf("%s: curve at step %d has kl %v nll %v evals %d, row %v %v %d", r.RunID, r.SelectedStep, c.KLJoint, c.HeldoutNLL, c.GradEvals, r.KLJoint, r.HeldoutNLL, r.GradEvalsSelected)
		}
		if r.HeldoutNLL > r.HeldoutNLLFinal || r.GradEvals <= 0 || r.GradEvalsSelected > r.GradEvals {
			t.Errorf("%s: held-out NLL %v (final %v), grad evals %d of %d", r.RunID, r.HeldoutNLL, r.HeldoutNLLFinal, r.GradEvalsSelected, r.GradEvals)
		}
		if r.Method != "jem-converged" && (r.TrainBatch != 32 || r.TrainLR != 0.01) {
			t.Errorf("%s: trained with batch %d at lr %v, want the point's 32 at 0.01", r.RunID, r.TrainBatch, r.TrainLR)
		}
		if r.Method == "jem-converged" && r.TrainBatch != 240 {
			t.Errorf("%s: jem-converged trained on batches of %d, want all 240 training draws", r.RunID, r.TrainBatch)
		}
	}
	// The truth is each cell's mass: every task's classes carry their weights (a
	// gmm:2,1 task's two components are its two classes, each its own weight).
	for id, m := range classMass(truth) {
		if s := m[0] + m[1]; math.Abs(s-1) > 1e-9 || m[0] <= 0 || m[1] <= 0 {
			t.Errorf("task %d: class masses %v", id, m)
		}
	}
}

// classMass sums the truth rows by task and class.
func classMass(rows []schemas.TruthRow) map[int64][2]float64 {
	out := map[int64][2]float64{}
	for _, r := range rows {
		m := out[r.TaskID]
		m[r.Y] += r.P
		out[r.TaskID] = m
	}
	return out
}

// TestControl2DDeterministic: the same seed gives byte-identical files on a 2-D run.
func TestControl2DDeterministic(t *testing.T) {
	testenv.Slow(t, "two pipeline runs")
	ctx := context.Background()
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, d := range dirs {
		cfg := tiny2D(d)
		cfg.Points[0].Tables = 2
		if err := run(ctx, cfg, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	for _, pat := range []string{"*.parquet", "*/*.parquet", "summary.json"} {
		m, _ := filepath.Glob(filepath.Join(dirs[0], pat))
		files = append(files, m...)
	}
	if len(files) < 7 {
		t.Fatalf("found only %v", files)
	}
	sameFiles(t, dirs[0], dirs[1], files)
}

// TestBadInput2D: bad 2-D settings and tasks files are refused before anything runs.
func TestBadInput2D(t *testing.T) {
	tmp := t.TempDir()
	write := writer(t, tmp)
	const header = "task_id,y,component,weight,mu0,mu1,sd\n"
	tests := []struct {
		name   string
		mutate func(c *launch.Config)
		want   string
	}{
		{"unknown task", func(c *launch.Config) { c.Points[0].Task = "spiral:3" }, "unknown task"},
		{"gmm one class", func(c *launch.Config) { c.Points[0].Task = "gmm:1,2" }, "K must be"},
		{"grid too fine", func(c *launch.Config) { c.Points[0].GridCells = 1000 }, "grid must be"},
		{"box too small", func(c *launch.Config) { c.Points[0].Box = 0.1 }, "box must be"},
		{"batch not a multiple of 16", func(c *launch.Config) { c.Points[0].BatchSize = 10 }, "multiple of 16"},
		{"pcd on a 2-D task", func(c *launch.Config) { c.Points[0].Methods = []string{"jem", "pcd"} }, "trains on tables"},
		{"unknown preset", func(c *launch.Config) { c.Points[0].SGLDPreset = "fast" }, "sgld_preset"},
		{"reinit above 1", func(c *launch.Config) { c.Points[0].ReinitFreq = 2 }, "reinit_freq"},
		{"train grid not a multiple of 4", func(c *launch.Config) { c.Points[0].TrainGrid = 10 }, "TrainGrid"},
		{"unknown ood", func(c *launch.Config) { c.Options.OOD = "far" }, "ood"},
		{"circles too sharp", func(c *launch.Config) { c.Points[0].Task = "circles:0.001" }, "SIGMA must be at least"},
		{"tasks missing", func(c *launch.Config) { c.Options.TasksFrom = filepath.Join(tmp, "nope.csv") }, "nope.csv"},
		{"tasks unnormalised", func(c *launch.Config) {
			c.Options.TasksFrom = write("unnorm.csv", header+"0,0,0,0.3,0,0,1\n0,1,0,0.3,1,1,1\n")
		}, "sum"},
		{"tasks negative sd", func(c *launch.Config) {
			c.Options.TasksFrom = write("sd.csv", header+"0,0,0,0.5,0,0,-1\n0,1,0,0.5,1,1,1\n")
		}, "sd"},
		{"tasks and tables", func(c *launch.Config) {
			c.Options.TasksFrom = write("ok.csv", header+"0,0,0,0.5,0,0,1\n0,1,0,0.5,1,1,1\n")
			c.Options.TablesFrom = write("t.csv", "table_id,x,y,p\n0,0,0,0.25\n0,0,1,0.25\n0,1,0,0.25\n0,1,1,0.25\n")
		}, "give one of them"},
		{"tasks far outside the box", func(c *launch.Config) {
			c.Options.TasksFrom = write("far.csv", header+"0,0,0,0.5,900,900,0.1\n0,1,0,0.5,900,901,0.1\n")
		}, "mass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(tmp, "out-"+strings.ReplaceAll(tt.name, " ", "-"))
			cfg := tiny2D(out)
			tt.mutate(&cfg)
			expectBadInput(t, cfg, out, tt.want)
		})
	}
}

// TestTasksFrom: the user's mixtures run under their own ids, and the command exits 2
// on a bad tasks file with nothing written.
func TestTasksFrom(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	tasks := filepath.Join(tmp, "tasks.csv")
	csv := "task_id,y,component,weight,mu0,mu1,sd\n" +
		"70,0,0,0.25,-1,0,0.5\n70,0,1,0.25,1,1,0.4\n70,1,0,0.5,0,-1,0.5\n" +
		"9,0,0,0.5,-2,-2,0.6\n9,1,0,0.5,2,2,0.6\n"
	if err := os.WriteFile(tasks, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out := "mem://control-tasks-from"
	cfg := tiny2D(out)
	cfg.Options.TasksFrom = tasks
	cfg.Points[0].Task, cfg.Points[0].Methods = "gmm:2,1", []string{"jem", "sgld"}
	if err := run(ctx, cfg, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	rows := launchtest.Results(t, out)
	ids := map[int64]bool{}
	for _, r := range rows {
		ids[r.TableID] = true
		if r.Task != "file" {
			t.Errorf("%s: task %q, want file", r.RunID, r.Task)
		}
	}
	if len(rows) != 4 || !ids[9] || !ids[70] {
		t.Errorf("rows %d with task ids %v, want 4 rows of tasks 9 and 70", len(rows), ids)
	}

	bad := filepath.Join(tmp, "bad.csv")
	if err := os.WriteFile(bad, []byte("task_id,y,component,weight,mu0,mu1,sd\n0,0,0,1,0,0,NaN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "out")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), launchtest.EnvArgs+"=--tasks_from="+bad+" --out="+dir)
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2; output:\n%s", err, msg)
	}
	if !strings.Contains(string(msg), "bad.csv") {
		t.Errorf("output %q does not name the file", msg)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("output directory was created")
	}
}

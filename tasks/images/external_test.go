package images

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"

	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// truthOf is task ordinal o's truth of task at run seed.
func truthOf(t *testing.T, task string, seed uint64, o int64) *mfa.Truth {
	t.Helper()
	s, err := parseTask(task)
	if err != nil {
		t.Fatal(err)
	}
	p := tasks.Point{Grid: schemas.Grid{Task: s.String()}}
	tr, err := mfa.New(tasks.TableSeed(seed, tasks.Table{Point: p, Ordinal: o}), s.mfaSpec())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestWriteTruthParams writes the mfa.Params JSON of images:8,2, run seed 1, task 0 to
// $JEMCHECK_WRITE_TRUTH (the input of scripts/export-onnx-cnn.py truth, which made
// testdata/truth-8x2-seed1-task0.onnx); skipped without it.
func TestWriteTruthParams(t *testing.T) {
	path := os.Getenv("JEMCHECK_WRITE_TRUTH")
	if path == "" {
		t.Skip("set JEMCHECK_WRITE_TRUTH=FILE to write the params")
	}
	data, err := json.Marshal(truthOf(t, "images:8,2", 1, 0).Params())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The ONNX test models (scripts/export-onnx-cnn.py): the truth of images:8,2 task 0 at
// run seed 1 as a model, f(x)[y] = log p(x, y), with input [n, 1, 8, 8] and [n, 64].
const (
	truthONNX     = "testdata/truth-8x2-seed1-task0.onnx"
	truthFlatONNX = "testdata/truth-8x2-seed1-task0-flat.onnx"
)

// TestONNXTruthModel: the truth exported to ONNX, in both input layouts, read as a
// model (onnxModel) gives the truth's log p(x, y) on exact draws and noise images to
// float32 precision, and its LSE and input gradient (GoMLX autodiff through the ONNX
// graph) are log p(x) and ∇x log p(x) (density.eval's analytic gradient).
func TestONNXTruthModel(t *testing.T) {
	tr := truthOf(t, "images:8,2", 1, 0)
	den, err := newDensity(tr)
	if err != nil {
		t.Fatal(err)
	}
	D, K, n := tr.D(), tr.K(), 40
	x, _ := tr.Sample(prob.NewRand(3), n/2)
	rng := prob.NewRand(4)
	for range n / 2 * D {
		x = append(x, rng.Float64())
	}
	s := spec{S: 8, K: 2}
	for _, file := range []string{truthONNX, truthFlatONNX} {
		t.Run(file, func(t *testing.T) {
			m, err := loadONNX(context.Background(), file, s)
			if err != nil {
				t.Fatal(err)
			}
			f, err := m.logits(x, n)
			if err != nil {
				t.Fatal(err)
			}
			lse, grad := make([]float64, n), make([]float64, n*D)
			m.LogDensityBatch(x, n, lse, grad)
			lj, g := make([]float64, K), make([]float64, D)
			var maxF, maxL, maxG float64
			for i := range n {
				lp := den.eval(x[i*D:(i+1)*D], lj, g)
				scale := max(1, math.Abs(lp))
				for y := range K {
					maxF = max(maxF, math.Abs(f[i*K+y]-lj[y])/scale)
				}
				maxL = max(maxL, math.Abs(lse[i]-lp)/scale)
				gs := 0.0
				for j := range D {
					gs = max(gs, math.Abs(g[j]))
				}
				for j := range D {
					maxG = max(maxG, math.Abs(grad[i*D+j]-g[j])/max(1, gs))
				}
			}
			t.Logf("relative error against the truth: logits %.2g, LSE %.2g, gradient %.2g (of its largest entry)", maxF, maxL, maxG)
			if maxF > 1e-5 || maxL > 1e-5 || maxG > 1e-3 {
				t.Errorf("the ONNX truth is not the truth: logits %.2g, LSE %.2g, gradient %.2g", maxF, maxL, maxG)
			}
		})
	}
}

// TestCheckModel: CheckModel accepts the ONNX truth and refuses, with a message naming
// the problem, a missing file, a file that is not ONNX, an input of the wrong size, an
// output that is not K logits and NaN logits.
func TestCheckModel(t *testing.T) {
	notONNX := t.TempDir() + "/model.onnx"
	if err := os.WriteFile(notONNX, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	point := func(task string) tasks.Point {
		p := tasks.Point{Grid: schemas.Grid{Task: task}}
		Kind{}.Resolve(&p)
		return p
	}
	o := tasks.Options{Seed: 1}
	cases := []struct{ name, task, file, want string }{
		{"truth", "images:8,2", truthONNX, ""},
		{"flat truth", "images:8,2", truthFlatONNX, ""},
		{"a small CNN", "images:16,2", "testdata/cnn-16x2.onnx", ""}, // conv, tanh, slice, reshape-mean pooling, dense
		{"missing", "images:8,2", "testdata/missing.onnx", "missing.onnx"},
		{"not ONNX", "images:8,2", notONNX, "is not a readable ONNX model"},
		{"input size", "images:8,2", "testdata/cnn-16x2.onnx", "its input takes 256 values an example, but the task images:8,2 has 8×8 = 64 pixels"},
		{"classes", "images:8,2", "testdata/cnn-8x3.onnx", "it gives 3 outputs an image, but the task images:8,2 has 2 classes"},
		{"NaN", "images:8,2", "testdata/nan-8x2.onnx", "its logit 0 on an exact draw of task 0 is NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Kind{}.CheckModel(context.Background(), o, point(c.task), 0, c.file)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

// TestEvaluateModel: the ONNX truth of task 0 evaluated through the source's
// EvaluateModel (the evaluation a run's Evaluate gives jemcheck's CNNs, cached
// calibration included) scores kl_conditional 0 to float32 precision, the Bayes
// accuracy, the true-density AUROC ceiling, and, where the calibration accepts the
// schedule, a kl_joint_lower within 4 SE (+ the schedule's 0.1-nat gap) of 0. Task 1's
// truth differs: there the same model scores a large kl_conditional. Slow (the AIS of
// the model and the calibration on the truth, per task): JEMCHECK_SLOW=1.
func TestEvaluateModel(t *testing.T) {
	if os.Getenv("JEMCHECK_SLOW") == "" {
		t.Skip("the AIS of two tasks (about a minute): set JEMCHECK_SLOW=1")
	}
	ctx := context.Background()
	p := tasks.Point{Grid: schemas.Grid{Task: "images:8,2", Samples: 1000}, Tables: 2, Methods: []string{methods.ExternalMethod("truth")}}
	Kind{}.Resolve(&p)
	src, err := Kind{}.Open(ctx, tasks.Env{Options: tasks.Options{Seed: 1}}, p)
	if err != nil {
		t.Fatal(err)
	}
	for o := range int64(2) {
		start := time.Now()
		b := tasks.Block{PointID: p.ID, First: o, IDs: []int64{o}}
		tb := tasks.TrainedBlock{Block: b, Runs: []tasks.TrainedRun{{}}}
		row, err := src.(tasks.ModelSource).EvaluateModel(ctx, tb.Trained(p, 0), truthONNX)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("task %d (%v): kl_conditional %.3g ± %.2g, accuracy %.4f (Bayes %.4f), auroc_px %.4f (ceiling %.4f), kl_joint_lower %.3g ± %.2g "+
			"(log Ẑ %.3g, ESS %.1f), calibration [%.3g, %.3g] accepted %v %s", o, time.Since(start).Round(time.Millisecond),
			row.KLConditional, row.KLConditionalSE, row.Accuracy, row.BayesAccuracy, row.AUROCPx, row.AUROCTruePx,
			row.KLJointLower, row.KLJointLowerSE, row.LogZAIS, row.AISESS, row.AISTeacherLower, row.AISTeacherUpper, row.AISAccepted, row.AISRefused)
		if row.Method != "external:truth" || row.TableID != o {
			t.Errorf("row of %s task %d", row.Method, row.TableID)
		}
		if o == 1 {
			if !(row.KLConditional > 0.1) {
				t.Errorf("task 1: task 0's truth scores kl_conditional %v, want a large one", row.KLConditional)
			}
			continue
		}
		if math.Abs(row.KLConditional) > 1e-4 || math.Abs(row.Accuracy-row.BayesAccuracy) > 2e-3 || math.Abs(row.AUROCPx-row.AUROCTruePx) > 1e-3 {
			t.Errorf("task 0: the truth scores kl_conditional %v, accuracy %v (Bayes %v), auroc_px %v (ceiling %v)",
				row.KLConditional, row.Accuracy, row.BayesAccuracy, row.AUROCPx, row.AUROCTruePx)
		}
		if row.AISAccepted != !math.IsNaN(row.KLJointLower) {
			t.Errorf("task 0: calibration accepted %v but kl_joint_lower %v", row.AISAccepted, row.KLJointLower)
		}
		if row.AISAccepted && !(math.Abs(row.KLJointLower) <= 4*row.KLJointLowerSE+0.1) {
			t.Errorf("task 0: kl_joint_lower %v ± %v, want 0 within 4 SE + 0.1", row.KLJointLower, row.KLJointLowerSE)
		}
	}
}

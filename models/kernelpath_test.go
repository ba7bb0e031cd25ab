package models

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

// Tolerances of TestKernelMatchesGoMLX: the two paths do the same float32 maths with
// different operation orders (sums, the softmax of K=2 as a logistic on the GoMLX fast
// path, autodiff's graph on the tensor path) and exp/tanh/log implementations that
// differ by a few ulps, so after tens of Adam steps they agree to a few 1e-6 in the
// logits (measured max 9e-6 on the 8x4 MLP); the bounds leave a margin.
const (
	kernelLogitTol = 5e-5
	kernelLossTol  = 5e-6
)

func newTrainerOn(t testing.TB, backend string) *Trainer {
	t.Helper()
	tr, err := NewTrainer(backend)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// TestKernelMatchesGoMLX trains the same runs on the fused kernel and on GoMLX
// (go:ops_sequential: the split-form fast path for linear tables, the tensor path for
// MLPs) for every model family: linear and MLP, scalar and one-hot x; baseline (w=0),
// JEM (w=1) and fractional weights (0.5, 2); full batch and minibatch on samples.
func TestKernelMatchesGoMLX(t *testing.T) {
	kern := newTrainerOn(t, BackendKernel)
	gomlx := newTrainerOn(t, DefaultBackend)
	cases := []struct {
		name  string
		shape Shape
	}{
		{"linear scalar 2x2", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 60}},
		{"linear scalar 4x3", Shape{XValues: 4, Classes: 3, Encoding: "scalar", Model: "linear", Steps: 40}},
		{"linear onehot 3x4", Shape{XValues: 3, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 40}},
		{"linear onehot 70x4 (GoMLX tensor path)", Shape{XValues: 70, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 10}},
		{"mlp scalar 4x2 6,5", Shape{XValues: 4, Classes: 2, Encoding: "scalar", Model: "mlp:6,5", Steps: 30}},
		{"mlp onehot 8x4 16,16", Shape{XValues: 8, Classes: 4, Encoding: "onehot", Model: "mlp:16,16", Steps: 30}},
		{"linear scalar minibatch", Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 30, BatchSize: 8}},
		{"linear onehot minibatch", Shape{XValues: 2, Classes: 3, Encoding: "onehot", Model: "linear", Steps: 30, BatchSize: 8}},
		{"mlp onehot minibatch", Shape{XValues: 3, Classes: 3, Encoding: "onehot", Model: "mlp:7", Steps: 20, BatchSize: 8}},
		{"mlp scalar minibatch", Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "mlp:5", Steps: 20, BatchSize: 16}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hidden, _ := ParseModel(c.shape.Model)
			if !kern.useKernel(c.shape, hidden) {
				t.Fatal("kernel does not cover the shape")
			}
			runs := mixedRuns(c.shape, 6, 31) // px weights 0, 1, 0.5, 1, 0, 2
			got, err := kern.Train(context.Background(), c.shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := gomlx.Train(context.Background(), c.shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			var worst, worstLoss float64
			defer func() { t.Logf("max |logit diff| %.3g, max |loss diff| %.3g", worst, worstLoss) }()
			for i, r := range runs {
				d := maxAbsDiff(got[i].Logits, want[i].Logits)
				dl := math.Abs(got[i].Loss - want[i].Loss)
				worst, worstLoss = max(worst, d), max(worstLoss, dl)
				if d > kernelLogitTol || dl > kernelLossTol*math.Max(1, math.Abs(want[i].Loss)) || got[i].Diverged != want[i].Diverged {
					t.Errorf("run %d (lr %v, w %v): max |logit diff| %.3g, |loss diff| %.3g (loss %v vs %v), diverged %v vs %v",
						i, r.LR, r.PxWeight, d, dl, got[i].Loss, want[i].Loss, got[i].Diverged, want[i].Diverged)
				}
			}
		})
	}
}

// TestKernelDivergence: a run that overflows is flagged and frozen at finite values on
// both paths, at the same check (the same frozen logits), and its batch-mates are
// unaffected.
func TestKernelDivergence(t *testing.T) {
	kern := newTrainerOn(t, BackendKernel)
	gomlx := newTrainerOn(t, DefaultBackend)
	for _, shape := range []Shape{
		{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 60},
		{XValues: 3, Classes: 2, Encoding: "scalar", Model: "mlp:4", Steps: 20},
	} {
		runs := mixedRuns(shape, 4, 21)
		runs[2].LR = 1e300 // +Inf in float32: the first update is non-finite
		got, err := kern.Train(context.Background(), shape, runs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := gomlx.Train(context.Background(), shape, runs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			if got[i].Diverged != (i == 2) || want[i].Diverged != (i == 2) {
				t.Errorf("%s run %d: diverged kernel %v, GoMLX %v", shape.Model, i, got[i].Diverged, want[i].Diverged)
			}
			if d := maxAbsDiff(got[i].Logits, want[i].Logits); d > kernelLogitTol || math.IsNaN(d) {
				t.Errorf("%s run %d: max |logit diff| %.3g", shape.Model, i, d)
			}
		}
	}
}

// TestKernelDeterministic: the same runs give the same bits, alone or in any batch.
func TestKernelDeterministic(t *testing.T) {
	kern := newTrainerOn(t, BackendKernel)
	shape := Shape{XValues: 8, Classes: 4, Encoding: "onehot", Model: "mlp:16,16", Steps: 12}
	runs := mixedRuns(shape, 20, 4)
	all, err := kern.Train(context.Background(), shape, runs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := kern.Train(context.Background(), shape, slices.Concat(runs[5:], runs[:5]))
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		alone, err := kern.Train(context.Background(), shape, runs[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		j := (i + len(runs) - 5) % len(runs)
		if !slices.Equal(all[i].Logits, alone[0].Logits) || !slices.Equal(all[i].Logits, again[j].Logits) || all[i].Loss != alone[0].Loss {
			t.Errorf("run %d: results depend on the batch", i)
		}
	}
}

// TestBackendSelection: "" trains covered models on the kernel and the rest on GoMLX;
// "kernel" refuses what it does not cover; a GoMLX backend never uses the kernel.
func TestBackendSelection(t *testing.T) {
	covered := Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 5}
	wide := Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "mlp:300", Steps: 2}
	auto, kern, gomlx := newTrainerOn(t, ""), newTrainerOn(t, BackendKernel), newTrainerOn(t, "go")
	for _, c := range []struct {
		tr    *Trainer
		shape Shape
		want  bool
	}{{auto, covered, true}, {auto, wide, false}, {kern, covered, true}, {gomlx, covered, false}} {
		hidden, _ := ParseModel(c.shape.Model)
		if got := c.tr.useKernel(c.shape, hidden); got != c.want {
			t.Errorf("backend %q, model %s: kernel %v, want %v", c.tr.Backend(), c.shape.Model, got, c.want)
		}
	}
	runs := mixedRuns(wide, 2, 1)
	if _, err := auto.Train(context.Background(), wide, runs); err != nil {
		t.Errorf("auto on an uncovered model: %v", err)
	}
	if _, err := kern.Train(context.Background(), wide, runs); err == nil || !strings.Contains(err.Error(), "do not cover") {
		t.Errorf("kernel on an uncovered model: %v, want an error", err)
	}
	if err := CheckBackend(BackendKernel); err != nil {
		t.Errorf("CheckBackend(kernel): %v", err)
	}
}

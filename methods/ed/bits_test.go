package ed

import (
	"context"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// bitsHook is ed's hook for binary tables.
func bitsHook(t *testing.T) func(schemas.Grid, *kernel.SpecBits) error {
	t.Helper()
	h, ok := methods.Bits.Of(Name)
	if !ok {
		t.Fatal("no binary tables' hook")
	}
	return h
}

// TestBitsHook: the binary tables' hook sets ed's objective with the point's options,
// and refuses options out of range, a flip probability over ½ included.
func TestBitsHook(t *testing.T) {
	h := bitsHook(t)
	var s kernel.SpecBits
	if err := h(grid(Options{M: 8, T: 0.1, W: 1}), &s); err != nil {
		t.Fatal(err)
	}
	if s.Objective == nil {
		t.Fatal("no objective set")
	}
	if o, ok := s.Objective().(*Objective); !ok || o.m != 8 || o.t != 0.1 || o.w != 1 {
		t.Errorf("objective %+v", s.Objective())
	}
	for _, bad := range []Options{{M: 0, T: 0.1, W: 1}, {M: 4, T: 0.6, W: 1}, {M: 4, T: 0, W: 1}, {M: 4, T: 0.1, W: -1}} {
		if err := h(grid(bad), &kernel.SpecBits{}); err == nil || !strings.Contains(err.Error(), "must be") {
			t.Errorf("options %+v: error %v", bad, err)
		}
	}
}

// bitsRun trains one run of spec on a 6-bit, 2-class table's 4000 draws and returns it
// with the exact joint KL of its model from the truth.
func bitsRun(t *testing.T, spec kernel.SpecBits, hidden []int) (kernel.ResultBits, float64) {
	t.Helper()
	const d, k = 6, 2
	task := prob.DrawBits(9, d, k, 2)
	xs, ys := task.Sample(4, 4000)
	spec.D, spec.K, spec.Hidden = d, k, hidden
	res, err := kernel.TrainBits(context.Background(), spec, []kernel.RunBits{{Seed: 1, Theta: kernel.InitMLPBits(2, d, hidden, k), LR: 0.01, X: xs, Y: ys}})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := kernel.BitsLogits(d, hidden, k, res[0].Theta)
	if err != nil {
		t.Fatal(err)
	}
	return res[0], prob.KL(task.Truth(), prob.Softmax(lg))
}

// TestBitsLearns: on a known 6-bit table ed's objective (M = 8, t = 0.1, 800 steps)
// learns a joint whose exact KL from the truth is under a fifth of the baseline's (which
// leaves q(x) to chance; 0.07 against 1.53).
func TestBitsLearns(t *testing.T) {
	hidden := []int{32}
	spec := kernel.SpecBits{Steps: 800, Batch: 64, PxWeight: 1}
	_, base := bitsRun(t, spec, hidden)
	if err := bitsHook(t)(grid(Options{M: 8, T: 0.1, W: 1}), &spec); err != nil {
		t.Fatal(err)
	}
	r, ed := bitsRun(t, spec, hidden)
	t.Logf("joint KL: baseline %.4f, ed %.4f", base, ed)
	if r.Diverged || !(ed < 0.2*base) {
		t.Errorf("ed's joint KL %.4f (diverged %v), not under a fifth of the baseline's %.4f", ed, r.Diverged, base)
	}
}

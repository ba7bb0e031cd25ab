package sgld

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// draws are n draws of a 2-block task (D = 4), row-major, and the same draws' first
// block as the plane's columns.
func draws(t *testing.T, n int) (x []float32, y []int32, x0, x1 []float32) {
	t.Helper()
	spec, err := prob.ParseBlocksSpec("blocks:2,gmm:3,2")
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := spec.Draw(7).Sample(3, n)
	x = make([]float32, len(xs))
	for i, v := range xs {
		x[i] = float32(v)
	}
	x0, x1 = make([]float32, n), make([]float32, n)
	for i := range n {
		x0[i], x1[i] = x[4*i], x[4*i+1]
	}
	y = make([]int32, n)
	for i, v := range ys {
		y[i] = int32(v)
	}
	return x, y, x0, x1
}

func maxDiff(a, b []float32) float64 {
	var w float64
	for i := range a {
		w = max(w, math.Abs(float64(a[i]-b[i])))
	}
	return w
}

// TestObjectiveMatchesKernelSGLD: sgld's objective trains as the kernel's SGLD2D did
// bit for bit (the same draws from the same streams; at px_weight 1 the same
// gradient, the loss summed in another order), on the
// plane with each start and on the block-additive model of two blocks: the
// parameters agree to float32 rounding after 100 steps, the buffers and the budget
// too.
func TestObjectiveMatchesKernelSGLD(t *testing.T) {
	x, y, x0, x1 := draws(t, 512)
	hidden := []int{16}
	for _, c := range []struct {
		name        string
		informative bool
		blocks      int // 0: the plane
	}{
		{"plane", false, 0},
		{"plane, informative start", true, 0},
		{"two blocks", false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := kernel.SGLDOptions{Steps: 5, LR: 1, Std: 0.01, Buffer: 200, Reinit: 0.05, Informative: c.informative}
			old := kernel.Spec2D{Hidden: hidden, K: 3, Method: kernel.SGLD2D, Steps: 100, Batch: 32, PxWeight: 1, Box: 6, SGLD: o, KeepBuffer: true}
			obj := old
			obj.Method, obj.Objective = -1, func() kernel.Objective { return New(o) }
			var want, got []kernel.Result2D
			var err1, err2 error
			if c.blocks == 0 {
				run := kernel.Run2D{Seed: 3, Theta: kernel.InitMLP2D(4, hidden, 3), LR: 3e-3, X0: x0, X1: x1, Y: y}
				want, err1 = kernel.Train2D(context.Background(), old, []kernel.Run2D{run})
				got, err2 = kernel.Train2D(context.Background(), obj, []kernel.Run2D{run})
			} else {
				run := kernel.RunAdditive{Seed: 3, Theta: kernel.InitAdditive(4, hidden, 3, c.blocks), LR: 3e-3, X: x, Y: y}
				want, err1 = kernel.TrainAdditive(context.Background(), kernel.SpecAdditive{Spec2D: old, Blocks: c.blocks}, []kernel.RunAdditive{run})
				got, err2 = kernel.TrainAdditive(context.Background(), kernel.SpecAdditive{Spec2D: obj, Blocks: c.blocks}, []kernel.RunAdditive{run})
			}
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			w, g := want[0], got[0]
			dθ, db := maxDiff(w.Theta, g.Theta), maxDiff(w.Buffer, g.Buffer)
			t.Logf("max |Δθ| %.3g, max |Δbuffer| %.3g, loss %.5f vs %.5f, in box %v vs %v", dθ, db, g.Loss, w.Loss, g.InBox, w.InBox)
			if w.Diverged || g.Diverged || dθ != 0 || db != 0 || len(w.Buffer) != len(g.Buffer) || math.Abs(float64(w.Loss-g.Loss)) > 1e-3 {
				t.Errorf("the objective's run is not SGLD2D's bit for bit: max |Δθ| %.3g, |Δbuffer| %.3g, loss %v vs %v", dθ, db, g.Loss, w.Loss)
			}
			if a, b := old.GradEvalsPerStep(), obj.GradEvalsPerStep(); a != b {
				t.Errorf("budget %d, want %d", b, a)
			}
		})
	}
}

// TestClassGaussTwoD: in two dimensions the D-dimensional fit's Cholesky factor is
// the kernel's closed form.
func TestClassGaussTwoD(t *testing.T) {
	a := []float64{2, 0, 0.6, 1.5}
	l := make([]float64, 4)
	cholesky(a, l, 2)
	l00 := math.Sqrt(2)
	l10 := 0.6 / l00
	want := []float64{l00, 0, l10, math.Sqrt(1.5 - l10*l10)}
	if !slices.Equal(l, want) {
		t.Errorf("cholesky %v, want %v", l, want)
	}
}

package shortrun

// This file compares the objective with the plane kernel's former enum method
// kernel.ShortRun2D; delete it with the enum.

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestMatchesEnum: on the plane, shortrun's objective trains as kernel.ShortRun2D did:
// the same draws from the same streams (the loss summed in another order), so after
// 100 steps the parameters agree to float32 rounding (max |Δθ| ≤ 1e-3), and so do the
// loss and the budget; with and without noise and the L2 penalty at px_weight 1, and
// without the penalty at px_weight ½ (with it the objective weighs the penalty by
// px_weight, ShortRun2D did not: doc.go).
func TestMatchesEnum(t *testing.T) {
	X0, X1, Y := knownmix.Standard.TrainingDraws(1, 512)
	cases := []struct {
		name  string
		w     float32
		noise bool
		l2    float64
	}{
		{"noise, L2 0.1", 1, true, 0.1},
		{"noise-free, L2 1", 1, false, 1},
		{"px_weight 0.5, no L2", 0.5, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Options{Step: 0.01, Steps: 5, Noise: c.noise, L2: c.l2}
			old := knownmix.SmokeSpec(100)
			old.PxWeight = c.w
			old.Method = kernel.ShortRun2D
			old.Langevin = kernel.LangevinOptions{Steps: o.Steps, Step: float32(o.Step), Noise: o.Noise, L2: float32(o.L2)}
			obj := old
			obj.Method, obj.Objective = -1, func() kernel.Objective { return New(o) }
			run := kernel.Run2D{Seed: 3, Theta: kernel.InitMLP2D(4, old.Hidden, 2), LR: 3e-3, X0: X0, X1: X1, Y: Y}
			want, err1 := kernel.Train2D(context.Background(), old, []kernel.Run2D{run})
			got, err2 := kernel.Train2D(context.Background(), obj, []kernel.Run2D{run})
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			a, b := want[0], got[0]
			var dTheta float64
			for i := range a.Theta {
				dTheta = max(dTheta, math.Abs(float64(a.Theta[i]-b.Theta[i])))
			}
			t.Logf("max |Δθ| %.3g; loss %.5f vs %.5f", dTheta, a.Loss, b.Loss)
			if dTheta > 1e-3 || math.Abs(float64(a.Loss-b.Loss)) > 1e-3 || a.Diverged != b.Diverged {
				t.Errorf("the objective's run differs from ShortRun2D's: max |Δθ| %.3g, loss %v vs %v", dTheta, b.Loss, a.Loss)
			}
			if x, y := old.GradEvalsPerStep(), obj.GradEvalsPerStep(); x != y {
				t.Errorf("budget %d, want %d", y, x)
			}
		})
	}
}

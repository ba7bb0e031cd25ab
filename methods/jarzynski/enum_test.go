package jarzynski

// This file compares the objective with the plane kernel's former enum method
// kernel.Jarzynski2D; delete it with the enum.

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestMatchesEnum: on the plane, jarzynski's objective trains as kernel.Jarzynski2D
// did: the same draws from the same streams (the loss summed in another order), so
// after 100 steps the parameters agree to float32 rounding (max |Δθ| ≤ 1e-3), and so
// do the loss, the adapted η, the mean min(1, ratio), the resamplings and the budget;
// at px_weight 1 and ½, and with resampling at every step (ess_resample 1).
func TestMatchesEnum(t *testing.T) {
	X0, X1, Y := knownmix.Standard.TrainingDraws(1, 512)
	cases := []struct {
		name string
		w    float32
		ess  float64
	}{
		{"px_weight 1", 1, 0.5},
		{"px_weight 0.5", 0.5, 0.5},
		{"resample every step", 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Options{Step: 0.01, Steps: 5, ESS: c.ess}
			old := knownmix.SmokeSpec(100)
			old.PxWeight = c.w
			old.Method = kernel.Jarzynski2D
			old.Langevin = kernel.LangevinOptions{Steps: o.Steps, Step: float32(o.Step), Adapt: true, ESS: float32(o.ESS)}
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
			t.Logf("max |Δθ| %.3g; loss %.5f vs %.5f; η %.5g vs %.5g; acceptance %.4f vs %.4f; resamplings %d vs %d",
				dTheta, a.Loss, b.Loss, a.StepSize, b.StepSize, a.Accept, b.Accept, a.Resamples, b.Resamples)
			if dTheta > 1e-3 || math.Abs(float64(a.Loss-b.Loss)) > 1e-3 || a.Diverged != b.Diverged {
				t.Errorf("the objective's run differs from Jarzynski2D's: max |Δθ| %.3g, loss %v vs %v", dTheta, b.Loss, a.Loss)
			}
			if math.Abs(a.StepSize-b.StepSize) > 1e-4*a.StepSize || math.Abs(a.Accept-b.Accept) > 1e-3 || a.Resamples != b.Resamples {
				t.Errorf("η, acceptance or resamplings differ")
			}
			if x, y := old.GradEvalsPerStep(), obj.GradEvalsPerStep(); x != y {
				t.Errorf("budget %d, want %d", y, x)
			}
		})
	}
}

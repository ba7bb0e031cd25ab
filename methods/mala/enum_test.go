package mala

// This file compares the objective with the plane kernel's former enum method
// kernel.MALA2D; delete it with the enum.

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestMatchesEnum: on the plane, mala's objective trains as kernel.MALA2D did: the same
// draws from the same streams (the loss summed in another order), so after 100 steps
// the parameters agree to float32 rounding (max |Δθ| ≤ 1e-3), and so do the loss, the
// adapted η, the acceptance, the buffer and the budget; at px_weight 1 and ½.
func TestMatchesEnum(t *testing.T) {
	X0, X1, Y := knownmix.Standard.TrainingDraws(1, 512)
	for _, w := range []float32{1, 0.5} {
		t.Run(map[float32]string{1: "px_weight 1", 0.5: "px_weight 0.5"}[w], func(t *testing.T) {
			o := Options{Step: 0.01, Steps: 5, Buffer: 1000, Reinit: 0.05}
			old := knownmix.SmokeSpec(100)
			old.PxWeight, old.KeepBuffer = w, true
			old.Method = kernel.MALA2D
			old.Langevin = kernel.LangevinOptions{Steps: o.Steps, Step: float32(o.Step), Adapt: true, Buffer: o.Buffer, Reinit: float32(o.Reinit)}
			obj := old
			obj.Method, obj.Objective = -1, func() kernel.Objective { return &Objective{o: o, KeepBuffer: true} }
			run := kernel.Run2D{Seed: 3, Theta: kernel.InitMLP2D(4, old.Hidden, 2), LR: 3e-3, X0: X0, X1: X1, Y: Y}
			want, err1 := kernel.Train2D(context.Background(), old, []kernel.Run2D{run})
			got, err2 := kernel.Train2D(context.Background(), obj, []kernel.Run2D{run})
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			a, b := want[0], got[0]
			dTheta, dBuf := maxDiff(a.Theta, b.Theta), maxDiff(a.Buffer, b.Buffer)
			t.Logf("max |Δθ| %.3g, |Δbuffer| %.3g; loss %.5f vs %.5f; η %.5g vs %.5g; acceptance %.4f vs %.4f; in box %v vs %v",
				dTheta, dBuf, a.Loss, b.Loss, a.StepSize, b.StepSize, a.Accept, b.Accept, a.InBox, b.InBox)
			if dTheta > 1e-3 || math.Abs(float64(a.Loss-b.Loss)) > 1e-3 || a.Diverged != b.Diverged {
				t.Errorf("the objective's run differs from MALA2D's: max |Δθ| %.3g, loss %v vs %v", dTheta, b.Loss, a.Loss)
			}
			if len(a.Buffer) != len(b.Buffer) || dBuf > 1e-3 || a.InBox != b.InBox ||
				math.Abs(a.StepSize-b.StepSize) > 1e-4*a.StepSize || math.Abs(a.Accept-b.Accept) > 1e-3 {
				t.Errorf("buffer (%d vs %d values, max |Δ| %.3g), η or acceptance differ", len(b.Buffer), len(a.Buffer), dBuf)
			}
			if x, y := old.GradEvalsPerStep(), obj.GradEvalsPerStep(); x != y {
				t.Errorf("budget %d, want %d", y, x)
			}
		})
	}
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var w float64
	for i := range a {
		w = max(w, math.Abs(float64(a[i]-b[i])))
	}
	return w
}

package kernel

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// edObjective is ED (methods2d.go) written against Objective: the generic path must
// train it exactly as the kernel's own ED2D does.
type edObjective struct{ o EDOptions }

func (e edObjective) Lanes(B int) int      { return B * (1 + e.o.M) }
func (edObjective) Params() int            { return 0 }
func (edObjective) GradEvals(int) int64    { return 0 }
func (edObjective) Begin(*Step)          {}
func (e edObjective) Fill(st *Step)      { edPerturb(st.Rng, st.X, st.B, st.P, e.o) }
func (edObjective) End(*Step, *Result2D) {}
func (e edObjective) Loss(st *Step, lse, coef []float32) float32 {
	return edLoss(lse, st.B, e.o, coef)
}

// TestObjectiveMatchesMethod: ED through Objective gives the kernel's ED2D run to
// float32 rounding (the loss's terms are summed in another order), and its budget.
func TestObjectiveMatchesMethod(t *testing.T) {
	rng := prob.NewRand(1)
	x0, x1 := testMixture.sample(rng, 512)
	X0, X1, Y := make([]float32, 512), make([]float32, 512), make([]int32, 512)
	for i := range X0 {
		X0[i], X1[i] = float32(x0[i]), float32(x1[i])
		if x0[i] > 0 {
			Y[i] = 1
		}
	}
	spec := Spec2D{Hidden: []int{16}, K: 2, Method: ED2D, Steps: 100, Batch: 64, PxWeight: 1, Box: 5, ED: DefaultED()}
	run := Run2D{Seed: 3, Theta: InitMLP2D(4, spec.Hidden, 2), LR: 3e-3, X0: X0, X1: X1, Y: Y}
	want, err := Train2D(context.Background(), spec, []Run2D{run})
	if err != nil {
		t.Fatal(err)
	}
	gen := spec
	gen.Method, gen.Objective = -1, func() Objective { return edObjective{spec.ED} }
	got, err := Train2D(context.Background(), gen, []Run2D{run})
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := range want[0].Theta {
		worst = max(worst, math.Abs(float64(want[0].Theta[i]-got[0].Theta[i])))
	}
	t.Logf("max |Δθ| after %d steps: %.3g; loss %.5f vs %.5f", spec.Steps, worst, want[0].Loss, got[0].Loss)
	if worst > 1e-3 || math.Abs(float64(want[0].Loss-got[0].Loss)) > 1e-3 {
		t.Errorf("the objective's run differs from ED2D's: max |Δθ| %.3g, loss %v vs %v", worst, got[0].Loss, want[0].Loss)
	}
	if a, b := spec.GradEvalsPerStep(), gen.GradEvalsPerStep(); a != b {
		t.Errorf("budget %d, want %d", b, a)
	}
}

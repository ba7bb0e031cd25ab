package tasks

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestMethodLoop drives the loop with a trainer whose parameter is the step and whose
// held-out NLL is a known curve: the held-out rule selects the check of least NLL, the
// last rule the last step, the curve holds every check with the gradient evaluations,
// and a diverged run ends its curve at the step before its guard fired.
func TestMethodLoop(t *testing.T) {
	const steps, every = 60, 10
	nll := func(step float32) float64 { return math.Abs(float64(step) - 30) } // least at step 30
	for _, tc := range []struct {
		name     string
		rule     string
		diverge  int // the step whose guard fires, 0 none
		selected int64
		points   int
	}{
		{"held-out", SelectHeldout, 0, 30, 6},
		{"last", SelectLast, 0, 60, 6},
		{"diverged at 45", SelectHeldout, 45, 30, 5}, // checks 10…40, then step 44
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := MethodLoop{Method: "baseline", Steps: steps, Select: tc.rule, PerStep: 3,
				Check: func(i int, theta []float32) (CurvePoint, []float64) {
					return CurvePoint{HeldoutNLL: nll(theta[0]), KLJoint: 2 * nll(theta[0])}, []float64{float64(theta[0])}
				}}
			runs := []kernel.RunAdditive{{Seed: 1}}
			res, err := l.Train(len(runs), func(i int, fn func(int, []float32)) { runs[i].Observe = fn }, func(h int, idx []int) ([]kernel.Result2D, error) {
				out := make([]kernel.Result2D, len(idx))
				for k, r := range Subset(runs, idx) {
					last := h
					for s := 1; s <= h; s++ {
						if s == tc.diverge {
							out[k].Diverged, out[k].DivergedStep = true, s
							break
						}
						last = s
						if s%every == 0 {
							r.Observe(s, []float32{float32(s)})
						}
					}
					out[k].Theta = []float32{float32(last)}
				}
				return out, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			tr := TrainedRun{Theta: res[0].Theta, Logits: []float64{float64(res[0].Theta[0])}, Diverged: res[0].Diverged}
			l.Finish(0, &tr)
			if tr.SelectedStep != tc.selected || len(tr.Curve) != tc.points {
				t.Fatalf("selected step %d, %d curve points; want %d and %d (curve %+v)", tr.SelectedStep, len(tr.Curve), tc.selected, tc.points, tr.Curve)
			}
			if tr.Theta[0] != float32(tc.selected) || tr.Logits[0] != float64(tc.selected) {
				t.Errorf("kept parameters %v, logits %v; want the selected step's", tr.Theta, tr.Logits)
			}
			end := tr.Curve[len(tr.Curve)-1]
			if end.GradEvals != 3*int64(end.Step) || end.KLJoint != 2*end.HeldoutNLL {
				t.Errorf("last curve point %+v", end)
			}
		})
	}
}

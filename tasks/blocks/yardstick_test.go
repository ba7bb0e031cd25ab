package blocks

import (
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestYardstickStops: on a block task the converged yardstick (jem-converged) trains
// past the point's steps until its convergence rule holds, at a check of the point's
// cadence before its cap, and stops there: its curve ends at its converged step, the
// rule first holding at that check, its selection within it; exact jem trains the
// point's steps; a yardstick that reaches its cap records that it did not converge.
// At 60 steps it reaches its converged checks through longer horizons, at 200 in one:
// the same steps, selections and KLs (the horizons replay the runs).
func TestYardstickStops(t *testing.T) {
	type stop struct {
		conv, sel int64
		kl        float64
	}
	first := map[int64]stop{}
	tests := []struct {
		name  string
		steps int
	}{
		{"60 steps", 60},
		{"200 steps", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := point(t, "blocks:2,gmm:2,1", "jem", "jem-converged")
			p.Steps, p.LR = tt.steps, 0.03
			limit := int64(tasks.YardstickCap(tt.steps))
			_, tb, rb, _ := tasktest.Run(t, p, tasks.Options{Seed: 4, TrainBatch: 64, Select: tasks.SelectHeldout, Holdout: 0.2, EvalEvery: 10})
			converged := 0
			for k, r := range rb.Rows {
				run := tb.Runs[k]
				last := int64(run.Curve[len(run.Curve)-1].Step)
				nll := make([]float64, len(run.Curve))
				for i, c := range run.Curve {
					nll[i] = c.HeldoutNLL
				}
				switch {
				case r.Method == "jem" && last != int64(tt.steps):
					t.Errorf("jem task %d: curve ends at step %d, want the point's %d", r.TableID, last, tt.steps)
				case r.Method == "jem":
				case !r.Converged && (r.ConvergedStep != 0 || last != limit):
					t.Errorf("task %d: not converged, converged step %d, curve to %d: want 0 and the cap %d", r.TableID, r.ConvergedStep, last, limit)
				case !r.Converged:
				case r.ConvergedStep >= limit || r.ConvergedStep%10 != 0 || last != r.ConvergedStep:
					t.Errorf("task %d: converged at %d, curve to %d, want a check before the cap %d where the curve ends", r.TableID, r.ConvergedStep, last, limit)
				case !tasks.Converged(nll) || tasks.Converged(nll[:len(nll)-1]):
					t.Errorf("task %d: the rule does not first hold at the curve's last check (%d checks)", r.TableID, len(nll))
				case r.SelectedStep > r.ConvergedStep:
					t.Errorf("task %d: selected step %d past the converged step %d", r.TableID, r.SelectedStep, r.ConvergedStep)
				case first[r.TableID] != (stop{}) && first[r.TableID] != stop{r.ConvergedStep, r.SelectedStep, r.KLJoint}:
					t.Errorf("task %d: converged at %d, selected %d, KL %v; at 60 steps %+v", r.TableID, r.ConvergedStep, r.SelectedStep, r.KLJoint, first[r.TableID])
				default:
					first[r.TableID] = stop{r.ConvergedStep, r.SelectedStep, r.KLJoint}
					converged++
					t.Logf("task %d: converged at step %d (point's steps %d), selected %d", r.TableID, r.ConvergedStep, tt.steps, r.SelectedStep)
				}
			}
			if converged == 0 {
				t.Errorf("no yardstick run converged before its cap")
			}
		})
	}
}

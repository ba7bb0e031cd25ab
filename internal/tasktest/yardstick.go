package tasktest

import (
	"testing"

	"github.com/jemcheck/jemcheck/tasks"
)

// YardstickStops checks the converged yardstick on point p of a kind (its methods jem
// and jem-converged, checks every o.EvalEvery steps) at each of the given point steps:
// exact jem trains the point's steps; jem-converged trains past them until its
// convergence rule holds, at a check of the cadence before its cap, and stops there:
// its curve ends at its converged step, the rule first holding at that check, its
// selection within it, its batch all the training draws (up to
// tasks.YardstickMaxBatch) and its rate at least tasks.YardstickMinLR; a yardstick that
// reaches its cap records that it did not converge. Across the steps, a task's
// converged step, selection and KL are the same (the horizons replay the runs), and at
// least one run converges before its cap.
func YardstickStops(t *testing.T, p tasks.Point, o tasks.Options, steps ...int) {
	t.Helper()
	type stop struct {
		conv, sel int64
		kl        float64
	}
	first := map[int64]stop{}
	every := int64(o.EvalEvery)
	for _, n := range steps {
		p.Steps = n
		limit := int64(tasks.YardstickCap(n))
		_, tb, rb, _ := Run(t, p, o)
		converged := 0
		for k, r := range rb.Rows {
			run := tb.Runs[k]
			last := int64(run.Curve[len(run.Curve)-1].Step)
			nll := make([]float64, len(run.Curve))
			for i, c := range run.Curve {
				nll[i] = c.HeldoutNLL
			}
			switch {
			case r.Method == "jem" && last != int64(n):
				t.Errorf("%d steps: jem task %d: curve ends at step %d, want the point's %d", n, r.TableID, last, n)
			case r.Method == "jem":
			case r.TrainBatch <= int64(p.BatchSize) || r.TrainBatch > tasks.YardstickMaxBatch || r.TrainLR < tasks.YardstickMinLR:
				t.Errorf("%d steps: task %d: jem-converged's batch %d and rate %v, want full batches (over the point's %d, at most %d) at a rate >= %v",
					n, r.TableID, r.TrainBatch, r.TrainLR, p.BatchSize, tasks.YardstickMaxBatch, tasks.YardstickMinLR)
			case !r.Converged && (r.ConvergedStep != 0 || last != limit):
				t.Errorf("%d steps: task %d: not converged, converged step %d, curve to %d: want 0 and the cap %d", n, r.TableID, r.ConvergedStep, last, limit)
			case !r.Converged:
			case r.ConvergedStep >= limit || r.ConvergedStep%every != 0 || last != r.ConvergedStep:
				t.Errorf("%d steps: task %d: converged at %d, curve to %d, want a check before the cap %d where the curve ends", n, r.TableID, r.ConvergedStep, last, limit)
			case !tasks.Converged(nll) || tasks.Converged(nll[:len(nll)-1]):
				t.Errorf("%d steps: task %d: the rule does not first hold at the curve's last check (%d checks)", n, r.TableID, len(nll))
			case r.SelectedStep > r.ConvergedStep:
				t.Errorf("%d steps: task %d: selected step %d past the converged step %d", n, r.TableID, r.SelectedStep, r.ConvergedStep)
			case first[r.TableID] != (stop{}) && first[r.TableID] != stop{r.ConvergedStep, r.SelectedStep, r.KLJoint}:
				t.Errorf("%d steps: task %d: converged at %d, selected %d, KL %v; at %d steps %+v", n, r.TableID, r.ConvergedStep, r.SelectedStep, r.KLJoint, steps[0], first[r.TableID])
			default:
				first[r.TableID] = stop{r.ConvergedStep, r.SelectedStep, r.KLJoint}
				converged++
				t.Logf("%d steps: task %d: converged at step %d, selected %d", n, r.TableID, r.ConvergedStep, r.SelectedStep)
			}
		}
		if converged == 0 {
			t.Errorf("%d steps: no yardstick run converged before its cap", n)
		}
	}
}

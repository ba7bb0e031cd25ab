package plane

import (
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// yardstickPoint is a small 2-D point of exact jem and the converged yardstick at the
// given steps, checked every 5 steps. Its tests read the convergence, the curves, the
// joint KL and the held-out NLL, none of the measures beyond the exact KL: MeasureTasks
// 1 leaves the sampler's distribution and the draw-based promises to the first task.
func yardstickPoint(t *testing.T, steps int) (tasks.Point, tasks.Options) {
	t.Helper()
	g := schemas.DefaultGrid()
	g.Samples, g.Model, g.LR, g.Steps, g.BatchSize, g.PxWeight = 400, "mlp:8", 0.03, steps, 32, 1
	g.Task, g.GridCells, g.Box, g.TrainGrid = "gmm:3,2", 16, 5, 16
	p := tasks.Point{Grid: g, Tables: 3, Methods: []string{"jem", "jem-converged"}}
	p.Resolve()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p, tasks.Options{Seed: 7, TrainBatch: 64, Select: tasks.SelectHeldout, Holdout: 0.2, EvalEvery: 5, MeasureTasks: 1}
}

// TestYardstickStopsWhenConverged trains jem and jem-converged on three small gmm
// tasks and checks that the converged yardstick stops at the first check at which the
// convergence rule holds, before its cap, and records it (converged, converged_step,
// its curve ending there, its selection and gradient evaluations within it), or else
// trains to its cap and records that it did not converge, while exact jem trains its
// point's steps. The same point at a tenth of the steps, whose yardstick reaches a
// check past 100 steps only by training again to longer horizons, gives the same rows
// wherever the first converged within the second's cap: the horizons replay the run.
func TestYardstickStopsWhenConverged(t *testing.T) {
	tests := []struct {
		name  string
		steps int
	}{
		{"1000 steps", 1000},
		{"100 steps: longer horizons", 100},
	}
	var first []schemas.ResultRow // the yardstick's rows of the first case
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, o := yardstickPoint(t, tt.steps)
			limit := int64(tasks.YardstickCap(tt.steps))
			_, tb, rb, _ := tasktest.Run(t, p, o)
			var rows []schemas.ResultRow
			longer := 0 // converged past the point's steps
			for k, r := range rb.Rows {
				run := tb.Runs[k]
				last := int64(run.Curve[len(run.Curve)-1].Step)
				if r.Method == "jem" {
					if last != int64(tt.steps) {
						t.Errorf("jem task %d: curve ends at step %d, want the point's %d", r.TableID, last, tt.steps)
					}
					continue
				}
				rows = append(rows, r)
				nll := make([]float64, len(run.Curve))
				for i, c := range run.Curve {
					nll[i] = c.HeldoutNLL
				}
				perStep := run.Curve[0].GradEvals / int64(run.Curve[0].Step)
				if r.ConvergedStep > int64(tt.steps) {
					longer++
				}
				switch {
				case !r.Converged && (r.ConvergedStep != 0 || last != limit || slices.ContainsFunc(run.Curve, func(c tasks.CurvePoint) bool {
					_, ok := tasks.ConvergedStep(run.Curve[:slices.Index(run.Curve, c)+1])
					return ok
				})):
					t.Errorf("task %d: not converged, converged step %d, curve to %d: want 0 and the cap %d, the rule never holding", r.TableID, r.ConvergedStep, last, limit)
				case !r.Converged:
				case r.ConvergedStep <= 0 || r.ConvergedStep >= limit:
					t.Errorf("task %d: converged at step %d, want one before the cap %d", r.TableID, r.ConvergedStep, limit)
				case last != r.ConvergedStep:
					t.Errorf("task %d: curve ends at step %d, want its converged step %d", r.TableID, last, r.ConvergedStep)
				case !tasks.Converged(nll) || tasks.Converged(nll[:len(nll)-1]):
					t.Errorf("task %d: the rule does not first hold at the curve's last check (%d checks)", r.TableID, len(nll))
				case r.SelectedStep > r.ConvergedStep:
					t.Errorf("task %d: selected step %d past the converged step %d", r.TableID, r.SelectedStep, r.ConvergedStep)
				case r.GradEvals != r.ConvergedStep*perStep:
					t.Errorf("task %d: %d gradient evaluations, want those of its %d steps (%d)", r.TableID, r.GradEvals, r.ConvergedStep, r.ConvergedStep*perStep)
				}
			}
			if len(rows) != p.Tables {
				t.Fatalf("%d jem-converged rows, want %d", len(rows), p.Tables)
			}
			if longer == 0 {
				t.Errorf("no yardstick run converged past the point's %d steps: the test needs one", tt.steps)
			}
			if first == nil {
				first = rows
				return
			}
			same := 0
			for i, r := range rows {
				c := first[i]
				t.Logf("task %d: converged at step %d (at 1000 steps: %d), selected %d", r.TableID, r.ConvergedStep, c.ConvergedStep, r.SelectedStep)
				if !c.Converged || c.ConvergedStep >= limit {
					continue
				}
				same++
				if r.ConvergedStep != c.ConvergedStep || r.SelectedStep != c.SelectedStep || r.KLJoint != c.KLJoint || r.HeldoutNLL != c.HeldoutNLL {
					t.Errorf("task %d: converged at %d, selected %d, KL %v, NLL %v; at 1000 steps: %d, %d, %v, %v",
						r.TableID, r.ConvergedStep, r.SelectedStep, r.KLJoint, r.HeldoutNLL, c.ConvergedStep, c.SelectedStep, c.KLJoint, c.HeldoutNLL)
				}
			}
			if same == 0 {
				t.Errorf("no task converged within this case's cap at both step counts: nothing compared")
			}
		})
	}
}

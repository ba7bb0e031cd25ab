package bits

import (
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestYardstickStops: on a binary table the converged yardstick (jem-converged: exact
// JEM by enumeration on full batches) trains past the point's steps until its
// convergence rule holds and stops there (tasktest.YardstickStops), at 60 steps
// through longer horizons and at 300 in fewer: the same steps, selections and KLs.
func TestYardstickStops(t *testing.T) {
	p := point("bits:6,2")
	p.Methods = []string{"jem", "jem-converged"}
	tasktest.YardstickStops(t, p, tasks.Options{Seed: 4, TrainBatch: 64, Select: tasks.SelectHeldout, Holdout: 0.2, EvalEvery: 10}, 60, 300)
}

package blocks

import (
	"github.com/jemcheck/jemcheck/internal/testenv"
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestYardstickStops: on a block task the converged yardstick (jem-converged) trains
// past the point's steps until its convergence rule holds and stops there
// (tasktest.YardstickStops). At 60 steps it reaches its converged checks through
// longer horizons, at 200 in one: the same steps, selections and KLs.
func TestYardstickStops(t *testing.T) {
	testenv.Slow(t, "the converged yardstick trained to its rule, 2 s")
	p := point(t, "blocks:2,gmm:2,1", "jem", "jem-converged")
	p.LR = 0.03
	tasktest.YardstickStops(t, p, tasks.Options{Seed: 4, TrainBatch: 64, Select: tasks.SelectHeldout, Holdout: 0.2, EvalEvery: 10}, 60, 200)
}

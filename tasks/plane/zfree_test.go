package plane

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestZFreeRanksLikeKL trains baseline and exact JEM for 3, 30 and 300 steps on three
// gmm:3,2 tasks (18 runs from near-initial to near-truth models) and checks the Z-free
// divergences: finite and ≥ 0 with positive standard errors on every run, and ordering
// the runs as the exact joint KL does, as measured here: Spearman ρ 0.695 for the
// Fisher divergence, 0.622 for its class-conditional form (a score misses a density's
// errors in low-density regions, which the KL weighs) and 0.953 for the log-ratio
// spread; the test holds each to a floor under its measured value.
func TestZFreeRanksLikeKL(t *testing.T) {
	var kl, fisher, cond, spread []float64
	for _, steps := range []int{3, 30, 300} {
		g := schemas.DefaultGrid()
		g.Samples, g.Model, g.LR, g.Steps, g.BatchSize, g.PxWeight = 1000, "mlp:16,16", 0.01, steps, 64, 1
		g.Task, g.GridCells, g.Box, g.TrainGrid = "gmm:3,2", 32, 5, 32
		p := tasks.Point{Grid: g, Tables: 3, Methods: []string{"baseline", "jem"}}
		p.Resolve()
		// The Z-free divergences are measured on every task; MeasureTasks 1 leaves the
		// sampler's distribution and the draw-based promises, which this test does not
		// read, to the first task alone.
		o := tasks.Options{Seed: 5, TrainBatch: 64, AttackEps: 0.3, PurifySteps: 3, PurifyLR: 0.01, Select: "last", MeasureTasks: 1}
		rows := runPoint(t, p, o)
		for _, r := range rows {
			for name, v := range map[string][2]float64{"fisher_div": {r.FisherDiv, r.FisherDivSE},
				"fisher_div_cond": {r.FisherDivCond, r.FisherDivCondSE}, "log_ratio_sd": {r.LogRatioSD, r.LogRatioSDSE}} {
				if !(v[0] >= 0 && v[1] > 0) || math.IsInf(v[0], 0) || math.IsInf(v[1], 0) {
					t.Errorf("steps %d %s: %s = %v ± %v, want finite ≥ 0 with SE > 0", steps, r.Method, name, v[0], v[1])
				}
			}
			kl, fisher, cond, spread = append(kl, r.KLJoint), append(fisher, r.FisherDiv), append(cond, r.FisherDivCond), append(spread, r.LogRatioSD)
		}
	}
	for _, c := range []struct {
		name  string
		v     []float64
		floor float64
	}{{"fisher_div", fisher, 0.6}, {"fisher_div_cond", cond, 0.55}, {"log_ratio_sd", spread, 0.9}} {
		rho := prob.Spearman(kl, c.v)
		t.Logf("%s: Spearman ρ with kl_joint over %d runs = %.3f", c.name, len(kl), rho)
		if !(rho >= c.floor) {
			t.Errorf("%s: Spearman ρ with kl_joint = %v, want ≥ %v", c.name, rho, c.floor)
		}
	}
}

package plane

import (
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestSamplerDistColumns trains one small task with methods with and without a sampler
// and checks the sampler-distribution columns: NaN where they do not apply (the
// baseline has none; ed and jem have no sampler, so no short run), in [0, 1] where they
// do, the standard errors and floors positive, and none of it left in method_stats.
func TestSamplerDistColumns(t *testing.T) {
	ms := []string{"baseline", "jem", "ed", "sgld", "shortrun", "mala", "jarzynski", "drl"}
	g := schemas.DefaultGrid()
	g.Samples, g.Model, g.LR, g.Steps, g.BatchSize, g.PxWeight = 300, "mlp:8", 0.01, 40, 32, 1
	g.Task, g.GridCells, g.Box, g.TrainGrid, g.SGLDSteps, g.BufferSize = "gmm:3,2", 16, 5, 16, 5, 100
	p := tasks.Point{Grid: g, Tables: 1, Methods: ms}
	p.Resolve()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	rows := runPoint(t, p, tasks.Options{Seed: 3, TrainBatch: 64})
	for _, r := range rows {
		_, hasShort := samplerOf(r.Method, p.Grid)
		long := !methods.Has(r.Method, func(m methods.Method) bool { return m.NoPx })
		t.Logf("%-9s short %.3f/%.3f ± %.3f  long %.3f/%.3f ± %.3f (accept %.2f)  floor %.3f/%.3f", r.Method,
			r.ShortTVTruth, r.ShortTVModel, r.ShortTVTruthSE, r.LongTVTruth, r.LongTVModel, r.LongTVTruthSE, r.LongAccept, r.SamplerTVFloor, r.SamplerTVFloorModel)
		check := func(name string, applies bool, vs ...float64) {
			for _, v := range vs {
				switch {
				case !applies && !math.IsNaN(v):
					t.Errorf("%s: %s = %v, want NaN", r.Method, name, v)
				case applies && !(v >= 0 && v <= 1):
					t.Errorf("%s: %s = %v, want in [0, 1]", r.Method, name, v)
				}
			}
		}
		check("short_*", hasShort, r.ShortTVTruth, r.ShortTVModel, r.ShortTVTruthSE, r.ShortTVModelSE)
		check("long_*", long, r.LongTVTruth, r.LongTVModel, r.LongTVTruthSE, r.LongTVModelSE, r.LongAccept, r.SamplerTVFloor, r.SamplerTVFloorModel)
		if long && !(r.SamplerTVFloor > 0 && r.LongTVTruthSE > 0) {
			t.Errorf("%s: floor %v, se %v: want > 0", r.Method, r.SamplerTVFloor, r.LongTVTruthSE)
		}
		if strings.Contains(r.MethodStats, statPrefix) {
			t.Errorf("%s: method_stats %s carries the sampler distribution", r.Method, r.MethodStats)
		}
	}
	for _, m := range []string{"sgld", "shortrun", "mala", "jarzynski", "drl"} {
		if _, ok := samplerOf(m, p.Grid); !ok {
			t.Errorf("%s has no %s hook", m, SamplerHook)
		}
	}
	for _, m := range []string{"baseline", "jem", "ed", "nce", "dsm", "snl", "tre"} {
		if _, ok := samplerOf(m, p.Grid); ok {
			t.Errorf("%s has a %s hook", m, SamplerHook)
		}
	}
}

// TestTVSE: the delta-method standard error of the TV is 0 for a histogram equal to
// one bin of its reference's support... and matches the binomial's for two bins.
func TestTVSE(t *testing.T) {
	tv, se := tvSE([]float64{0.6, 0.4}, []float64{0.5, 0.5}, 100)
	if math.Abs(tv-0.1) > 1e-12 || math.Abs(se-math.Sqrt(0.6*0.4/100)) > 1e-12 {
		t.Errorf("tv %v se %v, want 0.1 and the binomial's %v", tv, se, math.Sqrt(0.24/100))
	}
	if _, se := tvSE([]float64{1, 0}, []float64{0.5, 0.5}, 100); se != 0 {
		t.Errorf("all points in one bin: se %v, want 0", se)
	}
}

// TestMeasureTasks: with --measure_tasks=2 the first two tasks' runs get the measures
// beyond the exact KL (the sampler's distribution and the promises on the held-out
// draws) and the third task's runs have them NaN, while its exact KL is measured as
// on every task; -1 measures every task.
func TestMeasureTasks(t *testing.T) {
	g := schemas.DefaultGrid()
	g.Samples, g.Model, g.LR, g.Steps, g.BatchSize, g.PxWeight = 300, "mlp:8", 0.01, 20, 32, 1
	g.Task, g.GridCells, g.Box, g.TrainGrid, g.SGLDSteps, g.BufferSize = "gmm:3,2", 16, 5, 16, 5, 100
	for _, c := range []struct {
		name     string
		measure  int
		measured []bool // per task ordinal
	}{
		{"first two", 2, []bool{true, true, false}},
		{"every task", tasks.AllTasks, []bool{true, true, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tasks.Point{Grid: g, Tables: 3, Methods: []string{"baseline", "sgld"}}
			p.Resolve()
			o := tasks.Options{Seed: 5, TrainBatch: 64, AttackEps: 0.3, PurifySteps: 3, PurifyLR: 0.01, MeasureTasks: c.measure}
			rows := runPoint(t, p, o)
			if len(rows) != 6 {
				t.Fatalf("%d rows, want 6", len(rows))
			}
			for i, r := range rows {
				task := i / 2
				want := c.measured[task]
				cols := map[string]float64{"auroc_px": r.AUROCPx, "ece": r.ECE, "acc_attacked": r.AccAttacked, "acc_purified": r.AccPurified}
				if r.Method == "sgld" {
					cols["long_tv_truth"] = r.LongTVTruth
				}
				for name, v := range cols {
					if got := !math.IsNaN(v); got != want {
						t.Errorf("task %d %s: %s = %v, measured %v, want %v", task, r.Method, name, v, got, want)
					}
				}
				if !(r.KLJoint >= 0) {
					t.Errorf("task %d %s: kl_joint %v, want measured on every task", task, r.Method, r.KLJoint)
				}
			}
		})
	}
}

// TestSamplerChains: --sampler_chains sets the chains of the measure: the floor (the
// expected TV of as many exact draws) and the TV's standard error of 200 chains are
// about √10 times those of 2,000 (exactly so for the standard error's binomial part
// at the same histogram; more than 2× either way here), and 0 takes the default.
func TestSamplerChains(t *testing.T) {
	g := schemas.DefaultGrid()
	g.Samples, g.Model, g.LR, g.Steps, g.BatchSize, g.PxWeight = 300, "mlp:8", 0.01, 20, 32, 1
	g.Task, g.GridCells, g.Box, g.TrainGrid = "gmm:3,2", 16, 5, 16
	p := tasks.Point{Grid: g, Tables: 1, Methods: []string{"jem"}}
	p.Resolve()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	measure := func(n int) schemas.ResultRow {
		rows := runPoint(t, p, tasks.Options{Seed: 3, TrainBatch: 64, SamplerChains: n})
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1", len(rows))
		}
		return rows[0]
	}
	few, many := measure(200), measure(2000)
	t.Logf("200 chains: floor %.4f se %.4f; 2000: floor %.4f se %.4f", few.SamplerTVFloor, few.LongTVTruthSE, many.SamplerTVFloor, many.LongTVTruthSE)
	if !(few.SamplerTVFloor > 2*many.SamplerTVFloor) || !(few.LongTVTruthSE > 2*many.LongTVTruthSE) {
		t.Errorf("200 chains: floor %v se %v; 2000: floor %v se %v: want the 200's over twice the 2000's",
			few.SamplerTVFloor, few.LongTVTruthSE, many.SamplerTVFloor, many.LongTVTruthSE)
	}
	if def, at := measure(0), measure(tasks.DefaultSamplerChains); def.SamplerTVFloor != at.SamplerTVFloor || def.LongTVTruth != at.LongTVTruth {
		t.Errorf("default chains: floor %v TV %v, want those of %d chains: %v, %v", def.SamplerTVFloor, def.LongTVTruth, tasks.DefaultSamplerChains, at.SamplerTVFloor, at.LongTVTruth)
	}
}

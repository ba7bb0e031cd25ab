package kernel

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// bench2D trains runs for spec.Steps steps per iteration and reports CPU milliseconds
// per run-step (the per-run setup, e.g. a replay buffer's uniform initialisation, is
// included, amortised over spec.Steps).
func bench2D(b *testing.B, spec Spec2D, runs []Run2D) {
	ctx := context.Background()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	for range b.N {
		res, err := Train2D(ctx, spec, runs)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Diverged {
				b.Fatalf("a run diverged at step %d", r.DivergedStep)
			}
		}
	}
	wall, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	n := float64(len(runs) * spec.Steps * b.N)
	b.ReportMetric(1000*wall/n, "ms/run_step")
	if cpu > 0 {
		b.ReportMetric(1000*cpu/n, "ms_cpu/run_step")
		b.ReportMetric(n/cpu, "run_steps/cpu_s")
	}
}

// BenchmarkSGLD2D is SGLD-JEM training (Train2D) on gmm:3,2 tasks with 2000 draws each:
// MLP 2-32-32-3 (tanh), data batch 64, 64 negatives from a replay buffer of 10000 per
// run (5% uniform restarts), 20 SGLD steps (official: lr 1, std 0.01), Adam, 1,024 runs
// of 10 steps per iteration: the shape of ../shared/peers/torch_sgld.py (which uses
// swish). Run it on one core (GOMAXPROCS=1) to read CPU per run-step.
func BenchmarkSGLD2D(b *testing.B) {
	hidden := []int{32, 32}
	runs, _ := gmmRuns(1024, 2000, hidden, 1e-3)
	spec := Spec2D{Hidden: hidden, K: 3, Method: SGLD2D, Steps: 10, Batch: 64, Box: 4, PxWeight: 1, SGLD: OfficialSGLD()}
	bench2D(b, spec, runs)
}

// BenchmarkJEM2D is exact grid JEM on the same tasks and model, per training grid
// (64: the evaluation grid; 32 and 16: coarser training grids, evaluation still on 64),
// 64 runs of 5 steps per iteration; and the baseline (cross-entropy) for scale.
func BenchmarkJEM2D(b *testing.B) {
	hidden := []int{32, 32}
	runs, _ := gmmRuns(64, 2000, hidden, 1e-3)
	for _, g := range []int{64, 32, 16} {
		b.Run(fmt.Sprintf("grid=%d", g), func(b *testing.B) {
			spec := Spec2D{Hidden: hidden, K: 3, Method: JEM2D, Steps: 5, Batch: 64, Box: 4, PxWeight: 1, TrainGrid: g}
			bench2D(b, spec, runs)
		})
	}
	b.Run("baseline", func(b *testing.B) {
		spec := Spec2D{Hidden: hidden, K: 3, Method: Baseline2D, Steps: 50, Batch: 64, Box: 4}
		bench2D(b, spec, runs)
	})
}

// BenchmarkRecipes2D is one training step of every 2-D recipe on the shape of
// scripts/peers/torch_methods.py: gmm:3,2 tasks of 2000 draws, MLP 2-32-32-3 (tanh),
// data batch 64, Adam; sgld official (20 steps, buffer 10000, 5% restarts), mala and
// jarzynski 20 Langevin steps from η 0.01 (adapted), shortrun 20 Langevin steps of η
// 0.01 from uniform noise with L2 1, ed M 4, t 1, w 1, exact jem on a 32×32 grid; 256
// runs of 10 steps per iteration. Run it on one core (GOMAXPROCS=1) to read CPU per
// run-step (scripts/bench-recipes.sh sets that up beside the peer).
func BenchmarkRecipes2D(b *testing.B) {
	hidden := []int{32, 32}
	runs, _ := gmmRuns(256, 2000, hidden, 3e-3)
	lo := LangevinOptions{Steps: 20, Step: 0.01, Buffer: 10000, Reinit: 0.05, Noise: true, L2: 1, ESS: 0.5}
	for _, c := range []struct {
		name string
		m    Method2D
	}{{"sgld", SGLD2D}, {"mala", MALA2D}, {"jarzynski", Jarzynski2D}, {"ed", ED2D}, {"shortrun", ShortRun2D}, {"jem", JEM2D}} {
		b.Run(c.name, func(b *testing.B) {
			o := lo
			o.Adapt = c.m != ShortRun2D
			spec := Spec2D{Hidden: hidden, K: 3, Method: c.m, Steps: 10, Batch: 64, Box: 5, PxWeight: 1, TrainGrid: 32,
				SGLD: OfficialSGLD(), Langevin: o, ED: DefaultED()}
			bench2D(b, spec, runs)
		})
	}
}

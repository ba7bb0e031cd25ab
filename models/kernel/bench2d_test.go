package kernel

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// bench2D trains runs for spec.Steps steps per iteration and reports CPU milliseconds
// per run-step (the per-run setup is included, amortised over spec.Steps).
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

// BenchmarkJEM2D is exact grid JEM on gmm:3,2 tasks of 2000 draws, MLP 2-32-32-3
// (tanh), data batch 64, Adam (the recipes' benchmarks, BenchmarkRecipes2D and
// BenchmarkSGLDPlane, are in methods/all/bench_test.go), per training grid
// (64: the evaluation grid; 32 and 16: coarser training grids, evaluation still on 64),
// 64 runs of 5 steps per iteration; and the baseline (cross-entropy) for scale.
func BenchmarkJEM2D(b *testing.B) {
	hidden := []int{32, 32}
	runs, _ := gmmRuns(64, 2000, hidden, 1e-3)
	for _, g := range []int{64, 32, 16} {
		b.Run(fmt.Sprintf("grid=%d", g), func(b *testing.B) {
			spec := Spec2D{Hidden: hidden, K: 3, Exact: true, Steps: 5, Batch: 64, Box: 4, PxWeight: 1, TrainGrid: g}
			bench2D(b, spec, runs)
		})
	}
	b.Run("baseline", func(b *testing.B) {
		spec := Spec2D{Hidden: hidden, K: 3, Steps: 50, Batch: 64, Box: 4}
		bench2D(b, spec, runs)
	})
}

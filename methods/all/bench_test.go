package all_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// cpuSeconds is the process's CPU time (user + system), as models/kernel's benchmarks
// read it.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// gmmRuns are R runs on gmm:3,2 tasks of n draws each, the runs of models/kernel's
// BenchmarkJEM2D (the same task, data, parameter and run seeds).
func gmmRuns(R, n int, hidden []int, lr float32) []kernel.Run2D {
	spec, err := prob.ParseTaskSpec("gmm:3,2")
	if err != nil {
		panic(err)
	}
	runs := make([]kernel.Run2D, R)
	for i := range runs {
		task := spec.Draw(prob.Seed(7, uint64(i)))
		d := task.Sample(prob.Seed(8, uint64(i)), n)
		r := kernel.Run2D{Seed: prob.Seed(9, uint64(i)), Theta: kernel.InitMLP2D(uint64(i), hidden, 3), LR: lr, Y: d.Y}
		for j := range d.Y {
			r.X0 = append(r.X0, float32(d.X0[j]))
			r.X1 = append(r.X1, float32(d.X1[j]))
		}
		runs[i] = r
	}
	return runs
}

// BenchmarkRecipes2D is one training step of every 2-D recipe on the shape of
// scripts/peers/torch_methods.py: gmm:3,2 tasks of 2000 draws, MLP 2-32-32-3 (tanh),
// data batch 64, box 5, Adam lr 3e-3, 256 runs of 10 steps per iteration. Each
// method's Spec2D is set by its registered plane hook at schemas.DefaultGrid() (its
// default options: sgld official, 20 steps, buffer 10000, 5% restarts; mala and
// jarzynski 20 Langevin steps from η 0.01, adapted; shortrun 20 steps of η 0.01 from
// uniform noise with L2 1; ed M 4, t 1, w 1; exact jem on a 32×32 grid; nce, tre,
// dsm, snl, drl at theirs). Run it on one core (GOMAXPROCS=1) to read CPU per run-step
// (scripts/bench-recipes.sh sets that up beside the peer).
func BenchmarkRecipes2D(b *testing.B) {
	hidden := []int{32, 32}
	runs := gmmRuns(256, 2000, hidden, 3e-3)
	for _, name := range []string{"sgld", "mala", "jarzynski", "ed", "shortrun", "jem", "nce", "tre", "dsm", "snl", "drl"} {
		b.Run(name, func(b *testing.B) {
			bench2D(b, planeSpec(b, name, kernel.Spec2D{Hidden: hidden, K: 3, Steps: 10, Batch: 64, Box: 5, PxWeight: 1}), runs)
		})
	}
}

// BenchmarkSGLDPlane is SGLD-JEM training (sgld's plane hook at its defaults: official,
// 20 SGLD steps of lr 1 and std 0.01, 64 negatives from a replay buffer of 10000 per
// run with 5% uniform restarts) on gmm:3,2 tasks with 2000 draws each: MLP 2-32-32-3
// (tanh), data batch 64, box 4, Adam, 1,024 runs of 10 steps per iteration: the shape
// of ../shared/peers/torch_sgld.py (which uses swish). Run it on one core
// (GOMAXPROCS=1) to read CPU per run-step (scripts/bench-sgld.sh).
func BenchmarkSGLDPlane(b *testing.B) {
	hidden := []int{32, 32}
	runs := gmmRuns(1024, 2000, hidden, 1e-3)
	bench2D(b, planeSpec(b, "sgld", kernel.Spec2D{Hidden: hidden, K: 3, Steps: 10, Batch: 64, Box: 4, PxWeight: 1}), runs)
}

// planeSpec is base with method name's part set by its plane hook at the default grid.
func planeSpec(b *testing.B, name string, base kernel.Spec2D) kernel.Spec2D {
	hook, ok := methods.Plane.Of(name)
	if !ok {
		b.Fatalf("%s has no plane hook", name)
	}
	if err := hook(schemas.DefaultGrid(), &base); err != nil {
		b.Fatal(err)
	}
	return base
}

// bench2D trains runs for spec.Steps steps per iteration and reports CPU milliseconds
// per run-step (models/kernel's bench2D: the per-run setup is amortised over
// spec.Steps).
func bench2D(b *testing.B, spec kernel.Spec2D, runs []kernel.Run2D) {
	ctx := context.Background()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	for range b.N {
		res, err := kernel.Train2D(ctx, spec, runs)
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

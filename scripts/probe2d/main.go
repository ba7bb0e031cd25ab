// Command probe2d reproduces the SGLD probe's 2-D finding (../shared/research/sgld_probe.md
// §1) with the fused kernels: it draws T tasks, N draws each, and trains every method on
// the same tasks, draws and initial parameters (paired), then prints the exact KL of the
// joint, the marginal q(x) and the conditional on the 64×64 grid per method.
//
//	GOEXPERIMENT=simd go run ./scripts/probe2d --tasks=100 --task=gmm:3,2
//
// Methods (--methods, comma-separated): any registered method with a plane hook, its
// options given by their axis keys (every other option at its default; train_grid 64,
// the evaluation grid):
//
//	NAME[:KEY=VALUE…][:shift]      e.g. baseline, jem:train_grid=16:shift, oracle:train_grid=16,
//	                               sgld:sgld_preset=langevin:sgld_lr=0.005:sgld_steps=20:sgld_clamp=true
//
// Each method's part of the spec is set by its registered plane hook (methods.Plane), the
// pipeline's, after its own validation; "shift" shifts exact JEM's training grid per step
// (the probe's own choice: unshifted unless asked). A method that trains on the truth
// itself (the Fresh role: oracle) gets fresh draws every step.
//
// Not part of the pipeline; a research probe for issue 9.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/jemcheck/jemcheck/methods"
	_ "github.com/jemcheck/jemcheck/methods/all" // the methods' hooks
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

type method struct {
	name string
	spec kernel.Spec2D
	orac bool
}

func parseMethod(s string, base kernel.Spec2D) (method, error) {
	parts := strings.Split(s, ":")
	m := method{name: s, spec: base}
	g := schemas.DefaultGrid()
	g.TrainGrid = 64
	name, shift := parts[0], false
	meth, ok := methods.Lookup(name)
	if !ok {
		return m, fmt.Errorf("unknown method %q", name)
	}
	for _, kv := range parts[1:] {
		if kv == "shift" {
			shift = true
			continue
		}
		key, val, ok := strings.Cut(kv, "=")
		a, known := schemas.AxisByKey(key)
		if !ok || !known {
			return m, fmt.Errorf("method %q: %q is not KEY=VALUE of an option's axis", s, kv)
		}
		var x any
		var err error
		switch a.Field.Default().(type) {
		case int:
			x, err = strconv.Atoi(val)
		case float64:
			x, err = strconv.ParseFloat(val, 64)
		case bool:
			x, err = strconv.ParseBool(val)
		default:
			x = val
		}
		if err != nil {
			return m, fmt.Errorf("method %q: %s wants a %s", s, key, a.Type())
		}
		a.Field.Set(&g, x)
	}
	if meth.Validate != nil {
		if err := meth.Validate(g); err != nil {
			return m, fmt.Errorf("method %q: %w", s, err)
		}
	}
	hook, ok := methods.Plane.Of(name)
	if !ok {
		return m, fmt.Errorf("method %q: %s has no plane hook", s, name)
	}
	if err := hook(g, &m.spec); err != nil {
		return m, fmt.Errorf("method %q: %w", s, err)
	}
	m.spec.ShiftGrid = m.spec.Exact && shift
	m.orac = meth.Fresh
	return m, nil
}

func main() {
	tasks := flag.Int("tasks", 100, "tasks (one run per task and method)")
	taskS := flag.String("task", "gmm:3,2", "gmm:K,C, moons:SIGMA or circles:SIGMA")
	methods := flag.String("methods", "baseline,jem,jem:train_grid=16,oracle:train_grid=16,sgld,sgld:sgld_preset=langevin:sgld_lr=0.005", "methods")
	n := flag.Int("n", 2000, "draws per task")
	steps := flag.Int("steps", 1500, "Adam steps")
	lr := flag.Float64("lr", 3e-3, "Adam learning rate")
	batch := flag.Int("batch", 64, "data batch (and negatives)")
	hiddenS := flag.String("hidden", "32,32", "tanh hidden widths")
	seed := flag.Uint64("seed", 1, "seed")
	decay := flag.Float64("decay", 0, "share of the steps at the end over which the Adam rate falls linearly to 0")
	box := flag.Float64("box", 4, "half-width of the box and grid")
	flag.Parse()
	if err := run(*tasks, *taskS, *methods, *n, *steps, float32(*lr), *batch, *hiddenS, *seed, float32(*decay), *box); err != nil {
		fmt.Fprintln(os.Stderr, "probe2d:", err)
		os.Exit(2)
	}
}

func run(T int, taskS, methodsS string, n, steps int, lr float32, batch int, hiddenS string, seed uint64, decay float32, box float64) error {
	ts, err := prob.ParseTaskSpec(taskS)
	if err != nil {
		return err
	}
	var hidden []int
	for _, f := range strings.Split(hiddenS, ",") {
		h, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("hidden %q", hiddenS)
		}
		hidden = append(hidden, h)
	}
	base := kernel.Spec2D{Hidden: hidden, K: ts.K, Steps: steps, Batch: batch, Box: float32(box), PxWeight: 1, Decay: decay}
	var ms []method
	for _, s := range strings.Split(methodsS, ",") {
		m, err := parseMethod(s, base)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	g := prob.Grid{G: prob.DefaultGrid.G, Box: box}
	taskL := make([]prob.Task2D, T)
	truth := make([][]float64, T)
	runs := make([]kernel.Run2D, T)
	bayes := 0.0
	for i := range T {
		taskL[i] = ts.Draw(prob.Seed(seed, 1, uint64(i)))
		truth[i] = taskL[i].Truth(g)
		bayes += prob.BayesAccuracy(truth[i], g.Cells(), ts.K) / float64(T)
		d := taskL[i].Sample(prob.Seed(seed, 2, uint64(i)), n)
		r := kernel.Run2D{Seed: prob.Seed(seed, 3, uint64(i)), Theta: kernel.InitMLP2D(prob.Seed(seed, 4, uint64(i)), hidden, ts.K), LR: lr, Y: d.Y}
		for j := range d.Y {
			r.X0 = append(r.X0, float32(d.X0[j]))
			r.X1 = append(r.X1, float32(d.X1[j]))
		}
		runs[i] = r
	}
	fmt.Printf("probe2d: %d tasks %s, N=%d, MLP 2-%s-%d tanh, Adam lr %g, %d steps, batch %d, grid %dx%d on [-%g,%g]^2, Bayes accuracy %.3f\n",
		T, taskS, n, hiddenS, ts.K, lr, steps, batch, g.G, g.G, g.Box, g.Box, bayes)
	fmt.Printf("%-24s %9s %9s %9s %9s %9s %9s %9s %6s %6s %6s %8s %8s\n", "method", "joint", "median", "p90", "marginal", "cond", "acc", "in_box", "kl>10", "div", "n", "cpu_s", "ms/step")
	for _, m := range ms {
		rs := slices.Clone(runs)
		if m.orac {
			for i := range rs {
				task := taskL[i]
				rs[i].Fresh = func(rng *rand.Rand, x0, x1 []float32, y []int32) {
					s := task.Sample(rng.Uint64(), len(y))
					for j := range y {
						x0[j], x1[j], y[j] = float32(s.X0[j]), float32(s.X1[j]), s.Y[j]
					}
				}
			}
		}
		c0 := cpuSeconds()
		res, err := kernel.Train2D(context.Background(), m.spec, rs)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		cpu := cpuSeconds() - c0
		var joints []float64
		var sj, sm, sc, acc, inBox float64
		div, ok := 0, 0
		for i, r := range res {
			lg, err := kernel.CellLogits(hidden, ts.K, r.Theta, g.G, g.Box)
			if err != nil {
				return err
			}
			q := prob.GridJoint(lg)
			j, mm, c := prob.GridKL(truth[i], q, ts.K)
			joints = append(joints, j)
			inBox += r.InBox / float64(len(res))
			if r.Diverged {
				div++
				continue
			}
			ok++
			sj += j
			sm += mm
			sc += c
			acc += prob.Accuracy(truth[i], q, g.Cells(), ts.K)
		}
		d := math.Max(1, float64(ok))
		big := 0
		for _, j := range joints {
			if j > 10 {
				big++
			}
		}
		fmt.Printf("%-24s %9.4f %9.4f %9.4f %9.4f %9.4f %9.3f %9.3f %6d %6d %6d %8.1f %8.3f\n", m.name, sj/d, prob.Median(joints), prob.Quantile(joints, 0.9),
			sm/d, sc/d, acc/d, inBox, big, div, len(res), cpu, 1000*cpu/float64(len(res)*steps))
	}
	fmt.Println("joint/marginal/cond/acc: means over the runs that did not diverge; median, p90, kl>10 (the probe's blow-up count): over all runs; in_box: the replay buffer's share inside the box (sgld); ms/step: CPU per run-step incl. setup")
	return nil
}

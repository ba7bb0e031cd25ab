// Command gpucheck is the device check of the convolutional JEM (models/cnn) on a GoMLX
// device backend such as xla:cuda (docs/scale.md, "The CNN on a GPU"):
//
//  1. agreement: the same parameters evaluated on the device and on the pure-Go backend
//     (logits, LSE_y f(x) and its input gradient), and the same 10 training steps from
//     the same start on both (every method with an images hook, at the default grid's
//     options: baseline, sgld, ed, dsm, nce), on exact draws of an images task's truth
//     (models/prob/mfa);
//  2. speed: ms per training step on the device (every such method; sgld with 20 SGLD
//     steps) for each side S, the difference of an N- and a 2N-step run after a 1-step warm-up
//     (no compile counted), beside the pure-Go backend's on the same
//     machine (fewer steps) — the PyTorch peer (scripts/peers/torch_cnn.py --device) is
//     timed by the calling script in the same run.
//
// Build it with cgo and -tags xla (scripts/gpu-check.sh does); it prints one line per
// measure, "key value ...", and exits 1 when an agreement check fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
)

// imageRecipe is a registered method's images hook (methods.Images), at its defaults.
type imageRecipe struct {
	name string
	hook func(schemas.Grid, *cnn.TrainOptions) error
}

// imageRecipes are the images hooks of every registered method that trains on images
// (methods.For(KindImages): the baseline, the paper's sgld and the sampler-free
// recipes), so that a new method's CNN objective is checked on the device too.
func imageRecipes() ([]imageRecipe, error) {
	names := methods.For(methods.KindImages)
	out := make([]imageRecipe, 0, len(names))
	for _, n := range names {
		h, ok := methods.Images.Of(n)
		if !ok {
			return nil, fmt.Errorf("method %s has no images hook", n)
		}
		out = append(out, imageRecipe{name: n, hook: h})
	}
	return out, nil
}

type config struct {
	backend   string
	model     string
	sides     []int
	k         int
	batch     int
	steps     int // timed device steps per case
	goSteps   int // timed pure-Go steps per case
	agreeTol  float64
	trainTol  float64
	agreeSide int
}

func main() {
	var c config
	var sides string
	flag.StringVar(&c.backend, "backend", "xla:cuda", "GoMLX device backend configuration")
	flag.StringVar(&c.model, "model", "cnn:16,32", "CNN (models/cnn spec)")
	flag.StringVar(&sides, "sides", "16,28", "image sides S to time (D = S²)")
	flag.IntVar(&c.k, "k", 10, "classes")
	flag.IntVar(&c.batch, "batch", 64, "minibatch")
	flag.IntVar(&c.steps, "steps", 200, "timed device steps per case")
	flag.IntVar(&c.goSteps, "go_steps", 10, "timed pure-Go steps per case (0: skip)")
	flag.Float64Var(&c.agreeTol, "tol", 1e-3, "relative tolerance of the evaluation agreement")
	flag.Float64Var(&c.trainTol, "train_tol", 2e-2, "relative tolerance (L2) of the parameter update after 10 steps (jem-sgld: 5×; its 20 SGLD steps of size 1 amplify TF32-level differences)")
	flag.IntVar(&c.agreeSide, "agree_side", 28, "image side of the agreement checks")
	flag.Parse()
	for _, f := range strings.Split(sides, ",") {
		s, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintf(os.Stderr, "gpucheck: --sides: %v\n", err)
			os.Exit(2)
		}
		c.sides = append(c.sides, s)
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintf(os.Stderr, "gpucheck: %v\n", err)
		os.Exit(1)
	}
}

// data is n exact draws of the truth of images:S,K at seed 1.
func data(S, K, n int) (cnn.Data, error) {
	tr, err := mfa.New(1, mfa.DefaultSpec(S, K))
	if err != nil {
		return cnn.Data{}, err
	}
	x, y := tr.Sample(prob.NewRand(2), n)
	d := cnn.Data{X: make([]float32, len(x)), Y: make([]int, len(y)), S: S, K: K}
	for i, v := range x {
		d.X[i] = float32(v)
	}
	for i, v := range y {
		d.Y[i] = int(v)
	}
	return d, nil
}

// relDiff is max |a − b| / max(max |b|, 1e-12).
func relDiff(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1e-12)
}

func run(ctx context.Context, c config) error {
	sp, err := cnn.Parse(c.model)
	if err != nil {
		return err
	}
	failed := false
	check := func(name string, v, tol float64) {
		ok := v <= tol
		failed = failed || !ok
		fmt.Printf("agree %s rel %.3g tol %.3g ok %v\n", name, v, tol, ok)
	}

	// 1. Agreement on S = agreeSide.
	S, K := c.agreeSide, c.k
	d, err := data(S, K, 512)
	if err != nil {
		return err
	}
	p, err := cnn.Init(sp, S, K, 7)
	if err != nil {
		return err
	}
	n := 256
	x := d.X[:n*S*S]
	lg, err := cnn.LogitsOn("", p, x, n)
	if err != nil {
		return fmt.Errorf("go logits: %w", err)
	}
	ld, err := cnn.LogitsOn(c.backend, p, x, n)
	if err != nil {
		return fmt.Errorf("%s logits: %w", c.backend, err)
	}
	check("logits", relDiff(ld, lg), c.agreeTol)
	eg, gg, err := cnn.EnergyOn("", p, x, n, true)
	if err != nil {
		return fmt.Errorf("go energy: %w", err)
	}
	ed, gd, err := cnn.EnergyOn(c.backend, p, x, n, true)
	if err != nil {
		return fmt.Errorf("%s energy: %w", c.backend, err)
	}
	check("lse", relDiff(ed, eg), c.agreeTol)
	check("lse_input_grad", relDiff(gd, gg), c.agreeTol)
	recipes, err := imageRecipes()
	if err != nil {
		return err
	}
	for _, rc := range recipes {
		m := rc.name
		o := cnn.TrainOptions{Steps: 10, Batch: c.batch, LR: 1e-3, Seed: 3, Init: &p}
		if err := rc.hook(schemas.DefaultGrid(), &o); err != nil {
			return err
		}
		og := o
		pg, sg, err := cnn.Train(ctx, sp, d, og)
		if err != nil {
			return fmt.Errorf("go train %s: %w", m, err)
		}
		o.Backend = c.backend
		pd, sd, err := cnn.Train(ctx, sp, d, o)
		if err != nil {
			return fmt.Errorf("%s train %s: %w", c.backend, m, err)
		}
		// Adam normalises each coordinate's step, so a near-zero gradient that differs in
		// the last bits moves that coordinate by up to lr either way: compare the whole
		// update, ‖Δθ_device − Δθ_go‖ / ‖Δθ_go‖, not coordinates.
		var dd, dn float64
		for i := range pg.Tensors {
			for j := range pg.Tensors[i] {
				ug := float64(pg.Tensors[i][j]) - float64(p.Tensors[i][j])
				ud := float64(pd.Tensors[i][j]) - float64(p.Tensors[i][j])
				dd += (ud - ug) * (ud - ug)
				dn += ug * ug
			}
		}
		worst := math.Sqrt(dd / max(dn, 1e-300))
		tol := c.trainTol
		if o.Objective != nil {
			tol *= 5
		}
		check("train10_"+m, worst, tol)
		fmt.Printf("loss10 %s go %.5f device %.5f\n", m, sg.Loss[len(sg.Loss)-1], sd.Loss[len(sd.Loss)-1])
	}

	// 2. Speed.
	for _, S := range c.sides {
		d, err := data(S, c.k, 1024)
		if err != nil {
			return err
		}
		for _, rc := range recipes {
			m := rc.name
			for _, b := range []struct {
				name  string
				steps int
			}{{c.backend, c.steps}, {"go", c.goSteps}} {
				if b.steps <= 0 {
					continue
				}
				// Each Train call builds and compiles its graph, and a device backend caches
				// compiled executables: warm up with 1 step, then time N and 2N steps and
				// take the difference, so neither compile is counted.
				o := cnn.TrainOptions{Steps: 1, Batch: c.batch, LR: 1e-4, Seed: 1}
				if err := rc.hook(schemas.DefaultGrid(), &o); err != nil {
					return err
				}
				if b.name != "go" {
					o.Backend = b.name
				}
				var st cnn.Stats
				var took [2]time.Duration
				for i, steps := range []int{1, b.steps, 2 * b.steps} {
					o.Steps = steps
					t0 := time.Now()
					if _, st, err = cnn.Train(ctx, sp, d, o); err != nil {
						return fmt.Errorf("%s %s S=%d: %w", b.name, m, S, err)
					}
					if i > 0 {
						took[i-1] = time.Since(t0)
					}
				}
				ms := float64((took[1] - took[0]).Microseconds()) / 1000 / float64(b.steps)
				fmt.Printf("speed backend %s method %s S %d model %s batch %d steps %d ms_per_step %.3f diverged %v\n",
					b.name, m, S, c.model, c.batch, b.steps, ms, st.Diverged)
			}
		}
	}
	if failed {
		return fmt.Errorf("an agreement check failed")
	}
	return nil
}

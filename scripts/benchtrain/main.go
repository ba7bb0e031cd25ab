// Command benchtrain measures this project's training throughput on the standard
// control sweep without the pipeline around it: T random 2×2 uniform tables, N samples
// each (as multinomial counts), a linear model, full-batch Adam, baseline and JEM,
// trained through models.Trainer in batches of --train_batch runs. It prints runs/s
// per method and the mean joint KL against the floor, in the same form as the peers.
// scripts/bench.sh runs it next to the PyTorch peer.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/prob"
)

var (
	tables     = flag.Int("tables", 10000, "tables")
	n          = flag.Int64("n", 1000, "samples per table")
	steps      = flag.Int("steps", 300, "Adam steps")
	lr         = flag.Float64("lr", 0.05, "learning rate")
	trainBatch = flag.Int("train_batch", 4096, "runs per Train call")
	backend    = flag.String("backend", "", "GoMLX backend")
	seed       = flag.Uint64("seed", 1, "seed")
)

func main() {
	flag.Parse()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchtrain:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context) error {
	tr, err := models.NewTrainer(*backend)
	if err != nil {
		return err
	}
	defer tr.Close()
	gen, _ := prob.ParseGenerator("uniform")
	ps := make([][]float64, *tables)
	counts := make([][]float64, *tables)
	for t := range ps {
		ps[t] = gen.Draw(prob.NewRand(prob.Seed(*seed, 1, uint64(t))), 2, 2)
		c := prob.Multinomial(prob.NewRand(prob.Seed(*seed, 2, uint64(t))), *n, ps[t])
		counts[t] = make([]float64, len(c))
		for i, v := range c {
			counts[t][i] = float64(v)
		}
	}
	shape := models.Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: *steps}
	// Warm-up: compile the graphs for the batch sizes used below.
	if _, err := tr.Train(ctx, shape, []models.Run{{Counts: counts[0], LR: *lr, Seed: 1}}); err != nil {
		return err
	}
	floor := prob.Floor(4, *n)
	for _, method := range []string{"baseline", "jem"} {
		px := 0.0
		if method == "jem" {
			px = 1
		}
		start := time.Now()
		kl := 0.0
		for lo := 0; lo < *tables; lo += *trainBatch {
			hi := min(lo+*trainBatch, *tables)
			runs := make([]models.Run, hi-lo)
			for i := range runs {
				runs[i] = models.Run{Counts: counts[lo+i], LR: *lr, PxWeight: px, Seed: prob.Seed(*seed, 3, uint64(lo+i))}
			}
			outs, err := tr.Train(ctx, shape, runs)
			if err != nil {
				return err
			}
			for i, o := range outs {
				kl += prob.KL(ps[lo+i], prob.Softmax(o.Logits))
			}
		}
		wall := time.Since(start).Seconds()
		fmt.Printf("jemcheck method=%s tables=%d n=%d steps=%d KL_joint_mean=%.4f floor=%.4f wall_s=%.3f runs_per_s=%.1f\n",
			method, *tables, *n, *steps, kl/float64(*tables), floor, wall, float64(*tables)/wall)
	}
	return nil
}

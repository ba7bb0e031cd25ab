package models

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestTmpMLPTiming(t *testing.T) {
	for _, shp := range []string{"8x4"} {
		var X, K int
		fmt.Sscanf(shp, "%dx%d", &X, &K)
		shape := Shape{XValues: X, Classes: K, Encoding: "onehot", Model: "mlp:16,16", Steps: 500}
		tr := newTestTrainer(t)
		rng := rand.New(rand.NewPCG(3, 3))
		runs := make([]Run, 150)
		for i := range runs {
			s := drawSamples(rng, randomTable(rng, X*K), 300)
			runs[i] = Run{Counts: countsOf(s, X*K), LR: 0.02, PxWeight: float64(min(i%3, 1)), Seed: uint64(i)}
		}
		for rep := range 2 {
			t0 := time.Now()
			c0 := cpuSeconds()
			if _, err := tr.Train(context.Background(), shape, runs); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s rep %d: wall %.2fs cpu %.2fs", shp, rep, time.Since(t0).Seconds(), cpuSeconds()-c0)
		}
	}
}

package cnn

import (
	"context"
	"testing"
)

// Benchmarks for scripts/bench-cnn.sh: cnn:16,32 on 16×16 images, K=10, batch 64, the
// same step PyTorch times in scripts/peers/torch_cnn.py. Run with GOMAXPROCS=1 for one
// thread. Each b.N-step Train call includes one graph build and compile (a few tens of
// ms), amortised over b.N; -benchtime=Nx with N ≥ 20 keeps it small.

const benchModel = "cnn:16,32"

func benchData() Data {
	d := barRing(1024, 16, 0.5, 1)
	d.K = 10
	for i := range d.Y {
		d.Y[i] = i % 10
	}
	return d
}

func benchTrain(b *testing.B, opts TrainOptions) {
	sp, _ := Parse(benchModel)
	d := benchData()
	opts.Batch, opts.LR, opts.Seed = 64, 1e-4, 1
	// Compile once outside the timer (a 1-step run), then time b.N steps.
	o := opts
	o.Steps = 1
	if _, _, err := Train(context.Background(), sp, d, o); err != nil {
		b.Fatal(err)
	}
	opts.Steps = b.N
	b.ResetTimer()
	_, st, err := Train(context.Background(), sp, d, opts)
	if err != nil || st.Diverged {
		b.Fatal(err, st.Diverged)
	}
}

func BenchmarkCNN(b *testing.B) {
	for _, ad := range []struct {
		name     string
		autodiff bool
	}{{"hand", false}, {"autodiff", true}} {
		b.Run("baseline/"+ad.name, func(b *testing.B) {
			benchTrain(b, TrainOptions{Autodiff: ad.autodiff})
		})
		b.Run("jem-sgld20/"+ad.name, func(b *testing.B) {
			benchTrain(b, TrainOptions{Objective: SGLD{Steps: 20}, Autodiff: ad.autodiff})
		})
		// The sampler-free recipes at their defaults (ed: M 4, t 0.05; nce: ν 10; dsm: σ 0.2,
		// hand only: its autodiff form needs Pad, missing on SimpleGo).
		b.Run("ed4/"+ad.name, func(b *testing.B) {
			benchTrain(b, TrainOptions{Objective: ED{T: 0.05}, Autodiff: ad.autodiff})
		})
		b.Run("nce10/"+ad.name, func(b *testing.B) {
			benchTrain(b, TrainOptions{Objective: NCE{}, Autodiff: ad.autodiff})
		})
		if !ad.autodiff {
			b.Run("dsm/"+ad.name, func(b *testing.B) { benchTrain(b, TrainOptions{Objective: DSM{}}) })
		}
		// One SGLD step's work: forward and input gradient of LSE on the batch, one graph call.
		b.Run("sgld-step/"+ad.name, func(b *testing.B) {
			sp, _ := Parse(benchModel)
			p, _ := Init(sp, 16, 10, 1)
			x := benchData().X[:64*256]
			if _, err := evaluate("", p, x, 64, evalEnergyGrad, ad.autodiff); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := evaluate("", p, x, 64, evalEnergyGrad, ad.autodiff); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

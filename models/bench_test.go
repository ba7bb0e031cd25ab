package models

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is the user+system CPU time of this process so far. On a shared machine
// runs per CPU-second is a steadier figure than runs per wall-second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// timeTrain runs Train b.N times and reports runs/s (wall) and runs/cpu_s.
func timeTrain(b *testing.B, tr *Trainer, shape Shape, runs []Run) {
	ctx := context.Background()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	for range b.N {
		if _, err := tr.Train(ctx, shape, runs); err != nil {
			b.Fatal(err)
		}
	}
	wall, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	b.ReportMetric(float64(len(runs)*b.N)/wall, "runs/s")
	if cpu > 0 {
		b.ReportMetric(float64(len(runs)*b.N)/cpu, "runs/cpu_s")
	}
}

// sweepRuns builds the standard control sweep: random 2x2 tables (4 uniforms,
// normalised), N samples drawn from each, counts as cell weights.
func sweepRuns(R, N int, lr, w float64, seed uint64) []Run {
	rng := rand.New(rand.NewPCG(seed, 1))
	runs := make([]Run, R)
	for i := range runs {
		p := make([]float64, 4)
		s := 0.0
		for j := range p {
			p[j] = rng.Float64()
			s += p[j]
		}
		for j := range p {
			p[j] /= s
		}
		c := make([]float64, 4)
		for range N {
			u, k, acc := rng.Float64(), 0, p[0]
			for u > acc && k < 3 {
				k++
				acc += p[k]
			}
			c[k]++
		}
		runs[i] = Run{Counts: c, LR: lr, PxWeight: w, Seed: uint64(i) + seed*1_000_003}
	}
	return runs
}

// BenchmarkTrain measures the standard sweep: 2x2 tables, linear scalar model, full
// batch, 300 Adam steps, lr 0.05, R runs per Train call (one graph batch), on GoMLX
// (go:ops_sequential, the path before the fused kernels) and on the default backend
// (the fused kernel). Run with GOMAXPROCS=1 for the one-core figure.
func BenchmarkTrain(b *testing.B) {
	shape := Shape{XValues: 2, Classes: 2, Encoding: EncodingScalar, Model: "linear", Steps: 300}
	for _, backend := range []struct{ name, config string }{{"gomlx", DefaultBackend}, {"default", ""}} {
		for _, method := range []struct {
			name string
			w    float64 // -1: the pipeline's mix, one third each of baseline, jem and oracle (w=1)
		}{{"jem", 1}, {"baseline", 0}, {"mixed", -1}} {
			for _, R := range []int{256, 1024, 4096, 16384} {
				benchTrainSweep(b, backend.name, backend.config, shape, method.name, method.w, R)
			}
		}
	}
}

func benchTrainSweep(b *testing.B, name, backend string, shape Shape, method string, w float64, R int) {
	b.Run(fmt.Sprintf("%s/%s/R=%d", name, method, R), func(b *testing.B) {
		tr, err := NewTrainer(backend)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		tr.runsPerBatch = R
		runs := sweepRuns(R, 1000, 0.05, w, 7)
		if w < 0 {
			for i := range runs {
				runs[i].PxWeight = float64(min(i%3, 1))
			}
		}
		ctx := context.Background()
		if _, err := tr.Train(ctx, shape, runs); err != nil { // compile + warm-up
			b.Fatal(err)
		}
		timeTrain(b, tr, shape, runs)
	})
}

// BenchmarkTrainN shows the full-batch counts path is flat in N (samples per table):
// only the X*K cell weights enter the graph.
func BenchmarkTrainN(b *testing.B) {
	shape := Shape{XValues: 2, Classes: 2, Encoding: EncodingScalar, Model: "linear", Steps: 300}
	const R = 4096
	for _, N := range []int{100, 1000, 100000} {
		b.Run(fmt.Sprintf("jem/R=%d/N=%d", R, N), func(b *testing.B) {
			tr, err := NewTrainer(DefaultBackend)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			runs := sweepRuns(R, N, 0.05, 1, 7)
			ctx := context.Background()
			if _, err := tr.Train(ctx, shape, runs); err != nil {
				b.Fatal(err)
			}
			timeTrain(b, tr, shape, runs)
		})
	}
}

// BenchmarkUnroll measures the steps unrolled per graph call on the fast path, and the
// first-call cost (graph build + compile) of each setting.
func BenchmarkUnroll(b *testing.B) {
	shape := Shape{XValues: 2, Classes: 2, Encoding: EncodingScalar, Model: "linear", Steps: 300}
	for _, R := range []int{256, 4096} {
		for _, U := range []int{1, 5, 25, 100, 300} {
			b.Run(fmt.Sprintf("jem/R=%d/U=%d", R, U), func(b *testing.B) {
				tr, err := NewTrainer(DefaultBackend)
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				tr.unrollFast = U
				runs := sweepRuns(R, 1000, 0.05, 1, 7)
				ctx := context.Background()
				t0 := time.Now()
				if _, err := tr.Train(ctx, shape, runs); err != nil {
					b.Fatal(err)
				}
				first := time.Since(t0).Seconds()
				timeTrain(b, tr, shape, runs)
				b.ReportMetric(first*1000, "first_call_ms") // after timeTrain: ResetTimer drops metrics
			})
		}
	}
}

// BenchmarkTrainOther covers the other GoMLX paths (informational): minibatch SGD on
// the fast path, an MLP and a larger one-hot table on the autodiff path.
func BenchmarkTrainOther(b *testing.B) {
	cases := []struct {
		name  string
		shape Shape
		R     int
	}{
		{"linear_minibatch32", Shape{XValues: 2, Classes: 2, Encoding: EncodingScalar, Model: "linear", Steps: 300, BatchSize: 32}, 1024},
		{"linear_2x2_tensorpath", Shape{XValues: 2, Classes: 2, Encoding: EncodingScalar, Model: "linear", Steps: 300}, 1024},
		{"mlp16_2x2", Shape{XValues: 2, Classes: 2, Encoding: EncodingScalar, Model: "mlp:16", Steps: 300}, 1024},
		{"linear_onehot_16x8", Shape{XValues: 16, Classes: 8, Encoding: EncodingOneHot, Model: "linear", Steps: 300}, 1024},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/R=%d", c.name, c.R), func(b *testing.B) {
			tr, err := NewTrainer(DefaultBackend)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			tr.noFast = strings.HasSuffix(c.name, "tensorpath")
			rng := rand.New(rand.NewPCG(3, 3))
			XK := c.shape.XValues * c.shape.Classes
			runs := make([]Run, c.R)
			for i := range runs {
				s := drawSamples(rng, randomTable(rng, XK), 1000)
				runs[i] = Run{Counts: countsOf(s, XK), Samples: s, LR: 0.05, PxWeight: 1, Seed: uint64(i)}
			}
			if _, err := tr.Train(context.Background(), c.shape, runs); err != nil {
				b.Fatal(err)
			}
			timeTrain(b, tr, c.shape, runs)
		})
	}
}

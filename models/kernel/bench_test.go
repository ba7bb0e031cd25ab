package kernel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is the user+system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// benchRuns builds R runs of spec: random tables (uniforms, normalised), uniform(-1,1)
// (linear) or Glorot-uniform weights (MLP) from the run's index.
func benchRuns(spec Spec, R int, lr, w float32) []Run {
	rng := rand.New(rand.NewPCG(7, 1))
	XK := spec.X * spec.K
	runs := make([]Run, R)
	for i := range runs {
		c := make([]float32, XK)
		var s float32
		for j := range c {
			c[j] = rng.Float32()
			s += c[j]
		}
		for j := range c {
			c[j] /= s
		}
		th := make([]float32, spec.NumParams())
		for j := range th {
			th[j] = rng.Float32()*2 - 1
		}
		runs[i] = Run{Theta: th, LR: lr, PxWeight: w, Cells: c}
	}
	return runs
}

// flopsPerStep counts the floating-point operations of one training step of one run
// of spec (exp, tanh, sqrt and division count 1; the matrix products 2 per
// multiply-add), the figure behind the reported GFLOP/s.
func flopsPerStep(spec Spec, m mode) float64 {
	X, K := float64(spec.X), float64(spec.K)
	XK := X * K
	f := 0.0
	ls := spec.layers()
	P := float64(spec.NumParams())
	for li, d := range ls {
		in, out := float64(d.in), float64(d.out)
		switch {
		case li == 0 && spec.OneHot:
			f += X * out // row + bias
			f += X * out // dW copy (counted as one op) ...
		case li == 0:
			f += 2 * X * out
			f += 2 * X * out
		default:
			f += 2 * X * in * out    // forward
			f += 2 * X * in * out    // dW
			f += 2*X*in*out + 3*X*in // dh and tanh'
		}
		f += X * out // db
		if li < len(ls)-1 {
			f += X * out // tanh
		}
	}
	switch m {
	case modeJEM:
		f += 5*XK + 1 // max, sub, exp, sum, scale, then q - c
	case modeCE:
		f += 6*XK + X
	default:
		f += 11*XK + 2*X
	}
	return f + 10*P // Adam
}

func benchTrain(b *testing.B, spec Spec, runs []Run, m mode) {
	ctx := context.Background()
	if _, err := Train(ctx, spec, runs[:min(len(runs), 64)]); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	for range b.N {
		if _, err := Train(ctx, spec, runs); err != nil {
			b.Fatal(err)
		}
	}
	wall, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	n := float64(len(runs) * b.N)
	b.ReportMetric(n/wall, "runs/s")
	if cpu > 0 {
		b.ReportMetric(n/cpu, "runs/cpu_s")
		b.ReportMetric(n*float64(spec.Steps)*flopsPerStep(spec, m)/cpu/1e9, "GFLOP/cpu_s")
	}
}

// BenchmarkTable2x2 is the control sweep's training: 2×2 tables, linear scalar model,
// 300 full-batch Adam steps, lr 0.05, JEM and baseline.
func BenchmarkTable2x2(b *testing.B) {
	spec := Spec{X: 2, K: 2, Steps: 300, CheckEvery: 25}
	for _, c := range []struct {
		name string
		w    float32
	}{{"jem", 1}, {"baseline", 0}} {
		b.Run(fmt.Sprintf("%s/R=4096", c.name), func(b *testing.B) {
			benchTrain(b, spec, benchRuns(spec, 4096, 0.05, c.w), modeOf(c.w))
		})
	}
}

// BenchmarkTableMLP is the 8×4 one-hot MLP 16,16 tanh, 500 steps, JEM.
func BenchmarkTableMLP(b *testing.B) {
	spec := Spec{X: 8, K: 4, OneHot: true, Hidden: []int{16, 16}, Steps: 500, CheckEvery: 5}
	b.Run("8x4_onehot_16_16/jem/R=256", func(b *testing.B) {
		benchTrain(b, spec, benchRuns(spec, 256, 0.05, 1), modeJEM)
	})
}

// BenchmarkSGLDStep is one SGLD-JEM training step of an MLP 2-32-32-3 (tanh) with a
// data batch of 64 and 20 SGLD steps on 64 negatives drawn from a per-run replay buffer
// of 10000 (5% reinitialised uniformly on the box [-4,4]²), the shape of
// ../shared/peers/torch_sgld.py; it reports CPU milliseconds per run-step.
func BenchmarkSGLDStep(b *testing.B) {
	spec := SGLDSpec{H: 32, K: 3, B: 64, T: 20, StepSize: 1, Noise: 0.01, PxWeight: 1}
	const R, N, M = 8, 2000, 10000
	k, err := NewSGLD(spec)
	if err != nil {
		b.Fatal(err)
	}
	type state struct {
		run    *SGLDRun
		xs     []float32 // [2][N] data
		ys     []int32
		buf    []float32 // [M][2] replay buffer
		perm   []int32
		rng    *rand.Rand
		xd, xn []float32
		yd     []int32
		slots  []int32
	}
	rs := make([]*state, R)
	for i := range rs {
		theta, _, _, _ := sgldFixture(spec, uint64(i))
		rng := rand.New(rand.NewPCG(uint64(i), 77))
		s := &state{run: spec.NewSGLDRun(theta, 1e-3, rand.New(rand.NewPCG(uint64(i), 78))), rng: rng,
			xs: make([]float32, 2*N), ys: make([]int32, N), buf: make([]float32, 2*M), perm: make([]int32, M),
			xd: make([]float32, 2*spec.B), xn: make([]float32, 2*spec.B), yd: make([]int32, spec.B), slots: make([]int32, spec.B)}
		for j := range N {
			s.ys[j] = int32(rng.IntN(3))
			s.xs[j] = float32(rng.NormFloat64()*0.5) + float32(s.ys[j]) - 1
			s.xs[N+j] = float32(rng.NormFloat64() * 0.5)
		}
		for j := range s.buf {
			s.buf[j] = rng.Float32()*8 - 4
		}
		for j := range s.perm {
			s.perm[j] = int32(j)
		}
		rs[i] = s
	}
	step := func(s *state) {
		B := spec.B
		for p := range B { // data minibatch
			j := s.rng.IntN(N)
			s.xd[p], s.xd[B+p], s.yd[p] = s.xs[j], s.xs[N+j], s.ys[j]
		}
		for p := range B { // B distinct buffer slots (partial Fisher-Yates), 5% reinit
			q := p + s.rng.IntN(M-p)
			s.perm[p], s.perm[q] = s.perm[q], s.perm[p]
			slot := s.perm[p]
			s.slots[p] = slot
			if s.rng.Float32() < 0.05 {
				s.xn[p], s.xn[B+p] = s.rng.Float32()*8-4, s.rng.Float32()*8-4
			} else {
				s.xn[p], s.xn[B+p] = s.buf[2*slot], s.buf[2*slot+1]
			}
		}
		k.Step(s.run, s.xd, s.yd, s.xn)
		for p, slot := range s.slots {
			s.buf[2*slot], s.buf[2*slot+1] = s.xn[p], s.xn[B+p]
		}
	}
	for _, s := range rs {
		step(s)
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	for range b.N {
		for _, s := range rs {
			step(s)
		}
	}
	wall, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	n := float64(R * b.N)
	b.ReportMetric(1000*wall/n, "ms/run_step")
	if cpu > 0 {
		b.ReportMetric(1000*cpu/n, "ms_cpu/run_step")
		b.ReportMetric(n*spec.SGLDFlopsPerStep()/cpu/1e9, "GFLOP/cpu_s")
	}
}

package ais

import (
	"context"
	"math"
	"testing"
)

// diagGauss is f(x) = e^c·Π_j N(x_j; m_j, s_j²)·(unnormalised), evaluated in batches.
type diagGauss struct {
	m, prec []float64
	c       float64
}

func (g *diagGauss) Dim() int { return len(g.m) }

func (g *diagGauss) LogDensity(x, grad []float64) float64 {
	q := 0.0
	for j, v := range x {
		r := v - g.m[j]
		q += r * r * g.prec[j]
		if grad != nil {
			grad[j] = -r * g.prec[j]
		}
	}
	return g.c - 0.5*q
}

func (g *diagGauss) LogDensityBatch(x []float64, n int, out, grad []float64) {
	d := len(g.m)
	for i := range n {
		var gr []float64
		if grad != nil {
			gr = grad[i*d : (i+1)*d]
		}
		out[i] = g.LogDensity(x[i*d:(i+1)*d], gr)
	}
}

// BenchmarkForwardD256: one Forward run at D = 256 (64 chains, T = 100, fixed
// schedule from one pilot outside the timer) on a diagonal Gaussian (the AIS's own
// cost) and on an AR(1)-correlated one (O(D²) per evaluation: target-bound). ns/grad
// is per chain and leapfrog step (one target evaluation with gradient).
func BenchmarkForwardD256(b *testing.B) {
	const d, chains, T = 256, 64, 100
	mean := fill(d, func(j int) float64 { return 0.5 * math.Sin(float64(j)) })
	sd := fill(d, func(j int) float64 { return 0.5 + float64(j)/float64(d-1) })
	diag := &diagGauss{m: mean, prec: fill(d, func(j int) float64 { return 1 / (sd[j] * sd[j]) }), c: 3}
	for _, c := range []struct {
		name   string
		tgt    Target
		kernel Kernel
		leap   int
	}{
		{"diag/hmc-L5", diag, HMC, 5},
		{"diag/mala", diag, MALA, 1},
		{"ar1/hmc-L5", newGauss(mean, sd, 0.5, 3), HMC, 5},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := Options{Seed: 1, Chains: chains, Temps: T, Kernel: c.kernel}
			s, err := Tune(context.Background(), c.tgt, stdBase(d), o)
			if err != nil {
				b.Fatal(err)
			}
			o.Schedule = &s
			var e Estimate
			for b.Loop() {
				if e, err = Forward(context.Background(), c.tgt, stdBase(d), o); err != nil {
					b.Fatal(err)
				}
			}
			grads := float64(b.N) * chains * (T - 1) * float64(c.leap)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/grads, "ns/grad")
			b.ReportMetric(e.Accept, "accept")
		})
	}
}

package ais

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// TestGradients: the test targets' and the base's gradients against central
// differences (HMC is only valid with the true gradient).
func TestGradients(t *testing.T) {
	m1, m2 := []float64{-1, 0, 2}, []float64{1, 1, -1}
	base, _ := NewBase([]float64{1, -1, 0}, []float64{0.5, 2, 1})
	for _, c := range []struct {
		name string
		f    Target
	}{
		{"gauss", newGauss([]float64{0.3, -1, 2}, []float64{0.5, 1, 2}, 0.7, 1)},
		{"mixture", &mixture{w: []float64{0.4, 0.6}, s: []float64{0.7, 1.2}, m: [][]float64{m1, m2}, c: -1}},
		{"base", base},
	} {
		x := []float64{0.2, -0.4, 0.9}
		g := make([]float64, 3)
		c.f.LogDensity(x, g)
		for j := range x {
			const h = 1e-5
			xp := append([]float64(nil), x...)
			xm := append([]float64(nil), x...)
			xp[j] += h
			xm[j] -= h
			fd := (c.f.LogDensity(xp, nil) - c.f.LogDensity(xm, nil)) / (2 * h)
			if math.Abs(fd-g[j]) > 1e-6*max(1, math.Abs(fd)) {
				t.Errorf("%s: ∂_%d %v, finite difference %v", c.name, j, g[j], fd)
			}
		}
	}
}

type onlyBatch struct{ g *gauss }

func (o onlyBatch) Dim() int { return o.g.Dim() }
func (o onlyBatch) LogDensityBatch(x []float64, n int, out, grad []float64) {
	o.g.LogDensityBatch(x, n, out, grad)
}

// TestAdapters: AsBatch and FromBatch agree with the single-point density.
func TestAdapters(t *testing.T) {
	g := newGauss([]float64{0.3, -1}, []float64{0.5, 2}, 0.3, 1)
	if _, ok := AsBatch(g).(*gauss); !ok {
		t.Error("AsBatch wrapped a BatchTarget")
	}
	loop := AsBatch(shifted{g, 0})
	tg := FromBatch(onlyBatch{g})
	if _, ok := tg.(BatchTarget); !ok {
		t.Error("FromBatch's Target is not a BatchTarget")
	}
	x := []float64{0.1, 0.2, -1, 3, 2, 2}
	out, grad := make([]float64, 3), make([]float64, 6)
	loop.LogDensityBatch(x, 3, out, grad)
	for i := range 3 {
		g1 := make([]float64, 2)
		v := g.LogDensity(x[2*i:2*i+2], g1)
		g2 := make([]float64, 2)
		if w := tg.LogDensity(x[2*i:2*i+2], g2); v != out[i] || w != v || g1[0] != grad[2*i] || g1[1] != grad[2*i+1] || g2[0] != g1[0] || g2[1] != g1[1] {
			t.Errorf("row %d: %v, loop %v, FromBatch %v", i, v, out[i], w)
		}
	}
	loop.LogDensityBatch(x, 3, out, nil) // nil grad allowed
}

// TestBetas: every path runs 0 = β_0 < … < β_T = 1.
func TestBetas(t *testing.T) {
	for _, p := range []Path{Sigmoid, Geometric, Linear} {
		for _, T := range []int{1, 2, 10, 1000} {
			b := Betas(p, T, 0, 0)
			if len(b) != T+1 || b[0] != 0 || b[T] != 1 {
				t.Fatalf("%v T = %d: %v", p, T, b)
			}
			for i := 1; i <= T; i++ {
				if !(b[i] > b[i-1]) {
					t.Fatalf("%v T = %d: not increasing at %d: %v", p, T, i, b[i-1:i+1])
				}
			}
		}
	}
	if b := Betas(Geometric, 10, 0, 1e-3); math.Abs(b[1]-1e-3) > 1e-15 {
		t.Errorf("geometric β_1 = %v", b[1])
	}
}

// TestErrors: mismatched dimensions, bad schedules, too few draws and a cancelled
// context are errors.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	g := newGauss([]float64{0, 0}, []float64{1, 1}, 0, 0)
	if _, err := Forward(ctx, g, stdBase(3), Options{}); err == nil {
		t.Error("D mismatch accepted")
	}
	bad := Schedule{Betas: []float64{0, 0.5, 0.4, 1}, Step: []float64{1, 1, 1, 1}}
	if _, err := Forward(ctx, g, stdBase(2), Options{Schedule: &bad}); err == nil {
		t.Error("decreasing betas accepted")
	}
	if _, err := Reverse(ctx, g, stdBase(2), []float64{1, 2, 3}, Options{Temps: 5}); err == nil {
		t.Error("ragged draws accepted")
	}
	if _, err := NewBase([]float64{0}, []float64{0}); err == nil {
		t.Error("sd 0 accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Forward(cctx, g, stdBase(2), Options{Temps: 100}); err == nil {
		t.Error("cancelled context ignored")
	}
	if _, err := Forward(cctx, g, stdBase(2), Options{Temps: 100, Schedule: &Schedule{Betas: Betas(Linear, 100, 0, 0), Step: fill(101, func(int) float64 { return 0.5 })}}); err == nil {
		t.Error("cancelled context ignored with a fixed schedule")
	}
}

// TestFitBase: FitBase recovers the mean and sd of Gaussian data, times inflate.
func TestFitBase(t *testing.T) {
	g := newGauss([]float64{1, -3}, []float64{0.5, 2}, 0, 0)
	b, err := FitBase(g.draws(prob.NewRand(1), 20000), 2, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{0.75, 3} {
		if math.Abs(b.SD[j]-want) > 0.03*want || math.Abs(b.Mean[j]-g.m[j]) > 0.05 {
			t.Errorf("coordinate %d: mean %v, sd %v (want %v, %v)", j, b.Mean[j], b.SD[j], g.m[j], want)
		}
	}
}

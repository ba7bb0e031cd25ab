package ais

import (
	"context"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"math"
	"runtime"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// d16 is the D = 16 known-answer target: means ±1 alternating, sds 0.4 to 1.6
// (geometric), log f shifted by 5; the base is N(0, I).
func d16() *gauss {
	return newGauss(fill(16, func(j int) float64 { return float64(1 - 2*(j%2)) }), fill(16, func(j int) float64 { return 0.4 * math.Pow(4, float64(j)/15) }), 0, 5)
}

func calibrate(t *testing.T, tgt Target, trueLogZ float64, base Base, draws []float64, o Options) Calibration {
	t.Helper()
	c, err := Calibrate(context.Background(), tgt, trueLogZ, base, draws, o, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("D = %d, T = %d, %v: true log Z %.4f, forward %.4f ± %.4f (ESS %.0f, k̂ %.2f), reverse %.4f ± %.4f (ESS %.0f, k̂ %.2f), gap %.4f ± %.4f, acceptance %.2f/%.2f, covered %v, accept %v %s",
		base.Dim(), c.Schedule.T(), o.Kernel, trueLogZ, c.Lower.LogZ, c.Lower.SE, c.Lower.ESS, c.Lower.K, c.Upper.LogZ, c.Upper.SE, c.Upper.ESS, c.Upper.K,
		c.Gap, c.GapSE, c.Lower.Accept, c.Upper.Accept, c.Covered, c.Accept, c.Reason)
	if c.Lower.Direction != "forward" || c.Upper.Direction != "reverse" {
		t.Errorf("directions %q, %q", c.Lower.Direction, c.Upper.Direction)
	}
	return c
}

// TestGaussianBracket: unnormalised Gaussians shifted and scaled away from the base
// N(0, I), one correlated at D = 2 and at D = 64: forward ≤ true log Z ≤ reverse
// within 3 SE, and at D = 16 the BDMC gap is below 0.1 nat at T = 1000.
func TestGaussianBracket(t *testing.T) {
	testenv.Slow(t, "AIS brackets at several schedules, 2 s")
	cases := []struct {
		name   string
		g      *gauss
		kernel Kernel
		maxGap float64
	}{
		{"D2 correlated ρ=0.8, sds 0.3 and 2.5", newGauss([]float64{3, -2}, []float64{0.3, 2.5}, 0.8, -3), HMC, 0.1},
		{"D16 shifted ±1, sds 0.4..1.6", d16(), HMC, 0.1},
		{"D64 AR(1) ρ=0.5, mean 0.5, sds 0.5..1.5", newGauss(fill(64, func(int) float64 { return 0.5 }), fill(64, func(j int) float64 { return 0.5 + float64(j)/63 }), 0.5, -10), MALA, 0.25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.g.Dim()
			truth := c.g.logZ()
			cal := calibrate(t, c.g, truth, stdBase(d), c.g.draws(prob.NewRand(9), 256), Options{Seed: 1, Chains: 256, Temps: 1000, Kernel: c.kernel})
			if lo := cal.Lower; lo.LogZ-3*lo.SE > truth {
				t.Errorf("forward %.4f − 3·%.4f above the true %.4f", lo.LogZ, lo.SE, truth)
			}
			if up := cal.Upper; up.LogZ+3*up.SE < truth {
				t.Errorf("reverse %.4f + 3·%.4f below the true %.4f", up.LogZ, up.SE, truth)
			}
			if !cal.Covered || !(cal.Gap < c.maxGap) {
				t.Errorf("covered %v, gap %.4f (want < %g)", cal.Covered, cal.Gap, c.maxGap)
			}
			if c.maxGap <= DefaultGapTol && !cal.Accept {
				t.Errorf("Calibrate refused: %s", cal.Reason)
			}
			for _, e := range []Estimate{cal.Lower, cal.Upper} {
				if !(e.Accept > 0.45 && e.Accept < 0.8) || len(e.LogW) != 256 || !(e.ESS > 50) {
					t.Errorf("%s: acceptance %.2f, %d weights, ESS %.0f", e.Direction, e.Accept, len(e.LogW), e.ESS)
				}
			}
		})
	}
}

// TestGapShrinksWithT: at D = 16 and 256 chains the BDMC gap falls as T goes 10, 100,
// 1000 (each within 2 SE of below the one before), Calibrate refuses T = 10 and
// T = 100 (gap 0.02 ± 0.20: too noisy to show 0.1) and accepts T = 1000.
func TestGapShrinksWithT(t *testing.T) {
	g := d16()
	draws := g.draws(prob.NewRand(9), 256)
	var cals []Calibration
	for _, T := range []int{10, 100, 1000} {
		cals = append(cals, calibrate(t, g, g.logZ(), stdBase(16), draws, Options{Seed: 2, Chains: 256, Temps: T}))
	}
	for k := 1; k < len(cals); k++ {
		if a, b := cals[k-1], cals[k]; !(b.Gap < a.Gap+2*b.GapSE) {
			t.Errorf("gap at T = %d: %.4f, not below T = %d's %.4f", b.Schedule.T(), b.Gap, a.Schedule.T(), a.Gap)
		}
	}
	if c := cals[0]; c.Accept || !(c.Gap > 0.3) {
		t.Errorf("T = 10: gap %.4f, accept %v; want a gap > 0.3 and a refusal", c.Gap, c.Accept)
	}
	if c := cals[1]; c.Accept {
		t.Errorf("T = 100: accepted a gap of %.4f ± %.4f", c.Gap, c.GapSE)
	}
	if c := cals[2]; !c.Accept || !(c.Gap < 0.1) {
		t.Errorf("T = 1000: gap %.4f, accept %v (%s)", c.Gap, c.Accept, c.Reason)
	}
}

// TestMixtureBDMC: two well-separated Gaussians (modes 10 apart along x₀, sds 0.5 and
// 0.8, weights 0.3/0.7, D = 8, log Z = 1.7) from a base fitted to data: BDMC brackets
// log Z at every T; with too few temperatures the gap is large and Calibrate refuses.
func TestMixtureBDMC(t *testing.T) {
	const d = 8
	m1, m2 := make([]float64, d), make([]float64, d)
	m1[0], m2[0] = -5, 5
	p := &mixture{w: []float64{0.3, 0.7}, s: []float64{0.5, 0.8}, m: [][]float64{m1, m2}, c: 1.7}
	base, err := FitBase(p.draws(prob.NewRand(10), 1000), d, 1.2)
	if err != nil {
		t.Fatal(err)
	}
	draws := p.draws(prob.NewRand(9), 256)
	for _, c := range []struct {
		T      int
		accept bool
	}{{3, false}, {10, false}, {1000, true}} {
		cal := calibrate(t, p, p.c, base, draws, Options{Seed: 1, Chains: 256, Temps: c.T})
		if !cal.Covered {
			t.Errorf("T = %d: the bracket misses log Z = %.4f", c.T, p.c)
		}
		if cal.Accept != c.accept || (!c.accept && !(cal.Gap > 0.3)) {
			t.Errorf("T = %d: gap %.4f, accept %v, want %v", c.T, cal.Gap, cal.Accept, c.accept)
		}
	}
}

// TestBaseAsTarget: AIS from the base to itself gives every log weight exactly 0, so
// log Ẑ = 0 exactly, whatever the path, kernel or T, in both directions.
func TestBaseAsTarget(t *testing.T) {
	base, err := NewBase([]float64{1, -2, 0.5, 3, 0}, []float64{0.5, 2, 1, 0.1, 7})
	if err != nil {
		t.Fatal(err)
	}
	draws := make([]float64, 40*5)
	rng := prob.NewRand(4)
	for i := range 40 {
		base.Sample(rng, draws[i*5:(i+1)*5])
	}
	for _, path := range []Path{Sigmoid, Geometric, Linear} {
		for _, k := range []Kernel{HMC, MALA} {
			for _, T := range []int{1, 7, 100} {
				o := Options{Seed: 3, Chains: 40, Temps: T, Path: path, Kernel: k}
				fw, err := Forward(context.Background(), base, base, o)
				if err != nil {
					t.Fatal(err)
				}
				rv, err := Reverse(context.Background(), base, base, draws, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range []Estimate{fw, rv} {
					if e.LogZ != 0 || e.SE != 0 || e.ESS != 40 {
						t.Errorf("%v %v T = %d %s: log Ẑ %v, SE %v, ESS %v", path, k, T, e.Direction, e.LogZ, e.SE, e.ESS)
					}
					for _, w := range e.LogW {
						if w != 0 {
							t.Fatalf("%v %v T = %d %s: a log weight %v", path, k, T, e.Direction, w)
						}
					}
				}
			}
		}
	}
}

// TestKLBounds: KL(p‖q) from exact draws of p (D = 16, d16 normalised) and BDMC on
// q's unnormalised density. "q = p": log f = log p + 2.5, so KL = 0; "q another
// Gaussian": means 0.8·m + 0.1, sds 1.1×, log f shifted by −1: KL in closed form. Both
// bounds cover the true KL within 3 SE, on their named sides.
func TestKLBounds(t *testing.T) {
	p := d16()
	m, sd := make([]float64, 16), make([]float64, 16)
	for j := range m {
		m[j] = 0.8*p.m[j] + 0.1
		sd[j] = 1.1 * p.l[j*16+j]
	}
	other := newGauss(m, sd, 0, -1)
	kl := 0.0
	for j := range m {
		sp, sq, dm := p.l[j*16+j], sd[j], p.m[j]-m[j]
		kl += math.Log(sq/sp) + (sp*sp+dm*dm)/(2*sq*sq) - 0.5
	}
	for _, c := range []struct {
		name  string
		q     Target
		logZ  float64
		draws func(n int) []float64 // exact draws of q
		kl    float64
	}{
		{"q = p", shifted{p, 2.5 - p.logZ()}, 2.5, func(n int) []float64 { return p.draws(prob.NewRand(7), n) }, 0},
		{"q another Gaussian", other, other.logZ(), func(n int) []float64 { return other.draws(prob.NewRand(7), n) }, kl},
	} {
		t.Run(c.name, func(t *testing.T) {
			xs := p.draws(prob.NewRand(5), 2000)
			diffs := make([]float64, 2000)
			for i := range diffs {
				x := xs[i*16 : (i+1)*16]
				diffs[i] = (p.LogDensity(x, nil) - p.logZ()) - c.q.LogDensity(x, nil)
			}
			mean, se := meanSE(diffs)
			cal := calibrate(t, c.q, c.logZ, stdBase(16), c.draws(256), Options{Seed: 6, Chains: 256, Temps: 300})
			lo, up := KLBounds(mean, se, cal.Lower, cal.Upper)
			t.Logf("true KL %.4f; E_p[log p − log f] = %.4f ± %.2g; KL lower %.4f ± %.4f (%s), upper %.4f ± %.4f (%s)", c.kl, mean, se, lo.Value, lo.SE, lo.Side, up.Value, up.SE, up.Side)
			if lo.Side != "lower" || up.Side != "upper" {
				t.Errorf("sides %q, %q", lo.Side, up.Side)
			}
			for _, b := range []Bound{lo, up} {
				if !(math.Abs(b.Value-c.kl) <= 3*b.SE) {
					t.Errorf("%s bound %.4f ± %.4f does not cover KL = %.4f", b.Side, b.Value, b.SE, c.kl)
				}
			}
			if sw, _ := KLBounds(mean, se, cal.Upper, cal.Lower); !math.IsNaN(sw.Value) {
				t.Errorf("a reverse estimate as the lower side gave %v, want NaN", sw.Value)
			}
		})
	}
}

func meanSE(xs []float64) (mean, se float64) {
	for _, v := range xs {
		mean += v
	}
	mean /= float64(len(xs))
	for _, v := range xs {
		se += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(se / float64(len(xs)-1) / float64(len(xs)))
}

// TestDeterminism: the same seed gives bit-identical weights and schedules whatever
// GOMAXPROCS, Workers or the block size (the target evaluates rows independently);
// another seed differs.
func TestDeterminism(t *testing.T) {
	g := d16()
	draws := g.draws(prob.NewRand(9), 64)
	type result struct{ fw, rv Estimate }
	runOnce := func(procs int, o Options) result {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		s, err := Tune(context.Background(), g, stdBase(16), o)
		if err != nil {
			t.Fatal(err)
		}
		o.Schedule = &s
		fw, err := Forward(context.Background(), g, stdBase(16), o)
		if err != nil {
			t.Fatal(err)
		}
		rv, err := Reverse(context.Background(), g, stdBase(16), draws, o)
		if err != nil {
			t.Fatal(err)
		}
		return result{fw, rv}
	}
	o := Options{Seed: 11, Chains: 64, Temps: 50}
	ref := runOnce(1, o)
	same := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	}
	for _, v := range []struct {
		name  string
		procs int
		o     Options
	}{
		{"GOMAXPROCS 4", 4, o},
		{"GOMAXPROCS 2, Workers 3", 2, Options{Seed: 11, Chains: 64, Temps: 50, Workers: 3}},
		{"Block 1", 2, Options{Seed: 11, Chains: 64, Temps: 50, Block: 1}},
		{"Block 7", 3, Options{Seed: 11, Chains: 64, Temps: 50, Block: 7}},
	} {
		r := runOnce(v.procs, v.o)
		if !same(r.fw.LogW, ref.fw.LogW) || !same(r.rv.LogW, ref.rv.LogW) || !same(r.fw.Schedule.Step, ref.fw.Schedule.Step) || r.fw.LogZ != ref.fw.LogZ {
			t.Errorf("%s: results differ (log Ẑ %v vs %v)", v.name, r.fw.LogZ, ref.fw.LogZ)
		}
	}
	if r := runOnce(2, Options{Seed: 12, Chains: 64, Temps: 50}); same(r.fw.LogW, ref.fw.LogW) {
		t.Error("seed 12 gave seed 11's weights")
	}
}

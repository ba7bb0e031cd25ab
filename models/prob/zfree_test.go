package prob

import (
	"math"
	"testing"
)

// TestMixtureScore: the score is the gradient of MixtureLogDensity (central
// differences), for the joint's classes and for the marginal.
func TestMixtureScore(t *testing.T) {
	comps := []Component{{Y: 0, Weight: 0.3, Mu0: -1, Mu1: 0.5, SD: 0.6}, {Y: 0, Weight: 0.2, Mu0: 1, Mu1: 1, SD: 0.4},
		{Y: 1, Weight: 0.5, Mu0: 0.2, Mu1: -1, SD: 0.8}}
	for _, x := range [][2]float64{{0, 0}, {-1.3, 0.7}, {2.5, -2}, {9, 9}} {
		for _, y := range []int{-1, 0, 1} {
			g0, g1 := MixtureScore(comps, x[0], x[1], y)
			const h = 1e-5
			d0 := (MixtureLogDensity(comps, x[0]+h, x[1], y) - MixtureLogDensity(comps, x[0]-h, x[1], y)) / (2 * h)
			d1 := (MixtureLogDensity(comps, x[0], x[1]+h, y) - MixtureLogDensity(comps, x[0], x[1]-h, y)) / (2 * h)
			if math.Abs(g0-d0) > 1e-5*(1+math.Abs(d0)) || math.Abs(g1-d1) > 1e-5*(1+math.Abs(d1)) {
				t.Errorf("x %v y %d: score (%g, %g), differences (%g, %g)", x, y, g0, g1, d0, d1)
			}
		}
	}
}

// TestZFreeClosedForms: p = N(μ, s²I) in 2-D against a Gaussian model q = N(μ', s'²I)
// over exact draws of p. The Fisher divergence is E‖u + c·x‖² with u = μ/s² − μ'/s'²,
// c = 1/s'² − 1/s², that is ‖u + cμ‖² + 2c²s²; the log-ratio log p − log q is, for
// s' = s, linear in x with sd ‖μ − μ'‖/s; both are 0 for q = p. Each estimate lies within
// 4 of its standard errors of the closed form, and the standard errors shrink as 1/√n.
func TestZFreeClosedForms(t *testing.T) {
	mu := [2]float64{0.5, -0.3}
	for _, c := range []struct {
		name   string
		mq     [2]float64
		s, sq  float64
		fisher float64
		spread float64 // NaN: not checked (s' ≠ s)
	}{
		{"model is the truth", mu, 0.7, 0.7, 0, 0},
		{"shifted mean", [2]float64{1.1, 0.5}, 0.7, 0.7, (0.36 + 0.64) / (0.49 * 0.49), 1 / 0.7},
		{"wider", mu, 0.7, 1.0, 2 * math.Pow(1-1/0.49, 2) * 0.49, math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := NewRand(17)
			n := 20000
			a0, a1, b0, b1, r := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range n {
				x0, x1 := mu[0]+c.s*rng.NormFloat64(), mu[1]+c.s*rng.NormFloat64()
				a0[i], a1[i] = (mu[0]-x0)/(c.s*c.s), (mu[1]-x1)/(c.s*c.s)
				b0[i], b1[i] = (c.mq[0]-x0)/(c.sq*c.sq), (c.mq[1]-x1)/(c.sq*c.sq)
				lp := -((x0-mu[0])*(x0-mu[0]) + (x1-mu[1])*(x1-mu[1])) / (2 * c.s * c.s)
				lq := -((x0-c.mq[0])*(x0-c.mq[0]) + (x1-c.mq[1])*(x1-c.mq[1])) / (2 * c.sq * c.sq)
				r[i] = lp - (lq + 3.25) // an arbitrary log Z: the spread ignores it
			}
			f, fse := MeanSE(SquaredDistances(a0, a1, b0, b1))
			if math.Abs(f-c.fisher) > 4*fse+1e-9*(1+c.fisher) {
				t.Errorf("Fisher %g ± %g, closed form %g", f, fse, c.fisher)
			}
			sd, sdse := SDSE(r)
			if !math.IsNaN(c.spread) && math.Abs(sd-c.spread) > 4*sdse+1e-9 {
				t.Errorf("spread %g ± %g, closed form %g", sd, sdse, c.spread)
			}
			t.Logf("Fisher %.5f ± %.5f (exact %.5f), spread %.5f ± %.5f (exact %.5f)", f, fse, c.fisher, sd, sdse, c.spread)
		})
	}
}

// TestSDSE: the delta-method SE of a normal sample's sd is about sd/√(2n), and the
// SEs of MeanSE and SDSE follow their definitions on small cases.
func TestSDSE(t *testing.T) {
	rng := NewRand(3)
	v := make([]float64, 50000)
	for i := range v {
		v[i] = 2 * rng.NormFloat64()
	}
	sd, se := SDSE(v)
	if want := sd / math.Sqrt(2*float64(len(v))); math.Abs(se-want) > 0.05*want {
		t.Errorf("normal: se %g, want about %g", se, want)
	}
	if sd, se := SDSE([]float64{3, 3, 3}); sd != 0 || se != 0 {
		t.Errorf("constant: %g ± %g, want 0 ± 0", sd, se)
	}
	if m, se := MeanSE([]float64{1, 2, 3, 4}); m != 2.5 || math.Abs(se-math.Sqrt(5.0/3/4)) > 1e-15 {
		t.Errorf("MeanSE: %g ± %g", m, se)
	}
	if sd, _ := SDSE([]float64{1}); !math.IsNaN(sd) {
		t.Errorf("one value: sd %g, want NaN", sd)
	}
}

// TestSpearman: known values: a monotone map gives 1, a reversed one −1, ties take
// mean ranks (the textbook example with ρ = 0.8), and NaN where undefined.
func TestSpearman(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"monotone", []float64{1, 2, 3, 4}, []float64{10, 100, 1000, 1e4}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{"one swap", []float64{1, 2, 3, 4, 5}, []float64{1, 3, 2, 4, 5}, 0.9},
		{"ties", []float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}, 0.9486832980505138}, // ranks 1, 2.5, 2.5, 4
		{"constant", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
		{"NaN", []float64{1, math.NaN(), 3}, []float64{1, 2, 3}, math.NaN()},
		{"one pair", []float64{1}, []float64{1}, math.NaN()},
	} {
		got := Spearman(c.a, c.b)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestLogRatioSpread: the exact spread of an enumerated joint against closed forms.
func TestLogRatioSpread(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	logp := make([]float64, len(p))
	for i, v := range p {
		logp[i] = math.Log(v)
	}
	add := func(f func(i int) float64) []float64 {
		out := make([]float64, len(p))
		for i := range out {
			out[i] = logp[i] + f(i)
		}
		return out
	}
	// f = log p + a·1[i ≥ 2]: log p − f = −a on cells 2, 3 (mass 0.7), 0 on 0, 1 (0.3):
	// sd = a·sqrt(0.7·0.3).
	for _, tc := range []struct {
		name string
		p, f []float64
		want float64
	}{
		{"the truth", p, logp, 0},
		{"the truth shifted (Z cancels)", p, add(func(int) float64 { return 12.5 }), 0},
		{"a step of 2", p, add(func(i int) float64 { return 2 * float64(i/2) }), 2 * math.Sqrt(0.7*0.3)},
		{"a step of 2 and a shift", p, add(func(i int) float64 { return 2*float64(i/2) - 40 }), 2 * math.Sqrt(0.7*0.3)},
		{"empty cells ignored", []float64{0, 0.5, 0.5, 0}, []float64{math.Inf(-1), 1, 3, math.NaN()}, 1},
		{"a non-finite logit where p > 0", p, []float64{0, 0, math.Inf(1), 0}, math.NaN()},
		{"no mass", []float64{0, 0}, []float64{1, 2}, math.NaN()},
		{"lengths differ", p, logp[:3], math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LogRatioSpread(tc.p, tc.f)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("LogRatioSpread = %v, want %v", got, tc.want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { LogRatioSpread(p, logp) }); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
}

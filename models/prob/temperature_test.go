package prob

import (
	"math"
	"testing"
)

// powLog is a·log p + c: the logits of q ∝ p^a (shifted by c; log 0 = −Inf).
func powLog(p []float64, a, c float64) []float64 {
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = a*math.Log(v) + c
	}
	return out
}

// scaled is β·l.
func scaled(l []float64, beta float64) []float64 {
	out := make([]float64, len(l))
	for i, v := range l {
		out[i] = beta * v
	}
	return out
}

// gaussGrid is the midpoints x_c = −L + (c+½)h of n cells of width h = 2L/n.
func gaussGrid(l float64, n int) (xs []float64, h float64) {
	h = 2 * l / float64(n)
	xs = make([]float64, n)
	for i := range xs {
		xs[i] = -l + (float64(i)+0.5)*h
	}
	return xs, h
}

// TestBestTemperature checks β* and the KL at β* against closed forms.
func TestBestTemperature(t *testing.T) {
	type tcase struct {
		name       string
		p, logq    []float64
		beta, kl   float64
		betaTol    float64 // relative
		klTol      float64 // absolute
		klIsPlainQ bool    // kl is KL(p‖softmax(β·logq)) at the wanted β, computed here
	}
	var cases []tcase
	rng := NewRand(Seed(21, 1))
	gens := []Generator{{Kind: "uniform"}, {Kind: "dirichlet", Alpha: 1}, {Kind: "dirichlet", Alpha: 0.3}, {Kind: "dirichlet", Alpha: 0.05}}
	for i, g := range gens {
		p := g.Draw(rng, 3+2*i, 2+i)
		c := 10 * (rng.Float64() - 0.5) // logits are defined up to a shift
		// q = p: β* = 1, kl = 0 (cells where p underflowed to 0 have logq = −Inf).
		cases = append(cases, tcase{name: "q=p/" + g.String(), p: p, logq: powLog(p, 1, c), beta: 1, betaTol: 1e-9, klTol: 1e-12})
		// q ∝ p^a: q_β = p at β = 1/a, kl = 0; a = ½ is a model too hot (β* = 2), a = 2
		// too cold (β* = ½).
		for _, a := range []float64{0.5, 2, 3} {
			cases = append(cases, tcase{name: "q∝p^" + formatG(a) + "/" + g.String(), p: p, logq: powLog(p, a, c), beta: 1 / a, betaTol: 1e-9, klTol: 1e-12})
		}
	}
	// Two points: q_β(1) = σ(β·c) = p1 at β = logit(p1)/c, kl = 0.
	cases = append(cases, tcase{name: "two points", p: []float64{0.2, 0.8}, logq: []float64{0, 1.5}, beta: math.Log(4) / 1.5, betaTol: 1e-10, klTol: 1e-14})
	// Three points, logq = (0, 0, c): E_{q_β}[logq] = c·q_β(2) = c·p2 gives
	// e^{βc} = 2·p2/(1−p2), and q_β = ((1−p2)/2, (1−p2)/2, p2), so kl > 0.
	{
		p0, p1, p2, c := 0.1, 0.3, 0.6, 2.0
		m := (1 - p2) / 2
		cases = append(cases, tcase{name: "three points, kl > 0", p: []float64{p0, p1, p2}, logq: []float64{0, 0, c},
			beta: math.Log(2*p2/(1-p2)) / c, kl: p0*math.Log(p0/m) + p1*math.Log(p1/m), betaTol: 1e-10, klTol: 1e-14})
	}
	// p = N(0, 1) binned (integrals over the cells), q = N(0, s²) at the midpoints:
	// q_β = N(0, s²/β) matches p's second moment 1 + h²/12 (Sheppard's correction) at
	// β* = s²/(1 + h²/12); the midpoint sums are exact up to exponentially small terms.
	{
		xs, h := gaussGrid(10, 400)
		s := 1.5
		p, logq := make([]float64, len(xs)), make([]float64, len(xs))
		for i, x := range xs {
			p[i] = 0.5 * (math.Erf((x+h/2)/math.Sqrt2) - math.Erf((x-h/2)/math.Sqrt2))
			logq[i] = -x * x / (2 * s * s)
		}
		p = normalised(p)
		beta := s * s / (1 + h*h/12)
		cases = append(cases, tcase{name: "binned N(0,1), N(0,s²) at midpoints", p: p, logq: logq, beta: beta, betaTol: 1e-9, kl: 0, klTol: 1e-10})
		cases = append(cases, tcase{name: "N(0,1) at midpoints, N(0,s²)", p: normalised(expAll(scaled(logq, s*s))), logq: logq, beta: s * s, betaTol: 1e-9, klTol: 1e-12})
	}
	// p = Laplace(0, b) and q = N(0, s²) on a fine grid: q_β = N(0, s²/β) matches the
	// variance 2b² at β* = s²/(2b²), and KL(Laplace(b)‖N(0, 2b²)) = ½·log π − ½ for every b
	// (up to the grid's O(h²)).
	{
		xs, _ := gaussGrid(40, 8000)
		b, s := 1.0, 2.0
		p, logq := make([]float64, len(xs)), make([]float64, len(xs))
		for i, x := range xs {
			p[i] = math.Exp(-math.Abs(x) / b)
			logq[i] = -x * x / (2 * s * s)
		}
		cases = append(cases, tcase{name: "Laplace p, Gaussian q", p: normalised(p), logq: logq, beta: s * s / (2 * b * b), betaTol: 1e-4,
			kl: 0.5*math.Log(math.Pi) - 0.5, klTol: 1e-4})
	}
	// A flat logq: q_β is uniform on the finite cells for every β; β = 1 and the KL
	// from the uniform table.
	{
		p := []float64{0.1, 0.2, 0.3, 0.4}
		cases = append(cases, tcase{name: "uniform q", p: p, logq: []float64{3.7, 3.7, 3.7, 3.7}, beta: 1, betaTol: 0,
			kl: math.Log(4) + 0.1*math.Log(0.1) + 0.2*math.Log(0.2) + 0.3*math.Log(0.3) + 0.4*math.Log(0.4), klTol: 1e-15})
		inf := math.Inf(-1)
		cases = append(cases, tcase{name: "uniform q on p's support", p: []float64{0.25, 0, 0.75, 0}, logq: []float64{-2, inf, -2, inf}, beta: 1, betaTol: 0,
			kl: math.Log(2) + 0.25*math.Log(0.25) + 0.75*math.Log(0.75), klTol: 1e-15})
	}
	// Minima beyond the bracket return its ends: p on the largest logit only wants
	// β → ∞; p uniform and logq not wants β → 0 (E_{q_β}[logq] > the plain mean for
	// every β > 0).
	cases = append(cases,
		tcase{name: "beyond the upper bound", p: []float64{0.5, 0.5, 0}, logq: []float64{0, 0, -1e-3}, beta: TemperatureMax, klIsPlainQ: true, klTol: 1e-15},
		tcase{name: "beyond the lower bound", p: []float64{0.25, 0.25, 0.25, 0.25}, logq: []float64{0, 1, 2, 3}, beta: TemperatureMin, klIsPlainQ: true, klTol: 1e-15},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			beta, kl, passes := bestTemperature(c.p, c.logq)
			want := c.kl
			if c.klIsPlainQ {
				want = KL(c.p, Softmax(scaled(c.logq, c.beta)))
			}
			if math.Abs(beta-c.beta) > c.betaTol*c.beta || math.Abs(kl-want) > c.klTol {
				t.Errorf("got β %.15g, kl %.6g; want β %.15g (±%g relative), kl %.6g (±%g)", beta, kl, c.beta, c.betaTol, want, c.klTol)
			}
			t.Logf("β %.15g (%.2g off), kl %.15g (%.2g off), %d passes", beta, beta-c.beta, kl, kl-want, passes)
			if passes > 20 {
				t.Errorf("took %d passes over the support, want at most 20", passes)
			}
			// The KL it returns is KL(p‖q_β) at the β it returns.
			if direct := KL(c.p, Softmax(scaled(c.logq, beta))); math.Abs(kl-direct) > 1e-12 {
				t.Errorf("got kl %.15g, want KL(p‖q_β) = %.15g", kl, direct)
			}
		})
	}
}

func expAll(l []float64) []float64 {
	out := make([]float64, len(l))
	for i, v := range l {
		out[i] = math.Exp(v)
	}
	return out
}

func formatG(a float64) string {
	switch a {
	case 0.5:
		return "½"
	case 2:
		return "2"
	case 3:
		return "3"
	}
	return "?"
}

// TestBestTemperatureUndefined: a cell with p > 0 and logq = −Inf leaves every q_β at 0
// there (kl = +Inf, β NaN); a NaN or +Inf logq or a NaN p gives NaN and NaN.
func TestBestTemperatureUndefined(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name    string
		p, logq []float64
		kl      float64
	}{
		{"p > 0 at −Inf", []float64{0.5, 0.5}, []float64{0, -inf}, inf},
		{"NaN logq", []float64{0.5, 0.5}, []float64{0, nan}, nan},
		{"+Inf logq", []float64{0.5, 0.5}, []float64{0, inf}, nan},
		{"NaN p", []float64{nan, 0.5}, []float64{0, 1}, nan},
		{"no mass", []float64{0, 0}, []float64{0, 1}, nan},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			beta, kl := BestTemperature(c.p, c.logq)
			if !math.IsNaN(beta) || !(math.IsNaN(c.kl) && math.IsNaN(kl) || kl == c.kl) {
				t.Errorf("got β %g, kl %g; want NaN, %g", beta, kl, c.kl)
			}
		})
	}
}

// TestBestTemperatureProperties: on random tables and logits, the KL at β* is at most
// the plain KL(p‖q) (β = 1) and at most the KL at β*·(1 ± 1e-4); β* is a root of the
// derivative E_{q_β}[logq] − E_p[logq]; and it takes at most 20 passes.
func TestBestTemperatureProperties(t *testing.T) {
	rng := NewRand(Seed(21, 2))
	gens := []Generator{{Kind: "uniform"}, {Kind: "dirichlet", Alpha: 1}, {Kind: "dirichlet", Alpha: 0.2}}
	most, bounds := 0, 0
	for i := range 300 {
		g := gens[i%len(gens)]
		x, k := 1+rng.IntN(12), 2+rng.IntN(6)
		p := g.Draw(rng, x, k)
		scale := math.Exp(4 * (rng.Float64() - 0.5)) // logits of spread e^±2
		logq := make([]float64, len(p))
		for j := range logq {
			logq[j] = scale * rng.NormFloat64()
		}
		if i%2 == 0 { // a model related to the truth: a tempered, noisy log p
			for j := range logq {
				logq[j] = scale*math.Log(math.Max(p[j], 1e-300)) + 0.3*rng.NormFloat64()
			}
		}
		beta, kl, passes := bestTemperature(p, logq)
		most = max(most, passes)
		plain := KL(p, Softmax(logq))
		if !(kl <= plain+1e-12) {
			t.Fatalf("case %d: kl at β* = %g is %.15g, above the plain KL %.15g", i, beta, kl, plain)
		}
		for _, f := range []float64{1 - 1e-4, 1 + 1e-4} {
			if beta == TemperatureMin && f < 1 || beta == TemperatureMax && f > 1 {
				continue // the minimum is beyond the bound
			}
			if near := KL(p, Softmax(scaled(logq, beta*f))); !(kl <= near+1e-13) {
				t.Fatalf("case %d: kl at β* = %g is %.15g, above %.15g at %g·β*", i, beta, kl, near, f)
			}
		}
		if beta == TemperatureMin || beta == TemperatureMax {
			bounds++
			continue
		}
		q := Softmax(scaled(logq, beta))
		eq, ep, vq := 0.0, 0.0, 0.0
		for j, l := range logq {
			eq += q[j] * l
			ep += p[j] * l
		}
		for j, l := range logq {
			vq += q[j] * (l - eq) * (l - eq)
		}
		if math.Abs(eq-ep) > 1e-9*math.Sqrt(vq)+1e-12 {
			t.Fatalf("case %d: at β* = %g, E_q[logq] − E_p[logq] = %g (sd %g), want 0", i, beta, eq-ep, math.Sqrt(vq))
		}
		if passes > 20 {
			t.Fatalf("case %d: %d passes, want at most 20", i, passes)
		}
	}
	t.Logf("at most %d passes, %d of 300 at a bound", most, bounds)
}

// BenchmarkBestTemperature is a 64×64 grid of 4 classes, a tempered noisy fit.
func BenchmarkBestTemperature(b *testing.B) {
	rng := NewRand(Seed(21, 3))
	p := Generator{Kind: "dirichlet", Alpha: 1}.Draw(rng, 64*64, 4)
	logq := make([]float64, len(p))
	for j := range logq {
		logq[j] = 0.7*math.Log(p[j]) + 0.1*rng.NormFloat64()
	}
	passes := 0
	for b.Loop() {
		_, _, passes = bestTemperature(p, logq)
	}
	b.ReportMetric(float64(passes), "passes")
}

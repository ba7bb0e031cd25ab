package ais

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// TestMixtureBase: the mixture base is normalised (a 1-D quadrature), its gradient is
// central differences', its draws have the mixture's mean and variance, and weights are
// normalised.
func TestMixtureBase(t *testing.T) {
	g1, _ := NewBase([]float64{-3, 1}, []float64{0.5, 2})
	g2, _ := NewBase([]float64{2, 0}, []float64{1.5, 0.3})
	m, err := NewMixtureBase([]float64{3, 1}, []Base{g1, g2})
	if err != nil {
		t.Fatal(err)
	}
	if m.Weights[0] != 0.75 || m.Weights[1] != 0.25 {
		t.Fatalf("weights %v", m.Weights)
	}
	// ∫∫ p₀ = 1 on a grid (the base is a product in each component).
	s, h := 0.0, 0.02
	for a := -12.0; a <= 12; a += h {
		for b := -12.0; b <= 12; b += h {
			s += math.Exp(m.LogDensity([]float64{a, b}, nil)) * h * h
		}
	}
	if math.Abs(s-1) > 1e-3 {
		t.Errorf("∫ p₀ = %v", s)
	}
	x, g := []float64{0.3, -0.7}, make([]float64, 2)
	m.LogDensity(x, g)
	for j := range x {
		xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
		xp[j] += 1e-5
		xm[j] -= 1e-5
		fd := (m.LogDensity(xp, nil) - m.LogDensity(xm, nil)) / 2e-5
		if math.Abs(fd-g[j]) > 1e-6*max(1, math.Abs(fd)) {
			t.Errorf("gradient %d: %v, central difference %v", j, g[j], fd)
		}
	}
	rng := prob.NewRand(4)
	const n = 200000
	var mean, sq [2]float64
	xs := make([]float64, 2)
	for range n {
		m.Sample(rng, xs)
		for j, v := range xs {
			mean[j] += v / n
			sq[j] += v * v / n
		}
	}
	for j := range 2 {
		mu := 0.75*g1.Mean[j] + 0.25*g2.Mean[j]
		v := 0.75*(g1.SD[j]*g1.SD[j]+g1.Mean[j]*g1.Mean[j]) + 0.25*(g2.SD[j]*g2.SD[j]+g2.Mean[j]*g2.Mean[j]) - mu*mu
		if math.Abs(mean[j]-mu) > 5*math.Sqrt(v/n) || math.Abs(sq[j]-mean[j]*mean[j]-v) > 0.02*v {
			t.Errorf("coordinate %d: mean %v var %v, want %v %v", j, mean[j], sq[j]-mean[j]*mean[j], mu, v)
		}
	}
	if _, err := NewMixtureBase([]float64{0, 0}, []Base{g1, g2}); err == nil {
		t.Error("zero weights accepted")
	}
	if _, err := NewMixtureBase([]float64{1, -1}, []Base{g1, g2}); err == nil {
		t.Error("negative weight accepted")
	}
}

// sepMixture is three well-separated isotropic components in D = 16 with unequal
// weights (log Z = 0.7), its draws and their component labels.
func sepMixture(n int) (*mixture, []float64, []int) {
	d := 16
	p := &mixture{w: []float64{0.6, 0.3, 0.1}, s: []float64{0.5, 0.8, 0.4}, c: 0.7}
	for k := range 3 {
		p.m = append(p.m, fill(d, func(j int) float64 { return 6 * float64(k) * math.Cos(float64(j+k)) }))
	}
	x := p.draws(prob.NewRand(31), n)
	y := make([]int, n)
	for i := range n {
		best := math.Inf(1)
		for k := range 3 {
			q := 0.0
			for j := range d {
				r := x[i*d+j] - p.m[k][j]
				q += r * r
			}
			if q < best {
				best, y[i] = q, k
			}
		}
	}
	return p, x, y
}

// TestFitMixtureBase: per-label fitting recovers the components' weights, means and
// sds; unlabelled k-means with 3 clusters finds the same three.
func TestFitMixtureBase(t *testing.T) {
	p, x, y := sepMixture(6000)
	d := p.Dim()
	for _, labels := range [][]int{y, nil} {
		clusters := 1 // per label
		if labels == nil {
			clusters = 3
		}
		m, err := FitMixtureBase(x, labels, d, MixtureFit{Clusters: clusters, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Comps) != 3 {
			t.Fatalf("labels %v: %d components", labels != nil, len(m.Comps))
		}
		for k, cb := range m.Comps {
			c := cb.(*Gaussian)
			best := 0 // the true component nearest this one's mean
			for q := range 3 {
				if dist(c.Mean, p.m[q]) < dist(c.Mean, p.m[best]) {
					best = q
				}
			}
			if math.Abs(m.Weights[k]-p.w[best]) > 0.02 || dist(c.Mean, p.m[best]) > 0.1 || math.Abs(c.SD[3]-p.s[best]) > 0.05 {
				t.Errorf("labels %v component %d: weight %.3f mean off by %.3f sd %.3f; true %d: %.3f, %.3f",
					labels != nil, k, m.Weights[k], dist(c.Mean, p.m[best]), c.SD[3], best, p.w[best], p.s[best])
			}
		}
	}
	if _, err := FitMixtureBase(x, y[:10], d, MixtureFit{}); err == nil {
		t.Error("short labels accepted")
	}
}

func dist(a, b []float64) float64 {
	s := 0.0
	for j := range a {
		s += (a[j] - b[j]) * (a[j] - b[j])
	}
	return math.Sqrt(s)
}

// TestMixtureBaseCalibration: on well-separated modes of unequal weight, one diagonal
// Gaussian base sends the chains to the modes in the wrong proportions and BDMC is
// refused (large gap or k̂), while a mixture base fitted to labelled draws passes the
// calibration with a bracket that covers the true log Z, at the same settings. The
// unbiasedness argument is the same for any normalised base with exact draws; here the
// mixture's forward weights also average to Z within 3.5 SE.
func TestMixtureBaseCalibration(t *testing.T) {
	p, x, y := sepMixture(2000)
	d := p.Dim()
	o := Options{Seed: 3, Chains: 256, Temps: 200}
	diag, err := FitBase(x, d, 1.2)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := FitMixtureBase(x, y, d, MixtureFit{Inflate: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	low, err := FitMixtureBase(x, y, d, MixtureFit{Inflate: 1.05, Rank: 3})
	if err != nil {
		t.Fatal(err)
	}
	draws := p.draws(prob.NewRand(32), 256)
	cd := calibrate(t, p, p.c, diag, draws, o)
	cm := calibrate(t, p, p.c, mix, draws, o)
	if cd.Accept {
		t.Errorf("diagonal base accepted on separated modes: %+v", cd)
	}
	if !cm.Accept || !cm.Covered {
		t.Errorf("mixture base refused: %s", cm.Reason)
	}
	if cl := calibrate(t, p, p.c, low, draws, o); !cl.Accept || !cl.Covered {
		t.Errorf("low-rank mixture base refused: %s", cl.Reason)
	}
	r := make([]float64, len(cm.Lower.LogW))
	for i, w := range cm.Lower.LogW {
		r[i] = math.Exp(w - p.c)
	}
	mean, se := meanSE(r)
	if !(math.Abs(mean-1) <= 3.5*se) {
		t.Errorf("mixture base: mean w/Z %.4f ± %.4f", mean, se)
	}
	if _, err := Forward(context.Background(), p, mix, Options{Seed: 4, Chains: 32, Temps: 10}); err != nil {
		t.Fatal(err)
	}
}

// TestLowRank: a 2-D low-rank Gaussian is normalised (grid quadrature), its gradient is
// central differences', its draws have its covariance, and fitLowRank recovers a
// planted direction and variances.
func TestLowRank(t *testing.T) {
	c, s := math.Cos(0.4), math.Sin(0.4)
	g, err := NewLowRank([]float64{1, -1}, []float64{c, s}, []float64{4}, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	tot, h := 0.0, 0.02
	for a := -10.0; a <= 12; a += h {
		for b := -12.0; b <= 10; b += h {
			tot += math.Exp(g.LogDensity([]float64{a, b}, nil)) * h * h
		}
	}
	if math.Abs(tot-1) > 1e-3 {
		t.Errorf("∫ p = %v", tot)
	}
	x, gr := []float64{0.3, 0.9}, make([]float64, 2)
	g.LogDensity(x, gr)
	for j := range x {
		xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
		xp[j] += 1e-5
		xm[j] -= 1e-5
		fd := (g.LogDensity(xp, nil) - g.LogDensity(xm, nil)) / 2e-5
		if math.Abs(fd-gr[j]) > 1e-6*max(1, math.Abs(fd)) {
			t.Errorf("gradient %d: %v, central difference %v", j, gr[j], fd)
		}
	}
	const n = 100000
	rng := prob.NewRand(5)
	draws := make([]float64, 2*n)
	for i := range n {
		g.Sample(rng, draws[2*i:2*i+2])
	}
	var c00, c01, c11 float64
	for i := range n {
		a, b := draws[2*i]-1, draws[2*i+1]+1
		c00, c01, c11 = c00+a*a/n, c01+a*b/n, c11+b*b/n
	}
	w00, w01, w11 := 0.25+3.75*c*c, 3.75*c*s, 0.25+3.75*s*s
	if math.Abs(c00-w00) > 0.03*w00 || math.Abs(c01-w01) > 0.03*w00 || math.Abs(c11-w11) > 0.03*w00 {
		t.Errorf("covariance [%v %v; %v], want [%v %v; %v]", c00, c01, c11, w00, w01, w11)
	}
	f, err := fitLowRank(draws, 2, 1, 1, prob.NewRand(6))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(math.Abs(f.U[0]*c+f.U[1]*s)-1) > 1e-3 || math.Abs(f.Lambda[0]-4) > 0.1 || math.Abs(f.Sigma2-0.25) > 0.01 {
		t.Errorf("fit: U %v Λ %v σ² %v", f.U, f.Lambda, f.Sigma2)
	}
}

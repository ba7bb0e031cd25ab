package ais

import (
	"math"
	"math/rand/v2"
)

// gauss is the unnormalised Gaussian f(x) = e^c·exp(−½|L⁻¹(x − m)|²), L lower
// triangular (D×D row-major): covariance LLᵀ, log Z = c + (D/2)·log 2π + Σ log L_jj.
type gauss struct {
	m, l []float64
	c    float64
}

func (g *gauss) Dim() int { return len(g.m) }

func (g *gauss) LogDensity(x, grad []float64) float64 {
	return g.logDensity(x, grad, make([]float64, len(g.m)))
}

// LogDensityBatch makes gauss a BatchTarget too (one scratch buffer per batch).
func (g *gauss) LogDensityBatch(x []float64, n int, out, grad []float64) {
	d := len(g.m)
	y := make([]float64, d)
	for i := range n {
		var gr []float64
		if grad != nil {
			gr = grad[i*d : (i+1)*d]
		}
		out[i] = g.logDensity(x[i*d:(i+1)*d], gr, y)
	}
}

func (g *gauss) logDensity(x, grad, y []float64) float64 {
	d := len(g.m)
	for i := range d { // L y = x − m
		s := x[i] - g.m[i]
		for k := range i {
			s -= g.l[i*d+k] * y[k]
		}
		y[i] = s / g.l[i*d+i]
	}
	q := 0.0
	for _, v := range y {
		q += v * v
	}
	if grad != nil {
		for i := d - 1; i >= 0; i-- { // Lᵀ z = y, grad = −z
			s := y[i]
			for k := i + 1; k < d; k++ {
				s -= g.l[k*d+i] * (-grad[k])
			}
			grad[i] = -s / g.l[i*d+i]
		}
	}
	return g.c - 0.5*q
}

func (g *gauss) logZ() float64 {
	d := len(g.m)
	z := g.c + 0.5*float64(d)*math.Log(2*math.Pi)
	for i := range d {
		z += math.Log(g.l[i*d+i])
	}
	return z
}

// draws is n exact draws of f/Z, row-major.
func (g *gauss) draws(rng *rand.Rand, n int) []float64 {
	d := len(g.m)
	out := make([]float64, n*d)
	z := make([]float64, d)
	for r := range n {
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		for i := range d {
			s := g.m[i]
			for k := 0; k <= i; k++ {
				s += g.l[i*d+k] * z[k]
			}
			out[r*d+i] = s
		}
	}
	return out
}

// newGauss is the Gaussian with mean m, per-coordinate sd and AR(1) correlation rho
// (rho = 0: diagonal), log f shifted by c.
func newGauss(m, sd []float64, rho, c float64) *gauss {
	d := len(m)
	cov := make([]float64, d*d)
	for i := range d {
		for k := range d {
			cov[i*d+k] = sd[i] * sd[k] * math.Pow(rho, math.Abs(float64(i-k)))
		}
	}
	l := make([]float64, d*d) // Cholesky
	for i := range d {
		for k := 0; k <= i; k++ {
			s := cov[i*d+k]
			for j := range k {
				s -= l[i*d+j] * l[k*d+j]
			}
			if i == k {
				l[i*d+i] = math.Sqrt(s)
			} else {
				l[i*d+k] = s / l[k*d+k]
			}
		}
	}
	return &gauss{m: append([]float64(nil), m...), l: l, c: c}
}

// mixture is f(x) = e^c·Σ_k w_k N(x; m_k, s_k² I): log Z = c.
type mixture struct {
	w, s []float64
	m    [][]float64
	c    float64
}

func (p *mixture) Dim() int { return len(p.m[0]) }

func (p *mixture) LogDensity(x, grad []float64) float64 {
	d := len(x)
	lk := make([]float64, len(p.w))
	top := math.Inf(-1)
	for k := range p.w {
		q := 0.0
		for j, v := range x {
			r := (v - p.m[k][j]) / p.s[k]
			q += r * r
		}
		lk[k] = math.Log(p.w[k]) - float64(d)*math.Log(p.s[k]) - 0.5*float64(d)*math.Log(2*math.Pi) - 0.5*q
		top = max(top, lk[k])
	}
	sum := 0.0
	for k, v := range lk { // responsibilities, without subnormal arguments to Exp
		lk[k] = 0
		if v-top > -700 {
			lk[k] = math.Exp(v - top)
		}
		sum += lk[k]
	}
	lse := top + math.Log(sum)
	if grad != nil {
		clear(grad)
		for k := range p.w {
			r := lk[k] / sum
			for j, v := range x {
				grad[j] -= r * (v - p.m[k][j]) / (p.s[k] * p.s[k])
			}
		}
	}
	return p.c + lse
}

func (p *mixture) draws(rng *rand.Rand, n int) []float64 {
	d := p.Dim()
	out := make([]float64, n*d)
	for r := range n {
		k := 0
		for u := rng.Float64(); k < len(p.w)-1 && u >= p.w[k]; k++ {
			u -= p.w[k]
		}
		for j := range d {
			out[r*d+j] = p.m[k][j] + p.s[k]*rng.NormFloat64()
		}
	}
	return out
}

// shifted is log f = log t + c.
type shifted struct {
	Target
	c float64
}

func (s shifted) LogDensity(x, grad []float64) float64 { return s.Target.LogDensity(x, grad) + s.c }

func stdBase(d int) *Gaussian {
	m, s := make([]float64, d), make([]float64, d)
	for j := range s {
		s[j] = 1
	}
	b, err := NewBase(m, s)
	if err != nil {
		panic(err)
	}
	return b
}

func fill(d int, f func(j int) float64) []float64 {
	v := make([]float64, d)
	for j := range v {
		v[j] = f(j)
	}
	return v
}

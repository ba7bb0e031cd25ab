package kernel

import (
	"math"
	"math/rand/v2"
)

// A fixed energy whose distribution is known, for the known-answer tests of the 2-D
// chains (chains2d_test.go), and draws for the trainer's tests: the log density of an
// isotropic Gaussian mixture well inside the box (its mass outside [−5, 5]² is 5.7e-8,
// from the third component's tail), whose cell masses on a pooled grid are exact
// products of normal CDF differences.

type mixture struct {
	w, m0, m1, sd []float64
}

// testMixture is a two-class-like mixture of three components with overlapping modes.
var testMixture = mixture{
	w:  []float64{0.5, 0.3, 0.2},
	m0: []float64{-1.2, 1.3, 0.4},
	m1: []float64{0.3, 1.0, -1.5},
	sd: []float64{0.6, 0.5, 0.7},
}

// logp is the mixture's log density at (a, b) and its gradient.
func (m mixture) logp(a, b float64) (lp, g0, g1 float64) {
	var s, s0, s1 float64
	for k := range m.w {
		v := m.sd[k] * m.sd[k]
		d0, d1 := a-m.m0[k], b-m.m1[k]
		c := m.w[k] / (2 * math.Pi * v) * math.Exp(-(d0*d0+d1*d1)/(2*v))
		s += c
		s0 -= c * d0 / v
		s1 -= c * d1 / v
	}
	return math.Log(s), s0 / s, s1 / s
}

// energy is β·log p as an Energy.
func (m mixture) energy(beta float64) Energy {
	return func(x []float32, P int, e, grad []float32) {
		for p := range P {
			lp, g0, g1 := m.logp(float64(x[p]), float64(x[P+p]))
			e[p] = float32(beta * lp)
			if grad != nil {
				grad[p], grad[P+p] = float32(beta*g0), float32(beta*g1)
			}
		}
	}
}

// cells are the mixture's exact masses of the c×c cells of [−box, box]².
func (m mixture) cells(c int, box float64) []float64 {
	phi := func(z float64) float64 { return 0.5 * (1 + math.Erf(z/math.Sqrt2)) }
	h := 2 * box / float64(c)
	out := make([]float64, c*c)
	for k := range m.w {
		for i := range c {
			a := phi((-box+float64(i+1)*h-m.m0[k])/m.sd[k]) - phi((-box+float64(i)*h-m.m0[k])/m.sd[k])
			for j := range c {
				b := phi((-box+float64(j+1)*h-m.m1[k])/m.sd[k]) - phi((-box+float64(j)*h-m.m1[k])/m.sd[k])
				out[i*c+j] += m.w[k] * a * b
			}
		}
	}
	return out
}

// sample draws n points of the mixture.
func (m mixture) sample(rng *rand.Rand, n int) (x0, x1 []float64) {
	x0, x1 = make([]float64, n), make([]float64, n)
	for i := range n {
		u, k := rng.Float64(), 0
		for k < len(m.w)-1 && u > m.w[k] {
			u -= m.w[k]
			k++
		}
		x0[i], x1[i] = m.m0[k]+m.sd[k]*rng.NormFloat64(), m.m1[k]+m.sd[k]*rng.NormFloat64()
	}
	return x0, x1
}

// hist is the (weighted) histogram of the chains x [2][B] on the c×c cells of the box.
func hist(x []float32, w []float32, B, c int, box float32) []float64 {
	h := make([]float64, c*c)
	var tot float64
	for p := range B {
		i := int((x[p] + box) / (2 * box) * float32(c))
		j := int((x[B+p] + box) / (2 * box) * float32(c))
		wp := 1.0
		if w != nil {
			wp = float64(w[p])
		}
		tot += wp
		if i >= 0 && i < c && j >= 0 && j < c {
			h[i*c+j] += wp
		}
	}
	for i := range h {
		h[i] /= tot
	}
	return h
}

const (
	kaBox   = 5
	kaCells = 10
)

package drl

import (
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// The known 2-D mixture of models/kernel's known-answer tests (methods2d_test.go),
// copied: three isotropic components well inside the box [−5, 5]².

type mixture struct {
	w, m0, m1, sd []float64
}

var testMixture = mixture{
	w:  []float64{0.5, 0.3, 0.2},
	m0: []float64{-1.2, 1.3, 0.4},
	m1: []float64{0.3, 1.0, -1.5},
	sd: []float64{0.6, 0.5, 0.7},
}

const kaBox = 5

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

// lse is β·log p as a Step2D.LSE.
func (m mixture) lse(beta float64) func(x []float32, n int, lse, grad []float32) {
	return func(x []float32, n int, lse, grad []float32) {
		for p := range n {
			lp, g0, g1 := m.logp(float64(x[p]), float64(x[n+p]))
			lse[p] = float32(beta * lp)
			if grad != nil {
				grad[p], grad[n+p] = float32(beta*g0), float32(beta*g1)
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

// trainingDraws are n draws of the mixture labelled by the sign of x0 (float32).
func trainingDraws(seed uint64, n int) (X0, X1 []float32, Y []int32) {
	x0, x1 := testMixture.sample(prob.NewRand(seed), n)
	X0, X1, Y = make([]float32, n), make([]float32, n), make([]int32, n)
	for i := range X0 {
		X0[i], X1[i] = float32(x0[i]), float32(x1[i])
		if x0[i] > 0 {
			Y[i] = 1
		}
	}
	return X0, X1, Y
}

// modelTV is the total variation between the model's q(x) on the c×c cells of the box
// (kernel.CellLogits, summed over classes) and the mixture's exact cell masses.
func modelTV(hidden []int, k int, theta []float32, c int) (float64, error) {
	f, err := kernel.CellLogits(hidden, k, theta, c, kaBox)
	if err != nil {
		return 0, err
	}
	m := math.Inf(-1)
	for _, v := range f {
		m = max(m, v)
	}
	q := make([]float64, c*c)
	var z float64
	for i := range q {
		for y := range k {
			q[i] += math.Exp(f[i*k+y] - m)
		}
		z += q[i]
	}
	for i := range q {
		q[i] /= z
	}
	return prob.TotalVariation(q, testMixture.cells(c, kaBox)), nil
}

// meanSE is the mean of v and its standard error.
func meanSE(v []float64) (mean, se float64) {
	for _, x := range v {
		mean += x
	}
	n := float64(len(v))
	mean /= n
	var s float64
	for _, x := range v {
		s += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(s / (n - 1) / n)
}

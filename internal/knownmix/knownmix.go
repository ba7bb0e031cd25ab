// Package knownmix is the known answer of the 2-D method packages' tests: an isotropic
// Gaussian mixture in the plane whose log density, gradient, exact cell masses on a grid
// of the box [−Box, Box]², exact draws, moments and convolution with Gaussian noise are
// closed-form, and the helpers that compare a trained 2-D model with it (its cell masses
// and log Z on the box by kernel.CellLogits, its cell TV from the truth), plus the
// smoke tests' scaffolding (SmokeSpec, Train, WithOption), the mean with its standard
// error (MeanSE) and the central finite difference of a loss (FiniteDiff).
//
// Standard is the mixture of models/kernel's own known-answer tests
// (models/kernel/mixture_test.go, which cannot import this package: it imports
// kernel); methods/drl, dsm, snl, nce and tre test against it.
//
// Every random draw is from the caller's *rand.Rand (or a prob.NewRand of the caller's
// seed) in a fixed order, so a test's numbers are reproducible bit for bit.
package knownmix

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Box is the half-width of the box [−Box, Box]² the tests train and measure on.
const Box = 5

// Mixture is an isotropic Gaussian mixture in the plane: component k has weight W[k],
// mean (M0[k], M1[k]) and standard deviation SD[k] on each axis. The weights sum to 1.
type Mixture struct {
	W, M0, M1, SD []float64
}

// Standard is the tests' known mixture: three overlapping components well inside the
// box (its mass outside [−5, 5]² is 5.7e-8, almost all of it the third component's
// tail below x1 = −5, 5 standard deviations from its mean).
var Standard = Mixture{
	W:  []float64{0.5, 0.3, 0.2},
	M0: []float64{-1.2, 1.3, 0.4},
	M1: []float64{0.3, 1.0, -1.5},
	SD: []float64{0.6, 0.5, 0.7},
}

// LogP is the mixture's log density at (a, b) and its gradient (∂/∂a, ∂/∂b).
func (m Mixture) LogP(a, b float64) (lp, g0, g1 float64) {
	var s, s0, s1 float64
	for k := range m.W {
		v := m.SD[k] * m.SD[k]
		d0, d1 := a-m.M0[k], b-m.M1[k]
		c := m.W[k] / (2 * math.Pi * v) * math.Exp(-(d0*d0+d1*d1)/(2*v))
		s += c
		s0 -= c * d0 / v
		s1 -= c * d1 / v
	}
	return math.Log(s), s0 / s, s1 / s
}

// LSE is the energy β·log p in the kernel's convention (kernel.Step.LSE,
// kernel.Energy): at the n points x [2][n] (x0 then x1) it writes β·log p into lse[:n]
// and, when grad is not nil, β·∇log p into grad [2][n].
func (m Mixture) LSE(beta float64) func(x []float32, n int, lse, grad []float32) {
	return func(x []float32, n int, lse, grad []float32) {
		for p := range n {
			lp, g0, g1 := m.LogP(float64(x[p]), float64(x[n+p]))
			lse[p] = float32(beta * lp)
			if grad != nil {
				grad[p], grad[n+p] = float32(beta*g0), float32(beta*g1)
			}
		}
	}
}

// phi is the standard normal CDF.
func phi(z float64) float64 { return 0.5 * (1 + math.Erf(z/math.Sqrt2)) }

// Cells are the mixture's exact masses of the c×c cells of [−box, box]², row-major:
// cell (i, j) is x0 in its i-th and x1 in its j-th interval, at i·c + j. They sum to
// 1 − Outside(box).
func (m Mixture) Cells(c int, box float64) []float64 {
	h := 2 * box / float64(c)
	out := make([]float64, c*c)
	for k := range m.W {
		for i := range c {
			a := phi((-box+float64(i+1)*h-m.M0[k])/m.SD[k]) - phi((-box+float64(i)*h-m.M0[k])/m.SD[k])
			for j := range c {
				b := phi((-box+float64(j+1)*h-m.M1[k])/m.SD[k]) - phi((-box+float64(j)*h-m.M1[k])/m.SD[k])
				out[i*c+j] += m.W[k] * a * b
			}
		}
	}
	return out
}

// Outside is the mixture's mass outside the box [−box, box]², from the normal tails
// (accurate where it is tiny).
func (m Mixture) Outside(box float64) float64 {
	tail := func(mu, sd float64) float64 { // P(|x| > box), x ~ N(mu, sd²)
		return 0.5*math.Erfc((box-mu)/sd/math.Sqrt2) + 0.5*math.Erfc((box+mu)/sd/math.Sqrt2)
	}
	var out float64
	for k, w := range m.W {
		t0, t1 := tail(m.M0[k], m.SD[k]), tail(m.M1[k], m.SD[k])
		out += w * (t0 + t1 - t0*t1)
	}
	return out
}

// Sample draws n points of the mixture: per point one rng.Float64 for the component,
// then two rng.NormFloat64 (x0, then x1).
func (m Mixture) Sample(rng *rand.Rand, n int) (x0, x1 []float64) {
	x0, x1 = make([]float64, n), make([]float64, n)
	for i := range n {
		u, k := rng.Float64(), 0
		for k < len(m.W)-1 && u > m.W[k] {
			u -= m.W[k]
			k++
		}
		x0[i], x1[i] = m.M0[k]+m.SD[k]*rng.NormFloat64(), m.M1[k]+m.SD[k]*rng.NormFloat64()
	}
	return x0, x1
}

// TrainingDraws are n draws of the mixture (Sample from prob.NewRand(seed)) as a
// 2-class run's data in float32, labelled by the sign of x0 (class 1: x0 > 0).
func (m Mixture) TrainingDraws(seed uint64, n int) (X0, X1 []float32, Y []int32) {
	x0, x1 := m.Sample(prob.NewRand(seed), n)
	X0, X1, Y = make([]float32, n), make([]float32, n), make([]int32, n)
	for i := range X0 {
		X0[i], X1[i] = float32(x0[i]), float32(x1[i])
		if x0[i] > 0 {
			Y[i] = 1
		}
	}
	return X0, X1, Y
}

// Noised is the mixture convolved with N(0, σ²I): each component's variance plus σ².
func (m Mixture) Noised(sigma float64) Mixture {
	out := m
	out.SD = make([]float64, len(m.SD))
	for k, s := range m.SD {
		out.SD[k] = math.Sqrt(s*s + sigma*sigma)
	}
	return out
}

// Moments are the mixture's exact mean and covariance.
func (m Mixture) Moments() (mu [2]float64, cov [2][2]float64) {
	for k, w := range m.W {
		mu[0] += w * m.M0[k]
		mu[1] += w * m.M1[k]
		v := m.SD[k] * m.SD[k]
		cov[0][0] += w * (v + m.M0[k]*m.M0[k])
		cov[1][1] += w * (v + m.M1[k]*m.M1[k])
		cov[0][1] += w * m.M0[k] * m.M1[k]
	}
	cov[0][0] -= mu[0] * mu[0]
	cov[1][1] -= mu[1] * mu[1]
	cov[0][1] -= mu[0] * mu[1]
	cov[1][0] = cov[0][1]
	return mu, cov
}

// ModelCells are a 2-D model's cell masses q on the G×G cells of [−box, box]² given x
// in the box (the softmax of kernel.CellLogits over cells and classes, summed over its
// k classes; row-major as Cells) and its log Z on the box, log ∫ Σ_y exp f(x)[y] dx
// (log-sum-exp of the cell logits plus the log cell area).
func ModelCells(hidden []int, k int, theta []float32, G int, box float64) (q []float64, logZ float64, err error) {
	f, err := kernel.CellLogits(hidden, k, theta, G, box)
	if err != nil {
		return nil, 0, err
	}
	m := math.Inf(-1)
	for _, v := range f {
		m = max(m, v)
	}
	q = make([]float64, G*G)
	var s float64
	for i := range q {
		for y := range k {
			q[i] += math.Exp(f[i*k+y] - m)
		}
		s += q[i]
	}
	for i := range q {
		q[i] /= s
	}
	h := 2 * box / float64(G)
	return q, m + math.Log(s) + 2*math.Log(h), nil
}

// ModelTV is the total variation between a 2-D model's cell masses (ModelCells) and
// the mixture's exact ones (Cells) on the c×c cells of [−box, box]².
func (m Mixture) ModelTV(hidden []int, k int, theta []float32, c int, box float64) (float64, error) {
	q, _, err := ModelCells(hidden, k, theta, c, box)
	if err != nil {
		return 0, err
	}
	return prob.TotalVariation(q, m.Cells(c, box)), nil
}

// MeanSE is the mean of v and its standard error (the sample standard deviation over
// √len(v)); v needs two values or more.
func MeanSE(v []float64) (mean, se float64) {
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

// SmokeSpec is the method packages' training smoke test: a 16-unit network of 2
// classes, steps Adam steps of batch 64, PxWeight 1, on the box; the caller sets the
// objective (Spec2D.Objective, or a package's own spec2D).
func SmokeSpec(steps int) kernel.Spec2D {
	return kernel.Spec2D{Hidden: []int{16}, K: 2, Steps: steps, Batch: 64, PxWeight: 1, Box: Box}
}

// Train trains spec twice with one seed through kernel.Train2D, on data's 512 training
// draws of seed 1 (TrainingDraws), from kernel.InitMLP2D(4, spec.Hidden, spec.K) at
// learning rate 3e-3. It fails t if training errs, if the first run diverges, or if the
// two runs differ in their final parameters (Theta, Extra); it returns the first run's
// result and the initial parameters.
func Train(t testing.TB, spec kernel.Spec2D, data Mixture, seed uint64) (r kernel.Result2D, theta0 []float32) {
	t.Helper()
	X0, X1, Y := data.TrainingDraws(1, 512)
	theta0 = kernel.InitMLP2D(4, spec.Hidden, spec.K)
	run := kernel.Run2D{Seed: seed, Theta: theta0, LR: 3e-3, X0: X0, X1: X1, Y: Y}
	res, err := kernel.Train2D(context.Background(), spec, []kernel.Run2D{run, run})
	if err != nil {
		t.Fatal(err)
	}
	r = res[0]
	if r.Diverged {
		t.Fatalf("diverged at step %d", r.DivergedStep)
	}
	if !slices.Equal(r.Theta, res[1].Theta) || !slices.Equal(r.Extra, res[1].Extra) {
		t.Fatal("two runs of the same seed differ")
	}
	return r, theta0
}

// WithOption is a grid point with the option key set to v, through its schemas axis;
// it fails t if there is no such axis.
func WithOption(t testing.TB, key string, v any) schemas.Grid {
	t.Helper()
	var g schemas.Grid
	a, ok := schemas.AxisByKey(key)
	if !ok {
		t.Fatalf("no axis %s", key)
	}
	a.Field.Set(&g, v)
	return g
}

// FiniteDiff is the central finite difference (f(x + h·e_p) − f(x − h·e_p)) / 2h of f,
// a function of x, in x's entry p (moved by float32(h)); x[p] is restored.
func FiniteDiff(f func() float64, x []float32, p int, h float64) float64 {
	old := x[p]
	x[p] = old + float32(h)
	up := f()
	x[p] = old - float32(h)
	down := f()
	x[p] = old
	return (up - down) / (2 * h)
}

package prob

import (
	"fmt"
	"math"
)

// Family is the set of joints q(x,y) = softmax over all cells of f(x)[y] that a model
// can represent on X values of x and K classes.
//
//   - A complete family represents every joint with positive cells (and, as a limit,
//     every joint): one-hot x with a linear layer (f = W[x,y] + b[y]), an MLP whose last
//     hidden layer has at least X−1 units (it interpolates any X×K logit table, as a
//     generic one-hidden-layer network does), and the scalar linear model when X ≤ 2.
//   - The scalar linear family f(x)[y] = w_y·x + b_y (x fed as its value) with X > 2:
//     log q(x,y) is linear in x for each y, so it has 2K−1 degrees of freedom against
//     the X·K−1 of a general joint and cannot represent most tables.
type Family struct {
	X, K         int
	ScalarLinear bool // the scalar linear family; complete anyway when X ≤ 2
}

// Complete reports whether the family represents every joint on X×K cells.
func (f Family) Complete() bool { return !f.ScalarLinear || f.X <= 2 }

// Dof is the number of free parameters of the family's joints (after the global shift
// of the logits, which leaves q unchanged): X·K−1 for a complete family, 2K−1 for the
// scalar linear one.
func (f Family) Dof() int {
	if f.Complete() {
		return f.X*f.K - 1
	}
	return 2*f.K - 1
}

// Projection is the member of a family closest to a target distribution t in
// KL(t‖q): the maximum-likelihood fit of the family when t is an empirical table.
type Projection struct {
	Q          []float64 // the closest joint, row-major
	KL         float64   // KL(t‖Q), the family's approximation error on t
	Iterations int       // Newton iterations (0 for a complete family: Q = t)
	Decrement  float64   // the last Newton decrement λ²/2, a bound on the remaining excess of KL (0 when exact)
}

// Newton's stopping rule: the decrement λ²/2 bounds how far KL(t‖q) is above its
// minimum near the optimum; newtonTol is far below any KL jemcheck reports.
const (
	newtonTol      = 1e-20
	newtonMaxIters = 500
)

// Project returns the member of the family closest to t in KL(t‖q). For a complete
// family that is t itself. For the scalar linear family it minimises the convex
// cross-entropy −Σ t log q over (w, b) by damped Newton in float64: the Hessian is
// Cov_q(φ) = B − v vᵀ with B block-diagonal (one 2×2 block per class) and e = the
// shift of every b_y in its null space; because the gradient is orthogonal to e,
// d = −B⁻¹g solves the Newton system exactly, so each step costs O(X·K). When t has
// empty cells the optimum may lie at infinity; the iterates then move towards it and
// KL(t‖Q) converges to the infimum (the decrement reports how close).
func (f Family) Project(t []float64) Projection {
	checkShape("Project", t, f.X, f.K)
	if f.Complete() {
		return Projection{Q: append([]float64(nil), t...)}
	}
	s := newScalarFit(f.X, f.K)
	theta := make([]float64, 2*f.K) // w_y at 2y, b_y at 2y+1
	q := s.joint(theta)
	loss := crossEntropy(t, q)
	pr := Projection{}
	for pr.Iterations = 0; pr.Iterations < newtonMaxIters; pr.Iterations++ {
		d, dec := s.newtonStep(t, q)
		pr.Decrement = dec / 2
		if !(pr.Decrement > newtonTol) {
			break
		}
		step, next, nextLoss := 1.0, make([]float64, len(theta)), 0.0
		for ; step > 1e-12; step /= 2 { // backtracking (Armijo) line search
			for i := range theta {
				next[i] = theta[i] + step*d[i]
			}
			nq := s.joint(next)
			if nextLoss = crossEntropy(t, nq); nextLoss <= loss-0.25*step*dec {
				q = nq
				break
			}
		}
		if step <= 1e-12 { // no decrease left at float64 precision
			break
		}
		theta, loss = next, nextLoss
	}
	pr.Q, pr.KL = q, KL(t, q)
	return pr
}

// ExcessTrace returns tr(J⁺K) for the family at its projection q of p: J = Cov_q(φ) is
// the Fisher information of the family's parameters and K = Cov_p(φ) the covariance of
// the score under the truth. The first-order expected excess of the maximum-likelihood
// fit from n draws over the family's best is ExcessTrace/(2n) (Takeuchi); for a complete
// family (or a correct one) J = K and the trace is the dof, giving the familiar (d)/(2n).
// For the scalar linear family tr(J⁺K) = Σ_y tr(B_y⁻¹ K_yy), with B_y the 2×2 blocks of
// Newton's Hessian and K_yy the diagonal blocks of Cov_p(φ).
func (f Family) ExcessTrace(p, q []float64) float64 {
	checkShape("ExcessTrace", p, f.X, f.K)
	checkShape("ExcessTrace", q, f.X, f.K)
	if f.Complete() {
		return float64(support(p) - 1)
	}
	s := newScalarFit(f.X, f.K)
	tr := 0.0
	for y := 0; y < f.K; y++ {
		b := s.block(q, y)
		kp := s.block(p, y)
		m0, m1 := s.mean(p, y)
		kp[0] -= m0 * m0
		kp[1] -= m0 * m1
		kp[2] -= m1 * m1
		tr += traceInvMul(b, kp)
	}
	return tr
}

// support counts the positive cells of p.
func support(p []float64) int {
	n := 0
	for _, v := range p {
		if v > 0 {
			n++
		}
	}
	return n
}

// scalarFit holds the features of the scalar linear family: cell (x, y) has w_y·t_x +
// b_y with t_x = x/(X−1) (an affine change of x is absorbed by w and b, so the family
// is the one the model trains; the scaling only conditions Newton).
type scalarFit struct {
	x, k int
	t    []float64
}

func newScalarFit(x, k int) scalarFit {
	t := make([]float64, x)
	for i := range t {
		t[i] = float64(i) / float64(x-1)
	}
	return scalarFit{x: x, k: k, t: t}
}

// joint is softmax over all cells of w_y·t_x + b_y.
func (s scalarFit) joint(theta []float64) []float64 {
	l := make([]float64, s.x*s.k)
	for i := 0; i < s.x; i++ {
		for y := 0; y < s.k; y++ {
			l[i*s.k+y] = theta[2*y]*s.t[i] + theta[2*y+1]
		}
	}
	return Softmax(l)
}

// block returns Σ_x d(x,y)·u uᵀ with u = (t_x, 1), as its entries (uu00, uu01, uu11).
func (s scalarFit) block(d []float64, y int) [3]float64 {
	var b [3]float64
	for i := 0; i < s.x; i++ {
		v := d[i*s.k+y]
		b[0] += v * s.t[i] * s.t[i]
		b[1] += v * s.t[i]
		b[2] += v
	}
	return b
}

// mean returns Σ_x d(x,y)·u, u = (t_x, 1).
func (s scalarFit) mean(d []float64, y int) (float64, float64) {
	b := s.block(d, y)
	return b[1], b[2]
}

// newtonStep returns d = −B⁻¹g and the decrement gᵀB⁻¹g at q for target t.
func (s scalarFit) newtonStep(t, q []float64) ([]float64, float64) {
	d := make([]float64, 2*s.k)
	dec := 0.0
	for y := 0; y < s.k; y++ {
		b := s.block(q, y)
		qm0, qm1 := s.mean(q, y)
		tm0, tm1 := s.mean(t, y)
		g0, g1 := qm0-tm0, qm1-tm1
		// Solve the 2×2 system; a tiny relative ridge keeps it solvable when q(·,y)
		// has all but vanished.
		r := 1e-14 * (b[0] + b[2])
		a00, a01, a11 := b[0]+r, b[1], b[2]+r
		det := a00*a11 - a01*a01
		if !(det > 0) {
			continue
		}
		d0 := -(a11*g0 - a01*g1) / det
		d1 := -(a00*g1 - a01*g0) / det
		d[2*y], d[2*y+1] = d0, d1
		dec -= g0*d0 + g1*d1
	}
	return d, dec
}

// traceInvMul returns tr(A⁻¹C) for symmetric 2×2 A and C given as (00, 01, 11).
func traceInvMul(a, c [3]float64) float64 {
	det := a[0]*a[2] - a[1]*a[1]
	if !(det > 0) {
		return 0
	}
	// A⁻¹ = [a11 −a01; −a01 a00]/det
	return (a[2]*c[0] - 2*a[1]*c[1] + a[0]*c[2]) / det
}

// crossEntropy is −Σ t log q, +Inf where t > 0 = q.
func crossEntropy(t, q []float64) float64 {
	s := 0.0
	for i, v := range t {
		if v == 0 {
			continue
		}
		if q[i] == 0 {
			return math.Inf(1)
		}
		s -= v * math.Log(q[i])
	}
	return s
}

// String names the family, e.g. "complete" or "scalar-linear (2K−1 = 5 of 11 dof)".
func (f Family) String() string {
	if f.Complete() {
		return "complete"
	}
	return fmt.Sprintf("scalar-linear (%d of %d dof)", f.Dof(), f.X*f.K-1)
}

// MaxShapeSigma bounds the noise σ of the moons and circles tasks (moons:σ,
// circles:σ). Their noise is 2σ box units (up to 10% more with the task's draw), and
// exact JEM needs a box that holds all but MaxOutsideMass of the mass: about 5 noise
// widths around the curves. At σ = 50 that is about 560 box units, within the largest
// --box (1000); a larger σ could never be run, and checking it (a box search and a
// quadrature per task) took unbounded time (moons:1e9 hung before this bound).
const MaxShapeSigma = 50

// CheckShapeSigma checks the noise σ of a moons or circles task spec s: finite, > 0
// and at most MaxShapeSigma.
func CheckShapeSigma(s string, sigma float64) error {
	switch {
	case !(sigma > 0) || math.IsInf(sigma, 0):
		return fmt.Errorf("task %q: SIGMA must be finite and > 0, got %g", s, sigma)
	case sigma > MaxShapeSigma:
		return fmt.Errorf("task %q: SIGMA must be at most %g, got %g (the noise would spread the task beyond the largest box, --box=1000, that exact JEM can normalise on)",
			s, float64(MaxShapeSigma), sigma)
	}
	return nil
}

package models

import (
	"math"

	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
)

// Adam hyper-parameters (fixed for the project).
const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// The vectorised Adam keeps scaled moments m' = m/(1-beta1) and v' = v/(1-beta2), so that
//
//	m' <- beta1 m' + g
//	v' <- beta2 v' + g*g
//	theta <- theta - lr*lrScale(t) * m' / (sqrt(v') + epsT(t))
//
// with lrScale(t) = (1-beta1) sqrt(1-beta2^t) / ((1-beta1^t) sqrt(1-beta2)) and
// epsT(t) = eps sqrt(1-beta2^t) / sqrt(1-beta2). This is algebraically identical to the
// textbook bias-corrected update theta -= lr * mhat / (sqrt(vhat) + eps) (mhat = m/(1-beta1^t),
// vhat = v/(1-beta2^t)), with 10 element-wise operations per parameter instead of 16.
// t counts from 1. The per-step scalars are graph inputs, so one compiled graph serves
// every chunk of steps.

// adamScalars returns lrScale(t) and epsT(t) for step t >= 1.
func adamScalars(t int) (lrScale, epsT float64) {
	bc1 := 1 - math.Pow(adamBeta1, float64(t))
	sq2 := math.Sqrt(1 - math.Pow(adamBeta2, float64(t)))
	sqB2 := math.Sqrt(1 - adamBeta2)
	return (1 - adamBeta1) * sq2 / (bc1 * sqB2), adamEps * sq2 / sqB2
}

// adam applies one Adam step to every parameter j: theta[j], m[j], v[j] and grad[j] share
// one shape, either [R] (the split form of the fast path, one node per scalar parameter)
// or [R, ...] (the tensor path). lrT[j] is the per-run learning rate times lrScale(t),
// broadcast to that shape (the split form passes the same [R] node for every j); epsT is
// a scalar node.
func adam(theta, m, v, grad, lrT []*Node, epsT *Node) (theta2, m2, v2 []*Node) {
	n := len(theta)
	theta2, m2, v2 = make([]*Node, n), make([]*Node, n), make([]*Node, n)
	for j := range n {
		g := grad[j]
		m2[j] = Add(MulScalar(m[j], adamBeta1), g)
		v2[j] = Add(MulScalar(v[j], adamBeta2), Mul(g, g))
		theta2[j] = Sub(theta[j], Div(Mul(lrT[j], m2[j]), Add(Sqrt(v2[j]), epsT)))
	}
	return
}

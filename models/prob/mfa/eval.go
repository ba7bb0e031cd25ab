package mfa

import "math"

// Evaluator evaluates the exact density of a Truth without allocating. It holds scratch
// space, so one Evaluator must not be used by two goroutines at once; make one per
// goroutine with Truth.NewEvaluator (the Truth's own methods draw them from a pool).
type Evaluator struct {
	t  *Truth
	r  []float64 // D: x − μ
	lc []float64 // per-component log terms of one class
	lj []float64 // K: log p(x, y)
}

// NewEvaluator returns a fresh Evaluator for t.
func (t *Truth) NewEvaluator() *Evaluator {
	return &Evaluator{t: t, r: make([]float64, t.dim), lc: make([]float64, t.maxC), lj: make([]float64, t.k)}
}

func (e *Evaluator) checkX(x []float64) {
	if len(x) != e.t.dim {
		panic("mfa: len(x) != D")
	}
}

// logN is log N(x; μ, Σ) of component k: by Woodbury, (x−μ)ᵀ Σ⁻¹ (x−μ) = rᵀΨ⁻¹r − ‖A r‖²
// with A = L⁻¹ Λᵀ Ψ⁻¹, in O(D·d) (the kernel is in kernel.go).
func (e *Evaluator) logN(k *component, x []float64) float64 {
	return k.logNorm - 0.5*quad(x, k.mean, k.invPsi, k.a, k.d, e.r)
}

// LogComponent is log N(x; μ_yc, Λ_yc Λ_ycᵀ + diag ψ_yc), without the weights π_y w_yc.
func (e *Evaluator) LogComponent(x []float64, y, c int) float64 {
	e.checkX(x)
	return e.logN(&e.t.comps[y][c], x)
}

// LogJoint writes log p(x, y) for y = 0..K−1 into out (length K).
func (e *Evaluator) LogJoint(x, out []float64) {
	e.checkX(x)
	if len(out) != e.t.k {
		panic("mfa: len(out) != K")
	}
	for y, cs := range e.t.comps {
		lc := e.lc[:len(cs)]
		for c := range cs {
			lc[c] = cs[c].logW + e.logN(&cs[c], x)
		}
		out[y] = logSumExp(lc)
	}
}

// LogMarginal is log p(x) = log Σ_y p(x, y).
func (e *Evaluator) LogMarginal(x []float64) float64 {
	e.LogJoint(x, e.lj)
	return logSumExp(e.lj)
}

// Posterior writes the Bayes posterior p(y | x) into out (length K) and returns log p(x).
func (e *Evaluator) Posterior(x, out []float64) float64 {
	e.LogJoint(x, out)
	lse := logSumExp(out)
	for y := range out {
		out[y] = math.Exp(out[y] - lse)
	}
	return lse
}

// logSumExp is log Σ exp(v[i]) (−Inf for an empty or all −Inf v).
func logSumExp(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// LogJoint writes log p(x, y) for each y into out (length K). Safe for concurrent use.
func (t *Truth) LogJoint(x, out []float64) {
	e := t.pool.Get().(*Evaluator)
	e.LogJoint(x, out)
	t.pool.Put(e)
}

// LogMarginal is log p(x). Safe for concurrent use.
func (t *Truth) LogMarginal(x []float64) float64 {
	e := t.pool.Get().(*Evaluator)
	v := e.LogMarginal(x)
	t.pool.Put(e)
	return v
}

// Posterior writes p(y | x) into out (length K) and returns log p(x). Safe for concurrent use.
func (t *Truth) Posterior(x, out []float64) float64 {
	e := t.pool.Get().(*Evaluator)
	v := e.Posterior(x, out)
	t.pool.Put(e)
	return v
}

package prob

import (
	"math"

	"github.com/jemcheck/jemcheck/internal/avx"
)

// # The block tasks' proposal
//
// The old proposal r = α·p + (1−α)·u, u uniform on the box^D (Hesterberg's defensive
// mixture on the whole space), bounds every weight by q/((1−α)u) = (1−α)⁻¹·(2·box)^D·q:
// a bound exponential in D that protects nothing at D = 32. A trained model's density
// decays more slowly than the truth's Gaussian tails in every block, so q/p is heavy-
// tailed block by block, and in D = 2B dimensions the product of B such ratios is
// heavier still: on 20 trained exact-JEM models at B = 16 the weights had k̂ 0.50–0.71
// and log Ẑ read low by 2.9 SE on average (5 of 18 intervals covering; at B = 32 2 of
// 16, k̂ 0.53–0.81; issue 32 item 8).
//
// The proposal's truth component is therefore made defensive block by block: given the
// class y ~ π, each block is drawn from its own truth p_b(·|y) with probability 1 − ε
// and uniformly on its box [−box, box]² with probability ε, independently over blocks:
//
//	p_ε(x) = Σ_y π(y) Π_b [(1 − ε)·p_b(x_b|y) + ε/(2·box)²].
//
// For the block-additive model (and any model near the truth in each block) the
// weight's factor of block b is then bounded by q_b·(2·box)²/ε, a bound in 2-D, not in
// D, so the weights keep finite moments in every dimension. The share is
// ε = min(0.05, 2/B) (BlockDefensiveShare): measured on 20 trained exact-JEM models at
// B = 16 (scripts/iscover), ε = 0 gave k̂ 0.50–0.71 and 21% coverage, ε = 0.0066 k̂
// 0.47–0.62, ε = 0.03 k̂ 0.34–0.53, ε = 0.05 k̂ 0.28–0.59 with every interval covering,
// ε = 0.1 and 0.2 lower k̂ but 2–10× less ESS (a uniform block is a wasted draw); at
// B = 32, ε = 0.05 gave the lowest k̂ of 0, 0.025, 0.05 and 0.1. The cap 2/B keeps at
// most two uniform blocks a draw on average at larger B.
// The global uniform component stays (r = α·p_ε + (1−α)·u): it is what estimates a
// model far from the truth at low D (a flat model, a baseline at D ≤ 8).
//
// Rejected alternatives here: a proposal built from the additive model's own per-block
// marginals (exact for it, so the known-answer check would be circular). A proposal
// fitted to the model's own Metropolis chains, for any model with parameters, is
// importance_adapted.go's (the block tasks' joint points use it); a user's logits at
// fixed points keep this one. A bootstrap or batch-means SE over the same i.i.d.
// draws cannot see a tail the draws miss (see ImportanceLogZ). The Pareto k̂ refusal
// stays the last word for any model: where this proposal does not tame the tail, the
// estimate is refused.

// BlockDefensiveShare is ε for B blocks: each block of a proposal's truth draw is
// uniform on its box with probability ε = min(0.05, 2/B).
func BlockDefensiveShare(B int) float64 { return min(0.05, 2/float64(max(1, B))) }

// ImportanceLogZ estimates log Z = log ∫ Σ_y exp f(x)[y] dx over the box [−box, box]^2B
// of a model whose LSE_y f at n points x [n][2B] is lse(x, n), by importance sampling
// from r = α·p_ε + (1−α)·uniform(box^2B), p_ε the block-defensive truth above with
// ε = BlockDefensiveShare(B): ⌈αn⌉ draws of p_ε and the rest uniform, every weight with
// the mixture density r (deterministic mixture sampling, unbiased; Owen & Zhou 2000).
// The estimate, its SE and refusal are ImportanceLogZ's.
func (t BlocksTask) ImportanceLogZ(seed uint64, n int, alpha, box float64, lse func(x []float64, n int) []float64) ISEstimate {
	return t.ImportanceLogZEps(seed, n, alpha, BlockDefensiveShare(len(t.Blocks)), box, lse)
}

// ImportanceLogZEps is ImportanceLogZ with the per-block uniform share ε given (ε = 0:
// the proposal α·p + (1−α)·u of the earlier versions, the same draws).
func (t BlocksTask) ImportanceLogZEps(seed uint64, n int, alpha, eps, box float64, lse func(x []float64, n int) []float64) ISEstimate {
	return ImportanceLogZ(t.ImportanceLogWeights(seed, n, alpha, eps, box, lse))
}

// ImportanceLogWeights are the log weights log w_i of ImportanceLogZEps (−Inf outside
// the box).
func (t BlocksTask) ImportanceLogWeights(seed uint64, n int, alpha, eps, box float64, lse func(x []float64, n int) []float64) []float64 {
	return t.ImportanceProposal(seed, n, alpha, eps, box).LogWeights(lse)
}

// ISProposal is the importance-sampling proposal of a block task's log Z: its n draws X
// [n][2B] and each draw's log density LogR under the mixture r (−Inf outside the box).
// It depends on the task and the seed only, so every model of a task is weighted on one
// (ImportanceProposal once, LogWeights per model): the proposal's density, a mixture
// over every block's components, costs far more than the model.
type ISProposal struct {
	X    []float64
	LogR []float64
}

// ImportanceProposal draws the proposal of ImportanceLogZEps: ⌈αn⌉ draws of the
// block-defensive truth p_ε and the rest uniform on the box^2B, with their log r.
func (t BlocksTask) ImportanceProposal(seed uint64, n int, alpha, eps, box float64) ISProposal {
	B := len(t.Blocks)
	nt := int(math.Ceil(alpha * float64(n)))
	xt, _ := t.Sample(Seed(seed, SeedString("is-truth")), nt)
	x := make([]float64, n*2*B)
	copy(x, xt)
	rng := NewRand(Seed(seed, SeedString("is-uniform")))
	for i := nt * 2 * B; i < len(x); i++ {
		x[i] = (2*rng.Float64() - 1) * box
	}
	// Each truth draw's blocks made uniform with probability ε, from a stream of their
	// own (three numbers a block whatever ε: the draws of every ε share their randomness).
	brng := NewRand(Seed(seed, SeedString("is-block-uniform")))
	for i := range nt {
		for b := range B {
			u, u0, u1 := brng.Float64(), brng.Float64(), brng.Float64()
			if u < eps {
				x[i*2*B+2*b], x[i*2*B+2*b+1] = (2*u0-1)*box, (2*u1-1)*box
			}
		}
	}
	d := t.densities()
	prior := t.Prior()
	logA := 2 * math.Log(2*box) // a block's box area
	logU := -float64(B) * logA
	lr := make([]float64, n)
	lp := make([]float64, len(prior))
	for i := range n {
		if i%256 == 0 {
			avx.ClearUpper() // after the model's vector code and the allocations: see package avx
		}
		xi := x[i*2*B : (i+1)*2*B]
		in := true
		for _, v := range xi {
			if v < -box || v > box {
				in = false
				break
			}
		}
		if !in {
			lr[i] = math.Inf(1) // weight 0
			continue
		}
		lr[i] = LogSumExp([]float64{math.Log(alpha) + d.logDensityEps(prior, xi, eps, logA, lp), math.Log1p(-alpha) + logU})
	}
	return ISProposal{X: x, LogR: lr}
}

// LogWeights are the log weights f(x_i) − log r(x_i) of a model whose LSE_y f at n
// points x [n][2B] is lse(x, n) (−Inf outside the box).
func (pr ISProposal) LogWeights(lse func(x []float64, n int) []float64) []float64 {
	n := len(pr.LogR)
	f := lse(pr.X, n)
	lw := make([]float64, n)
	for i := range n {
		if math.IsInf(pr.LogR[i], 1) {
			lw[i] = math.Inf(-1)
			continue
		}
		lw[i] = f[i] - pr.LogR[i]
	}
	return lw
}

// logDensityEps is log p_ε(x) = log Σ_y π(y) Π_b [(1 − ε)·p_b(x_b|y) + ε·e^{−logA}] at x
// [2B] inside the box (ε = 0: logDensity); lp is scratch of K.
func (d densityCache) logDensityEps(prior []float64, x []float64, eps, logA float64, lp []float64) float64 {
	if eps == 0 {
		return d.logDensity(prior, x)
	}
	l1, le := math.Log1p(-eps), math.Log(eps)-logA
	for y, py := range prior {
		l := math.Log(py)
		for b, comps := range d.comps {
			lb := math.Log(MixtureDensity(comps, x[2*b], x[2*b+1], y)) - math.Log(d.py[b][y])
			l += logAddExp(l1+lb, le)
		}
		lp[y] = l
	}
	return LogSumExp(lp)
}

// logAddExp is log(e^a + e^b).
func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

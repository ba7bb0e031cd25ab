package kernel

import (
	"math"
	"math/rand/v2"
)

// The Langevin chains of the recipes mala, jarzynski and shortrun (methods/mala,
// methods/jarzynski, methods/shortrun), in any dimension D: N chains of ℝ^D laid out
// [D][N] (coordinate c of chain p at X[c·N+p], as an Objective's lanes), moved on the
// model's ℓ(x) = LSE_y f(x)[y] (the log unnormalised q(x)) through a function of
// Step.LSE's signature.
//
//   - MALA: Metropolis-adjusted Langevin at temperature 1 (Roberts & Tweedie 1996):
//     the proposal x' = x + η∇ℓ(x) + √(2η)ξ, ξ ~ N(0, I_D), accepted with
//     min(1, exp(ℓ(x')−ℓ(x)) N(x|x'+η∇ℓ(x'),2η) / N(x'|x+η∇ℓ(x),2η)); a proposal
//     outside the box [−box, box]^D (or with a non-finite ℓ) is rejected: the target
//     is q on the box, where jemcheck normalises it.
//   - Weighted (Jarzynski's walkers; Carbone, Hua, Coste & Vanden-Eijnden, NeurIPS
//     2023): unadjusted moves x' = x + η∇ℓ(x) + √(2η)ξ, each adding its Metropolis log
//     ratio, less the log mass inside the box of its backward kernel N(x'+η∇ℓ(x'), 2η)
//     (a product over the D coordinates), to the walker's log weight instead of
//     accepting or rejecting; a walker leaving the box gets weight 0 (−Inf) and stays
//     until resampled. Before the moves the weights gain ℓ_new(x) − ℓ_old(x), the
//     change of the model at the walkers since the last training step; after them the
//     walkers are resampled (systematic) when their effective sample size falls under
//     a share of N.
//   - ShortRun: unadjusted Langevin x += η∇ℓ(x) + √(2η)ξ (or noise-free ascent).
//
// The step η of MALA and of the weighted walkers adapts once per training step
// (AdaptStep): log η += AdaptRate·(acceptance − AcceptTarget), within
// [MinStep, MaxStep·box²]. The noise ξ and every uniform of the chains are drawn from
// Rng in a fixed order (coordinate-major: all N chains' coordinate 0, then
// coordinate 1, …), so with D = 2 the chains are the plane kernel's of before, draw
// for draw.

// AcceptTarget and AdaptRate set MALA's (and Jarzynski's) step adaptation (AdaptStep):
// log η moves by AdaptRate·(acceptance − AcceptTarget) per training step, toward
// MALA's optimal acceptance 0.574 (Roberts & Rosenthal 1998). η stays within
// [MinStep, MaxStep·box²].
const (
	AcceptTarget = 0.574
	AdaptRate    = 0.1
	MinStep      = 1e-7
	MaxStep      = 1.0
)

// Langevin is N Langevin chains in ℝ^Dim: their states X [Dim][N], ℓ at them (E) and
// ∇x ℓ (G [Dim][N]), scratch for the proposals, and the stream of their noise.
type Langevin struct {
	Dim, N     int
	X, E, G    []float32
	xp, ep, gp []float32 // proposals
	// Rng draws the chains' noise, MH's uniforms and the resampling's uniform.
	Rng *rand.Rand
}

// NewLangevin allocates n chains in ℝ^dim (n a multiple of VW where they are evaluated
// through Step.LSE).
func NewLangevin(dim, n int) *Langevin {
	return &Langevin{Dim: dim, N: n, X: make([]float32, dim*n), E: make([]float32, n), G: make([]float32, dim*n),
		xp: make([]float32, dim*n), ep: make([]float32, n), gp: make([]float32, dim*n)}
}

// Uniform draws every chain uniformly on the box [−box, box]^Dim from rng
// (coordinate-major).
func (l *Langevin) Uniform(rng *rand.Rand, box float32) {
	for i := range l.X {
		l.X[i] = (2*rng.Float32() - 1) * box
	}
}

// Eval sets E and G to ℓ and ∇ℓ at the chains.
func (l *Langevin) Eval(lse func(x []float32, n int, e, grad []float32)) {
	lse(l.X, l.N, l.E, l.G)
}

// logRatio is the Metropolis–Hastings log ratio of chain p's Langevin move from
// (x, e, g) to its proposal (xp, ep, gp) with step eta.
func (l *Langevin) logRatio(p int, eta float32) float64 {
	N := l.N
	var fwd, bwd float64 // ‖x' − x − η g‖², ‖x − x' − η g'‖²
	for d := range l.Dim {
		i := d*N + p
		a := float64(l.xp[i] - l.X[i] - eta*l.G[i])
		b := float64(l.X[i] - l.xp[i] - eta*l.gp[i])
		fwd += a * a
		bwd += b * b
	}
	return float64(l.ep[p]-l.E[p]) - (bwd-fwd)/(4*float64(eta))
}

// propose fills the proposals xp = x + η g + std·ξ, their ℓ and gradients.
func (l *Langevin) propose(lse func(x []float32, n int, e, grad []float32), eta, std float32) {
	for i := range l.xp {
		l.xp[i] = l.X[i] + eta*l.G[i] + std*float32(l.Rng.NormFloat64())
	}
	lse(l.xp, l.N, l.ep, l.gp)
	ClearUpper() // the scalar float64 maths that follows (math.Log, Exp, Erfc) runs ~100× slower on a dirty AVX-512 upper state
}

// inBox reports whether proposal p lies in the box in every coordinate.
func (l *Langevin) inBox(p int, box float32) bool {
	for i := p; i < len(l.xp); i += l.N {
		if !(abs32(l.xp[i]) <= box) {
			return false
		}
	}
	return true
}

// take moves chain p to its proposal.
func (l *Langevin) take(p int) {
	for i := p; i < len(l.X); i += l.N {
		l.X[i], l.G[i] = l.xp[i], l.gp[i]
	}
	l.E[p] = l.ep[p]
}

// MALA runs steps Metropolis-adjusted Langevin moves of step eta from the chains' state
// (E and G must be current: Eval) and returns the share of proposals accepted
// (AcceptTarget when steps is 0, so that η stays).
func (l *Langevin) MALA(lse func(x []float32, n int, e, grad []float32), steps int, eta, box float32) float64 {
	if steps == 0 {
		return AcceptTarget
	}
	std := float32(math.Sqrt(2 * float64(eta)))
	acc := 0
	for range steps {
		l.propose(lse, eta, std)
		for p := range l.N {
			u := l.Rng.Float64()
			if l.inBox(p, box) && finite32(l.ep[p]) && math.Log(u) < l.logRatio(p, eta) {
				l.take(p)
				acc++
			}
		}
	}
	return float64(acc) / float64(steps*l.N)
}

// moves runs steps unadjusted Langevin moves from the current state, adding each
// move's Metropolis log ratio less its backward kernel's log mass in the box to the
// log weights a (−Inf for a walker leaving the box), and returns the mean min(1, ratio)
// over the moves of live walkers.
func (l *Langevin) moves(lse func(x []float32, n int, e, grad []float32), a []float64, steps int, eta, box float32) float64 {
	if steps == 0 {
		return AcceptTarget
	}
	std := float32(math.Sqrt(2 * float64(eta)))
	var acc float64
	n := 0
	for range steps {
		l.propose(lse, eta, std)
		for p := range l.N {
			if math.IsInf(a[p], -1) {
				continue // dead until resampled: stays put
			}
			r := math.Inf(-1)
			if l.inBox(p, box) && finite32(l.ep[p]) {
				r = l.logRatio(p, eta) - l.logBackMass(p, eta, box)
			}
			acc += math.Exp(min(0, r))
			n++
			a[p] += r
			if !math.IsInf(r, -1) {
				l.take(p)
			}
		}
	}
	if n == 0 {
		return 0
	}
	return acc / float64(n)
}

// Weighted is one training step of Jarzynski walkers (the chains, with log weights a):
// with lse the model at the current parameters, it evaluates ℓ at the walkers, adds
// ℓ_new − ℓ_old to a (unless first; eOld holds ℓ at the walkers under the parameters
// before the last update, as the training step's forward pass saw them), runs steps
// weighted moves, resamples when the ESS falls under essMin·N and writes the
// normalised weights into w. acc is the mean min(1, ratio) (the step adaptation's
// acceptance), ess the weights' effective sample size after the moves, before any
// resampling; dead: no walker has a finite weight (the caller restarts them, and w is
// not written).
func (l *Langevin) Weighted(lse func(x []float32, n int, e, grad []float32), a []float64, eOld []float32, first bool, steps int, eta, box, essMin float32, w []float32) (acc, ess float64, resampled, dead bool) {
	l.Eval(lse)
	if !first {
		for p := range l.N {
			a[p] += float64(l.E[p] - eOld[p])
		}
	}
	acc = l.moves(lse, a, steps, eta, box)
	ess = ESS(a)
	switch {
	case !(ess > 0):
		return acc, 0, false, true
	case ess < float64(essMin)*float64(l.N):
		l.Resample(a, w)
		resampled = true
	}
	normWeights(w, a)
	return acc, ess, resampled, false
}

// ShortRun runs steps Langevin moves x += η∇ℓ(x) + √(2η)ξ from the chains' current X
// (noise false: x += η∇ℓ(x)), unadjusted and unclamped; it evaluates ℓ before each
// move (E and G are then those of the last move's start).
func (l *Langevin) ShortRun(lse func(x []float32, n int, e, grad []float32), steps int, eta float32, noise bool) {
	std := float32(0)
	if noise {
		std = float32(math.Sqrt(2 * float64(eta)))
	}
	for range steps {
		l.Eval(lse)
		for i := range l.X {
			l.X[i] += eta * l.G[i]
			if std > 0 {
				l.X[i] += std * float32(l.Rng.NormFloat64())
			}
		}
	}
}

// logBackMass is the log of the mass inside the box of the backward Langevin kernel
// from proposal p, N(x'+η∇ℓ(x'), 2η·I_D): the backward kernel of the weights is that
// Gaussian normalised on the box, since the walkers live there; its mass is the
// product of the coordinates' normal CDF differences. Without it a walker near the
// edge would be under-weighted by the mass its reverse move puts outside.
func (l *Langevin) logBackMass(p int, eta, box float32) float64 {
	s := math.Sqrt(4 * float64(eta)) // √2·σ, σ = √(2η): Φ(z) = ½ erfc(−z/√2)
	b := float64(box)
	var lm float64
	for d := range l.Dim {
		i := d*l.N + p
		m := float64(l.xp[i] + eta*l.gp[i])
		if (b-math.Abs(m))/s > 6 { // erfc(6) < 2.2e-17: the mass is 1 in float64
			continue
		}
		mass := 0.5 * (math.Erfc((m-b)/s) - math.Erfc((m+b)/s))
		lm += math.Log(max(mass, 1e-300))
	}
	return lm
}

// Resample replaces the walkers by a systematic resample of themselves with weights
// exp(a) (one uniform of Rng), their ℓ and gradients with them, and sets a to 0; w
// (N values) is scratch.
func (l *Langevin) Resample(a []float64, w []float32) {
	N := l.N
	normWeights(w, a)
	u := l.Rng.Float64() / float64(N)
	copy(l.xp, l.X)
	copy(l.gp, l.G)
	copy(l.ep, l.E)
	var cum float64
	j := 0
	for i := range N {
		t := u + float64(i)/float64(N)
		for j < N-1 && cum+float64(w[j]) < t {
			cum += float64(w[j])
			j++
		}
		for d := range l.Dim {
			l.X[d*N+i], l.G[d*N+i] = l.xp[d*N+j], l.gp[d*N+j]
		}
		l.E[i] = l.ep[j]
	}
	clear(a)
}

// ESS is the effective sample size (Σw)²/Σw² of the weights exp(a).
func ESS(a []float64) float64 {
	m := math.Inf(-1)
	for _, v := range a {
		m = max(m, v)
	}
	if math.IsInf(m, -1) {
		return 0
	}
	var s1, s2 float64
	for _, v := range a {
		w := math.Exp(v - m)
		s1 += w
		s2 += w * w
	}
	return s1 * s1 / s2
}

// normWeights writes softmax(a) into w.
func normWeights(w []float32, a []float64) {
	m := math.Inf(-1)
	for _, v := range a {
		m = max(m, v)
	}
	var s float64
	for _, v := range a {
		s += math.Exp(v - m)
	}
	for i, v := range a {
		w[i] = float32(math.Exp(v-m) / s)
	}
}

// NormWeights writes softmax(a) into w: the normalised weights exp(a)/Σexp(a).
func NormWeights(w []float32, a []float64) { normWeights(w, a) }

// AdaptStep is the Langevin step η after a training step whose moves accepted acc:
// η·exp(AdaptRate·(acc − AcceptTarget)), within [MinStep, MaxStep·box²].
func AdaptStep(eta float32, acc float64, box float32) float32 {
	s := float64(eta) * math.Exp(AdaptRate*(acc-AcceptTarget))
	return float32(min(MaxStep*float64(box)*float64(box), max(MinStep, s)))
}

package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The recipes of issue 21 on the 2-D kernels: ways to get the log Z gradient of JEM
// without enumerating Z, each compared with exact JEM on the same tasks, draws and
// initial parameters.
//
//   - MALA2D: the replay buffer of SGLD2D (same slots, restarts and write-back), each
//     chain refined by Steps Metropolis-adjusted Langevin steps at temperature 1
//     (Roberts & Tweedie 1996): proposal x' = x + η∇E(x) + √(2η)ξ, accepted with
//     min(1, exp(E(x')−E(x)) N(x|x'+η∇E(x'),2η) / N(x'|x+η∇E(x),2η)), proposals outside
//     the box rejected (the target is q on the box, where jemcheck normalises it). η is
//     the run's own, adapted once per training step: log η += AdaptRate·(acceptance −
//     AcceptTarget).
//   - Jarzynski2D: Batch persistent walkers with log weights A (Carbone, Hua, Coste &
//     Vanden-Eijnden, NeurIPS 2023). Walkers start uniform on the box with A = E(x) (the
//     importance weight of q against the uniform start). A training step adds to A the
//     change of the energy from the parameters before the last update to the current
//     ones at the walker, E_new(x) − E_old(x), then moves every walker by Steps
//     unadjusted Langevin steps, adding to A each step's Metropolis log ratio instead
//     of accepting or rejecting (the weight of a non-equilibrium move: the Jarzynski /
//     Crooks correction, its backward kernel normalised on the box), a walker leaving
//     the box getting weight 0. When the weights'
//     effective sample size falls under ESS·Batch the walkers are resampled
//     (systematic) and A reset. The negatives' term of the loss is Σ softmax(A)·E(x):
//     an asymptotically unbiased log Z gradient. η adapts as MALA's, on the mean
//     min(1, ratio).
//   - ED2D: Energy Discrepancy (Schröder, Ou, Lim, Li, Vollmer & Duncan, NeurIPS 2023),
//     no sampler: per data point x, y = x + √t ξ and M negatives x'_j = y + √t ξ_j; the
//     q(x) term is mean_i log(w/M + (1/M) Σ_j exp(E(x'_ij) − E(x_i))), w the stabiliser.
//     With w = 1 the data point counts as one more draw beside its M negatives, and the
//     loss's minimiser is the truth for any M (TestEDMinimisedAtTruth; with w ≠ 1 only
//     as M grows).
//   - ShortRun2D: non-persistent chains (Nijkamp et al. 2019; Du & Mordatch 2019; JEM++):
//     Batch fresh uniform points on the box every step, Steps Langevin steps
//     x += η∇E(x) + √(2η)ξ (Noise false: noise-free ascent x += η∇E(x)), and the loss
//     CE + PxWeight·(mean E(neg) − mean E(data)) + L2·(mean E(data)² + mean E(neg)²).
//
// E(x) = LSE_y f(x)[y] is the model's log unnormalised q(x). The samplers and the ED
// loss are written against an Energy, so that their known-answer tests run them on a
// fixed energy whose distribution is known.

const (
	MALA2D      Method2D = iota + 16 // SGLD2D's buffer refined by Metropolis-adjusted Langevin
	Jarzynski2D                      // persistent walkers with Jarzynski importance weights
	ED2D                             // Energy Discrepancy, sampler-free
	ShortRun2D                       // short-run chains from noise with an energy L2 penalty
)

// AcceptTarget and AdaptRate set MALA's (and Jarzynski's) step adaptation: log η moves
// by AdaptRate·(acceptance − AcceptTarget) per training step, toward MALA's optimal
// acceptance 0.574 (Roberts & Rosenthal 1998). η stays within [MinStep, MaxStep·box²].
const (
	AcceptTarget = 0.574
	AdaptRate    = 0.1
	MinStep      = 1e-7
	MaxStep      = 1.0
)

// LangevinOptions are the settings of mala, jarzynski and shortrun.
type LangevinOptions struct {
	Steps  int     // Langevin steps per training step
	Step   float32 // η (the initial η where it adapts)
	Adapt  bool    // mala, jarzynski: adapt η toward AcceptTarget
	Buffer int     // mala: replay buffer size
	Reinit float32 // mala: per-sample restart probability
	Noise  bool    // shortrun: Langevin noise √(2η)ξ (false: noise-free)
	L2     float32 // shortrun: weight of the energies' L2 penalty
	ESS    float32 // jarzynski: resample when the ESS falls under ESS·walkers
}

// EDOptions are Energy Discrepancy's settings (the paper's defaults: M 4, t 1, w 1).
type EDOptions struct {
	M int     // negatives per data point
	T float32 // variance of each Gaussian perturbation
	W float32 // stabiliser
}

var nan = math.NaN()

// DefaultED is Energy Discrepancy's defaults.
func DefaultED() EDOptions { return EDOptions{M: 4, T: 1, W: 1} }

func (m Method2D) isLangevin() bool { return m == MALA2D || m == Jarzynski2D || m == ShortRun2D }

func (s Spec2D) validateRecipe() error {
	switch s.Method {
	case MALA2D, Jarzynski2D, ShortRun2D:
		o := s.Langevin
		if o.Steps < 0 || o.Steps > 10_000 || !(o.Step > 0) || math.IsInf(float64(o.Step), 0) || !(o.L2 >= 0) || math.IsInf(float64(o.L2), 0) {
			return fmt.Errorf("kernel: bad Langevin options %+v (need Steps in [0, 10000], a finite Step > 0, a finite L2 >= 0)", o)
		}
		if s.Method == MALA2D && (o.Buffer < s.Batch || !(o.Reinit >= 0 && o.Reinit <= 1)) {
			return fmt.Errorf("kernel: mala needs Buffer >= Batch and Reinit in [0, 1], got %d, %g", o.Buffer, o.Reinit)
		}
		if s.Method == Jarzynski2D && !(o.ESS >= 0 && o.ESS <= 1) {
			return fmt.Errorf("kernel: jarzynski needs ESS in [0, 1], got %g", o.ESS)
		}
	case ED2D:
		o := s.ED
		if o.M < 1 || o.M > 64 || !(o.T > 0) || math.IsInf(float64(o.T), 0) || !(o.W >= 0) || math.IsInf(float64(o.W), 0) {
			return fmt.Errorf("kernel: bad ED options %+v (need M in [1, 64], a finite T > 0, a finite W >= 0)", o)
		}
		if s.Batch*(1+o.M) > 4096*4 {
			return fmt.Errorf("kernel: ED's batch × (1+M) = %d points per step, over %d", s.Batch*(1+o.M), 4096*4)
		}
	}
	return nil
}

// Energy computes e[p] = E(x_p) for the points x [2][P] (P a multiple of VW) and, when
// grad is not nil, grad [2][P] = ∇x E(x_p).
type Energy func(x []float32, P int, e, grad []float32)

// langevin is a block of chains' Langevin moves: the state of B chains x [2][B], their
// energies e and gradients g at x, and scratch for the proposals.
type langevin struct {
	B          int
	x, e, g    []float32
	xp, ep, gp []float32 // proposals
	rng        *rand.Rand
}

func newLangevin(B int) *langevin {
	return &langevin{B: B, x: make([]float32, 2*B), e: make([]float32, B), g: make([]float32, 2*B),
		xp: make([]float32, 2*B), ep: make([]float32, B), gp: make([]float32, 2*B)}
}

// logRatio is the Metropolis–Hastings log ratio of the Langevin move of chain p from
// (x, e, g) to (xp, ep, gp) with step eta.
func (l *langevin) logRatio(p int, eta float32) float64 {
	B := l.B
	var fwd, bwd float64 // ‖x' − x − η g‖², ‖x − x' − η g'‖²
	for d := range 2 {
		i := d*B + p
		a := float64(l.xp[i] - l.x[i] - eta*l.g[i])
		b := float64(l.x[i] - l.xp[i] - eta*l.gp[i])
		fwd += a * a
		bwd += b * b
	}
	return float64(l.ep[p]-l.e[p]) - (bwd-fwd)/(4*float64(eta))
}

// propose fills the proposals: xp = x + η g + std·ξ, their energies and gradients.
func (l *langevin) propose(en Energy, eta, std float32) {
	for i := range l.xp {
		l.xp[i] = l.x[i] + eta*l.g[i] + std*float32(l.rng.NormFloat64())
	}
	en(l.xp, l.B, l.ep, l.gp)
	ClearUpper() // the scalar float64 maths that follows (math.Log, Exp, Erfc) runs ~100× slower on a dirty AVX-512 upper state
}

// inBox reports whether proposal p lies in the box.
func (l *langevin) inBox(p int, box float32) bool {
	return abs32(l.xp[p]) <= box && abs32(l.xp[l.B+p]) <= box
}

// take moves chain p to its proposal.
func (l *langevin) take(p int) {
	B := l.B
	l.x[p], l.x[B+p] = l.xp[p], l.xp[B+p]
	l.g[p], l.g[B+p] = l.gp[p], l.gp[B+p]
	l.e[p] = l.ep[p]
}

// mala runs steps Metropolis-adjusted Langevin steps of step eta from the current
// state (whose e and g must be current) and returns the share of proposals accepted.
func (l *langevin) mala(en Energy, steps int, eta, box float32) float64 {
	if steps == 0 {
		return AcceptTarget
	}
	std := float32(math.Sqrt(2 * float64(eta)))
	acc := 0
	for range steps {
		l.propose(en, eta, std)
		for p := range l.B {
			u := l.rng.Float64()
			if l.inBox(p, box) && finite32(l.ep[p]) && math.Log(u) < l.logRatio(p, eta) {
				l.take(p)
				acc++
			}
		}
	}
	return float64(acc) / float64(steps*l.B)
}

// jarzynski runs steps unadjusted Langevin steps from the current state, adding each
// move's Metropolis log ratio to the log weights a (−Inf for a walker leaving the box),
// and returns the mean min(1, ratio) over the moves of live walkers.
func (l *langevin) jarzynski(en Energy, a []float64, steps int, eta, box float32) float64 {
	if steps == 0 {
		return AcceptTarget
	}
	std := float32(math.Sqrt(2 * float64(eta)))
	var acc float64
	n := 0
	for range steps {
		l.propose(en, eta, std)
		for p := range l.B {
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

// weighted is one training step of Jarzynski walkers: with the energy en at the
// current parameters, add E_new − E_old to the log weights a (unless first: eOld holds
// E at the walkers under the parameters before the last update), run steps weighted
// Langevin moves, resample when the ESS falls under essMin·B, and write the normalised
// weights into w. ess is the weights' effective sample size before any resampling;
// dead: no walker has a finite weight (the caller restarts them).
func (l *langevin) weighted(en Energy, a []float64, eOld []float32, first bool, steps int, eta, box, essMin float32, w []float32) (acc, ess float64, resampled, dead bool) {
	en(l.x, l.B, l.e, l.g)
	if !first {
		for p := range l.B {
			a[p] += float64(l.e[p] - eOld[p])
		}
	}
	acc = l.jarzynski(en, a, steps, eta, box)
	ess = ESS(a)
	switch {
	case !(ess > 0):
		return acc, 0, false, true
	case ess < float64(essMin)*float64(l.B):
		l.resample(a, w)
		resampled = true
	}
	normWeights(w, a)
	return acc, ess, resampled, false
}

// shortRun runs steps Langevin steps x += η∇E(x) + √(2η)ξ from the current x (without
// noise: x += η∇E(x)), unadjusted.
func (l *langevin) shortRun(en Energy, steps int, eta float32, noise bool) {
	std := float32(0)
	if noise {
		std = float32(math.Sqrt(2 * float64(eta)))
	}
	for range steps {
		en(l.x, l.B, l.e, l.g)
		for i := range l.x {
			l.x[i] += eta * l.g[i]
			if std > 0 {
				l.x[i] += std * float32(l.rng.NormFloat64())
			}
		}
	}
}

// logBackMass is the log of the mass inside the box of the backward Langevin kernel
// from proposal p, N(x'+η∇E(x'), 2η): the backward kernel of the weights is that
// Gaussian normalised on the box, since the walkers live there. Without it a walker
// near the edge would be under-weighted by the mass its reverse move puts outside
// (TestJarzynskiKnownAnswer's cut box).
func (l *langevin) logBackMass(p int, eta, box float32) float64 {
	s := math.Sqrt(4 * float64(eta)) // √2·σ, σ = √(2η): Φ(z) = ½ erfc(−z/√2)
	var lm float64
	for d := range 2 {
		i := d*l.B + p
		m := float64(l.xp[i] + eta*l.gp[i])
		b := float64(box)
		if (b-math.Abs(m))/s > 6 { // erfc(6) < 2.2e-17: the mass is 1 in float64
			continue
		}
		mass := 0.5 * (math.Erfc((m-b)/s) - math.Erfc((m+b)/s))
		lm += math.Log(max(mass, 1e-300))
	}
	return lm
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

// resample replaces the walkers by a systematic resample of themselves with weights
// exp(a) (one uniform draw) and sets a to 0.
func (l *langevin) resample(a []float64, w []float32) {
	B := l.B
	normWeights(w, a)
	u := l.rng.Float64() / float64(B)
	copy(l.xp, l.x)
	copy(l.gp, l.g)
	copy(l.ep, l.e)
	var cum float64
	j := 0
	for i := range B {
		t := u + float64(i)/float64(B)
		for j < B-1 && cum+float64(w[j]) < t {
			cum += float64(w[j])
			j++
		}
		l.x[i], l.x[B+i] = l.xp[j], l.xp[B+j]
		l.g[i], l.g[B+i] = l.gp[j], l.gp[B+j]
		l.e[i] = l.ep[j]
	}
	clear(a)
}

// adaptStep is η after a training step with acceptance acc.
func adaptStep(eta float32, acc float64, box float32) float32 {
	s := float64(eta) * math.Exp(AdaptRate*(acc-AcceptTarget))
	return float32(min(MaxStep*float64(box)*float64(box), max(MinStep, s)))
}

// edPerturb writes the ED negatives of the B data points x [2][P] (in lanes 0..B) into
// lanes B..B(1+M): for data point i, y = x_i + √t ξ, then x'_ij = y + √t ξ_j in lane
// B + j·B + i.
func edPerturb(rng *rand.Rand, x []float32, B, P int, o EDOptions) {
	s := float32(math.Sqrt(float64(o.T)))
	for i := range B {
		y0 := x[i] + s*float32(rng.NormFloat64())
		y1 := x[P+i] + s*float32(rng.NormFloat64())
		for j := range o.M {
			c := B + j*B + i
			x[c] = y0 + s*float32(rng.NormFloat64())
			x[P+c] = y1 + s*float32(rng.NormFloat64())
		}
	}
}

// edLoss is the ED term mean_i log(w/M + (1/M) Σ_j exp(E(x'_ij) − E(x_i))) of the
// energies e of the data (lanes 0..B) and their negatives (lane B + j·B + i), and
// writes its derivative with respect to each energy into coef (same lanes).
func edLoss(e []float32, B int, o EDOptions, coef []float32) float32 {
	ClearUpper()
	logW := math.Inf(-1)
	if o.W > 0 {
		logW = math.Log(float64(o.W))
	}
	logM := math.Log(float64(o.M))
	var loss float64
	for i := range B {
		m := logW
		for j := range o.M {
			m = max(m, float64(e[B+j*B+i]-e[i]))
		}
		s := math.Exp(logW - m)
		for j := range o.M {
			s += math.Exp(float64(e[B+j*B+i]-e[i]) - m)
		}
		lse := m + math.Log(s)
		loss += lse - logM
		var sum float64
		for j := range o.M {
			c := math.Exp(float64(e[B+j*B+i]-e[i])-lse) / float64(B)
			coef[B+j*B+i] = float32(c)
			sum += c
		}
		coef[i] = float32(-sum)
	}
	return float32(loss / float64(B))
}

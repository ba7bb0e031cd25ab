package kernel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The sampler's own distribution (issue 34, item 3): a method's sampler rerun fresh
// on a trained 2-D model, and a long Metropolis-adjusted chain whose steady state is
// the model's q(x), both as n independent chains whose end points the 2-D kind
// histograms against the truth and against q. A method describes its sampler as a
// Chain2D (its plane.sampler hook); the long chain is LongChain2D.

// Start2D is where a sampler's chains start.
type Start2D uint8

const (
	// StartUniform: uniform on the box (sgld, mala, jarzynski, shortrun, the long chain).
	StartUniform Start2D = iota
	// StartClassGauss: a class-wise Gaussian fitted to the training draws (JEM++'s
	// informative start, SGLDOptions.Informative): a class by its frequency, then a
	// draw of its Gaussian.
	StartClassGauss
	// StartNoisedData: a training draw x (uniform over the draws) plus σ·N(0, I), the
	// chain then targeting q(y|x̃) ∝ exp(ℓ(y) − ‖y − x̃‖²/(2σ²)) (drl's recovery chains).
	StartNoisedData
)

// Energy computes e[p] = E(x_p) for the points x [2][P] (P a multiple of VW) and, when
// grad is not nil, grad [2][P] = ∇x E(x_p): E(x) = LSE_y f(x)[y], the model's log
// unnormalised q(x) (ModelEnergy2D), or a fixed energy whose distribution is known
// (the chains' known-answer tests).
type Energy func(x []float32, P int, e, grad []float32)

// Chain2D is a sampler as the 2-D evaluation reruns it: chains from Start, Steps moves
// of
//
//	x' = x + Step·∇log π(x) + Std·ξ,  ξ ~ N(0, I₂),
//
// π the target (exp ℓ on the box; with Sigma > 0, q(x|x̃)), then clamped to the box
// (Clamp), or accepted with the Metropolis–Hastings ratio of that Gaussian proposal
// (MH; a proposal outside the box or with a non-finite ℓ rejected), or kept with its
// Jarzynski weight (Weighted).
type Chain2D struct {
	Start Start2D
	Steps int     // moves per chain (0: the start itself)
	Step  float32 // the drift's coefficient η ≥ 0
	Std   float32 // the noise's standard deviation ≥ 0 (Langevin at temperature 1: √(2η))
	MH    bool    // Metropolis-adjust every move (MALA when Std = √(2η))
	Clamp bool    // clamp to the box after every unadjusted move (sgld_clamp)
	// Adapted: η is the run's own step at the end of training where it adapts one
	// (mala, jarzynski: Result2D.StepSize), Std then √(2η) (WithStep).
	Adapted bool
	// Sigma > 0 with StartNoisedData: the noise level σ of x̃ and of the tether.
	Sigma float32
	// Weighted: Jarzynski's walkers (Carbone et al. 2023): unadjusted moves, each adding
	// its Metropolis log ratio (less the log mass of the backward kernel inside the box)
	// to the walker's log weight, which starts at ℓ(x) (a uniform start's importance
	// weight); a walker leaving the box gets weight 0 and stays. The chains' ends are
	// a systematic resample of the walkers by their weights (n equally weighted points).
	Weighted bool
}

// Draws2D are a run's training draws, for the starts that read them.
type Draws2D struct {
	X0, X1 []float32
	Y      []int32
	K      int
}

// LongChain2D is the long chain of the evaluation: MALA at temperature 1 with the
// fixed step η = 2h² (noise √(2η) = 2h, h the evaluation grid's cell width, so a move
// is about two cells and the acceptance stays high on the tasks the grid resolves,
// whose components are several cells wide), steps moves from uniform on the box. Its
// steady state is q on the box, whatever the method that trained the model.
func LongChain2D(h float64, steps int) Chain2D {
	return Chain2D{Start: StartUniform, Steps: steps, Step: float32(2 * h * h), Std: float32(2 * h), MH: true}
}

// WithStep is c with the run's adapted step eta when c.Adapted and eta is a finite
// number > 0: Step = eta, Std = √(2·eta). Otherwise c unchanged.
func (c Chain2D) WithStep(eta float64) Chain2D {
	if c.Adapted && eta > 0 && !math.IsInf(eta, 0) {
		c.Step, c.Std = float32(eta), float32(math.Sqrt(2*eta))
	}
	return c
}

// Validate checks the sampler's settings.
func (c Chain2D) Validate() error {
	switch {
	case c.Start > StartNoisedData:
		return fmt.Errorf("kernel: Chain2D: unknown start %d", c.Start)
	case c.Steps < 0 || c.Steps > 100_000:
		return fmt.Errorf("kernel: Chain2D: steps %d, want [0, 100000]", c.Steps)
	case !finiteNonNeg(c.Step) || !finiteNonNeg(c.Std):
		return fmt.Errorf("kernel: Chain2D: need a finite step and std >= 0, got %g, %g", c.Step, c.Std)
	case (c.MH || c.Weighted) && c.Steps > 0 && !(c.Std > 0):
		return errors.New("kernel: Chain2D: a Metropolis-adjusted or weighted sampler needs noise (std > 0)")
	case c.MH && c.Weighted:
		return errors.New("kernel: Chain2D: MH and Weighted exclude each other")
	case !finiteNonNeg(c.Sigma) || c.Sigma > 0 && c.Start != StartNoisedData || c.Start == StartNoisedData && !(c.Sigma > 0):
		return fmt.Errorf("kernel: Chain2D: sigma %g: want sigma > 0 exactly with the noised-data start", c.Sigma)
	}
	return nil
}

// Seed tags of Sample's streams.
const (
	tagChainStart = 0x73747274 // "strt"
	tagChainMove  = 0x6d6f7665 // "move"
)

// Sample runs n chains of c on the energy en (ℓ = log q up to a constant) in the box
// [−box, box]² and returns their end points (x0, x1) and the share of proposals
// accepted (MH; NaN otherwise). d are the training draws (StartClassGauss,
// StartNoisedData). The result depends on c, en, n, box, d and seed only.
func (c Chain2D) Sample(en Energy, n int, box float32, d Draws2D, seed uint64) (x0, x1 []float32, acc float64, err error) {
	if err := c.Validate(); err != nil {
		return nil, nil, 0, err
	}
	if n < 1 || !(box > 0) || math.IsInf(float64(box), 0) {
		return nil, nil, 0, fmt.Errorf("kernel: Chain2D: need n >= 1 and a finite box > 0, got %d, %g", n, box)
	}
	if c.Start != StartUniform && (len(d.Y) == 0 || len(d.X0) != len(d.Y) || len(d.X1) != len(d.Y) || d.K < 1) {
		return nil, nil, 0, errors.New("kernel: Chain2D: the start needs the training draws")
	}
	P := (n + VW - 1) / VW * VW
	s := &chainState{c: c, P: P, box: box, en: en,
		x: make([]float32, 2*P), e: make([]float32, P), g: make([]float32, 2*P),
		xp: make([]float32, 2*P), ep: make([]float32, P), gp: make([]float32, 2*P),
		mu: make([]float32, 2*P), mup: make([]float32, 2*P)}
	rs := prob.NewRand(prob.Seed(seed, tagChainStart))
	switch c.Start {
	case StartUniform:
		for p := range n {
			s.x[p] = (2*rs.Float32() - 1) * box
			s.x[P+p] = (2*rs.Float32() - 1) * box
		}
	case StartClassGauss:
		g := FitClassGauss([][]float32{d.X0, d.X1}, d.Y, d.K)
		for p := range n {
			g.DrawStrided(rs, s.x, p, P)
		}
	case StartNoisedData:
		s.a = make([]float32, 2*P)
		for p := range n {
			j := rs.IntN(len(d.Y))
			s.a[p] = d.X0[j] + c.Sigma*float32(rs.NormFloat64())
			s.a[P+p] = d.X1[j] + c.Sigma*float32(rs.NormFloat64())
		}
		copy(s.x, s.a)
	}
	rng := prob.NewRand(prob.Seed(seed, tagChainMove))
	acc = math.NaN()
	switch {
	case c.Steps == 0:
	case c.MH:
		acc = s.mh(rng, n)
	case c.Weighted:
		s.weighted(rng, n)
	default:
		s.unadjusted(rng)
	}
	x0, x1 = make([]float32, n), make([]float32, n)
	copy(x0, s.x[:n])
	copy(x1, s.x[P:P+n])
	return x0, x1, acc, nil
}

// chainState is the chains' state [2][P] (P lanes, the first n the chains), its
// target's log density e and gradient g, a proposal's, the drifts' means, and the
// tether's anchors a (nil without one).
type chainState struct {
	c          Chain2D
	P          int
	box        float32
	en         Energy
	x, e, g    []float32
	xp, ep, gp []float32
	mu, mup    []float32
	a          []float32
}

// target evaluates the target's log density and gradient at x into e and g: ℓ, less
// ‖x − a‖²/(2σ²) with a tether.
func (s *chainState) target(x, e, g []float32) {
	s.en(x, s.P, e, g)
	ClearUpper()
	if s.a == nil {
		return
	}
	P := s.P
	inv2 := 1 / (s.c.Sigma * s.c.Sigma)
	for p := range P {
		d0, d1 := x[p]-s.a[p], x[P+p]-s.a[P+p]
		e[p] -= 0.5 * (d0*d0 + d1*d1) * inv2
		g[p] -= d0 * inv2
		g[P+p] -= d1 * inv2
	}
}

// drift writes x + η·g into mu.
func (s *chainState) drift(mu, x, g []float32) {
	for i := range x {
		mu[i] = x[i] + s.c.Step*g[i]
	}
}

// propose fills the proposals xp = μ(x) + std·ξ and the target at them.
func (s *chainState) propose(rng *rand.Rand) {
	s.drift(s.mu, s.x, s.g)
	for i := range s.xp {
		s.xp[i] = s.mu[i] + s.c.Std*float32(rng.NormFloat64())
	}
	s.target(s.xp, s.ep, s.gp)
	s.drift(s.mup, s.xp, s.gp)
}

// logRatio is the Metropolis–Hastings log ratio of the move of lane p to its proposal.
func (s *chainState) logRatio(p int) float64 {
	P := s.P
	var fwd, bwd float64 // ‖x' − μ(x)‖², ‖x − μ(x')‖²
	for _, i := range [2]int{p, P + p} {
		a := float64(s.xp[i] - s.mu[i])
		b := float64(s.x[i] - s.mup[i])
		fwd += a * a
		bwd += b * b
	}
	v := float64(s.c.Std) * float64(s.c.Std)
	return float64(s.ep[p]-s.e[p]) - (bwd-fwd)/(2*v)
}

func (s *chainState) inBox(p int) bool {
	return abs32(s.xp[p]) <= s.box && abs32(s.xp[s.P+p]) <= s.box
}

func (s *chainState) take(p int) {
	P := s.P
	for _, i := range [2]int{p, P + p} {
		s.x[i], s.g[i] = s.xp[i], s.gp[i]
	}
	s.e[p] = s.ep[p]
}

// unadjusted runs the unadjusted moves (clamped to the box with Clamp).
func (s *chainState) unadjusted(rng *rand.Rand) {
	for range s.c.Steps {
		s.target(s.x, s.e, s.g)
		s.drift(s.x, s.x, s.g)
		for i := range s.x {
			s.x[i] += s.c.Std * float32(rng.NormFloat64())
			if s.c.Clamp {
				s.x[i] = min(s.box, max(-s.box, s.x[i]))
			}
		}
	}
}

// mh runs the Metropolis-adjusted moves and returns the share of the first n lanes'
// proposals accepted.
func (s *chainState) mh(rng *rand.Rand, n int) float64 {
	s.target(s.x, s.e, s.g)
	acc := 0
	for range s.c.Steps {
		s.propose(rng)
		for p := range s.P {
			u := rng.Float64()
			if s.inBox(p) && finite32(s.ep[p]) && math.Log(u) < s.logRatio(p) {
				s.take(p)
				if p < n {
					acc++
				}
			}
		}
	}
	return float64(acc) / float64(s.c.Steps*n)
}

// weighted runs Jarzynski's weighted moves and resamples the first n walkers
// systematically by their weights (one uniform draw); with no live walker the chains
// stay where they are.
func (s *chainState) weighted(rng *rand.Rand, n int) {
	s.target(s.x, s.e, s.g)
	a := make([]float64, n)
	for p := range n {
		a[p] = float64(s.e[p])
	}
	for range s.c.Steps {
		s.propose(rng)
		for p := range n {
			if math.IsInf(a[p], -1) {
				continue
			}
			if !s.inBox(p) || !finite32(s.ep[p]) {
				a[p] = math.Inf(-1)
				continue
			}
			a[p] += s.logRatio(p) - s.logBackMass(p)
			s.take(p)
		}
	}
	if ESS(a) > 0 {
		w := make([]float32, n)
		normWeights(w, a)
		P := s.P
		copy(s.xp, s.x)
		u := rng.Float64() / float64(n)
		var cum float64
		j := 0
		for i := range n {
			t := u + float64(i)/float64(n)
			for j < n-1 && cum+float64(w[j]) < t {
				cum += float64(w[j])
				j++
			}
			s.x[i], s.x[P+i] = s.xp[j], s.xp[P+j]
		}
	}
}

// logBackMass is the log mass inside the box of the backward kernel N(μ(x'), std²)
// of lane p's proposal (langevin.logBackMass's, for any std).
func (s *chainState) logBackMass(p int) float64 {
	sd := math.Sqrt2 * float64(s.c.Std)
	b := float64(s.box)
	var lm float64
	for _, i := range [2]int{p, s.P + p} {
		m := float64(s.mup[i])
		if (b-math.Abs(m))/sd > 6 {
			continue
		}
		lm += math.Log(max(0.5*(math.Erfc((m-b)/sd)-math.Erfc((m+b)/sd)), 1e-300))
	}
	return lm
}

// ModelEnergy2D is the MLP 2-hidden…-K with parameters theta (canonical layout, as
// GridLogits) as an Energy: e = LSE_y f(x)[y] and its input gradient, on any number of
// lanes (by chunks of promiseChunk). It keeps scratch space: one goroutine at a time.
func ModelEnergy2D(hidden []int, k int, theta []float32) (Energy, error) {
	ev, err := newEval2D("ModelEnergy2D", hidden, k, theta, nil, nil)
	if err != nil {
		return nil, err
	}
	return func(x []float32, P int, e, grad []float32) {
		for lo := 0; lo < P; lo += promiseChunk {
			m := min(promiseChunk, P-lo) // a multiple of VW, as P and promiseChunk are
			clear(ev.x[:2*m])
			copy(ev.x[:m], x[lo:lo+m])
			copy(ev.x[m:2*m], x[P+lo:P+lo+m])
			if grad != nil {
				ev.net.inputGrad(ev.th, ev.x[:2*m], ev.dx, m, k)
				copy(grad[lo:lo+m], ev.dx[:m])
				copy(grad[P+lo:P+lo+m], ev.dx[m:2*m])
			} else {
				ev.net.forward(ev.th, ev.x[:2*m], m)
			}
			for p := range m {
				e[lo+p] = lse32(ev.net.f, p, k, m)
			}
		}
	}, nil
}

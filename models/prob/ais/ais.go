package ais

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/jemcheck/jemcheck/models/prob"
)

// Kernel is the MCMC transition applied at each intermediate temperature.
type Kernel int

const (
	// HMC is Hamiltonian Monte Carlo with Options.Leapfrog leapfrog steps.
	HMC Kernel = iota
	// MALA is the Metropolis-adjusted Langevin algorithm: exactly HMC with one
	// leapfrog step (its proposal x + (ε²/2)·S∇log f_β + ε·S^{1/2}ξ and its
	// Metropolis–Hastings ratio are those of one leapfrog step, S = diag(SD²)).
	MALA
)

func (k Kernel) String() string {
	if k == MALA {
		return "mala"
	}
	return "hmc"
}

// Options are an AIS run's sizes and choices. Zero values take the defaults noted.
type Options struct {
	Seed   uint64 // chain c's randomness is prob.NewRand(prob.Seed(Seed, c))
	Chains int    // forward chains (default 256); Reverse runs one chain per exact draw
	Temps  int    // T, the temperatures after β_0 = 0 (default 1000)
	Path   Path   // spacing of β (default Sigmoid)
	// Delta is the Sigmoid path's δ (default 4); BetaMin the Geometric path's β_1
	// (default 1e-4).
	Delta, BetaMin float64

	Kernel   Kernel // default HMC
	Leapfrog int    // HMC leapfrog steps L (default 5; MALA: 1)
	Moves    int    // transitions per intermediate temperature (default 1)
	// Jitter spreads each chain's step uniformly over ε·(1 ± Jitter) at every
	// transition (default 0.1; negative: none), which breaks HMC's resonances on
	// near-Gaussian targets without touching validity (the draw ignores the state).
	Jitter float64

	// Schedule, when set, fixes the betas and step sizes (Temps, Path, Delta, BetaMin
	// are then ignored) and no pilot runs. Otherwise Tune's pilot chooses the steps.
	Schedule *Schedule
	// TargetAccept is the pilot's target mean acceptance (default 0.65 for HMC, 0.574
	// for MALA).
	TargetAccept float64
	PilotChains  int     // pilot chains (default min(64, Chains)), seeded apart from the main chains
	PilotRounds  int     // pilot transitions (and step updates) per temperature (default max(1, ⌈200/T⌉))
	InitStep     float64 // the pilot's first step in whitened units (default D^{−1/4})

	Block   int // chains per batch evaluation of the target (default 16); results depend on it only through the target's batching
	Workers int // goroutines (default GOMAXPROCS); results do not depend on it
}

func (o Options) withDefaults(d int) Options {
	if o.Chains <= 0 {
		o.Chains = 256
	}
	if o.Temps <= 0 {
		o.Temps = 1000
	}
	if o.Kernel == MALA {
		o.Leapfrog = 1
	} else if o.Leapfrog <= 0 {
		o.Leapfrog = 5
	}
	if o.Moves <= 0 {
		o.Moves = 1
	}
	if o.Jitter == 0 {
		o.Jitter = 0.1
	}
	o.Jitter = min(max(o.Jitter, 0), 0.9)
	if !(o.TargetAccept > 0 && o.TargetAccept < 1) {
		o.TargetAccept = 0.65
		if o.Kernel == MALA {
			o.TargetAccept = 0.574
		}
	}
	if o.PilotChains <= 0 {
		o.PilotChains = min(64, o.Chains)
	}
	if o.Block <= 0 {
		o.Block = 16
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if !(o.InitStep > 0) {
		o.InitStep = math.Pow(float64(d), -0.25)
	}
	return o
}

// Estimate is one direction of AIS.
type Estimate struct {
	// Direction is "forward" (chains from the base: LogZ a stochastic LOWER bound on
	// log Z) or "reverse" (chains from exact draws of f/Z: LogZ a stochastic UPPER
	// bound).
	Direction string
	// LogZ is forward: log mean_i exp(LogW_i), with E[Ẑ] = Z, so E[LogZ] ≤ log Z;
	// reverse: −log mean_i exp(LogW_i), with E[1/Ẑ] = 1/Z, so E[LogZ] ≥ log Z.
	LogZ float64
	// SE is the delta-method standard error of LogZ, sd(w)/(√n·mean w) with w = exp(LogW).
	SE float64
	// ESS is (Σw)²/Σw².
	ESS float64
	// K is the Pareto k̂ of the weights' upper tail (prob.ParetoK; NaN where it cannot
	// be fitted): above ½ the weights' variance is infinite and SE is not to be trusted.
	K float64
	// LogW is the per-chain log weights (forward: of Z; reverse: of 1/Z).
	LogW []float64
	// Accept is the mean acceptance probability over all transitions; AcceptByTemp
	// that at each β_t (0 at the ends, where no transition runs).
	Accept       float64
	AcceptByTemp []float64
	Schedule     Schedule
}

func estimate(dir string, logw, accByT []float64, s Schedule) Estimate {
	e := Estimate{Direction: dir, LogW: logw, AcceptByTemp: accByT, Schedule: s, K: prob.ParetoK(logw)}
	e.LogZ, e.SE, e.ESS = logMeanExp(logw)
	if dir == "reverse" {
		e.LogZ = -e.LogZ
	}
	T := len(accByT) - 1
	for t := 1; t < T; t++ {
		e.Accept += accByT[t]
	}
	if T > 1 {
		e.Accept /= float64(T - 1)
	}
	return e
}

// logMeanExp is log mean exp(lw), its delta-method SE and the ESS of the weights.
func logMeanExp(lw []float64) (lme, se, ess float64) {
	n := len(lw)
	m := math.Inf(-1)
	for _, v := range lw {
		if math.IsNaN(v) {
			return math.NaN(), math.NaN(), 0
		}
		m = max(m, v)
	}
	if n == 0 || math.IsInf(m, 0) {
		return m, math.NaN(), 0
	}
	var s, s2 float64
	for _, v := range lw {
		w := math.Exp(v - m)
		s += w
		s2 += w * w
	}
	mean := s / float64(n)
	variance := max(0, s2/float64(n)-mean*mean) * float64(n) / float64(max(1, n-1))
	return m + math.Log(mean), math.Sqrt(variance/float64(n)) / mean, s * s / s2
}

func check(target Target, base Base) (BatchTarget, error) {
	if target == nil || base == nil {
		return nil, errors.New("ais: nil target or base")
	}
	if target.Dim() != base.Dim() {
		return nil, fmt.Errorf("ais: target has D = %d, base %d", target.Dim(), base.Dim())
	}
	return AsBatch(target), nil
}

// pilotTag separates the pilot's streams from the main chains'.
var pilotTag = prob.SeedString("ais pilot")

// Tune is the pilot run: o.PilotChains forward chains (streams prob.Seed(Seed, pilot,
// c), apart from the main chains') anneal along o's betas, and at each β_t the step is
// adapted PilotRounds times toward TargetAccept from the mean acceptance probability
// over all pilot chains (log ε += 1.5·(acceptance − target)); the step recorded for β_t
// is where that leaves it. The main runs then use a fixed schedule, independent of
// their own chains, so every kernel is a fixed Markov kernel invariant for f_β and
// E[Ẑ] = Z holds exactly (adapting on the main chains themselves would make each
// chain's kernel depend on its own past through the pooled acceptance, a bias of order
// 1/Chains). With o.Schedule set, Tune returns it.
func Tune(ctx context.Context, target Target, base Base, o Options) (Schedule, error) {
	tgt, err := check(target, base)
	if err != nil {
		return Schedule{}, err
	}
	d := base.Dim()
	o = o.withDefaults(d)
	if o.Schedule != nil {
		return *o.Schedule, o.Schedule.check()
	}
	T := o.Temps
	s := Schedule{Betas: Betas(o.Path, T, o.Delta, o.BetaMin), Step: make([]float64, T+1)}
	rounds := o.PilotRounds
	if rounds <= 0 {
		rounds = max(1, (200+T-1)/T)
	}
	seed := prob.Seed(o.Seed, pilotTag)
	bs := makeBlocks(o.PilotChains, d, tgt, base, &o, func(c int) uint64 { return prob.Seed(seed, uint64(c)) })
	parallel(o.Workers, len(bs), func(k int) {
		b := bs[k]
		for i := range b.n {
			base.Sample(b.rngs[i], b.x[i*d:(i+1)*d])
		}
		b.eval(b.x, b.lf, b.lb, b.gf, b.gb)
	})
	eps := o.InitStep
	s.Step[0] = eps
	for t := 1; t < T; t++ {
		if err := ctx.Err(); err != nil {
			return Schedule{}, err
		}
		for range rounds {
			parallel(o.Workers, len(bs), func(k int) { bs[k].transition(s.Betas[t], eps) })
			a := 0.0
			for _, b := range bs { // in block order: deterministic
				for _, v := range b.acc {
					a += v
				}
			}
			a /= float64(o.PilotChains)
			eps *= math.Exp(1.5 * (a - o.TargetAccept))
			eps = min(max(eps, 1e-6), 10)
		}
		s.Step[t] = eps
	}
	s.Step[T] = eps
	return s, nil
}

// Forward is AIS (Neal 2001) from base to target/Z along the geometric path: o.Chains
// chains start at exact base draws; at each β_t every chain's log weight gains
// (β_t − β_{t−1})·(log f − log base) at its current point, then the chain moves by
// o.Moves HMC/MALA transitions invariant for f_{β_t} (none at β_T = 1). exp(log weight)
// has mean Z exactly, so log Ẑ = log mean exp(LogW) is a stochastic LOWER bound on
// log Z: E[log Ẑ] ≤ log Z (Jensen), and P(log Ẑ > log Z + t) ≤ e^{−t} (Markov).
// The schedule is o.Schedule or Tune's.
func Forward(ctx context.Context, target Target, base Base, o Options) (Estimate, error) {
	if o.Chains == 1 {
		return Estimate{}, errors.New("ais: 1 chain")
	}
	s, err := Tune(ctx, target, base, o)
	if err != nil {
		return Estimate{}, err
	}
	o = o.withDefaults(base.Dim())
	logw, acc, err := run(ctx, AsBatch(target), base, s, &o, o.Seed, o.Chains, nil)
	if err != nil {
		return Estimate{}, err
	}
	return estimate("forward", logw, acc, s), nil
}

// Reverse is AIS run backwards (Grosse, Ghahramani & Adams 2015): one chain per exact
// draw of the normalised target f/Z (exactDraws, n×D row-major), moving at β_{T−1}, …,
// β_1 by the same kernels as Forward and gaining (β_{t−1} − β_t)·(log f − log base) at
// each step. exp(log weight) then has mean Z_base/Z = 1/Z exactly, so
// LogZ = −log mean exp(LogW) is a stochastic UPPER bound on log Z. The bound holds
// only for exact draws of f/Z: approximate ones (MCMC) void it. Chain c's stream is
// prob.Seed(o.Seed, c); o.Chains is ignored. The schedule is o.Schedule or Tune's (a
// forward pilot from the base).
func Reverse(ctx context.Context, target Target, base Base, exactDraws []float64, o Options) (Estimate, error) {
	s, err := Tune(ctx, target, base, o)
	if err != nil {
		return Estimate{}, err
	}
	d := base.Dim()
	o = o.withDefaults(d)
	if len(exactDraws)%d != 0 || len(exactDraws) < 2*d {
		return Estimate{}, fmt.Errorf("ais: %d draw values are not ≥ 2 rows of D = %d", len(exactDraws), d)
	}
	n := len(exactDraws) / d
	logw, acc, err := run(ctx, AsBatch(target), base, s, &o, o.Seed, n, exactDraws)
	if err != nil {
		return Estimate{}, err
	}
	return estimate("reverse", logw, acc, s), nil
}

// DefaultGapTol is Calibrate's default tolerance on the BDMC gap, in nats.
const DefaultGapTol = 0.1

// CoverZ is how many SEs either bound may miss the true log Z by in Calibrate's
// coverage check.
const CoverZ = 3.0

// MaxK is the largest Pareto k̂ of either direction's weights at which Calibrate
// accepts: PSIS's threshold for a usable estimate (Vehtari et al. 2024). Above it the
// sample SE understates the error and a small measured gap proves nothing.
const MaxK = 0.7

// Calibration is a bidirectional Monte Carlo check of a schedule on a target of known
// log Z (a teacher).
type Calibration struct {
	TrueLogZ     float64
	Lower, Upper Estimate // forward (stochastic lower bound) and reverse (upper)
	// Gap is Upper.LogZ − Lower.LogZ (≥ 0 in expectation); GapSE its SE (the two
	// independent SEs in quadrature).
	Gap, GapSE float64
	// Covered: Lower.LogZ − CoverZ·Lower.SE ≤ TrueLogZ ≤ Upper.LogZ + CoverZ·Upper.SE.
	Covered bool
	GapTol  float64
	// Accept: Gap + GapSE ≤ GapTol, Covered, and both k̂ ≤ MaxK: the schedule may be
	// trusted at this D.
	Accept   bool
	Reason   string // why not accepted ("" where accepted)
	Schedule Schedule
}

// reverseTag separates the reverse chains' streams from the forward chains'.
var reverseTag = prob.SeedString("ais reverse")

// Calibrate runs BDMC on a target whose log Z is known: one pilot (Tune, unless
// o.Schedule is set), then Forward (streams from o.Seed) and Reverse from draws
// (streams from prob.Seed(o.Seed, reverse)) on the same schedule. The schedule is
// accepted when
//
//   - the gap upper − lower, plus one SE of it, is at most gapTol (≤ 0: DefaultGapTol):
//     the gap is itself an estimate, and a gap of 0.02 ± 0.2 does not show the
//     schedule is good to 0.1 nat (raise Chains to certify a tighter tolerance);
//   - both directions' weights have k̂ ≤ MaxK, so their SEs mean something;
//   - the true log Z lies in [lower − CoverZ·SE, upper + CoverZ·SE]: a narrow bracket
//     that misses the truth means the draws are not exact or something is broken.
//
// An accepted (T, path, kernel, L, Moves, Chains) may then be trusted on a learned
// model of the same D and similar shape, whose forward AIS (re-tuned: Tune on that
// model) is its only available side.
func Calibrate(ctx context.Context, target Target, trueLogZ float64, base Base, draws []float64, o Options, gapTol float64) (Calibration, error) {
	if !(gapTol > 0) {
		gapTol = DefaultGapTol
	}
	s, err := Tune(ctx, target, base, o)
	if err != nil {
		return Calibration{}, err
	}
	o.Schedule = &s
	lo, err := Forward(ctx, target, base, o)
	if err != nil {
		return Calibration{}, err
	}
	ro := o
	ro.Seed = prob.Seed(o.Seed, reverseTag)
	up, err := Reverse(ctx, target, base, draws, ro)
	if err != nil {
		return Calibration{}, err
	}
	c := Calibration{TrueLogZ: trueLogZ, Lower: lo, Upper: up, GapTol: gapTol, Schedule: s}
	c.Gap = up.LogZ - lo.LogZ
	c.GapSE = math.Hypot(lo.SE, up.SE)
	c.Covered = lo.LogZ-CoverZ*lo.SE <= trueLogZ && trueLogZ <= up.LogZ+CoverZ*up.SE
	switch {
	case !(c.Gap+c.GapSE <= gapTol):
		c.Reason = fmt.Sprintf("BDMC gap %.3g ± %.2g nat: above %.3g (T = %d)", c.Gap, c.GapSE, gapTol, s.T())
	case lo.K > MaxK || up.K > MaxK:
		c.Reason = fmt.Sprintf("Pareto k̂ %.2f forward, %.2f reverse: above %.1f, the SEs are not to be trusted", lo.K, up.K, MaxK)
	case !c.Covered:
		c.Reason = fmt.Sprintf("true log Z %.4g outside [%.4g − %g SE, %.4g + %g SE]: draws not exact?", trueLogZ, lo.LogZ, CoverZ, up.LogZ, CoverZ)
	default:
		c.Accept = true
	}
	return c, nil
}

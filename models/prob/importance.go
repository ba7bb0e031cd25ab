package prob

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/jemcheck/jemcheck/internal/avx"
)

// # Estimated truth: log Z by importance sampling
//
// Where Z = ∫ Σ_y exp f(x)[y] dx cannot be enumerated (an unrestricted model in D
// dimensions), it is estimated by importance sampling from a proposal r built from the
// truth p (BlocksTask.ImportanceLogZ, blocks.EvalPoints): Ẑ = mean_i w_i, w_i =
// Σ_y exp f(x_i)[y] / r(x_i). Ẑ is unbiased; log Ẑ is biased low (Jensen).
//
// # When the estimate is refused, and why
//
// The delta-method SE, sd(w)/(√n·mean w), is an honest 95% interval only where the
// weights have a finite variance and the sample has seen their tail. At D = 32 a
// proposal ½ p + ½ uniform(box^D) gave weights q/r whose variance is dominated by
// draws it rarely makes (the model's mass in the truth's tails, block by block): the
// sample SE understated the error and log Ẑ read low by 2–5 SE at ESS ≈ 2,000 (issue
// 32 item 8). Neither a bootstrap nor batch means over the same i.i.d. draws can see
// the unsampled tail (they resample the sample's own), and more draws only shrink the
// error as n^{−(1−k)} instead of n^{−½} when the tail index k > ½. So the estimate is
// judged by its tail, not by its sample variance:
//
//   - Pareto k̂ (Vehtari, Simpson, Gelman, Yao & Gabry 2024, "Pareto smoothed importance
//     sampling"): a generalised Pareto fit (Zhang & Stephens 2009, with PSIS's weakly
//     informative prior) to the M = ⌈min(n/5, 3√n)⌉ largest weights. Its shape k is the
//     tail index: Var(w) < ∞ iff k < ½, E[w] < ∞ iff k < 1. The estimate is refused
//     where k̂ > MaxParetoK = ½: there the SE has no finite target (a CLT interval is
//     not honest, whatever its ESS). PSIS's own threshold 0.7 is for a usable point
//     estimate, not for a 95% interval, and at 0.5 < k < 0.7 the delta SE under-covers
//     (TestImportanceCoverage's heavy-tailed cases).
//   - ESS = (Σw)²/Σw² < MinESS: too few draws carry it.
//
// A refused estimate keeps LogZ (a stochastic lower bound: E[log Ẑ] ≤ log Z and
// P(log Ẑ ≥ log Z + t) ≤ e^{−t} by Markov) with SE NaN and the Reason; the KLs that
// need it are NaN. Where it is used, the interval is log Ẑ ± 1.96 SE with SE the
// delta-method SE plus tailAllowance/1.96: the upper end must also reach the weight
// mass above the sample's largest that the draws under-represent (log Ẑ reads low, not
// high, when the weights are right-skewed), and a symmetric interval that contains the
// one-sided allowance keeps the one SE column honest. The Jensen bias, about SE²/2, is
// below 0.03 SE at the SEs used and is not corrected. Tried and dropped: a studentized
// bootstrap (bootstrap-t) of the same draws moved the worst D = 64 z only from −2.90 to
// −2.72 at 20,000 resamples' cost (it resamples the tail the sample has). The
// proposal's part: BlocksTask.ImportanceLogZ.

// ISEstimate is an importance-sampling estimate of log Z.
type ISEstimate struct {
	LogZ float64 // log Ẑ (where refused: a stochastic lower bound, no interval)
	SE   float64 // standard error of log Ẑ (delta method: sd(w)/(√n·mean w)); NaN where refused
	ESS  float64 // effective sample size (Σw)²/Σw²
	N    int     // draws
	// K is the Pareto k̂ of the weights' upper tail (ParetoK; NaN where it cannot be fitted:
	// fewer than 25 positive weights or a flat tail, whose variance is then bounded by the
	// sample's own).
	K float64
	// Reason says why the estimate is refused ("" where it is used).
	Reason string
}

// MinESS is the least effective sample size at which an importance estimate is used.
const MinESS = 100

// MaxParetoK is the largest Pareto k̂ of the weights at which an importance estimate
// and its delta-method SE are used: the weights' variance is finite only for k < ½.
const MaxParetoK = 0.5

// Refused reports whether the estimate is too poor to decide on (Reason set, or not
// finite).
func (e ISEstimate) Refused() bool {
	return e.Reason != "" || !(e.ESS >= MinESS) || math.IsNaN(e.LogZ) || math.IsInf(e.LogZ, 0) || math.IsNaN(e.SE)
}

// ImportanceLogZ is the estimate from the log weights log w_i (−Inf: a draw where the
// integrand is 0), with its Pareto k̂ and the refusal rule above.
func ImportanceLogZ(logw []float64) ISEstimate {
	e := importanceMoments(logw)
	switch {
	case math.IsNaN(e.LogZ) || math.IsInf(e.LogZ, 0) || math.IsNaN(e.SE):
		e.Reason = "log Ẑ not finite"
	case !(e.ESS >= MinESS):
		e.Reason = fmt.Sprintf("ESS %.0f < %d", e.ESS, MinESS)
	default:
		e.K = ParetoK(logw)
		if e.K > MaxParetoK {
			e.Reason = fmt.Sprintf("Pareto k̂ %.2f > %.1f: the weights' variance is infinite, no honest SE", e.K, MaxParetoK)
			break
		}
		e.SE += tailAllowance(logw, e.LogZ) / 1.96
	}
	if e.Reason != "" {
		e.SE = math.NaN()
	}
	return e
}

// importanceMoments is log Ẑ, its delta-method SE and the ESS of the log weights,
// with no refusal (K NaN).
func importanceMoments(logw []float64) ISEstimate {
	n := len(logw)
	if n == 0 {
		return ISEstimate{LogZ: math.NaN(), SE: math.NaN(), ESS: 0, K: math.NaN()}
	}
	m := math.Inf(-1)
	for _, v := range logw {
		m = max(m, v)
	}
	if math.IsInf(m, -1) || math.IsNaN(m) {
		return ISEstimate{LogZ: math.Inf(-1), SE: math.NaN(), ESS: 0, N: n, K: math.NaN()}
	}
	var s, s2 float64
	for _, v := range logw {
		w := math.Exp(v - m)
		s += w
		s2 += w * w
	}
	mean := s / float64(n)
	variance := max(0, s2/float64(n)-mean*mean) * float64(n) / float64(max(1, n-1))
	return ISEstimate{LogZ: m + math.Log(mean), SE: math.Sqrt(variance/float64(n)) / mean, ESS: s * s / s2, N: n, K: math.NaN()}
}

// ParetoK is PSIS's k̂ of importance log weights (Vehtari et al. 2024): the shape of a
// generalised Pareto distribution fitted to the exceedances of the M = ⌈min(n/5, 3√n)⌉
// largest weights over the next one, by the profile-posterior estimate of Zhang &
// Stephens (2009) with the weakly informative prior toward ½ of PSIS (as in R's loo,
// gpdfit with wip). NaN where it cannot be fitted (M < 5, fewer than 25 finite
// weights, or a tail of equal weights).
func ParetoK(logw []float64) float64 {
	k, _, _, _ := paretoFit(logw)
	return k
}

// paretoFit is ParetoK's fit: the shape k̂ and scale σ̂ of the exceedances of the tail
// weights over the cut-off, the weights in units of the largest, e^{log w − top}.
func paretoFit(logw []float64) (k, sigma, cut, top float64) {
	nan := math.NaN()
	fin := make([]float64, 0, len(logw))
	for _, v := range logw {
		if !math.IsInf(v, -1) && !math.IsNaN(v) {
			fin = append(fin, v)
		}
	}
	n := len(logw)
	m := int(math.Ceil(min(0.2*float64(n), 3*math.Sqrt(float64(n)))))
	if m < 5 || len(fin) < max(25, m+1) {
		return nan, nan, nan, nan
	}
	sort.Float64s(fin)
	top = fin[len(fin)-1]
	cut = math.Exp(fin[len(fin)-m-1] - top)
	x := make([]float64, m)
	for i, v := range fin[len(fin)-m:] {
		x[i] = math.Exp(v-top) - cut
	}
	if !(x[m-1] > x[0]) {
		return nan, nan, nan, nan
	}
	k, sigma = gpdFit(x)
	return k, sigma, cut, top
}

// tailAllowance is the upward allowance, on the log scale, for the weights above the
// sample's largest that n draws under-represent (0 where the fitted tail is light,
// k̂ ≤ 0, or cannot be fitted). Under the fitted generalised Pareto tail a draw lands
// above the largest weight w_max with probability about 1/n, and then its expected
// weight is w_max + σ(w_max)/(1 − k̂), σ(u) = σ̂ + k̂·(u − u₀) the tail's scale at u; the
// sample's mean misses that expected contribution (a Good–Turing-like first term of
// the unseen tail), so the interval's upper end reaches log(1 + it/Σw) further. It is
// what keeps a right-skewed, lognormal-like weight sample (many blocks' factors
// multiplied: D = 64) from reading low beyond its interval, and about 1/n of Ẑ where
// the weights are light.
func tailAllowance(logw []float64, logZ float64) float64 {
	k, sigma, cut, top := paretoFit(logw)
	if !(k > 0) || !(k < 1) || !(sigma > 0) {
		return 0
	}
	wmax := 1.0                                    // the largest weight, in units of itself
	su := sigma + k*(wmax-cut)                     // the tail's scale at w_max
	above := wmax + su/(1-k)                       // E[w | w > w_max]
	sum := math.Exp(logZ-top) * float64(len(logw)) // Σw in the same units
	return math.Log1p(above / sum)
}

// gpdFit is the shape k̂ and scale σ̂ of a generalised Pareto fit to the sorted exceedances x > 0
// (Zhang & Stephens 2009; loo's gpdfit with its weakly informative prior: k̂ is shrunk
// toward ½ by 10 pseudo-observations).
func gpdFit(x []float64) (k, sigma float64) {
	n := len(x)
	const prior = 3.0
	mm := 30 + int(math.Sqrt(float64(n)))
	xstar := x[max(0, int(float64(n)/4+0.5)-1)] // the first quartile
	theta := make([]float64, mm)
	lth := make([]float64, mm)
	for j := range mm {
		theta[j] = 1/x[n-1] + (1-math.Sqrt(float64(mm)/(float64(j+1)-0.5)))/prior/xstar
		a := -theta[j]
		k := 0.0
		for _, v := range x {
			k += math.Log1p(a * v)
		}
		k /= float64(n)
		lth[j] = float64(n) * (math.Log(a/k) - k - 1) // the profile log likelihood
	}
	lse := LogSumExp(lth)
	th := 0.0
	for j := range mm {
		if w := math.Exp(lth[j] - lse); !math.IsNaN(w) {
			th += theta[j] * w
		}
	}
	for _, v := range x {
		k += math.Log1p(-th * v)
	}
	k /= float64(n)
	sigma = -k / th
	const a = 10.0
	k = k*float64(n)/(float64(n)+a) + a*0.5/(float64(n)+a)
	if math.IsNaN(k) {
		return math.Inf(1), math.NaN()
	}
	return k, sigma
}

// AISOptions are an annealed importance sampling run's sizes.
type AISOptions struct {
	Chains int // independent chains (the estimate's draws)
	Temps  int // intermediate temperatures β_t = (t/Temps)^4, t = 1..Temps
	Steps  int // random-walk Metropolis steps per temperature
}

// DefaultAIS are the sizes the block tasks use.
var DefaultAIS = AISOptions{Chains: 512, Temps: 200, Steps: 3}

// metropolisMove moves every chain of x [n][d] once by random-walk Metropolis: a
// Gaussian step of the given scale (drawn into prop), rejected outside the box
// [−box, box]^d or where l is NaN, else accepted with probability min(1,
// exp(β·(l(x′) − l(x)))); cur holds l at x and is updated. It returns the acceptances.
// AISLogZ's moves and MetropolisChains' (β = 1) are this.
func metropolisMove(rng *rand.Rand, x, prop, cur []float64, d int, box, scale, beta float64, l func(x []float64, n int) []float64) int {
	n := len(cur)
	for i := range prop {
		prop[i] = x[i] + scale*rng.NormFloat64()
	}
	lp := l(prop, n)
	avx.ClearUpper()
	acc := 0
	for i := range n {
		in := true
		for _, v := range prop[i*d : (i+1)*d] {
			if v < -box || v > box {
				in = false
				break
			}
		}
		if in && !math.IsNaN(lp[i]) && (lp[i] >= cur[i] || rng.Float64() < math.Exp(beta*(lp[i]-cur[i]))) {
			copy(x[i*d:(i+1)*d], prop[i*d:(i+1)*d])
			cur[i] = lp[i]
			acc++
		}
	}
	return acc
}

// AISLogZ estimates log Z = log ∫_{[−box, box]^d} exp l(x) dx by annealed importance
// sampling (Neal 2001) from the uniform density on the box to exp l, through
// γ_t ∝ u^{1−β_t}·exp(β_t l) with β_t = (t/T)^4, each temperature followed by Steps
// random-walk Metropolis moves of every chain (Gaussian steps whose scale adapts per
// temperature toward a 30% acceptance; proposals outside the box are rejected). l(x, n)
// is l at n points x [n][d]. The weights are i.i.d. over the chains: the estimate, its
// SE and ESS are ImportanceLogZ's of the chains' log weights; E[Ẑ] = Z, and log Ẑ is a
// stochastic lower bound.
func AISLogZ(seed uint64, d int, box float64, o AISOptions, l func(x []float64, n int) []float64) ISEstimate {
	n := o.Chains
	rng := NewRand(seed)
	x := make([]float64, n*d)
	for i := range x {
		x[i] = (2*rng.Float64() - 1) * box
	}
	logVol := float64(d) * math.Log(2*box)
	lw := make([]float64, n)
	cur := l(x, n)
	prop := make([]float64, n*d)
	avx.ClearUpper() // see package avx
	scale := 0.5 * box
	beta := 0.0
	for t := 1; t <= o.Temps; t++ {
		next := math.Pow(float64(t)/float64(o.Temps), 4)
		for i := range n { // γ_t/γ_{t−1} at the chain: exp(Δβ·(l(x) + log vol))
			lw[i] += (next - beta) * (cur[i] + logVol)
		}
		beta = next
		for range o.Steps {
			acc := metropolisMove(rng, x, prop, cur, d, box, scale, beta, l)
			scale *= math.Exp(float64(acc)/float64(n) - 0.3)
			scale = min(2*box, max(1e-4*box, scale))
		}
	}
	return ImportanceLogZ(lw)
}

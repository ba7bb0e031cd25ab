package prob

import (
	"math"

	"github.com/jemcheck/jemcheck/internal/avx"
)

// # Estimated truth: log Z by importance sampling
//
// Where Z = ∫ Σ_y exp f(x)[y] dx cannot be enumerated (an unrestricted model in D
// dimensions), it is estimated by importance sampling from a defensive mixture
// r(x) = α·p(x) + (1−α)·u(x) of the truth p and a broad proposal u (uniform on the box):
// Ẑ = mean_i w_i, w_i = Σ_y exp f(x_i)[y] / r(x_i). Ẑ is unbiased; log Ẑ is biased low by
// about Var(w)/(2n·Z²) = SE²/2 (Jensen), which the standard error states. The defensive
// component bounds the weights by the model's mass over u's (Hesterberg 1995), and the
// effective sample size (Σw)²/Σw² says how many draws carry the estimate: too few, and
// the estimate is refused (MinESS).

// ISEstimate is an importance-sampling estimate of log Z.
type ISEstimate struct {
	LogZ float64 // log Ẑ
	SE   float64 // standard error of log Ẑ (delta method: sd(w)/(√n·mean w))
	ESS  float64 // effective sample size (Σw)²/Σw²
	N    int     // draws
}

// MinESS is the least effective sample size at which an importance estimate is used.
const MinESS = 100

// Refused reports whether the estimate is too poor to decide on (ESS < MinESS or not
// finite).
func (e ISEstimate) Refused() bool {
	return !(e.ESS >= MinESS) || math.IsNaN(e.LogZ) || math.IsInf(e.LogZ, 0) || math.IsNaN(e.SE)
}

// ImportanceLogZ is the estimate from the log weights log w_i (−Inf: a draw where the
// integrand is 0).
func ImportanceLogZ(logw []float64) ISEstimate {
	n := len(logw)
	if n == 0 {
		return ISEstimate{LogZ: math.NaN(), SE: math.NaN(), ESS: 0}
	}
	m := math.Inf(-1)
	for _, v := range logw {
		m = max(m, v)
	}
	if math.IsInf(m, -1) || math.IsNaN(m) {
		return ISEstimate{LogZ: math.Inf(-1), SE: math.NaN(), ESS: 0, N: n}
	}
	var s, s2 float64
	for _, v := range logw {
		w := math.Exp(v - m)
		s += w
		s2 += w * w
	}
	mean := s / float64(n)
	variance := max(0, s2/float64(n)-mean*mean) * float64(n) / float64(max(1, n-1))
	return ISEstimate{LogZ: m + math.Log(mean), SE: math.Sqrt(variance/float64(n)) / mean, ESS: s * s / s2, N: n}
}

// AISOptions are an annealed importance sampling run's sizes.
type AISOptions struct {
	Chains int // independent chains (the estimate's draws)
	Temps  int // intermediate temperatures β_t = (t/Temps)^4, t = 1..Temps
	Steps  int // random-walk Metropolis steps per temperature
}

// DefaultAIS are the sizes the block tasks use.
var DefaultAIS = AISOptions{Chains: 512, Temps: 200, Steps: 3}

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
				if in && (lp[i] >= cur[i] || rng.Float64() < math.Exp(beta*(lp[i]-cur[i]))) {
					copy(x[i*d:(i+1)*d], prop[i*d:(i+1)*d])
					cur[i] = lp[i]
					acc++
				}
			}
			scale *= math.Exp(float64(acc)/float64(n) - 0.3)
			scale = min(2*box, max(1e-4*box, scale))
		}
	}
	return ImportanceLogZ(lw)
}

package prob

import "math"

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

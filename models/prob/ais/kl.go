package ais

import "math"

// Bound is a stochastic bound on a KL divergence, in nats.
type Bound struct {
	Value float64
	SE    float64 // the SE of the E_p term and of the log Z estimate in quadrature
	Side  string  // "lower" or "upper": the side of the true KL that Value errs on
}

// KLBounds brackets KL(p‖q_θ), q_θ = f_θ/Z_θ, from meanLogPMinusLogF = the mean of
// log p(x) − log f_θ(x) over exact draws x ~ p (seMean its SE) and the two AIS
// estimates of log Z_θ:
//
//	KL(p‖q_θ) = E_p[log p − log f_θ] + log Z_θ.
//
// The first term's sample mean is unbiased. lower is Forward's estimate: E[log Ẑ] ≤
// log Z_θ, so KLLower = mean + lower.LogZ is a stochastic LOWER bound: it says the
// model is at least this many nats off (it may read low, never high beyond its noise).
// upper is Reverse's: E[log Ẑ] ≥ log Z_θ, so KLUpper = mean + upper.LogZ is a
// stochastic UPPER bound, but only where Reverse ran from exact draws of q_θ itself
// (a teacher, or q_θ = p as in a test); for a learned model, with no exact draws, only
// the lower side is certified. An estimate of the wrong direction (lower from
// Reverse, upper from Forward) gives that bound NaN. The SEs add the two independent SEs in quadrature.
func KLBounds(meanLogPMinusLogF, seMean float64, lower, upper Estimate) (KLLower, KLUpper Bound) {
	KLLower = Bound{Value: meanLogPMinusLogF + lower.LogZ, SE: math.Hypot(seMean, lower.SE), Side: "lower"}
	KLUpper = Bound{Value: meanLogPMinusLogF + upper.LogZ, SE: math.Hypot(seMean, upper.SE), Side: "upper"}
	if lower.Direction == "reverse" { // swapped: neither side is what its name says
		KLLower.Value, KLLower.SE = math.NaN(), math.NaN()
	}
	if upper.Direction == "forward" {
		KLUpper.Value, KLUpper.SE = math.NaN(), math.NaN()
	}
	return KLLower, KLUpper
}

package prob

import (
	"cmp"
	"math"
	"slices"
)

// Z-free divergences: measures of a model q(x, y) ∝ exp f(x)[y] against the truth p that
// need no normaliser, computed over exact draws of p, so that they exist for any model
// at any dimension (the exact KL needs log Z):
//
//   - the Fisher divergence E_p ‖∇x log p(x) − ∇x LSE_y f(x)[y]‖² (the model's score is
//     ∇x log q(x) = ∇x LSE_y f(x)[y]; Z is a constant in x), and its class-conditional
//     form E_p(x,y) ‖∇x log p(x | y) − ∇x f(x)[y]‖² (log q(x | y) = f(x)[y] − log Z_y);
//     both are 0 exactly when the scores agree p-almost everywhere (Hyvärinen 2005);
//   - the log-ratio spread sd_p[log p(x, y) − f(x)[y]]: log q(x, y) = f(x)[y] − log Z, so
//     the difference is log p/q up to the constant log Z, which the standard deviation
//     removes; 0 exactly when q = p on the support of p. (For q near p the joint KL is
//     about half its square: KL = E[r] with E_q[e^−r] = 1 gives KL ≈ ½ var(r).)
//
// Each comes with its standard error over the draws: MeanSE for the Fisher divergences,
// SDSE for the spread.

// MixtureScore is the score ∇x log p(x, y) of a Gaussian mixture for y ≥ 0 (the class-
// conditional score ∇x log p(x | y): p(y) does not depend on x), or ∇x log p(x) for y < 0:
// Σ_c r_c (μ_c − x)/sd_c² over the components counted, r_c their responsibilities at x
// (computed in log space, so a point far from every component keeps a finite score).
func MixtureScore(comps []Component, x0, x1 float64, y int) (g0, g1 float64) {
	return MixtureEval{Comps: comps}.Score(x0, x1, y)
}

// Score is MixtureScore of the mixture.
func (e MixtureEval) Score(x0, x1 float64, y int) (g0, g1 float64) {
	m := math.Inf(-1)
	for i, c := range e.Comps {
		if (y >= 0 && c.Y != y) || c.Weight == 0 {
			continue
		}
		m = max(m, mixtureTerm(c, e.norm(i), x0, x1))
	}
	if math.IsInf(m, -1) {
		return math.NaN(), math.NaN()
	}
	var s, s0, s1 float64
	for i, c := range e.Comps {
		if (y >= 0 && c.Y != y) || c.Weight == 0 {
			continue
		}
		r := math.Exp(mixtureTerm(c, e.norm(i), x0, x1) - m)
		v := c.SD * c.SD
		s += r
		s0 += r * (c.Mu0 - x0) / v
		s1 += r * (c.Mu1 - x1) / v
	}
	return s0 / s, s1 / s
}

// mixtureTerm is log(w_c N(x; μ_c, sd_c² I)), ln its mixtureNorm.
func mixtureTerm(c Component, ln, x0, x1 float64) float64 {
	d0, d1 := (x0-c.Mu0)/c.SD, (x1-c.Mu1)/c.SD
	return ln - 0.5*(d0*d0+d1*d1)
}

// MeanSE is the mean of v and its standard error sd(v)/√n (NaN, NaN for no values; SE NaN
// for one).
func MeanSE(v []float64) (mean, se float64) {
	n := float64(len(v))
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= n
	if len(v) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}

// SDSE is the standard deviation of v (n − 1 in the denominator) and its large-sample
// standard error by the delta method from the fourth central moment, whatever the
// distribution: var(s²) ≈ (m₄ − s⁴)/n, se(s) ≈ √var(s²) / (2s). NaN, NaN for fewer than
// two values; SE 0 where every value is the same (s = 0).
func SDSE(v []float64) (sd, se float64) {
	if len(v) < 2 {
		return math.NaN(), math.NaN()
	}
	n := float64(len(v))
	var mean float64
	for _, x := range v {
		mean += x
	}
	mean /= n
	var m2, m4 float64
	for _, x := range v {
		d := (x - mean) * (x - mean)
		m2 += d
		m4 += d * d
	}
	s2 := m2 / (n - 1)
	sd = math.Sqrt(s2)
	if sd == 0 {
		return 0, 0
	}
	m4 /= n
	return sd, math.Sqrt(max(0, m4-s2*s2)/n) / (2 * sd)
}

// LogRatioSpread is the exact log-ratio spread of an enumerated joint: the sd under p
// of log p(x, y) − f(x)[y] over the cells where p > 0 (p and f row-major alike; f the
// logits, whose normaliser cancels in the sd). 0 exactly when softmax(f) = p; NaN when
// a logit where p > 0 is not finite, p has no mass or the lengths differ. Two passes, no allocation (it is
// on a run's evaluation path).
func LogRatioSpread(p, f []float64) float64 {
	if len(p) != len(f) {
		return math.NaN()
	}
	var mass, mean float64
	for i, pi := range p {
		if pi > 0 {
			if math.IsNaN(f[i]) || math.IsInf(f[i], 0) {
				return math.NaN()
			}
			mass += pi
			mean += pi * (math.Log(pi) - f[i])
		}
	}
	if !(mass > 0) {
		return math.NaN()
	}
	mean /= mass
	var v float64
	for i, pi := range p {
		if pi > 0 {
			d := math.Log(pi) - f[i] - mean
			v += pi * d * d
		}
	}
	return math.Sqrt(v / mass)
}

// SquaredDistances is ‖(a0, a1) − (b0, b1)‖² per point.
func SquaredDistances(a0, a1, b0, b1 []float64) []float64 {
	out := make([]float64, len(a0))
	for i := range out {
		d0, d1 := a0[i]-b0[i], a1[i]-b1[i]
		out[i] = d0*d0 + d1*d1
	}
	return out
}

// Spearman is the rank correlation of a and b (ties take their mean rank): how well
// one measure orders runs as another does. NaN for fewer than two pairs, mismatched
// lengths, a NaN value or a constant side.
func Spearman(a, b []float64) float64 {
	if len(a) != len(b) || len(a) < 2 || slices.ContainsFunc(a, math.IsNaN) || slices.ContainsFunc(b, math.IsNaN) {
		return math.NaN()
	}
	ra, rb := midRanks(a), midRanks(b)
	ma, _ := MeanSE(ra)
	mb, _ := MeanSE(rb)
	var sab, saa, sbb float64
	for i := range ra {
		da, db := ra[i]-ma, rb[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return math.NaN()
	}
	return sab / math.Sqrt(saa*sbb)
}

// midRanks are the 1-based ranks of v, tied values sharing their mean rank.
func midRanks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(v[i], v[j]) })
	r := make([]float64, len(v))
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && v[idx[hi]] == v[idx[lo]] {
			hi++
		}
		for _, i := range idx[lo:hi] {
			r[i] = float64(lo+hi+1) / 2 // mean of ranks lo+1 .. hi
		}
		lo = hi
	}
	return r
}

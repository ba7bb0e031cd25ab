package prob

import "math"

// SmoothingAdd is the pseudo-count of the reference estimator: add-½, the
// Krichevsky–Trofimov estimate (n_c + ½)/(N + C/2), minimax-optimal for the log loss to
// first order and, unlike the plug-in estimate, finite in KL(p‖·) when a cell is empty.
const SmoothingAdd = 0.5

// Smoothed returns (counts + a)/(N + a·C) over the C cells.
func Smoothed(counts []int64, a float64) []float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	den := float64(n) + a*float64(len(counts))
	out := make([]float64, len(counts))
	for i, c := range counts {
		out[i] = (float64(c) + a) / den
	}
	return out
}

// EmptyCells counts the cells with no draw.
func EmptyCells(counts []int64) int {
	e := 0
	for _, c := range counts {
		if c == 0 {
			e++
		}
	}
	return e
}

// seriesSigma is the binomial standard deviation above which ExpectedKLSmoothed uses
// the moment expansion instead of the sum over counts: its first omitted term is
// O(1/μ³) per cell, a relative error below 1e-6 of the result there.
const seriesSigma = 100

// ExpectedKLSmoothed returns E[KL(p ‖ (n + a)/(N + a·C))] over the multinomial counts n
// of N draws from p: the finite-N expected KL of the add-a estimate, exact up to
// float64 rounding. It is finite at every N for a > 0 (the plug-in estimate a = 0 has
// E[KL(p‖p̂)] = +Inf whenever a cell can be empty). By linearity it needs only each
// cell's binomial marginal n_c ~ Bin(N, p_c):
//
//	E[KL] = −Σ_c p_c · E[log((n_c + a) / (p_c·(N + a·C)))],
//
// summed exactly over n_c (from the mode outwards, until the terms stop mattering) when
// the cell's standard deviation is at most seriesSigma, and from the binomial's first
// four central moments beyond that. It panics for a ≤ 0 or n < 1.
func ExpectedKLSmoothed(p []float64, n int64, a float64) float64 {
	if !(a > 0) || n < 1 {
		panic("prob: ExpectedKLSmoothed needs a > 0 and n ≥ 1")
	}
	c := float64(len(p))
	nf := float64(n)
	s := 0.0
	for _, pc := range p {
		if pc <= 0 {
			continue
		}
		m := pc * (nf + a*c) // log((k+a)/m) is small near the mode: no cancellation
		s -= pc * expectedLogRatio(n, pc, a, m)
	}
	return clampRounding(s)
}

// expectedLogRatio returns E[log((k + a)/m)] for k ~ Bin(n, p).
func expectedLogRatio(n int64, p, a, m float64) float64 {
	nf := float64(n)
	if p >= 1 {
		return math.Log((nf + a) / m)
	}
	mu, q := nf*p, 1-p
	v := mu * q
	if math.Sqrt(v) > seriesSigma {
		return seriesLogRatio(n, p, a, m)
	}
	return sumLogRatio(n, p, a, m)
}

// seriesLogRatio is E[log((k + a)/m)] for k ~ Bin(n, p) from the moment expansion.
func seriesLogRatio(n int64, p, a, m float64) float64 {
	mu, q := float64(n)*p, 1-p
	v := mu * q
	{
		// Taylor expansion of log(k + a) around ν = μ + a with the central moments
		// m2 = v, m3 = v(1−2p), m4 = 3v² + v(1−6pq).
		nu := mu + a
		m3 := v * (1 - 2*p)
		m4 := 3*v*v + v*(1-6*p*q)
		return math.Log1p((nu-m)/m) - v/(2*nu*nu) + m3/(3*nu*nu*nu) - m4/(4*nu*nu*nu*nu)
	}
}

// sumLogRatio is E[log((k + a)/m)] for k ~ Bin(n, p) summed over k.
func sumLogRatio(n int64, p, a, m float64) float64 {
	nf := float64(n)
	mu, q := nf*p, 1-p
	// Sum over k from the mode outwards with w(mode) = 1 and the ratio
	// w(k+1)/w(k) = (n−k)/(k+1) · p/q, normalising by the total weight (so no
	// log-factorial of a huge n enters).
	mode := math.Floor((nf + 1) * p)
	if mode > nf {
		mode = nf
	}
	ratio := p / q
	logTerm := func(k float64) float64 { return math.Log1p((k + a - m) / m) }
	const tiny = 1e-18
	sumW, sumWL := 1.0, logTerm(mode)
	w := 1.0
	for k := mode; k < nf; k++ { // upwards
		w *= (nf - k) / (k + 1) * ratio
		sumW += w
		sumWL += w * logTerm(k+1)
		if w < tiny*sumW && k+1 > mu {
			break
		}
	}
	w = 1.0
	for k := mode; k > 0; k-- { // downwards: w(k−1) = w(k)·k/((n−k+1)·ratio)
		w *= k / ((nf - k + 1) * ratio)
		sumW += w
		sumWL += w * logTerm(k-1)
		if w < tiny*sumW && k-1 < mu {
			break
		}
	}
	return sumWL / sumW
}

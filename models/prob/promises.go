package prob

import (
	"fmt"
	"math"
	"slices"
)

// The JEM paper's promises beyond the joint, on a table, exact by enumeration: out-of-
// distribution detection and calibration against the Bayes-optimal answer.

// AUROC is the area under the ROC curve of a score that should be higher in
// distribution: P(s(X) > s(X')) + ½·P(s(X) = s(X')) for X ~ in and X' ~ out, independent,
// both distributions over the same values 0..len(score)-1. It is exact (a sort of the
// scores, ties grouped): 1 separates perfectly, ½ is chance, and a score that is
// constant gives exactly ½. NaN scores are ranked lowest.
func AUROC(score, in, out []float64) float64 {
	n := len(score)
	if len(in) != n || len(out) != n {
		panic("prob: AUROC needs score, in and out of one length")
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	keys := make([]float64, n) // a NaN score ranks lowest
	for i, v := range score {
		keys[i] = v
		if math.IsNaN(v) {
			keys[i] = math.Inf(-1)
		}
	}
	key := func(i int) float64 { return keys[i] }
	slices.SortFunc(idx, func(a, b int) int {
		switch ka, kb := keys[a], keys[b]; {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	var sumIn, sumOut, below, auc float64 // below: out-mass with a lower score
	for _, v := range in {
		sumIn += v
	}
	for _, v := range out {
		sumOut += v
	}
	if !(sumIn > 0) || !(sumOut > 0) {
		return math.NaN()
	}
	for i := 0; i < n; {
		j := i
		var tieIn, tieOut float64
		for j < n && key(idx[j]) == key(idx[i]) {
			tieIn += in[idx[j]]
			tieOut += out[idx[j]]
			j++
		}
		auc += tieIn * (below + tieOut/2)
		below += tieOut
		i = j
	}
	return auc / (sumIn * sumOut)
}

// OODScores are the paper's two OOD scores of a learned joint q over an X×K table, per
// x: log q(x) (logsumexp_y f(x)[y] up to the constant log Z) and max_y q(y|x) (the
// classifier's confidence). The paper's third score, the gradient norm of log q(x) in
// x, has no meaning for a discrete x.
func OODScores(q []float64, x, k int) (logPx, maxPy []float64) {
	checkShape("OODScores", q, x, k)
	logPx, maxPy = make([]float64, x), make([]float64, x)
	for i := range x {
		row := q[i*k : (i+1)*k]
		s := 0.0
		for _, v := range row {
			s += v
		}
		logPx[i] = math.Log(s)
		if s > 0 {
			maxPy[i] = row[argmax(row)] / s
		} else {
			maxPy[i] = 1 / float64(k)
		}
	}
	return logPx, maxPy
}

// CalibrationError is the exact expected calibration error of the classifier derived
// from q under the truth p, without binning: Σ_x p(x) |max_y q(y|x) − p(ŷ(x)|x)| with
// ŷ(x) = argmax_y q(y|x) (ties to the lowest y). The Bayes classifier (q = p) has 0.
func CalibrationError(p, q []float64, x, k int) float64 {
	checkShape("CalibrationError", p, x, k)
	checkShape("CalibrationError", q, x, k)
	_, conf := OODScores(q, x, k)
	e := 0.0
	for i := range x {
		prow, qrow := p[i*k:(i+1)*k], q[i*k:(i+1)*k]
		px := 0.0
		for _, v := range prow {
			px += v
		}
		if px <= 0 {
			continue
		}
		e += px * math.Abs(conf[i]-prow[argmax(qrow)]/px)
	}
	return e
}

// Uniform is the uniform distribution over n values.
func Uniform(n int) []float64 {
	u := make([]float64, n)
	for i := range u {
		u[i] = 1 / float64(n)
	}
	return u
}

// TotalVariation is the total-variation distance ½ Σ |p − q| of two distributions on
// the same support.
func TotalVariation(p, q []float64) float64 {
	if len(p) != len(q) {
		panic(fmt.Sprintf("prob: TotalVariation of lengths %d and %d", len(p), len(q)))
	}
	s := 0.0
	for i := range p {
		s += math.Abs(p[i] - q[i])
	}
	return s / 2
}

// TVFloor is the expected total-variation distance between the histogram of n i.i.d.
// draws from p and p itself: the sampling floor of a TV column (a perfect sampler's
// n samples land there on average). Exact, from de Moivre's mean absolute deviation of
// a binomial, E|X − np| = 2·k·C(n, k)·p^k·(1−p)^(n−k+1) with k = ⌊np⌋ + 1, summed over
// the cells and halved: E TV = Σ_i E|X_i − n p_i| / (2n).
func TVFloor(p []float64, n int) float64 {
	if n < 1 {
		panic(fmt.Sprintf("prob: TVFloor of %d draws", n))
	}
	s := 0.0
	nf := float64(n)
	for _, pi := range p {
		if pi <= 0 || pi >= 1 {
			continue
		}
		k := math.Floor(nf*pi) + 1
		if k > nf {
			continue
		}
		lc, _ := math.Lgamma(nf + 1)
		lk, _ := math.Lgamma(k + 1)
		lnk, _ := math.Lgamma(nf - k + 1)
		s += 2 * k * math.Exp(lc-lk-lnk+k*math.Log(pi)+(nf-k+1)*math.Log1p(-pi))
	}
	return s / (2 * nf)
}

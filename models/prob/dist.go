package prob

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/internal/avx"
)

func checkShape(name string, p []float64, x, k int) {
	if x < 1 || k < 1 || len(p) != x*k {
		panic(fmt.Sprintf("prob: %s: %d cells for X=%d, K=%d", name, len(p), x, k))
	}
}

// Marginal returns p(x) = Σ_y p(x,y) of a row-major joint.
func Marginal(p []float64, x, k int) []float64 {
	checkShape("Marginal", p, x, k)
	m := make([]float64, x)
	for i := range x {
		for _, v := range p[i*k : (i+1)*k] {
			m[i] += v
		}
	}
	return m
}

// Conditional returns p(y|x) = p(x,y)/p(x), row-major like p. A row with p(x) = 0 has
// no conditional; it is returned as uniform (1/K) so that the result is always a
// valid distribution per row.
func Conditional(p []float64, x, k int) []float64 {
	checkShape("Conditional", p, x, k)
	c := make([]float64, len(p))
	for i := range x {
		row := p[i*k : (i+1)*k]
		s := 0.0
		for _, v := range row {
			s += v
		}
		for j, v := range row {
			if s > 0 {
				c[i*k+j] = v / s
			} else {
				c[i*k+j] = 1 / float64(k)
			}
		}
	}
	return c
}

// Softmax returns exp(l_i)/Σ_j exp(l_j) over all cells, computed stably (the maximum
// is subtracted first, so logits of ±1000 are fine). Logits of −Inf give 0.
func Softmax(logits []float64) []float64 {
	out := make([]float64, len(logits))
	if len(logits) == 0 {
		return out
	}
	avx.ClearUpper() // the allocation may leave the upper state dirty: see package avx
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, l)
	}
	s := 0.0
	for i, l := range logits {
		out[i] = math.Exp(l - mx)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// klTerm is p·log(p/q) with 0·log(0/q) = 0 and p·log(p/0) = +Inf for p > 0.
func klTerm(p, q float64) float64 {
	if p == 0 {
		return 0
	}
	if q == 0 {
		return math.Inf(1)
	}
	return p * (math.Log(p) - math.Log(q))
}

// clampRounding turns tiny negative sums that only rounding can produce (a KL between
// distributions is ≥ 0) into 0.
func clampRounding(s float64) float64 {
	if s < 0 && s > -1e-12 {
		return 0
	}
	return s
}

// KL returns the Kullback–Leibler divergence Σ_i p_i·log(p_i/q_i) in nats, with
// 0·log 0 = 0, and +Inf where p_i > 0 = q_i. It panics if the lengths differ.
func KL(p, q []float64) float64 {
	if len(p) != len(q) {
		panic(fmt.Sprintf("prob: KL of lengths %d and %d", len(p), len(q)))
	}
	s := 0.0
	if len(p) < klLanesMin { // a table's few cells: no buffer to clear
		for i := range p {
			s += klTerm(p[i], q[i])
		}
		return clampRounding(s)
	}
	var buf [klChunk]float64
	for lo := 0; lo < len(p); lo += klChunk {
		t := klTerms(p[lo:min(lo+klChunk, len(p))], q[lo:], buf[:])
		for _, v := range t {
			s += v
		}
	}
	return clampRounding(s)
}

// klLanesMin is the fewest cells whose logs KL takes in lanes.
const klLanesMin = 16

// klChunk is how many cells klTerms takes at once.
const klChunk = 256

// klTerms writes klTerm(p[i], q[i]) for i < len(p) (≤ klChunk) into buf and returns
// it: their logs at once (LogTo: math.Log's bits, in vector lanes where the build has
// them), each term as klTerm makes it.
func klTerms(p, q, buf []float64) []float64 {
	n := len(p)
	if n < klLanesMin {
		for i := range p {
			buf[i] = klTerm(p[i], q[i])
		}
		return buf[:n]
	}
	var lq [klChunk]float64
	LogTo(buf[:n], p)
	LogTo(lq[:n], q[:n])
	for i, pi := range p {
		switch {
		case pi == 0:
			buf[i] = 0
		case q[i] == 0:
			buf[i] = math.Inf(1)
		default:
			buf[i] = pi * (buf[i] - lq[i])
		}
	}
	return buf[:n]
}

// KLConditional returns E_{x~p(x)} KL(p(y|x) ‖ q(y|x)) = Σ_{x,y} p(x,y)·log(p(y|x)/q(y|x)),
// the divergence of the classifier alone. Rows with q(x) = 0 are taken as uniform in q
// (see Conditional); rows with p(x) = 0 contribute nothing.
func KLConditional(p, q []float64, x, k int) float64 {
	checkShape("KLConditional", p, x, k)
	checkShape("KLConditional", q, x, k)
	pc := Conditional(p, x, k)
	qc := Conditional(q, x, k)
	s := 0.0
	if len(p) < klLanesMin { // a table's few cells: no buffer to clear
		for i := range p {
			if p[i] == 0 {
				continue
			}
			s += p[i] / pc[i] * klTerm(pc[i], qc[i])
		}
		return clampRounding(s)
	}
	var buf [klChunk]float64
	for lo := 0; lo < len(p); lo += klChunk {
		hi := min(lo+klChunk, len(p))
		t := klTerms(pc[lo:hi], qc[lo:hi], buf[:])
		for i := lo; i < hi; i++ {
			if p[i] == 0 {
				continue
			}
			s += p[i] / pc[i] * t[i-lo] // p(x)·p(y|x)·log(p(y|x)/q(y|x))
		}
	}
	return clampRounding(s)
}

// Floor returns (cells−1)/(2n): the asymptotic expected KL(p ‖ p̂) of the plug-in
// (empirical) estimate p̂ from n samples of a distribution over cells cells (half a
// χ² with cells−1 degrees of freedom, divided by n). No estimator that sees only the
// samples can be expected to beat it by much.
func Floor(cells int, n int64) float64 {
	return float64(cells-1) / (2 * float64(n))
}

// Empirical returns counts normalised to sum to 1. All-zero counts give all zeros.
func Empirical(counts []int64) []float64 {
	var total int64
	for _, c := range counts {
		total += c
	}
	out := make([]float64, len(counts))
	if total == 0 {
		return out
	}
	for i, c := range counts {
		out[i] = float64(c) / float64(total)
	}
	return out
}

// BayesAccuracy returns Σ_x max_y p(x,y): the accuracy of the Bayes classifier, the
// best any classifier can do in expectation under p.
func BayesAccuracy(p []float64, x, k int) float64 {
	checkShape("BayesAccuracy", p, x, k)
	s := 0.0
	for i := range x {
		s += p[i*k+argmax(p[i*k:(i+1)*k])]
	}
	return s
}

// Accuracy returns Σ_x p(x, ŷ(x)) with ŷ(x) = argmax_y q(y|x), ties going to the lowest
// y: the expected accuracy under the truth p of the classifier derived from q.
func Accuracy(p, q []float64, x, k int) float64 {
	checkShape("Accuracy", p, x, k)
	checkShape("Accuracy", q, x, k)
	s := 0.0
	for i := range x {
		// argmax of q(y|x) is the argmax of the row q(x,·); an all-zero row (uniform
		// conditional) picks y = 0 either way.
		s += p[i*k+argmax(q[i*k:(i+1)*k])]
	}
	return s
}

// argmax returns the index of the largest value, the lowest on ties.
func argmax(row []float64) int {
	best := 0
	for j, v := range row {
		if v > row[best] {
			best = j
		}
	}
	return best
}

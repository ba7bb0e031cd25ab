package prob

import (
	"fmt"
	"math"
)

// The binned expected calibration error of the literature (Naeini et al. 2015; Guo et al.
// 2017, "On Calibration of Modern Neural Networks", eq. 3), beside CalibrationError's
// exact unbinned one on a table.
//
// The bins: bins equal-width intervals of the confidence, bin m (0-based) being
// (m/bins, (m+1)/bins] as in Guo et al., with a confidence of exactly 0 in the first
// bin (so every confidence in [0, 1] has a bin; one below 0 or above 1 is put in the
// first or the last bin). The bin edges are the float64 values m/bins, and a confidence
// is placed against them exactly (0.3 with 10 bins is in (0.2, 0.3], not in the next
// bin as a bare ⌈0.3·10⌉ would have it).

// ReliabilityBin is one bin of a reliability diagram: the interval (Lo, Hi] of the
// confidence, the number of items in it, and their mean confidence and accuracy (0 for
// an empty bin).
type ReliabilityBin struct {
	Lo, Hi, Confidence, Accuracy float64
	Count                        int
}

// eceBin is the bin of a (non-NaN) confidence among bins.
func eceBin(c float64, bins int) int {
	switch {
	case c <= 0:
		return 0
	case c >= 1:
		return bins - 1
	}
	m := max(0, min(bins-1, int(math.Ceil(c*float64(bins)))-1))
	for m > 0 && c <= float64(m)/float64(bins) {
		m--
	}
	for m < bins-1 && c > float64(m+1)/float64(bins) {
		m++
	}
	return m
}

// binned accumulates per bin the weight, the weighted confidence and the weighted
// accuracy of the items (weight nil: 1 each). A NaN confidence or accuracy makes nan
// true (such items are left out of the bins).
func binned(name string, conf, acc, weight []float64, bins int) (w, c, a []float64, nan bool) {
	if bins < 1 {
		panic(fmt.Sprintf("prob: %s needs bins >= 1, got %d", name, bins))
	}
	if len(acc) != len(conf) || (weight != nil && len(weight) != len(conf)) {
		panic(fmt.Sprintf("prob: %s needs inputs of one length, got %d, %d, %d", name, len(conf), len(acc), len(weight)))
	}
	w, c, a = make([]float64, bins), make([]float64, bins), make([]float64, bins)
	for i, ci := range conf {
		wi := 1.0
		if weight != nil {
			wi = weight[i]
			if !(wi >= 0) || math.IsInf(wi, 0) {
				panic(fmt.Sprintf("prob: %s: weight %d is %v, want finite and >= 0", name, i, wi))
			}
		}
		if math.IsNaN(ci) || math.IsNaN(acc[i]) {
			nan = true
			continue
		}
		m := eceBin(ci, bins)
		w[m] += wi
		c[m] += wi * ci
		a[m] += wi * acc[i]
	}
	return w, c, a, nan
}

// eceOf is Σ_b (W_b/W)·|acc_b − conf_b| = Σ_b |A_b − C_b| / W from the bins' sums.
func eceOf(w, c, a []float64, nan bool) float64 {
	if nan {
		return math.NaN()
	}
	total, e := 0.0, 0.0
	for m := range w {
		total += w[m]
		e += math.Abs(a[m] - c[m])
	}
	if total == 0 {
		return 0
	}
	return e / total
}

func accuracyOf(correct []bool) []float64 {
	acc := make([]float64, len(correct))
	for i, ok := range correct {
		if ok {
			acc[i] = 1
		}
	}
	return acc
}

// ECE is the binned expected calibration error of n predictions with confidences conf
// (the predicted class's probability) and correctness correct: with bins equal-width
// bins (see above), ECE = Σ_b (n_b/n)·|acc_b − conf_b|, acc_b and conf_b the mean
// correctness and confidence of the n_b items of bin b. 0 for no items; NaN if a
// confidence is NaN. It panics if bins < 1 or the lengths differ.
func ECE(conf []float64, correct []bool, bins int) float64 {
	if len(correct) != len(conf) {
		panic(fmt.Sprintf("prob: ECE needs conf and correct of one length, got %d, %d", len(conf), len(correct)))
	}
	return eceOf(binned("ECE", conf, accuracyOf(correct), nil, bins))
}

// ECEWeighted is ECE with a weight and an accuracy in [0, 1] per item: ECE =
// Σ_b (W_b/W)·|acc_b − conf_b|, W_b the weight of bin b, acc_b and conf_b the weighted
// means of its accuracies and confidences. For the exact expectation on a grid: item c
// a cell, conf = max_y q(y|x_c), acc = p(ŷ(x_c)|x_c), weight = p(x_c). Unit weights and
// 0/1 accuracies give ECE's value, bit for bit. 0 for a total weight of 0; NaN if a
// confidence or an accuracy is NaN. It panics if bins < 1, the lengths differ or a
// weight is negative, infinite or NaN.
func ECEWeighted(conf, acc, weight []float64, bins int) float64 {
	return eceOf(binned("ECEWeighted", conf, acc, weight, bins))
}

// ReliabilityBins are the bins of ECE for a reliability diagram, all bins of them in
// order of confidence, empty ones included (Count 0, Confidence and Accuracy 0): per bin
// its interval (Lo, Hi] (the first one closed at 0), the number of items and their mean
// confidence and accuracy. Items with a NaN confidence are in no bin; the counts of the
// others sum to their number. It panics if bins < 1 or the lengths differ.
func ReliabilityBins(conf []float64, correct []bool, bins int) []ReliabilityBin {
	if len(correct) != len(conf) {
		panic(fmt.Sprintf("prob: ReliabilityBins needs conf and correct of one length, got %d, %d", len(conf), len(correct)))
	}
	w, c, a, _ := binned("ReliabilityBins", conf, accuracyOf(correct), nil, bins)
	out := make([]ReliabilityBin, bins)
	for m := range out {
		b := ReliabilityBin{Lo: float64(m) / float64(bins), Hi: float64(m+1) / float64(bins), Count: int(w[m])}
		if w[m] > 0 {
			b.Confidence, b.Accuracy = c[m]/w[m], a[m]/w[m]
		}
		out[m] = b
	}
	return out
}

package prob

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Mean returns the arithmetic mean of xs, NaN for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Quantile returns the q-quantile of xs by linear interpolation between order
// statistics (Hyndman and Fan's type 7, the default of R and NumPy). It does not
// modify xs. It returns NaN for empty xs or q outside [0, 1].
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantileSorted(s, q)
}

func quantileSorted(s []float64, q float64) float64 {
	h := float64(len(s)-1) * q
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// Median is Quantile(xs, 0.5).
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }

// Wilcoxon is the result of a Wilcoxon signed-rank test.
type Wilcoxon struct {
	N     int     // pairs left after dropping zero differences
	WPlus float64 // sum of the ranks of the positive differences
	Z     float64 // normal approximation of W+, signed: > 0 when positive differences dominate
	P     float64 // two-sided p-value
}

// exactWilcoxonMax is the largest N for which the p-value is exact (when untied).
const exactWilcoxonMax = 25

// WilcoxonSignedRank tests whether paired differences are symmetric about 0.
// Zero differences are dropped (Wilcoxon's convention), tied |differences| get average
// ranks. Z is the normal approximation with the tie correction of the variance and a
// continuity correction of ½. The two-sided p-value is exact (the null distribution of
// W+ by dynamic programming over rank sums) when N ≤ 25 and there are no ties, and
// erfc(|Z|/√2) otherwise. With no non-zero differences it returns N = 0, P = 1.
func WilcoxonSignedRank(diffs []float64) Wilcoxon {
	type item struct{ abs, sign float64 }
	var items []item
	for _, d := range diffs {
		if d != 0 && !math.IsNaN(d) {
			items = append(items, item{math.Abs(d), math.Copysign(1, d)})
		}
	}
	n := len(items)
	if n == 0 {
		return Wilcoxon{P: 1}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].abs < items[j].abs })
	wplus := 0.0
	tieTerm := 0.0 // Σ (t³ − t) over groups of tied |d|
	for i := 0; i < n; {
		j := i
		for j < n && items[j].abs == items[i].abs {
			j++
		}
		rank := float64(i+1+j) / 2 // average of ranks i+1 .. j
		for _, it := range items[i:j] {
			if it.sign > 0 {
				wplus += rank
			}
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	nf := float64(n)
	mean := nf * (nf + 1) / 4
	variance := nf*(nf+1)*(2*nf+1)/24 - tieTerm/48
	w := Wilcoxon{N: n, WPlus: wplus}
	if variance > 0 {
		d := wplus - mean
		w.Z = math.Copysign(math.Max(math.Abs(d)-0.5, 0), d) / math.Sqrt(variance)
	}
	if n <= exactWilcoxonMax && tieTerm == 0 {
		w.P = exactWilcoxonP(n, int(wplus))
	} else {
		w.P = math.Erfc(math.Abs(w.Z) / math.Sqrt2)
	}
	return w
}

// exactWilcoxonP returns the exact two-sided p-value 2·min(P(W ≤ w), P(W ≥ w)), capped
// at 1, where W is the sum of a uniformly random subset of {1..n}.
func exactWilcoxonP(n, w int) float64 {
	maxSum := n * (n + 1) / 2
	counts := make([]float64, maxSum+1) // counts[s] = number of subsets with sum s
	counts[0] = 1
	for r := 1; r <= n; r++ {
		for s := maxSum; s >= r; s-- {
			counts[s] += counts[s-r]
		}
	}
	total := math.Ldexp(1, n)
	lower, upper := 0.0, 0.0
	for s, c := range counts {
		if s <= w {
			lower += c
		}
		if s >= w {
			upper += c
		}
	}
	return math.Min(1, 2*math.Min(lower, upper)/total)
}

// BootstrapMeanCI returns the percentile-bootstrap confidence interval at level (e.g.
// 0.95) for the mean of xs, from reps resamples with replacement. It returns NaN, NaN
// for empty xs, reps < 1 or level outside (0, 1).
func BootstrapMeanCI(rng *rand.Rand, xs []float64, reps int, level float64) (lo, hi float64) {
	if len(xs) == 0 || reps < 1 || !(level > 0 && level < 1) {
		return math.NaN(), math.NaN()
	}
	means := make([]float64, reps)
	for r := range means {
		s := 0.0
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		means[r] = s / float64(len(xs))
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	return quantileSorted(means, alpha), quantileSorted(means, 1-alpha)
}

// BootstrapRatioCI returns the percentile-bootstrap confidence interval at level for
// the ratio of sums Σ num / Σ den over paired items (resampling the items, so each
// num[i] stays with its den[i]), from reps resamples. It returns NaN, NaN for no items,
// mismatched lengths, reps < 1 or level outside (0, 1); a resample whose Σ den is 0
// counts as +Inf.
func BootstrapRatioCI(rng *rand.Rand, num, den []float64, reps int, level float64) (lo, hi float64) {
	n := len(num)
	if n == 0 || len(den) != n || reps < 1 || !(level > 0 && level < 1) {
		return math.NaN(), math.NaN()
	}
	ratios := make([]float64, reps)
	for r := range ratios {
		sn, sd := 0.0, 0.0
		for range n {
			i := rng.IntN(n)
			sn += num[i]
			sd += den[i]
		}
		if sd == 0 {
			ratios[r] = math.Inf(1)
		} else {
			ratios[r] = sn / sd
		}
	}
	slices.Sort(ratios)
	alpha := (1 - level) / 2
	return quantileSorted(ratios, alpha), quantileSorted(ratios, 1-alpha)
}

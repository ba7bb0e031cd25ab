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
func Quantile(xs []float64, q float64) float64 { return Quantiles(xs, q)[0] }

// Quantiles returns Quantile(xs, q) for each q of qs, sorting one copy of xs.
func Quantiles(xs []float64, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	s := slices.Clone(xs)
	slices.Sort(s)
	for i, q := range qs {
		out[i] = math.NaN()
		if len(s) > 0 && q >= 0 && q <= 1 {
			out[i] = quantileSorted(s, q)
		}
	}
	return out
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
func BootstrapRatioCI(seed uint64, num, den []float64, reps int, level float64) (lo, hi float64) {
	if len(den) != len(num) {
		return math.NaN(), math.NaN()
	}
	l, h := BootstrapRatiosCI(seed, [][]float64{num}, [][]float64{den}, reps, level)
	return l[0], h[0]
}

// BootstrapRatiosCI is BootstrapRatioCI for several ratios of sums over the same items
// at once: every resample draws one set of item indices and evaluates each ratio
// Σ nums[k] / Σ dens[k] on it, so k statistics cost one pass of random draws. It
// returns the intervals in the order of nums; a ratio with mismatched lengths gets NaN.
//
// The items are NewRand(seed).IntN(n)'s draws (the same numbers from an inlined copy
// of its generator: see pcg).
func BootstrapRatiosCI(seed uint64, nums, dens [][]float64, reps int, level float64) (lo, hi []float64) {
	k := len(nums)
	lo, hi = make([]float64, k), make([]float64, k)
	n := 0
	if k > 0 {
		n = len(nums[0])
	}
	ok := make([]bool, k)
	for j := range k {
		ok[j] = len(nums[j]) == n && len(dens[j]) == n
		lo[j], hi[j] = math.NaN(), math.NaN()
	}
	if n == 0 || reps < 1 || !(level > 0 && level < 1) {
		return lo, hi
	}
	ratios := make([][]float64, k)
	for j := range ratios {
		ratios[j] = make([]float64, reps)
	}
	// The items packed row by row, (num, den) of every ratio side by side: a resample's
	// random item is then one cache line or two, not 2k scattered loads (the sums, and
	// so the intervals, are the same bits as summing the columns in draw order).
	w := 2 * k
	packed := make([]float64, n*w)
	for j := range k {
		if !ok[j] {
			continue // zeros: its sums are not read
		}
		for i := range n {
			packed[i*w+2*j], packed[i*w+2*j+1] = nums[j][i], dens[j][i]
		}
	}
	sums := make([]float64, w)
	un := uint64(n)
	src := newPCG(seed)
	for r := range reps {
		clear(sums)
		if w == 8 { // the verdict's four ratios: the sums in registers
			var s0, s1, s2, s3, s4, s5, s6, s7 float64
			for range n {
				i := int(src.intN(un))
				row := packed[i*8 : i*8+8 : i*8+8]
				s0, s1, s2, s3 = s0+row[0], s1+row[1], s2+row[2], s3+row[3]
				s4, s5, s6, s7 = s4+row[4], s5+row[5], s6+row[6], s7+row[7]
			}
			sums[0], sums[1], sums[2], sums[3], sums[4], sums[5], sums[6], sums[7] = s0, s1, s2, s3, s4, s5, s6, s7
		} else {
			for range n {
				i := int(src.intN(un))
				row := packed[i*w : i*w+w]
				for c, v := range row {
					sums[c] += v
				}
			}
		}
		for j := range k {
			if sums[2*j+1] == 0 {
				ratios[j][r] = math.Inf(1)
			} else {
				ratios[j][r] = sums[2*j] / sums[2*j+1]
			}
		}
	}
	alpha := (1 - level) / 2
	for j := range k {
		if !ok[j] {
			continue
		}
		slices.Sort(ratios[j])
		lo[j], hi[j] = quantileSorted(ratios[j], alpha), quantileSorted(ratios[j], 1-alpha)
	}
	return lo, hi
}

// NormalRatioCI returns the large-sample (delta-method) confidence interval at level
// for the ratio of sums R = Σ num / Σ den over n paired items: R ± z·se with
// se² = Σ (num_i − R·den_i)² / (n·(n−1)) / mean(den)², z the normal quantile. It is what
// the ratio's bootstrap tends to as n grows, at O(n) instead of O(reps·n). It returns
// NaN, NaN for fewer than two items, mismatched lengths or Σ den = 0.
func NormalRatioCI(num, den []float64, level float64) (lo, hi float64) {
	n := len(num)
	if n < 2 || len(den) != n || !(level > 0 && level < 1) {
		return math.NaN(), math.NaN()
	}
	var sn, sd float64
	for i := range num {
		sn += num[i]
		sd += den[i]
	}
	if sd == 0 {
		return math.NaN(), math.NaN()
	}
	r := sn / sd
	ss := 0.0
	for i := range num {
		e := num[i] - r*den[i]
		ss += e * e
	}
	md := sd / float64(n)
	se := math.Sqrt(ss/float64(n*(n-1))) / math.Abs(md)
	z := math.Sqrt2 * math.Erfinv(level)
	return r - z*se, r + z*se
}

// NormalMeanCI returns the large-sample confidence interval at level for the mean of
// xs: mean ± z·sd/√n. NaN, NaN for fewer than two values.
func NormalMeanCI(xs []float64, level float64) (lo, hi float64) {
	ones := make([]float64, len(xs))
	for i := range ones {
		ones[i] = 1
	}
	return NormalRatioCI(xs, ones, level)
}

// RatioMoments are the sums over n paired items that the delta-method interval of a
// ratio of sums needs: mergeable by adding (see NormalRatioCIMoments).
type RatioMoments struct {
	N                      int64
	Num, Den               float64 // Σ num, Σ den
	NumNum, DenDen, NumDen float64 // Σ num², Σ den², Σ num·den
}

// Add adds one item.
func (m *RatioMoments) Add(num, den float64) {
	m.N++
	m.Num += num
	m.Den += den
	m.NumNum += num * num
	m.DenDen += den * den
	m.NumDen += num * den
}

// Merge adds the items of o.
func (m *RatioMoments) Merge(o RatioMoments) {
	m.N += o.N
	m.Num += o.Num
	m.Den += o.Den
	m.NumNum += o.NumNum
	m.DenDen += o.DenDen
	m.NumDen += o.NumDen
}

// NormalRatioCIMoments is NormalRatioCI from the items' moments:
// Σ (num − R·den)² = Σ num² − 2R Σ num·den + R² Σ den² (clamped at 0).
func NormalRatioCIMoments(m RatioMoments, level float64) (lo, hi float64) {
	if m.N < 2 || m.Den == 0 || !(level > 0 && level < 1) {
		return math.NaN(), math.NaN()
	}
	n := float64(m.N)
	r := m.Num / m.Den
	ss := math.Max(m.NumNum-2*r*m.NumDen+r*r*m.DenDen, 0)
	se := math.Sqrt(ss/(n*(n-1))) / math.Abs(m.Den/n)
	z := math.Sqrt2 * math.Erfinv(level)
	return r - z*se, r + z*se
}

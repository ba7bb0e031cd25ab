package prob

import (
	"math"
	"slices"
)

// SketchAlpha is the relative accuracy of a Sketch's quantiles: every order statistic
// it returns is within a factor 1 ± SketchAlpha of the true one.
const SketchAlpha = 1e-3

var sketchLogGamma = math.Log((1 + SketchAlpha) / (1 - SketchAlpha))

// sketchZero is the magnitude below which a value counts as 0 (below it the bin index
// would leave int32).
const sketchZero = 1e-300

// Sketch is a mergeable quantile summary of finite values with relative accuracy
// SketchAlpha (DDSketch, Masson, Rim and Lee, VLDB 2019): value v ≠ 0 falls in bin
// ⌈log_γ |v|⌉, γ = (1+α)/(1−α), on the side of its sign, and a bin stands for
// 2γⁱ/(γ+1), within a factor 1±α of every value in it. Bins hold integer counts, so
// merging is exact, commutative and associative: the quantiles do not depend on the
// order values arrive or how they were split. Its size is the number of distinct bins,
// about log(max/min)/(2α) per sign: ~10⁴ for values spanning 10⁻⁸..10.
type Sketch struct {
	Pos  []SketchBin // bins of positive values, by Index ascending
	Neg  []SketchBin // bins of negative values (of |v|), by Index ascending
	Zero int64       // values with |v| < 1e-300
}

// SketchBin is one bin of a Sketch.
type SketchBin struct {
	Index int32
	Count int64
}

// NewSketch summarises the finite values of xs (NaN and ±Inf are left out).
func NewSketch(xs []float64) Sketch {
	var pos, neg []int32
	var s Sketch
	const chunk = 256
	var logs [chunk]float64 // log|v| a chunk at once (LogTo: math.Log's bits, in vector lanes)
	for lo := 0; lo < len(xs); lo += chunk {
		part := xs[lo:min(lo+chunk, len(xs))]
		for i, v := range part {
			logs[i] = math.Abs(v)
		}
		LogTo(logs[:len(part)], logs[:len(part)])
		for i, v := range part {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
			case math.Abs(v) < sketchZero:
				s.Zero++
			case v > 0:
				pos = append(pos, sketchIndexOfLog(logs[i]))
			default:
				neg = append(neg, sketchIndexOfLog(logs[i]))
			}
		}
	}
	s.Pos, s.Neg = binsOf(pos), binsOf(neg)
	return s
}

// sketchIndexOfLog is the bin of a value a > 0 from log a: ⌈log a / log γ⌉.
func sketchIndexOfLog(la float64) int32 { return int32(math.Ceil(la / sketchLogGamma)) }

// sketchValue is the representative of bin i: 2γⁱ/(γ+1).
func sketchValue(i int32) float64 {
	return 2 * math.Exp(float64(i)*sketchLogGamma) / (1 + math.Exp(sketchLogGamma))
}

func binsOf(idx []int32) []SketchBin {
	if len(idx) == 0 {
		return nil
	}
	// Counting, when the indices span a range not much wider than their number (a
	// block's values usually do): the same bins as sorting, in O(n + range).
	lo, hi := idx[0], idx[0]
	for _, i := range idx {
		lo, hi = min(lo, i), max(hi, i)
	}
	if span := int64(hi) - int64(lo) + 1; span <= 2*int64(len(idx))+256 {
		counts := make([]int32, span)
		for _, i := range idx {
			counts[i-lo]++
		}
		var out []SketchBin
		for j, c := range counts {
			if c > 0 {
				out = append(out, SketchBin{lo + int32(j), int64(c)})
			}
		}
		return out
	}
	slices.Sort(idx)
	var out []SketchBin
	for _, i := range idx {
		if n := len(out); n > 0 && out[n-1].Index == i {
			out[n-1].Count++
		} else {
			out = append(out, SketchBin{i, 1})
		}
	}
	return out
}

// Count is the number of values summarised.
func (s Sketch) Count() int64 {
	n := s.Zero
	for _, b := range s.Pos {
		n += b.Count
	}
	for _, b := range s.Neg {
		n += b.Count
	}
	return n
}

// Merge returns the sketch of both sketches' values.
func (s Sketch) Merge(o Sketch) Sketch {
	return Sketch{Pos: mergeBins(s.Pos, o.Pos), Neg: mergeBins(s.Neg, o.Neg), Zero: s.Zero + o.Zero}
}

func mergeBins(a, b []SketchBin) []SketchBin {
	out := make([]SketchBin, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Index < b[j].Index):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Index < a[i].Index:
			out = append(out, b[j])
			j++
		default:
			out = append(out, SketchBin{a[i].Index, a[i].Count + b[j].Count})
			i, j = i+1, j+1
		}
	}
	return out
}

// at is the representative of the k-th smallest value (0-based).
func (s Sketch) at(k int64) float64 {
	for i := len(s.Neg) - 1; i >= 0; i-- { // the most negative values first
		if k < s.Neg[i].Count {
			return -sketchValue(s.Neg[i].Index)
		}
		k -= s.Neg[i].Count
	}
	if k < s.Zero {
		return 0
	}
	k -= s.Zero
	for _, b := range s.Pos {
		if k < b.Count {
			return sketchValue(b.Index)
		}
		k -= b.Count
	}
	return math.NaN()
}

// Quantile is the q-quantile by linear interpolation between the order statistics (as
// Quantile), each replaced by its bin's representative: for values of one sign it is
// within a factor 1 ± SketchAlpha of Quantile of the values. NaN when empty.
func (s Sketch) Quantile(q float64) float64 {
	n := s.Count()
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int64(math.Floor(h))
	if lo >= n-1 {
		return s.at(n - 1)
	}
	a, b := s.at(lo), s.at(lo+1)
	return a + (h-float64(lo))*(b-a)
}

package prob

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSketchQuantiles: every quantile of the sketch is within the stated relative
// accuracy of the exact one (values of one sign), and merging in any split equals the
// sketch of all values.
func TestSketchQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name string
		draw func() float64
	}{
		{"lognormal KLs", func() float64 { return math.Exp(r.NormFloat64()*3 - 6) }},
		{"uniform accuracies", func() float64 { return 0.5 + r.Float64()/2 }},
		{"negative", func() float64 { return -math.Exp(r.NormFloat64()) }},
		{"ties", func() float64 { return float64(r.IntN(3) + 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs := make([]float64, 5001)
			for i := range xs {
				xs[i] = tt.draw()
			}
			all := NewSketch(xs)
			if all.Count() != int64(len(xs)) {
				t.Fatalf("count %d, want %d", all.Count(), len(xs))
			}
			for _, q := range []float64{0, 0.1, 0.5, 0.9, 1} {
				got, want := all.Quantile(q), Quantile(xs, q)
				if rel := math.Abs(got-want) / math.Abs(want); rel > SketchAlpha*(1+1e-9) {
					t.Errorf("q %g: %g, exact %g (relative error %.2g > %g)", q, got, want, rel, SketchAlpha)
				}
			}
			merged := NewSketch(xs[2000:]).Merge(NewSketch(xs[:700])).Merge(NewSketch(xs[700:2000]))
			for _, q := range []float64{0.1, 0.5, 0.9} {
				if merged.Quantile(q) != all.Quantile(q) {
					t.Errorf("q %g: merged %g != whole %g", q, merged.Quantile(q), all.Quantile(q))
				}
			}
		})
	}
}

func TestSketchEdges(t *testing.T) {
	s := NewSketch([]float64{math.NaN(), math.Inf(1), 0, -2, 3})
	if s.Count() != 3 || s.Zero != 1 {
		t.Fatalf("count %d zero %d, want 3 and 1", s.Count(), s.Zero)
	}
	if q := s.Quantile(0.5); q != 0 {
		t.Errorf("median %g, want 0", q)
	}
	if q := (Sketch{}).Quantile(0.5); !math.IsNaN(q) {
		t.Errorf("empty median %g, want NaN", q)
	}
}

// TestNormalRatioCIMoments: the interval from merged moments equals the one from the
// vectors.
func TestNormalRatioCIMoments(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	num, den := make([]float64, 3000), make([]float64, 3000)
	var a, b RatioMoments
	for i := range num {
		den[i] = math.Exp(r.NormFloat64())
		num[i] = 0.3*den[i] + 0.1*r.NormFloat64()*den[i]
		if i < 1000 {
			a.Add(num[i], den[i])
		} else {
			b.Add(num[i], den[i])
		}
	}
	a.Merge(b)
	lo, hi := NormalRatioCI(num, den, 0.95)
	mlo, mhi := NormalRatioCIMoments(a, 0.95)
	if math.Abs(lo-mlo) > 1e-12 || math.Abs(hi-mhi) > 1e-12 {
		t.Errorf("moments [%g, %g], vectors [%g, %g]", mlo, mhi, lo, hi)
	}
	if lo, hi := NormalRatioCIMoments(RatioMoments{N: 1, Num: 1, Den: 1}, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one item: [%g, %g], want NaN", lo, hi)
	}
}

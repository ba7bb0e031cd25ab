package prob

import (
	"math"
	"slices"
	"testing"
)

func TestMeanQuantile(t *testing.T) {
	xs := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	orig := slices.Clone(xs)
	cases := []struct {
		name string
		q    float64
		want float64
	}{
		// NumPy: np.quantile([3,1,4,1,5,9,2,6], q) with the default (linear) method.
		{"min", 0, 1},
		{"max", 1, 9},
		{"median", 0.5, 3.5},
		{"q=0.25", 0.25, 1.75},
		{"q=0.9", 0.9, 6.9},
		{"q=0.1", 0.1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Quantile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("got %g, want %g", got, c.want)
			}
		})
	}
	if !slices.Equal(xs, orig) {
		t.Errorf("got xs modified to %v, want %v", xs, orig)
	}
	if got := Median([]float64{5, 1, 3}); got != 3 {
		t.Errorf("Median of odd count: got %g, want 3", got)
	}
	if got := Mean(xs); got != 31.0/8 {
		t.Errorf("Mean: got %g, want %g", got, 31.0/8)
	}
	for name, v := range map[string]float64{
		"Mean(empty)": Mean(nil), "Quantile(empty)": Quantile(nil, 0.5),
		"Quantile(q<0)": Quantile(xs, -0.1), "Quantile(q>1)": Quantile(xs, 1.1),
	} {
		if !math.IsNaN(v) {
			t.Errorf("%s: got %g, want NaN", name, v)
		}
	}
}

// bruteWilcoxonP enumerates all 2^n sign assignments: an independent check of the DP.
func bruteWilcoxonP(n int, w float64) float64 {
	var lower, upper float64
	for mask := 0; mask < 1<<n; mask++ {
		s := 0
		for r := 1; r <= n; r++ {
			if mask&(1<<(r-1)) != 0 {
				s += r
			}
		}
		if float64(s) <= w {
			lower++
		}
		if float64(s) >= w {
			upper++
		}
	}
	return math.Min(1, 2*math.Min(lower, upper)/float64(int(1)<<n))
}

func TestWilcoxonSignedRank(t *testing.T) {
	negFirst10 := make([]float64, 30) // 1..30 with 1..10 negative
	for i := range negFirst10 {
		negFirst10[i] = float64(i + 1)
		if i < 10 {
			negFirst10[i] = -negFirst10[i]
		}
	}
	cases := []struct {
		name  string
		diffs []float64
		want  Wilcoxon
		tol   float64 // on P
	}{
		// scipy.stats.wilcoxon(d) on its documentation example: statistic
		// min(W+, W−) = 24, p = 0.041259765625 (exact).
		{"scipy doc example", []float64{6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75},
			Wilcoxon{N: 15, WPlus: 96, Z: (96 - 60 - 0.5) / math.Sqrt(15*16*31/24.0), P: 0.041259765625}, 1e-15},
		// All five positive: W+ = 15, P = 2·(1/32).
		{"all positive n=5", []float64{1, 2, 3, 4, 5},
			Wilcoxon{N: 5, WPlus: 15, Z: (15 - 7.5 - 0.5) / math.Sqrt(5*6*11/24.0), P: 0.0625}, 1e-15},
		// One negative (rank 1): W− = 1, P(W ≤ 1) = 2/32, P = 0.125.
		{"one negative n=5", []float64{-1, 2, 3, 4, 5},
			Wilcoxon{N: 5, WPlus: 14, Z: (14 - 7.5 - 0.5) / math.Sqrt(5*6*11/24.0), P: 0.125}, 1e-15},
		// Zeros dropped: same as above.
		{"zeros dropped", []float64{0, -1, 2, 0, 3, 4, 5},
			Wilcoxon{N: 5, WPlus: 14, Z: (14 - 7.5 - 0.5) / math.Sqrt(5*6*11/24.0), P: 0.125}, 1e-15},
		// W+ = 1+4+5+8 = 18 = the mean: P is capped at 1, Z is 0.
		{"balanced", []float64{1, -2, -3, 4, 5, -6, -7, 8},
			Wilcoxon{N: 8, WPlus: 18, Z: 0, P: 1}, 0},
		// W+ = 19, one above the mean 18: P = 2·P(W ≥ 19) = 1 − P(W = 18) = 242/256.
		{"nearly balanced", []float64{-1, 2, -3, 4, -5, 6, 7, -8},
			Wilcoxon{N: 8, WPlus: 19, Z: (19 - 18 - 0.5) / math.Sqrt(8*9*17/24.0), P: 242.0 / 256}, 1e-15},
		// Normal approximation, N = 30: W+ = Σ11..30 = 410, mean 232.5, var 2363.75,
		// z = 177/√2363.75 = 3.64059606581626, p = erfc(z/√2) = 2.7200759312e-4.
		{"normal n=30", negFirst10,
			Wilcoxon{N: 30, WPlus: 410, Z: 3.6405960658162564, P: 0.00027200759312066754}, 1e-12},
		// Ties force the approximation even for N ≤ 25: |d| = 1,1,2 → ranks 1.5,1.5,3;
		// W+ = 1.5+3 = 4.5, var = 3·4·7/24 − (2³−2)/48 = 3.375, z = (4.5−3−0.5)/√3.375.
		{"ties n=3", []float64{1, -1, 2},
			Wilcoxon{N: 3, WPlus: 4.5, Z: 1 / math.Sqrt(3.375), P: math.Erfc(1 / math.Sqrt(3.375) / math.Sqrt2)}, 1e-15},
		// Ties at N = 31: W+ = 457, Σ(t³−t) = 54, var = 2602.875, z = 4.08676253377802,
		// p = 4.37434439780045e-05 (each computed by hand from the formulas).
		{"ties n=31", []float64{1, 1, -1, 2, 2, -3, 4, 4, 4, -5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, -16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26},
			Wilcoxon{N: 31, WPlus: 457, Z: 4.086762533778017, P: 4.374344397800451e-05}, 1e-12},
		{"all zero", []float64{0, 0}, Wilcoxon{N: 0, P: 1}, 0},
		{"empty", nil, Wilcoxon{N: 0, P: 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := WilcoxonSignedRank(c.diffs)
			if got.N != c.want.N || got.WPlus != c.want.WPlus {
				t.Fatalf("got N=%d W+=%g, want N=%d W+=%g", got.N, got.WPlus, c.want.N, c.want.WPlus)
			}
			if math.Abs(got.Z-c.want.Z) > 1e-12 {
				t.Errorf("got Z=%.15g, want %.15g", got.Z, c.want.Z)
			}
			if math.Abs(got.P-c.want.P) > c.tol {
				t.Errorf("got P=%.15g, want %.15g", got.P, c.want.P)
			}
		})
	}
}

func TestWilcoxonExactMatchesEnumeration(t *testing.T) {
	rng := NewRand(31)
	for n := 1; n <= 16; n++ {
		for range 20 {
			diffs := make([]float64, n)
			for i := range diffs {
				diffs[i] = float64(i + 1)
				if rng.IntN(2) == 0 {
					diffs[i] = -diffs[i]
				}
			}
			got := WilcoxonSignedRank(diffs)
			if want := bruteWilcoxonP(n, got.WPlus); math.Abs(got.P-want) > 1e-14 {
				t.Fatalf("n=%d W+=%g: got P=%.15g, want %.15g", n, got.WPlus, got.P, want)
			}
		}
	}
	// N = 25 is still exact, N = 26 is not: the exact P for all positive is 2/2^25.
	all := func(n int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(i + 1)
		}
		return d
	}
	if got, want := WilcoxonSignedRank(all(25)).P, 2/math.Ldexp(1, 25); got != want {
		t.Errorf("N=25 all positive: got P=%g, want exact %g", got, want)
	}
	w26 := WilcoxonSignedRank(all(26))
	if want := math.Erfc(math.Abs(w26.Z) / math.Sqrt2); w26.P != want {
		t.Errorf("N=26 all positive: got P=%g, want normal approximation %g", w26.P, want)
	}
}

func TestBootstrapMeanCI(t *testing.T) {
	xs := make([]float64, 200)
	rng := NewRand(41)
	for i := range xs {
		xs[i] = 3 + rng.NormFloat64()
	}
	mean := Mean(xs)
	cases := []struct {
		name  string
		level float64
	}{{"95%", 0.95}, {"80%", 0.8}, {"99%", 0.99}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := BootstrapMeanCI(NewRand(43), xs, 2000, c.level)
			if !(lo < mean && mean < hi) {
				t.Fatalf("got [%g, %g], want it to contain the mean %g", lo, hi, mean)
			}
			// Width ≈ 2·z·sd/√n with sd ≈ 1.
			z := math.Sqrt2 * math.Erfinv(c.level)
			want := 2 * z / math.Sqrt(float64(len(xs)))
			if w := hi - lo; math.Abs(w/want-1) > 0.25 {
				t.Fatalf("got width %g, want about %g", w, want)
			}
		})
	}
	lo, hi := BootstrapMeanCI(NewRand(1), []float64{2, 2, 2}, 100, 0.95)
	if lo != 2 || hi != 2 {
		t.Errorf("constant data: got [%g, %g], want [2, 2]", lo, hi)
	}
	if lo, hi := BootstrapMeanCI(NewRand(1), nil, 100, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("empty: got [%g, %g], want NaN", lo, hi)
	}
	if lo, hi := BootstrapMeanCI(NewRand(1), xs, 100, 1.5); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("level 1.5: got [%g, %g], want NaN", lo, hi)
	}
}

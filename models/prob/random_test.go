package prob

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
)

func TestSeedDeterminism(t *testing.T) {
	if a, b := Seed(1, 2, 3), Seed(1, 2, 3); a != b {
		t.Fatalf("got different seeds for equal parts")
	}
	distinct := map[string]uint64{
		"()":      Seed(),
		"(0)":     Seed(0),
		"(0,0)":   Seed(0, 0),
		"(1,2)":   Seed(1, 2),
		"(2,1)":   Seed(2, 1),
		"(1,2,0)": Seed(1, 2, 0),
		"(1,jem)": Seed(1, SeedString("jem")),
		"(1,bas)": Seed(1, SeedString("baseline")),
	}
	seen := map[uint64]string{}
	for name, s := range distinct {
		if other, ok := seen[s]; ok {
			t.Errorf("got Seed%s == Seed%s = %#x, want them different", name, other, s)
		}
		seen[s] = name
	}
	if a, b := SeedString("jem"), SeedString("jem"); a != b || a == SeedString("oracle") {
		t.Errorf("got SeedString not a deterministic, discriminating hash")
	}
	// FNV-1a 64 of "a" is a published test vector.
	if got, want := SeedString("a"), uint64(0xaf63dc4c8601ec8c); got != want {
		t.Errorf("got SeedString(\"a\") = %#x, want %#x", got, want)
	}
	a, b := NewRand(42), NewRand(42)
	for i := range 100 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: got %d and %d from equal seeds, want equal", i, x, y)
		}
	}
	if NewRand(42).Uint64() == NewRand(43).Uint64() {
		t.Errorf("got equal first draws for seeds 42 and 43")
	}
}

func TestBinomialMoments(t *testing.T) {
	cases := []struct {
		n    int64
		p    float64
		reps int
	}{
		{1, 0.5, 100000},
		{10, 0.9, 100000},       // p > 0.5: symmetry, inversion
		{1000, 0.005, 100000},   // n·p = 5: inversion
		{1000, 0.5, 100000},     // BTRS
		{50, 0.2, 100000},       // n·p = 10: BTRS at the switch
		{1e9, 1e-9, 100000},     // n·p = 1 with huge n: inversion
		{1e9, 1e-8, 100000},     // n·p = 10: BTRS at the switch
		{1e9, 0.3, 100000},      // huge n: BTRS
		{1e9, 0.999999, 100000}, // huge n, p near 1
		{1 << 56, 0.5, 20000},   // beyond 2^52: split into 16 exact halves
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("n=%d,p=%g", c.n, c.p), func(t *testing.T) {
			rng := NewRand(Seed(11, uint64(c.n), math.Float64bits(c.p)))
			wantMean := float64(c.n) * c.p
			wantVar := float64(c.n) * c.p * (1 - c.p)
			// Moments of the deviation from the known mean: no cancellation for huge n.
			var sum, sumSq float64
			for range c.reps {
				v := Binomial(rng, c.n, c.p)
				if v < 0 || v > c.n {
					t.Fatalf("got %d, want within [0, %d]", v, c.n)
				}
				d := float64(v) - wantMean
				sum += d
				sumSq += d * d
			}
			reps := float64(c.reps)
			mean := wantMean + sum/reps
			variance := sumSq/reps - (sum/reps)*(sum/reps)
			if se := math.Sqrt(wantVar / reps); math.Abs(mean-wantMean) > 5*se {
				t.Errorf("got mean %.6g, want %.6g (±%.3g)", mean, wantMean, 5*se)
			}
			if math.Abs(variance/wantVar-1) > 0.05 {
				t.Errorf("got variance %.6g, want %.6g within 5%%", variance, wantVar)
			}
		})
	}
}

// TestBinomialPMF compares draw frequencies with the exact pmf by a χ² statistic, in
// each sampler's regime, to catch a sampler with the right moments but wrong shape.
func TestBinomialPMF(t *testing.T) {
	cases := []struct {
		n int64
		p float64
	}{
		{20, 0.3},    // inversion
		{100, 0.4},   // BTRS
		{30, 0.35},   // BTRS, n·p = 10.5, small n
		{400, 0.975}, // BTRS on 1−p
	}
	const reps = 200000
	for _, c := range cases {
		t.Run(fmt.Sprintf("n=%d,p=%g", c.n, c.p), func(t *testing.T) {
			rng := NewRand(Seed(13, uint64(c.n), math.Float64bits(c.p)))
			freq := make([]float64, c.n+1)
			for range reps {
				freq[Binomial(rng, c.n, c.p)]++
			}
			chi2, df := 0.0, -1
			var poolObs, poolExp float64 // pool cells with expected count < 5
			for k := int64(0); k <= c.n; k++ {
				lg1, _ := math.Lgamma(float64(c.n + 1))
				lg2, _ := math.Lgamma(float64(k + 1))
				lg3, _ := math.Lgamma(float64(c.n - k + 1))
				pmf := math.Exp(lg1 - lg2 - lg3 + float64(k)*math.Log(c.p) + float64(c.n-k)*math.Log1p(-c.p))
				e := pmf * reps
				if e < 5 {
					poolObs += freq[k]
					poolExp += e
					continue
				}
				chi2 += (freq[k] - e) * (freq[k] - e) / e
				df++
			}
			if poolExp > 0 {
				chi2 += (poolObs - poolExp) * (poolObs - poolExp) / poolExp
				df++
			}
			// Mean df, sd √(2df): 5 sd is far beyond chance and far below a biased sampler.
			if limit := float64(df) + 5*math.Sqrt(2*float64(df)); chi2 > limit {
				t.Errorf("got χ² = %.1f on %d df, want below %.1f", chi2, df, limit)
			}
		})
	}
}

// TestBinomialLogRatio checks the BTRS acceptance function log f(k)/f(m): against
// lgamma where that is exact enough, and for huge n by Σ_k f(k)/f(m) = 1/f(m), with f(m)
// = (2π·npq)^(−½)·(1 + O(1/npq)) near the centre.
func TestBinomialLogRatio(t *testing.T) {
	for _, c := range []struct {
		n int64
		p float64
	}{{30, 0.35}, {1000, 0.3}, {1000, 0.5}, {100000, 0.01}} {
		t.Run(fmt.Sprintf("lgamma n=%d,p=%g", c.n, c.p), func(t *testing.T) {
			nf := float64(c.n)
			r := newBinomialLogRatio(nf, c.p)
			logf := func(k float64) float64 {
				a, _ := math.Lgamma(nf + 1)
				b, _ := math.Lgamma(k + 1)
				d, _ := math.Lgamma(nf - k + 1)
				return a - b - d + k*math.Log(c.p) + (nf-k)*math.Log1p(-c.p)
			}
			for k := int64(0); k <= c.n; k += 1 + c.n/2000 {
				kf := float64(k)
				want := logf(kf) - logf(r.m)
				if got := r.at(kf); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("k=%d: got %.12g, want %.12g", k, got, want)
				}
			}
		})
	}
	for _, c := range []struct {
		n int64
		p float64
	}{{1e9, 0.3}, {1e12, 0.5}, {1 << 52, 1e-6}} {
		t.Run(fmt.Sprintf("normalised n=%d,p=%g", c.n, c.p), func(t *testing.T) {
			if c.n > 1e9 {
				testenv.Slow(t, "sums the ratio over ±12 sd, millions of terms")
			}
			nf := float64(c.n)
			r := newBinomialLogRatio(nf, c.p)
			sd := math.Sqrt(nf * c.p * (1 - c.p))
			sum := 0.0
			for k := math.Max(0, math.Floor(r.m-12*sd)); k <= r.m+12*sd; k++ {
				sum += math.Exp(r.at(k))
			}
			want := math.Sqrt(2 * math.Pi * sd * sd)
			if math.Abs(sum/want-1) > 1e-6 {
				t.Fatalf("got Σ f(k)/f(m) = %.10g, want %.10g", sum, want)
			}
		})
	}
}

func TestBinomialEdges(t *testing.T) {
	rng := NewRand(1)
	cases := []struct {
		name string
		n    int64
		p    float64
		want int64
	}{
		{"n=0", 0, 0.5, 0},
		{"n<0", -5, 0.5, 0},
		{"p=0", 100, 0, 0},
		{"p<0", 100, -1, 0},
		{"p=1", 100, 1, 100},
		{"p>1", 100, 2, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Binomial(rng, c.n, c.p); got != c.want {
				t.Fatalf("got %d, want %d", got, c.want)
			}
		})
	}
}

func TestMultinomial(t *testing.T) {
	cases := []struct {
		name string
		n    int64
		p    []float64
		reps int
	}{
		{"small n", 10, []float64{0.1, 0.2, 0.3, 0.4}, 50000},
		{"n=1", 1, []float64{0.5, 0.25, 0.25}, 50000},
		{"zeros inside", 1000, []float64{0, 0.5, 0, 0.5, 0}, 20000},
		{"unnormalised weights", 500, []float64{1, 3}, 20000},
		{"n=1e9", 1e9, []float64{0.1, 0.2, 0.3, 0.4, 1e-9, 0}, 20000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			total := 0.0
			for _, v := range c.p {
				total += v
			}
			rng := NewRand(Seed(17, SeedString(c.name)))
			sum := make([]float64, len(c.p))
			sumSqDev := make([]float64, len(c.p))
			for range c.reps {
				counts := Multinomial(rng, c.n, c.p)
				var s int64
				for i, v := range counts {
					if v < 0 || (c.p[i] == 0 && v != 0) {
						t.Fatalf("got counts %v for p %v", counts, c.p)
					}
					s += v
					sum[i] += float64(v)
					d := float64(v) - float64(c.n)*c.p[i]/total
					sumSqDev[i] += d * d
				}
				if s != c.n {
					t.Fatalf("got counts summing to %d, want %d", s, c.n)
				}
			}
			reps := float64(c.reps)
			for i, pi := range c.p {
				q := pi / total
				wantMean := float64(c.n) * q
				wantVar := float64(c.n) * q * (1 - q)
				mean := sum[i] / reps
				variance := sumSqDev[i] / reps
				if wantVar == 0 {
					if mean != wantMean {
						t.Errorf("cell %d: got mean %g, want %g", i, mean, wantMean)
					}
					continue
				}
				if se := math.Sqrt(wantVar / reps); math.Abs(mean-wantMean) > 5*se {
					t.Errorf("cell %d: got mean %.6g, want %.6g (±%.3g)", i, mean, wantMean, 5*se)
				}
				if math.Abs(variance/wantVar-1) > 0.06 {
					t.Errorf("cell %d: got variance %.6g, want %.6g within 6%%", i, variance, wantVar)
				}
			}
		})
	}
}

func TestSamplesFromCounts(t *testing.T) {
	cases := []struct {
		name   string
		counts []int64
	}{
		{"empty", nil},
		{"all zero", []int64{0, 0, 0}},
		{"one cell", []int64{0, 5, 0}},
		{"mixed", []int64{3, 0, 7, 1, 12}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := SamplesFromCounts(NewRand(5), c.counts)
			got := make([]int64, len(c.counts))
			for _, v := range s {
				if int(v) < 0 || int(v) >= len(c.counts) {
					t.Fatalf("got cell index %d, want within [0, %d)", v, len(c.counts))
				}
				got[v]++
			}
			if !slices.Equal(got, append([]int64{}, c.counts...)) && len(c.counts) > 0 {
				t.Fatalf("got counts %v, want %v", got, c.counts)
			}
		})
	}
	// Shuffled: every position of a two-cell multiset is equally likely to hold cell 1.
	rng := NewRand(9)
	const reps = 20000
	var pos [10]float64
	for range reps {
		for i, v := range SamplesFromCounts(rng, []int64{5, 5}) {
			pos[i] += float64(v)
		}
	}
	for i, v := range pos {
		if f := v / reps; math.Abs(f-0.5) > 5*math.Sqrt(0.25/reps) {
			t.Errorf("position %d: got share of cell 1 %.4f, want 0.5", i, f)
		}
	}
}

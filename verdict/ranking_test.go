package verdict

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// TestNemenyiQ: the computed critical values reproduce Demšar's (2006) Table 5
// (alpha 0.05) to within 0.001 (the table's last digit is sometimes truncated: k = 3 is
// 2.3437 by the integral and 3.3145/√2 in studentized-range tables), and grow with k beyond it.
func TestNemenyiQ(t *testing.T) {
	table := []float64{1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164}
	for i, want := range table {
		k := i + 2
		t.Run(fmt.Sprint("k=", k), func(t *testing.T) {
			if got := NemenyiQ(k, 0.05); math.Abs(got-want) > 1e-3 {
				t.Errorf("NemenyiQ(%d, 0.05) = %.4f, want %.3f", k, got, want)
			}
		})
	}
	prev := NemenyiQ(10, 0.05)
	for k := 11; k <= 20; k++ {
		q := NemenyiQ(k, 0.05)
		if !(q > prev && q < 4) {
			t.Errorf("NemenyiQ(%d) = %v after %v", k, q, prev)
		}
		prev = q
	}
}

// TestCriticalDifference: Demšar's worked example (k = 4, N = 14, alpha 0.05: q = 2.569,
// CD = 1.25) and the degenerate inputs.
func TestCriticalDifference(t *testing.T) {
	cases := []struct {
		name string
		k, n int
		want float64
		tol  float64
	}{
		{"demsar-k4-n14", 4, 14, 1.25, 5e-3},
		{"closed-form-k2-n10", 2, 10, 1.959964 * math.Sqrt(6.0/60), 1e-4},
		{"one-recipe", 1, 14, math.NaN(), 0},
		{"no-tasks", 4, 0, math.NaN(), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CriticalDifference(tc.k, tc.n, 0.05)
			if math.IsNaN(tc.want) != math.IsNaN(got) || math.Abs(got-tc.want) > tc.tol {
				t.Errorf("CD(%d, %d) = %v, want %v", tc.k, tc.n, got, tc.want)
			}
		})
	}
}

// TestFriedman checks the test against a hand-computed table: 3 recipes on 4 tasks
// (ranks A 1,2,1,3; B 2,1,2,2; C 3,3,3,1: average ranks 1.75, 1.75, 2.5; χ² = 4·(12.375 −
// 12) = 1.5, p = e^(−0.75); F = 3·1.5/(8 − 1.5) on (2, 6) d.f., p = (6/(6 + 2F))³), a
// task one recipe lacks being left out, and ties taking mid-ranks.
func TestFriedman(t *testing.T) {
	nan := math.NaN()
	F := 4.5 / 6.5
	cases := []struct {
		name    string
		x       [][]float64
		avg     []float64
		n       int
		chi, p  float64
		f, fp   float64
		missing bool
	}{
		{"hand", [][]float64{{1, 2, 1, 3}, {2, 1, 2, 2}, {3, 3, 3, 1}}, []float64{1.75, 1.75, 2.5}, 4,
			1.5, math.Exp(-0.75), F, math.Pow(6/(6+2*F), 3), false},
		{"missing-task-dropped", [][]float64{{1, 2, 1, 3, 9}, {2, 1, 2, 2, nan}, {3, 3, 3, 1, 0}}, []float64{1.75, 1.75, 2.5}, 4,
			1.5, math.Exp(-0.75), F, math.Pow(6/(6+2*F), 3), false},
		{"ties-mid-ranks", [][]float64{{1, 1}, {1, 2}, {5, 3}}, []float64{1.25, 1.75, 3}, 2,
			// Σ R² = 1.5625 + 3.0625 + 9 = 13.625; χ² = 24/12·(13.625 − 12) = 3.25
			3.25, math.Exp(-3.25 / 2), 3.25 / (4 - 3.25), FSurvival(3.25/0.75, 2, 2), false},
		{"empty-recipe-left-out", [][]float64{{1, 2, 1, 3}, {2, 1, 2, 2}, {3, 3, 3, 1}, {nan, nan, nan, nan}}, []float64{1.75, 1.75, 2.5, nan}, 4,
			1.5, math.Exp(-0.75), F, math.Pow(6/(6+2*F), 3), true},
	}
	close := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9 }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, avg := FriedmanTest(tc.x, 0.05)
			for i := range avg {
				if !close(avg[i], tc.avg[i]) {
					t.Errorf("average ranks %v, want %v", avg, tc.avg)
					break
				}
			}
			if f.N != tc.n || f.K != 3 || !close(f.ChiSq, tc.chi) || !close(f.P, tc.p) || !close(f.F, tc.f) || !close(f.FP, tc.fp) {
				t.Errorf("%+v, want N %d χ² %v p %v F %v p %v", f, tc.n, tc.chi, tc.p, tc.f, tc.fp)
			}
			if !close(f.CD, CriticalDifference(3, tc.n, 0.05)) {
				t.Errorf("CD %v", f.CD)
			}
		})
	}
	f, _ := FriedmanTest([][]float64{{1, 2}, {3, 4}}, 0.05) // every task ranks alike
	if !math.IsInf(f.F, 1) || f.FP != 0 {
		t.Errorf("perfect agreement: F %v p %v, want +Inf 0", f.F, f.FP)
	}
}

// TestDistributions checks the chi-square and F tails against closed forms.
func TestDistributions(t *testing.T) {
	cases := []struct {
		name      string
		got, want float64
	}{
		{"chi2-df2", ChiSquareSurvival(3, 2), math.Exp(-1.5)},
		{"chi2-df1", ChiSquareSurvival(2.5, 1), math.Erfc(math.Sqrt(1.25))},
		{"chi2-df1-critical", ChiSquareSurvival(3.841458820694124, 1), 0.05},
		{"chi2-df4", ChiSquareSurvival(20, 4), math.Exp(-10) * (1 + 10)},
		{"chi2-zero", ChiSquareSurvival(0, 3), 1},
		{"F-d1-2", FSurvival(1.7, 2, 9), math.Pow(9/(9+2*1.7), 4.5)},
		{"F-1-1-is-cauchy-squared", FSurvival(4, 1, 1), 1 - 2*math.Atan(2)/math.Pi}, // F(1, 1) = T², T Cauchy: P(|T| ≥ 2) = 1 − 2·atan(2)/π
		{"normal-quantile", NormalQuantile(0.975), 1.959963984540054},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > 1e-9 {
				t.Errorf("got %.12g, want %.12g", tc.got, tc.want)
			}
		})
	}
}

// TestMDE checks the minimum detectable effect against its closed form, and +Inf where
// the exact signed-rank test cannot reject at n (2/2ⁿ > alpha/m: 2/2⁵ = 0.0625 > 0.05,
// 2/2⁹ = 0.0039 > 0.05/22; 2/2⁶ = 0.031 and 2/2¹⁰ = 0.00195 < 0.05/9 can).
func TestMDE(t *testing.T) {
	cases := []struct {
		name  string
		sd    float64
		n, m  int
		want  float64
		isNaN bool
	}{
		{"one-comparison", 1, 16, 1, (1.959963984540054 + 0.8416212335729143) / 4, false},
		{"bonferroni-9", 0.5, 10, 9, (NormalQuantile(1-0.05/18) + NormalQuantile(0.8)) * 0.5 / math.Sqrt(10), false},
		{"ten-tasks-nine-comparisons", 1, 10, 9, (NormalQuantile(1-0.05/18) + NormalQuantile(0.8)) / math.Sqrt(10), false},
		{"nine-tasks-22-comparisons-undetectable", 1, 9, 22, math.Inf(1), false},
		{"five-tasks-one-comparison-undetectable", 1, 5, 1, math.Inf(1), false},
		{"six-tasks-one-comparison", 1, 6, 1, (1.959963984540054 + 0.8416212335729143) / math.Sqrt(6), false},
		{"one-pair", 1, 1, 1, 0, true},
		{"no-sd", math.NaN(), 10, 1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := MDE(tc.sd, tc.n, tc.m, 0.05, 0.8)
			if tc.isNaN != math.IsNaN(got) || !tc.isNaN && !(got == tc.want || math.Abs(got-tc.want) <= 1e-9) {
				t.Errorf("MDE = %v, want %v", got, tc.want)
			}
		})
	}
	if got := NormalQuantile(1 - 0.05/18); math.Abs(got-2.7729) > 1e-3 {
		t.Errorf("z at 0.05/18: %v", got)
	}
}

// TestMidRanks: ties share the mean of their ranks.
func TestMidRanks(t *testing.T) {
	cases := []struct {
		name string
		vs   []float64
		want []float64
	}{
		{"distinct", []float64{3, 1, 2}, []float64{3, 1, 2}},
		{"pair-tie", []float64{2, 1, 2}, []float64{2.5, 1, 2.5}},
		{"all-tie", []float64{5, 5, 5, 5}, []float64{2.5, 2.5, 2.5, 2.5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MidRanks(tc.vs); !slices.Equal(got, tc.want) {
				t.Errorf("MidRanks(%v) = %v, want %v", tc.vs, got, tc.want)
			}
		})
	}
}

// TestRank: the order by mean with competition ranks, the set indistinguishable from
// the best, and a recipe without values last and uncompared.
func TestRank(t *testing.T) {
	const n = 30
	vals := func(f func(k int) float64) []float64 {
		out := make([]float64, n)
		for k := range out {
			out[k] = f(k)
		}
		return out
	}
	noise := func(k int) float64 { return 0.01 * math.Sin(float64(7*k+1)) }
	cases := []struct {
		name      string
		names     []string
		x         [][]float64
		wantOrder []string
		wantRanks []int
		wantSet   []bool
	}{
		{"tie-then-worse", []string{"worse", "a", "b"},
			[][]float64{vals(func(k int) float64 { return 1 + noise(k) }), vals(func(k int) float64 { return 0.05 + noise(k) }), vals(func(k int) float64 { return 0.05 + noise(k) })},
			[]string{"a", "b", "worse"}, []int{1, 1, 3}, []bool{true, true, false}},
		{"strict-order", []string{"c", "b", "a"},
			[][]float64{vals(func(k int) float64 { return 3 + noise(k) }), vals(func(k int) float64 { return 2 + noise(k) }), vals(func(k int) float64 { return 1 + noise(k) })},
			[]string{"a", "b", "c"}, []int{1, 2, 3}, []bool{true, false, false}},
		{"noise-only", []string{"a", "b"},
			[][]float64{vals(func(k int) float64 { return 1 + noise(k) }), vals(func(k int) float64 { return 1 - noise(k) })},
			nil, []int{1, 2}, []bool{true, true}},
		{"missing", []string{"none", "a"},
			[][]float64{vals(func(int) float64 { return math.NaN() }), vals(func(k int) float64 { return 1 + noise(k) })},
			[]string{"a", "none"}, []int{1, 2}, []bool{true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rk := Rank(tc.names, tc.x, RankAlpha, 1)
			var order []string
			var ranks []int
			var set []bool
			for _, s := range rk.Standings {
				order, ranks, set = append(order, s.Name), append(ranks, s.Rank), append(set, s.InBestSet)
			}
			if tc.wantOrder != nil && !slices.Equal(order, tc.wantOrder) || !slices.Equal(ranks, tc.wantRanks) || !slices.Equal(set, tc.wantSet) {
				t.Errorf("order %v ranks %v set %v, want %v %v %v", order, ranks, set, tc.wantOrder, tc.wantRanks, tc.wantSet)
			}
			if rk.Best != order[0] || rk.Standings[0].OverBest != 0 {
				t.Errorf("best %q, its excess over itself %v", rk.Best, rk.Standings[0].OverBest)
			}
			for _, s := range rk.Standings[1:] {
				if s.N > 0 && !(s.OverBestLo <= s.OverBest && s.OverBest <= s.OverBestHi && s.MDE >= 0) {
					t.Errorf("%s: %v [%v, %v], MDE %v", s.Name, s.OverBest, s.OverBestLo, s.OverBestHi, s.MDE)
				}
			}
		})
	}
}

// TestRankReviewCase is the review's failure case: 10 recipes on 10 tasks, one worse
// than the best on all 10 by about 1.34 nats. Over all 45 pairs its smallest exact p
// (0.00195) Holm-corrected is 0.088 and it could share rank 1; compared with the best
// alone (×9: 0.0176) it must be out of the best's set and not at rank 1.
func TestRankReviewCase(t *testing.T) {
	const k, n = 10, 10
	rng := prob.NewRand(20240611)
	names := make([]string, k)
	x := make([][]float64, k)
	for i := range k {
		names[i] = string(rune('a' + i))
		x[i] = make([]float64, n)
	}
	for t := range n {
		base := 0.2 + 0.5*rng.Float64()
		for i := range k - 1 {
			x[i][t] = base + 3*float64(i) + 0.05*rng.NormFloat64() // a is the best by far
		}
		x[k-1][t] = x[0][t] + 1.34 + 0.1*rng.NormFloat64() // "j": worse than a on every task
	}
	rk := Rank(names, x, RankAlpha, 7)
	var bad Standing
	for _, s := range rk.Standings {
		if s.Name == "j" {
			bad = s
		}
	}
	if rk.Best != "a" || bad.Rank == 1 || bad.InBestSet {
		t.Fatalf("best %s; j: rank %d, in the best's set %v (p %v, Holm %v)", rk.Best, bad.Rank, bad.InBestSet, bad.P, bad.PHolm)
	}
	if math.Abs(bad.P-2.0/1024) > 1e-12 || bad.PHolm > 9*bad.P+1e-12 || bad.PHolm >= RankAlpha || 45*bad.P < RankAlpha {
		t.Errorf("j: p %v (want the exact 2/1024), Holm %v (want ≤ 9p = %v < 0.05, while 45p = %v is not)", bad.P, bad.PHolm, 9*bad.P, 45*bad.P)
	}
	if math.Abs(bad.OverBest-1.34) > 0.1 || !(bad.OverBestLo > 1 && bad.OverBestHi < 1.7) {
		t.Errorf("j over the best %v [%v, %v], want ≈ 1.34", bad.OverBest, bad.OverBestLo, bad.OverBestHi)
	}
}

// TestRankProperties is a property test over random boards (seeded): the best is rank 1
// and in its own set; the set is exactly the recipes whose Holm-adjusted comparison with
// the best does not reject (so never one that does); Holm never lowers a p; standings
// run in order of mean; the same seed gives the same CIs.
func TestRankProperties(t *testing.T) {
	rng := prob.NewRand(99)
	for trial := range 300 {
		k, n := 2+rng.IntN(11), 3+rng.IntN(28)
		names := make([]string, k)
		x := make([][]float64, k)
		for i := range k {
			names[i] = string(rune('A' + i))
			x[i] = make([]float64, n)
			shift := 0.3 * rng.Float64()
			for t := range n {
				x[i][t] = shift + rng.NormFloat64()*0.2
				if rng.Float64() < 0.1 {
					x[i][t] = math.NaN()
				}
			}
		}
		rk := Rank(names, x, RankAlpha, uint64(trial))
		again := Rank(names, x, RankAlpha, uint64(trial))
		st := rk.Standings
		if st[0].Rank != 1 || !st[0].InBestSet || st[0].Name != rk.Best {
			t.Fatalf("trial %d: best %+v", trial, st[0])
		}
		for i, s := range st {
			if i > 0 && CompareNaNLast(st[i-1].Mean, s.Mean) > 0 {
				t.Fatalf("trial %d: standings out of order at %d", trial, i)
			}
			if i == 0 {
				continue
			}
			if s.InBestSet != (s.PHolm >= RankAlpha) {
				t.Fatalf("trial %d: %s in the set %v with Holm p %v", trial, s.Name, s.InBestSet, s.PHolm)
			}
			if s.PHolm < s.P {
				t.Fatalf("trial %d: %s Holm p %v below its p %v", trial, s.Name, s.PHolm, s.P)
			}
			if a := again.Standings[i]; !(a.OverBestLo == s.OverBestLo || math.IsNaN(a.OverBestLo) && math.IsNaN(s.OverBestLo)) {
				t.Fatalf("trial %d: the CI is not reproducible from its seed", trial)
			}
		}
	}
}

// TestCDBars: maximal runs of sorted average ranks closer than the critical difference.
func TestCDBars(t *testing.T) {
	cases := []struct {
		name string
		avg  []float64
		cd   float64
		want [][2]int
	}{
		{"all-apart", []float64{1, 2, 3}, 0.5, nil},
		{"all-together", []float64{1, 1.5, 2}, 1.25, [][2]int{{0, 2}}},
		{"overlapping", []float64{1, 1.8, 2.6, 3.4}, 1.25, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
		{"nested-left-out", []float64{1, 1.1, 1.2, 3}, 1.25, [][2]int{{0, 2}}},
		{"exactly-cd-apart", []float64{1, 2.25}, 1.25, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := CDBars(tc.avg, tc.cd); !slices.Equal(got, tc.want) {
				t.Errorf("CDBars(%v, %v) = %v, want %v", tc.avg, tc.cd, got, tc.want)
			}
		})
	}
}

// TestRankUndetectable: at 5 tasks the signed-rank test cannot reject at all (2/2⁵ =
// 0.0625 > 0.05), so a recipe worse on every task stays in the best's set and the
// board's MDE is +Inf, never a finite number it could not deliver.
func TestRankUndetectable(t *testing.T) {
	cases := []struct {
		name    string
		n       int
		wantInf bool
	}{
		{"five-tasks", 5, true},
		{"six-tasks", 6, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := make([]float64, tc.n), make([]float64, tc.n)
			for k := range a {
				a[k] = 0.1 * math.Sin(float64(k+1))
				b[k] = a[k] + 2 + 0.01*math.Cos(float64(k))
			}
			rk := Rank([]string{"a", "b"}, [][]float64{a, b}, RankAlpha, 3)
			worse := rk.Standings[1]
			if math.IsInf(rk.MDE, 1) != tc.wantInf || math.IsInf(worse.MDE, 1) != tc.wantInf || worse.InBestSet != tc.wantInf {
				t.Errorf("n %d: board MDE %v, b's MDE %v, b in the best's set %v (p %v)", tc.n, rk.MDE, worse.MDE, worse.InBestSet, worse.PHolm)
			}
		})
	}
	if got := medianInf([]float64{math.Inf(1), 1, math.Inf(1)}); !math.IsInf(got, 1) {
		t.Errorf("medianInf = %v, want +Inf", got)
	}
	if got := medianInf([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("medianInf = %v, want 2.5", got)
	}
}

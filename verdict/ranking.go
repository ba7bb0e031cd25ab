package verdict

import (
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/jemcheck/jemcheck/models/prob"
)

// # Ranking recipes
//
// A leaderboard orders recipes by their mean value (e.g. the excess joint KL over exact
// jem, per task; lower is better) and claims only what the paired data support, in the
// standard presentation of Demšar (2006), "Statistical comparisons of classifiers over
// multiple data sets", JMLR 7:
//
//   - The best recipe is the one of least mean. Every other recipe is compared with it
//     alone: its paired difference to the best (mean over the tasks both have) with a
//     seeded paired-bootstrap 95% CI, and a two-sided Wilcoxon signed-rank test of
//     those differences, the k−1 p-values Holm-corrected together (family-wise error
//     alpha). A recipe whose Holm-adjusted p is ≥ alpha is indistinguishable from the
//     best (the best itself is in that set). The set is defined against one reference,
//     so it is transitive by construction; the rank shown is the order by mean.
//   - The Friedman test over all recipes on the tasks every recipe has (average ranks,
//     mid-ranks for ties; its chi-square statistic and the Iman–Davenport F) and the
//     Nemenyi critical difference CD = q_alpha·√(k(k+1)/(6N)): two recipes whose average
//     ranks differ by less than CD are not distinguishable (the critical-difference
//     diagram). Benavoli et al. (2016, JMLR 17) give a Bayesian variant; this is the
//     frequentist one.
//   - The smallest difference the board can detect at its n (the minimum detectable
//     effect, MDE): for a paired comparison with the best at family-wise alpha under
//     Holm's worst case (Bonferroni over the k−1 comparisons) with power MDEPower,
//     MDE = (z_{1−alpha/(2(k−1))} + z_{MDEPower})·sd(d)/√n, with sd(d) the observed
//     standard deviation of the n paired differences d (normal approximation); +Inf
//     where the exact signed-rank test cannot reject at n at all (its smallest p, 2/2ⁿ,
//     above alpha/(k−1): Detectable).

// RankAlpha is the family-wise error rate of a leaderboard's comparisons with the best
// and of its critical difference.
const RankAlpha = 0.05

// MDEPower is the power at which a ranking states its minimum detectable effect.
const MDEPower = 0.8

// rankBootstrapReps is the paired bootstrap's resamples for a difference's 95% CI.
const rankBootstrapReps = 2000

// Standing is one recipe's place in a Ranking.
type Standing struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"` // mean of its values (lower is better; NaN: none)
	N    int     `json:"n"`    // values that are not NaN
	Rank int     `json:"rank"` // competition rank by mean, 1 = best (a NaN mean ranks last)
	// Pairs are the tasks both it and the best have; OverBest the mean of its value
	// less the best's over them, with the paired bootstrap's 95% CI [Lo, Hi] (NaN with
	// fewer than two pairs); 0 and [0, 0] for the best itself.
	Pairs      int     `json:"pairs"`
	OverBest   float64 `json:"over_best"`
	OverBestLo float64 `json:"over_best_lo"`
	OverBestHi float64 `json:"over_best_hi"`
	P          float64 `json:"p"`                           // two-sided Wilcoxon signed-rank p of the differences (1 for the best)
	PHolm      float64 `json:"p_holm"`                      // Holm-adjusted over the k−1 comparisons with the best
	InBestSet  bool    `json:"indistinguishable_from_best"` // PHolm ≥ alpha (the best itself: true)
	MDE        float64 `json:"mde"`                         // minimum detectable difference from the best (see the file's doc; NaN for the best and with fewer than two pairs)
	AvgRank    float64 `json:"avg_rank"`                    // its Friedman average rank (NaN: not in the Friedman test)
	SDDiff     float64 `json:"sd_diff"`                     // sample standard deviation of its paired differences to the best (NaN for the best)
}

// Friedman is the Friedman test of k recipes over the N tasks every one of them has,
// with the Iman–Davenport F and the Nemenyi critical difference (Demšar 2006).
type Friedman struct {
	K     int     `json:"k"` // recipes in the test (those with some value)
	N     int     `json:"n"` // tasks every one of them has
	ChiSq float64 `json:"chi_sq"`
	P     float64 `json:"p"`   // chi-square with k−1 degrees of freedom
	F     float64 `json:"f"`   // Iman–Davenport: (N−1)χ²/(N(k−1)−χ²)
	FP    float64 `json:"f_p"` // F with k−1 and (k−1)(N−1) degrees of freedom
	CD    float64 `json:"cd"`  // Nemenyi critical difference of average ranks at alpha
	Alpha float64 `json:"alpha"`
}

// Ranking is a leaderboard's statistics: the standings best first, the Friedman test
// and the board's minimum detectable effect.
type Ranking struct {
	Alpha     float64    `json:"alpha"`
	Best      string     `json:"best"`
	Standings []Standing `json:"standings"` // in rank order, best first
	Friedman  Friedman   `json:"friedman"`
	// N is the median over the compared recipes of their pairs with the best, and MDE
	// the median of their MDEs: the board's typical detectable difference.
	N   int     `json:"n"`
	MDE float64 `json:"mde"`
}

// Rank ranks recipes names[i] with values x[i][t] (t indexes the pairing unit, e.g. a
// task; NaN where missing; lower is better) as the file's doc says, the bootstrap CIs
// drawn from seed.
func Rank(names []string, x [][]float64, alpha float64, seed uint64) Ranking {
	k := len(names)
	out := Ranking{Alpha: alpha, MDE: math.NaN()}
	st := make([]Standing, k)
	for i := range k {
		var s float64
		for _, v := range x[i] {
			if !math.IsNaN(v) {
				s += v
				st[i].N++
			}
		}
		st[i] = Standing{Name: names[i], N: st[i].N, Mean: math.NaN(), OverBest: math.NaN(), OverBestLo: math.NaN(), OverBestHi: math.NaN(),
			P: math.NaN(), PHolm: math.NaN(), MDE: math.NaN(), AvgRank: math.NaN(), SDDiff: math.NaN()}
		if st[i].N > 0 {
			st[i].Mean = s / float64(st[i].N)
		}
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return CompareNaNLast(st[a].Mean, st[b].Mean) })
	for r, i := range order {
		st[i].Rank = r + 1
		if r > 0 && CompareNaNLast(st[i].Mean, st[order[r-1]].Mean) == 0 {
			st[i].Rank = st[order[r-1]].Rank
		}
	}
	fr, avg := FriedmanTest(x, alpha)
	out.Friedman = fr
	for i := range k {
		st[i].AvgRank = avg[i]
	}
	if k == 0 || math.IsNaN(st[order[0]].Mean) {
		out.Standings = reorder(st, order)
		return out
	}
	best := order[0]
	out.Best = names[best]
	b := &st[best]
	b.Pairs, b.OverBest, b.OverBestLo, b.OverBestHi, b.P, b.PHolm, b.InBestSet = b.N, 0, 0, 0, 1, 1, true
	rng := prob.NewRand(seed)
	var cmp []int // recipes compared with the best, in rank order
	var ps []float64
	for _, i := range order[1:] {
		s := &st[i]
		d := pairedDiffs(x[i], x[best])
		s.Pairs, s.P = len(d), 1
		if len(d) == 0 {
			continue
		}
		s.OverBest = prob.Mean(d)
		s.P = prob.WilcoxonSignedRank(d).P
		if len(d) > 1 && allFinite(d) {
			s.OverBestLo, s.OverBestHi = prob.BootstrapMeanCI(rng, d, rankBootstrapReps, 0.95)
			s.SDDiff = sampleSD(d)
		}
		cmp, ps = append(cmp, i), append(ps, s.P)
	}
	adj := Holm(ps)
	var mdes []float64
	var ns []float64
	for j, i := range cmp {
		s := &st[i]
		s.PHolm = adj[j]
		s.InBestSet = s.PHolm >= alpha
		s.MDE = MDE(s.SDDiff, s.Pairs, len(cmp), alpha, MDEPower)
		if !math.IsNaN(s.MDE) {
			mdes, ns = append(mdes, s.MDE), append(ns, float64(s.Pairs))
		}
	}
	if len(mdes) > 0 {
		out.MDE, out.N = medianInf(mdes), int(math.Round(prob.Median(ns)))
	}
	out.Standings = reorder(st, order)
	return out
}

// medianInf is the median of xs, +Inf values included (prob.Median interpolates, and
// Inf − Inf is NaN): the mean of the two middle values, +Inf if either is.
func medianInf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	a, b := s[(len(s)-1)/2], s[len(s)/2]
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return math.Inf(1)
	}
	return (a + b) / 2
}

// reorder is st in the order of order.
func reorder(st []Standing, order []int) []Standing {
	out := make([]Standing, len(order))
	for r, i := range order {
		out[r] = st[i]
	}
	return out
}

// pairedDiffs are a[t] − b[t] over the units where both are present.
func pairedDiffs(a, b []float64) []float64 {
	var d []float64
	for t := range min(len(a), len(b)) {
		if !math.IsNaN(a[t]) && !math.IsNaN(b[t]) {
			d = append(d, a[t]-b[t])
		}
	}
	return d
}

func allFinite(xs []float64) bool {
	for _, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// sampleSD is the standard deviation of xs with n−1 in the denominator (NaN for fewer
// than two values).
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := prob.Mean(xs)
	var ss float64
	for _, v := range xs {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// NormalQuantile is the standard normal distribution's p-quantile.
func NormalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// MDE is the minimum detectable effect of a paired two-sided comparison with one
// reference among m such comparisons at family-wise error alpha (Holm's worst case,
// Bonferroni: alpha/m per test) with the given power: (z_{1−alpha/(2m)} + z_power)·sd/√n.
// It is +Inf where the signed-rank test cannot reject at all at n (Detectable: no
// difference, however large, is detected), and NaN for n < 2, m < 1 or a NaN sd.
func MDE(sd float64, n, m int, alpha, power float64) float64 {
	if n < 2 || m < 1 || math.IsNaN(sd) {
		return math.NaN()
	}
	if !Detectable(n, m, alpha) {
		return math.Inf(1)
	}
	return (NormalQuantile(1-alpha/(2*float64(m))) + NormalQuantile(power)) * sd / math.Sqrt(float64(n))
}

// Detectable reports whether the exact two-sided Wilcoxon signed-rank test over n
// untied nonzero differences can reject at alpha/m (one of m comparisons, Bonferroni):
// its smallest p, 2/2ⁿ (every difference of one sign), is at most alpha/m. At 10 tasks
// and 9 comparisons it can (0.00195 ≤ 0.0056); at 9 tasks and 22 it cannot.
func Detectable(n, m int, alpha float64) bool {
	return n >= 1 && m >= 1 && math.Ldexp(2, -n) <= alpha/float64(m)
}

// FriedmanTest is the Friedman test of the recipes x[i] (those with some value) on the
// tasks every one of them has, and each recipe's average rank there (mid-ranks for
// ties; NaN for a recipe left out). With fewer than two recipes or tasks its statistics
// are NaN.
func FriedmanTest(x [][]float64, alpha float64) (Friedman, []float64) {
	avg := make([]float64, len(x))
	var in []int
	for i, xi := range x {
		avg[i] = math.NaN()
		if slices.ContainsFunc(xi, func(v float64) bool { return !math.IsNaN(v) }) {
			in = append(in, i)
		}
	}
	nan := math.NaN()
	f := Friedman{K: len(in), Alpha: alpha, ChiSq: nan, P: nan, F: nan, FP: nan, CD: nan}
	var cols []int
	if len(in) > 0 {
		for t := range len(x[in[0]]) {
			ok := true
			for _, i := range in {
				ok = ok && t < len(x[i]) && !math.IsNaN(x[i][t])
			}
			if ok {
				cols = append(cols, t)
			}
		}
	}
	f.N = len(cols)
	k, n := float64(f.K), float64(f.N)
	if f.K < 2 || f.N < 1 {
		return f, avg
	}
	sums := make([]float64, f.K)
	vals := make([]float64, f.K)
	for _, t := range cols {
		for j, i := range in {
			vals[j] = x[i][t]
		}
		for j, r := range MidRanks(vals) {
			sums[j] += r
		}
	}
	var ss float64
	for j, i := range in {
		avg[i] = sums[j] / n
		ss += avg[i] * avg[i]
	}
	f.CD = CriticalDifference(f.K, f.N, alpha)
	if f.N < 2 {
		return f, avg
	}
	f.ChiSq = 12 * n / (k * (k + 1)) * (ss - k*(k+1)*(k+1)/4)
	f.P = ChiSquareSurvival(f.ChiSq, k-1)
	d1, d2 := k-1, (k-1)*(n-1)
	if den := n*(k-1) - f.ChiSq; den > 1e-12*n*(k-1) {
		f.F = (n - 1) * f.ChiSq / den
		f.FP = FSurvival(f.F, d1, d2)
	} else { // every task ranks the recipes alike: F is infinite
		f.F, f.FP = math.Inf(1), 0
	}
	return f, avg
}

// MidRanks are the ranks of vs (1 = least), tied values sharing the mean of their ranks.
func MidRanks(vs []float64) []float64 {
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return CompareNaNLast(vs[a], vs[b]) })
	out := make([]float64, len(vs))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && vs[idx[j]] == vs[idx[i]] {
			j++
		}
		if j == i { // NaN never equals itself
			j = i + 1
		}
		for _, o := range idx[i:j] {
			out[o] = float64(i+1+j) / 2
		}
		i = j
	}
	return out
}

// CriticalDifference is the Nemenyi critical difference of average ranks of k recipes
// over n tasks at alpha: q_alpha·√(k(k+1)/(6n)), q_alpha = NemenyiQ(k, alpha).
func CriticalDifference(k, n int, alpha float64) float64 {
	if k < 2 || n < 1 {
		return math.NaN()
	}
	return NemenyiQ(k, alpha) * math.Sqrt(float64(k*(k+1))/(6*float64(n)))
}

// NemenyiQ is the Nemenyi test's critical value for k recipes at alpha: the upper
// alpha quantile of the studentized range of k standard normals (infinite degrees of
// freedom) over √2. It is computed, not read from a table: the range's distribution
// function P(R ≤ q) = k∫φ(z)[Φ(z) − Φ(z−q)]^(k−1)dz by Simpson's rule on [−9, 9] (600 steps),
// inverted by bisection; it reproduces Demšar's (2006) Table 5 (alpha 0.05, k = 2..10:
// 1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164) to within 0.001
// (k = 3 computes as 2.3437: the table truncates there).
func NemenyiQ(k int, alpha float64) float64 {
	if k < 2 || !(alpha > 0 && alpha < 1) {
		return math.NaN()
	}
	key := nemenyiKey{k, alpha}
	if q, ok := nemenyiCache.Load(key); ok {
		return q.(float64)
	}
	lo, hi := 0.0, 20.0
	for range 45 {
		mid := (lo + hi) / 2
		if studentizedRangeCDF(mid, k) < 1-alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	q := (lo + hi) / 2 / math.Sqrt2
	nemenyiCache.Store(key, q)
	return q
}

type nemenyiKey struct {
	k     int
	alpha float64
}

// nemenyiCache holds NemenyiQ's values already computed.
var nemenyiCache sync.Map

// studentizedRangeCDF is P(R ≤ q) for the range R of k independent standard normals.
func studentizedRangeCDF(q float64, k int) float64 {
	const a, b, steps = -9.0, 9.0, 600 // steps even
	h := (b - a) / steps
	f := func(z float64) float64 {
		phi := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		return phi * math.Pow(normalCDF(z)-normalCDF(z-q), float64(k-1))
	}
	s := f(a) + f(b)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		s += w * f(a+float64(i)*h)
	}
	return float64(k) * s * h / 3
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// ChiSquareSurvival is P(X ≥ x) for X chi-square with df degrees of freedom
// (gonum's distuv.ChiSquared).
func ChiSquareSurvival(x, df float64) float64 {
	if math.IsNaN(x) || df <= 0 {
		return math.NaN()
	}
	if x <= 0 {
		return 1
	}
	return distuv.ChiSquared{K: df}.Survival(x)
}

// FSurvival is P(X ≥ x) for X F-distributed with d1 and d2 degrees of freedom
// (gonum's distuv.F).
func FSurvival(x, d1, d2 float64) float64 {
	if math.IsNaN(x) || d1 <= 0 || d2 <= 0 {
		return math.NaN()
	}
	if x <= 0 {
		return 1
	}
	if math.IsInf(x, 1) {
		return 0
	}
	return distuv.F{D1: d1, D2: d2}.Survival(x)
}

// CDBars are the bars of a critical-difference diagram: over average ranks sorted
// ascending, the maximal runs [i, j] (indices into avg, j > i) whose first and last
// ranks differ by less than cd, so that every pair within a bar is not distinguishable;
// a run inside another is left out.
func CDBars(avg []float64, cd float64) [][2]int {
	var out [][2]int
	last := -1
	for i := range avg {
		j := i
		for j+1 < len(avg) && avg[j+1]-avg[i] < cd {
			j++
		}
		if j > i && j > last {
			out = append(out, [2]int{i, j})
			last = j
		}
	}
	return out
}

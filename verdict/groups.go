package verdict

import (
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// # Rank groups
//
// A leaderboard ranks recipes by their mean paired value (e.g. the excess joint KL over
// exact jem, lower is better) but claims an order only where the paired data support
// it: every pair of recipes is tested with a two-sided Wilcoxon signed-rank test on
// their paired differences (pairs where either is missing dropped), the p-values of all
// pairs Holm-corrected together (family-wise error GroupAlpha), and recipes share a
// rank while they are not significantly different from every recipe already in the
// rank's group. Ranks are competition ranks (1, 1, 3, …): a recipe's rank is 1 + the
// number of recipes in better groups.

// GroupAlpha is the family-wise error rate of a leaderboard's rank groups.
const GroupAlpha = 0.05

// Ranked is one recipe's place on a leaderboard.
type Ranked struct {
	Name  string
	Mean  float64 // mean of its values (lower is better)
	N     int     // values that are not NaN
	Rank  int     // competition rank of its group
	Group int     // 0-based group index, in rank order
}

// PairTest is the Holm-corrected test of two recipes' paired differences.
type PairTest struct {
	A, B     string
	N        int     // pairs with both values
	MeanDiff float64 // mean of A − B over those pairs
	P        float64 // Wilcoxon two-sided p-value
	PHolm    float64 // Holm-adjusted
}

// Holm returns the Holm step-down adjusted p-values of ps (in their order): the
// i-th smallest p (0-based) times (m − i), made monotone and capped at 1.
func Holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, m)
	run := 0.0
	for r, i := range idx {
		v := math.Min(1, ps[i]*float64(m-r))
		run = math.Max(run, v)
		out[i] = run
	}
	return out
}

// RankGroups ranks recipes names[i] with values x[i][k] (k indexes the pairing unit,
// e.g. a task and run seed; NaN where missing) into groups (see the file's doc) and
// returns them best first, with every pair's test.
func RankGroups(names []string, x [][]float64, alpha float64) ([]Ranked, []PairTest) {
	n := len(names)
	rs := make([]Ranked, n)
	for i := range n {
		var s float64
		for _, v := range x[i] {
			if !math.IsNaN(v) {
				s += v
				rs[i].N++
			}
		}
		rs[i].Name, rs[i].Mean = names[i], s/float64(max(rs[i].N, 1))
		if rs[i].N == 0 {
			rs[i].Mean = math.NaN()
		}
	}
	var tests []PairTest
	pairIdx := map[[2]int]int{}
	for i := range n {
		for j := i + 1; j < n; j++ {
			var d []float64
			for k := range min(len(x[i]), len(x[j])) {
				if a, b := x[i][k], x[j][k]; !math.IsNaN(a) && !math.IsNaN(b) {
					d = append(d, a-b)
				}
			}
			t := PairTest{A: names[i], B: names[j], N: len(d), MeanDiff: prob.Mean(d), P: 1}
			if len(d) > 0 {
				t.P = prob.WilcoxonSignedRank(d).P
			}
			pairIdx[[2]int{i, j}], pairIdx[[2]int{j, i}] = len(tests), len(tests)
			tests = append(tests, t)
		}
	}
	ps := make([]float64, len(tests))
	for i, t := range tests {
		ps[i] = t.P
	}
	for i, p := range Holm(ps) {
		tests[i].PHolm = p
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return CompareNaNLast(rs[a].Mean, rs[b].Mean) })
	differ := func(i, j int) bool { return tests[pairIdx[[2]int{i, j}]].PHolm < alpha }
	group, rank := 0, 1
	for start := 0; start < n; group++ {
		members := []int{order[start]}
		end := start + 1
		for ; end < n; end++ {
			c := order[end]
			ok := !math.IsNaN(rs[c].Mean)
			for _, m := range members {
				ok = ok && !differ(c, m)
			}
			if !ok {
				break
			}
			members = append(members, c)
		}
		for _, m := range members {
			rs[m].Group, rs[m].Rank = group, rank
		}
		rank += len(members)
		start = end
	}
	out := make([]Ranked, n)
	for i, o := range order {
		out[i] = rs[o]
	}
	return out, tests
}

// CompareNaNLast orders numbers ascending with NaN last (a slices.SortFunc comparison).
func CompareNaNLast(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	case math.IsNaN(b):
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rankSamplers sets the rank group of each recipe of a point (cs[i] the comparison of
// pairs[i]): their paired excesses over exact jem aligned by table; references
// (jem-converged) are not ranked.
func rankSamplers(cs []schemas.SamplerComparison, pairs []SamplerPairs) {
	col := map[int64]int{}
	for _, sp := range pairs {
		if len(sp.IDs) != len(sp.Diffs) {
			return // pairs pooled over points: no common tasks to rank on
		}
	}
	for _, sp := range pairs {
		for _, id := range sp.IDs {
			if _, ok := col[id]; !ok {
				col[id] = len(col)
			}
		}
	}
	var names []string
	var xs [][]float64
	for _, sp := range pairs {
		if !methods.IsSampler(sp.Method) {
			continue
		}
		x := make([]float64, len(col))
		for i := range x {
			x[i] = math.NaN()
		}
		for k, id := range sp.IDs {
			x[col[id]] = sp.Diffs[k]
		}
		names, xs = append(names, sp.Method), append(xs, x)
	}
	ranked, _ := RankGroups(names, xs, GroupAlpha)
	for _, r := range ranked {
		for i := range cs {
			if cs[i].Method == r.Name {
				cs[i].Rank = r.Rank
			}
		}
	}
}

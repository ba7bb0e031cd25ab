package verdict

import (
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// Holm, CompareNaNLast and the ranks of a point's recipes in summary.json (see
// ranking.go for the statistics).

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

// rankSamplersSeed is the seed of the paired bootstrap behind a point's differences
// to its best recipe (summary.json is byte-identical across runners).
const rankSamplersSeed = 1

// rankSamplers ranks the recipes of a point (cs[i] the comparison of pairs[i]) on
// their paired excesses over exact jem aligned by table (Rank): the order by mean, the
// difference to the best with its CI, the Holm-adjusted p, the set indistinguishable
// from the best, the Friedman average ranks and the critical difference, and the MDE;
// references (jem-converged) are not ranked.
func rankSamplers(cs []schemas.SamplerComparison, pairs []SamplerPairs) {
	nan := schemas.Number(math.NaN())
	for i := range cs {
		c := &cs[i]
		c.OverBest, c.OverBestLo, c.OverBestHi, c.BestPHolm, c.MDE, c.AvgRank, c.FriedmanP, c.CriticalDifference = nan, nan, nan, nan, nan, nan, nan, nan
	}
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
	rk := Rank(names, xs, RankAlpha, rankSamplersSeed)
	for _, s := range rk.Standings {
		for i := range cs {
			if cs[i].Method != s.Name {
				continue
			}
			c := &cs[i]
			c.Rank, c.InBestSet = s.Rank, s.InBestSet
			c.OverBest, c.OverBestLo, c.OverBestHi = schemas.Number(s.OverBest), schemas.Number(s.OverBestLo), schemas.Number(s.OverBestHi)
			c.BestPHolm, c.MDE, c.AvgRank = schemas.Number(s.PHolm), schemas.Number(s.MDE), schemas.Number(s.AvgRank)
			if math.IsInf(s.MDE, 1) { // no difference detectable at the point's n: null (JSON has no ∞)
				c.MDE = nan
			}
			c.CriticalDifference, c.FriedmanP, c.FriedmanTasks = schemas.Number(rk.Friedman.CD), schemas.Number(rk.Friedman.P), rk.Friedman.N
		}
	}
}

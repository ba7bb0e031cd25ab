package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	jm "github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// samplerDistRow is one method's line of the sampler's-distribution table (2-D
// points): the means over its runs of the short_* and long_* columns (see
// schemas.ResultRow) and of their floors.
type samplerDistRow struct {
	First                                                                   bool
	Span                                                                    int
	PointID                                                                 int64
	Method                                                                  string
	Runs                                                                    int
	ShortTruth, ShortModel, LongTruth, LongModel, Floor, FloorModel, Accept string
	// Closer: the short run is closer to the truth than the long chain (q) on more
	// than half of the tasks ("k of n"; "" without a short run).
	Closer string
}

// samplerDistRows are the table's rows from the result rows: per point and method,
// the runs whose sampler distribution was measured (sampler_tv_floor > 0: a 2-D run of
// a method that trains log q(x), not diverged; older files read 0).
func samplerDistRows(rs []schemas.ResultRow) []samplerDistRow {
	type key struct {
		point  int64
		method string
	}
	groups := map[key][]*schemas.ResultRow{}
	for i := range rs {
		r := &rs[i]
		if r.SamplerTVFloor > 0 && !r.Diverged && !r.Nonfinite {
			k := key{r.PointID, r.Method}
			groups[k] = append(groups[k], r)
		}
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.point, b.point), jm.Compare(a.method, b.method))
	})
	var out []samplerDistRow
	for _, k := range keys {
		g := groups[k]
		mean := func(f func(*schemas.ResultRow) float64) string { return finiteMean(g, f) }
		row := samplerDistRow{PointID: k.point, Method: k.method, Runs: len(g),
			ShortTruth: mean(func(r *schemas.ResultRow) float64 { return r.ShortTVTruth }),
			ShortModel: mean(func(r *schemas.ResultRow) float64 { return r.ShortTVModel }),
			LongTruth:  mean(func(r *schemas.ResultRow) float64 { return r.LongTVTruth }),
			LongModel:  mean(func(r *schemas.ResultRow) float64 { return r.LongTVModel }),
			Floor:      mean(func(r *schemas.ResultRow) float64 { return r.SamplerTVFloor }),
			FloorModel: mean(func(r *schemas.ResultRow) float64 { return r.SamplerTVFloorModel }),
			Accept:     mean(func(r *schemas.ResultRow) float64 { return r.LongAccept })}
		closer, n := 0, 0
		for _, r := range g {
			if !math.IsNaN(r.ShortTVTruth) && !math.IsNaN(r.LongTVTruth) {
				n++
				if r.ShortTVTruth < r.LongTVTruth {
					closer++
				}
			}
		}
		if n > 0 {
			row.Closer = fmt.Sprintf("%d of %d", closer, n)
		}
		out = append(out, row)
	}
	for i := range out {
		if i == 0 || out[i].PointID != out[i-1].PointID {
			span := 0
			for j := i; j < len(out) && out[j].PointID == out[i].PointID; j++ {
				span++
			}
			out[i].First, out[i].Span = true, span
		}
	}
	return out
}

// finiteMean is the mean of f over the rows where it is finite, formatted ("n/a" for
// none).
func finiteMean(g []*schemas.ResultRow, f func(*schemas.ResultRow) float64) string {
	s, n := 0.0, 0
	for _, r := range g {
		if v := f(r); !math.IsNaN(v) && !math.IsInf(v, 0) {
			s += v
			n++
		}
	}
	if n == 0 {
		return "n/a"
	}
	return fmtNA(s / float64(n))
}

package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	jm "github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// zfreeRow is one method's line of the Z-free divergences table: the means over its
// converged runs of fisher_div, fisher_div_cond and log_ratio_sd (schemas.ResultRow),
// and, on a point's first line, how well each ranks the point's runs (all methods)
// against the exact joint KL: Spearman's ρ.
type zfreeRow struct {
	First                         bool
	Span                          int
	PointID                       int64
	Method                        string
	Runs                          int
	Fisher, FisherCond, Spread    string
	RhoFisher, RhoCond, RhoSpread string
}

// zfreeRows are the table's rows from the result rows: the runs with a Z-free
// divergence (2-D and block tasks), not diverged, per point and method.
func zfreeRows(rs []schemas.ResultRow) []zfreeRow {
	type key struct {
		point  int64
		method string
	}
	measured := func(v, se float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && !(v == 0 && se == 0) }
	groups := map[key][]*schemas.ResultRow{}
	byPoint := map[int64][]*schemas.ResultRow{}
	for i := range rs {
		r := &rs[i]
		if r.Diverged || r.Nonfinite || !(measured(r.LogRatioSD, r.LogRatioSDSE) || measured(r.FisherDiv, r.FisherDivSE)) {
			continue
		}
		k := key{r.PointID, r.Method}
		groups[k] = append(groups[k], r)
		byPoint[r.PointID] = append(byPoint[r.PointID], r)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.point, b.point), jm.Compare(a.method, b.method))
	})
	mean := finiteMean
	rho := func(g []*schemas.ResultRow, f func(*schemas.ResultRow) float64) string {
		var kl, v []float64
		for _, r := range g {
			if x := f(r); !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(r.KLJoint) && !math.IsInf(r.KLJoint, 0) {
				kl, v = append(kl, r.KLJoint), append(v, x)
			}
		}
		if len(kl) < 3 {
			return "n/a"
		}
		rh := prob.Spearman(kl, v)
		if math.IsNaN(rh) {
			return "n/a"
		}
		return fmt.Sprintf("%.2f (%d runs)", rh, len(kl))
	}
	fisher := func(r *schemas.ResultRow) float64 { return r.FisherDiv }
	cond := func(r *schemas.ResultRow) float64 { return r.FisherDivCond }
	spread := func(r *schemas.ResultRow) float64 { return r.LogRatioSD }
	var out []zfreeRow
	for _, k := range keys {
		g := groups[k]
		out = append(out, zfreeRow{PointID: k.point, Method: k.method, Runs: len(g),
			Fisher: mean(g, fisher), FisherCond: mean(g, cond), Spread: mean(g, spread)})
	}
	for i := range out {
		if i == 0 || out[i].PointID != out[i-1].PointID {
			span := 0
			for j := i; j < len(out) && out[j].PointID == out[i].PointID; j++ {
				span++
			}
			p := byPoint[out[i].PointID]
			out[i].First, out[i].Span = true, span
			out[i].RhoFisher, out[i].RhoCond, out[i].RhoSpread = rho(p, fisher), rho(p, cond), rho(p, spread)
		}
	}
	return out
}

package render

import (
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestZFreeRows: per point and method the means of the Z-free divergences over the
// converged runs that have them (a diverged run, a run without them and a file's zero
// values left out), and on each point's first line Spearman's ρ of each against the
// exact joint KL over the point's runs; the section renders with them.
func TestZFreeRows(t *testing.T) {
	nan := math.NaN()
	row := func(point int64, method string, kl, fisher, spread float64) schemas.ResultRow {
		return schemas.ResultRow{PointID: point, Method: method, KLJoint: kl, FisherDiv: fisher, FisherDivSE: 0.01,
			FisherDivCond: fisher * 1.1, FisherDivCondSE: 0.01, LogRatioSD: spread, LogRatioSDSE: 0.01}
	}
	rs := []schemas.ResultRow{
		row(0, "jem", 0.1, 1, 0.4), row(0, "jem", 0.2, 2, 0.5), row(0, "baseline", 3, 8, 2), row(0, "baseline", 2, 7, 2.5),
		row(1, "jem", 0.1, nan, 0.3), row(1, "jem", 0.3, nan, 0.6), row(1, "jem", 0.2, nan, 0.5), // block-like: no Fisher
	}
	diverged := row(0, "jem", 9, 100, 9)
	diverged.Diverged = true
	old := schemas.ResultRow{PointID: 0, Method: "jem", KLJoint: 0.5} // a file written before the columns: zeros
	rs = append(rs, diverged, old)
	got := zfreeRows(rs)
	if len(got) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(got), got)
	}
	want := []zfreeRow{
		{First: true, Span: 2, PointID: 0, Method: "baseline", Runs: 2, Fisher: fmtNA(7.5), Spread: fmtNA(2.25), RhoSpread: "0.80 (4 runs)", RhoFisher: "1.00 (4 runs)"},
		{PointID: 0, Method: "jem", Runs: 2, Fisher: fmtNA(1.5), Spread: fmtNA(0.45)},
		{First: true, Span: 1, PointID: 1, Method: "jem", Runs: 3, Fisher: "n/a", Spread: fmtNA(0.4666666666666666), RhoFisher: "n/a", RhoSpread: "1.00 (3 runs)"},
	}
	for i, w := range want {
		g := got[i]
		if g.First != w.First || g.Span != w.Span || g.PointID != w.PointID || g.Method != w.Method || g.Runs != w.Runs ||
			g.Fisher != w.Fisher || g.Spread != w.Spread || g.RhoFisher != w.RhoFisher || g.RhoSpread != w.RhoSpread {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	in := input2D()
	for i := range in.Results {
		r := &in.Results[i]
		r.FisherDiv, r.FisherDivSE, r.LogRatioSD, r.LogRatioSDSE = 2*r.KLJoint+0.1, 0.01, math.Sqrt(2*r.KLJoint), 0.01
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if page := string(out["report.html"]); !strings.Contains(page, `id="zfree"`) || !strings.Contains(page, "1.00 (") {
		t.Error("the report has no Z-free section with its ρ")
	}
}

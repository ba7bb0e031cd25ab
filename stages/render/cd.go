package render

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/jemcheck/jemcheck/verdict"
)

// cdEntry is one recipe on a critical-difference diagram: its Friedman average rank and
// whether it is indistinguishable from the best (drawn filled).
type cdEntry struct {
	name    string
	avgRank float64
	inSet   bool
}

// CDDiagram is the critical-difference diagram of a leaderboard (cdDiagramSVG): names[i]
// with Friedman average rank ranks[i] (NaN: not drawn), inSet[i] whether it is
// indistinguishable from the best; nil without two recipes or a finite cd.
func CDDiagram(title string, names []string, ranks []float64, inSet []bool, cd float64) ([]byte, error) {
	es := make([]cdEntry, len(names))
	for i := range names {
		es[i] = cdEntry{name: names[i], avgRank: ranks[i], inSet: inSet[i]}
	}
	return cdDiagramSVG(title, es, cd)
}

// cdDiagramSVG draws a critical-difference diagram (Demšar 2006): an axis of average
// ranks 1..k (1 = best, on the left), each recipe's average rank marked and labelled
// (labels stacked above the axis, left to right), a bar of length cd at the top for
// scale, and below the axis thick bars joining the recipes whose average ranks differ
// by less than cd (verdict.CDBars: not distinguishable by the Nemenyi test). A recipe
// in the best's set (Holm-corrected comparison with the best) is a filled circle, any
// other an open one. No entries or a non-finite cd: no figure.
func cdDiagramSVG(title string, entries []cdEntry, cd float64) (out []byte, err error) {
	var es []cdEntry
	for _, e := range entries {
		if !math.IsNaN(e.avgRank) {
			es = append(es, e)
		}
	}
	if len(es) < 2 || !(cd > 0) || math.IsInf(cd, 0) {
		return nil, nil
	}
	slices.SortStableFunc(es, func(a, b cdEntry) int { return cmp.Compare(a.avgRank, b.avgRank) })
	k := len(es)
	avg := make([]float64, k)
	for i, e := range es {
		avg[i] = e.avgRank
	}
	bars := verdict.CDBars(avg, cd)
	defer func() { // a figure that cannot be drawn leaves the report without it, never fails the run
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("critical-difference diagram: %v", r)
		}
	}()
	p := newPlot(title, "average rank over the tasks every recipe has (1 = best)", "")
	p.HideY()
	p.Y.Tick.Marker = plot.ConstantTicks(nil)
	p.X.Min, p.X.Max = 0.6, float64(k)+0.4 // room for the marks at the ends
	p.X.Tick.Marker = plot.ConstantTicks(intTicks(k))
	top := float64(k) + 1.5
	p.Y.Min, p.Y.Max = -0.6*float64(len(bars)+1), top+0.8
	axis, err := plotter.NewLine(xys([]float64{1, float64(k)}, []float64{0, 0}))
	if err != nil {
		return nil, fmt.Errorf("critical-difference diagram: %w", err)
	}
	axis.LineStyle = solid(colBlack, 1)
	p.Add(axis)
	// The labels: recipe i (by average rank) at height i+1, joined to its mark.
	for i, e := range es {
		lvl := float64(i + 1)
		lead, err := plotter.NewLine(xys([]float64{e.avgRank, e.avgRank}, []float64{0, lvl}))
		if err != nil {
			return nil, fmt.Errorf("critical-difference diagram: %w", err)
		}
		lead.LineStyle = solid(colTrue, 0.6)
		p.Add(lead)
		mark, err := plotter.NewScatter(xys([]float64{e.avgRank}, []float64{0}))
		if err != nil {
			return nil, fmt.Errorf("critical-difference diagram: %w", err)
		}
		mark.GlyphStyle.Color, mark.GlyphStyle.Radius, mark.GlyphStyle.Shape = colBlack, 3.5, draw.RingGlyph{}
		if e.inSet {
			mark.GlyphStyle.Shape = draw.CircleGlyph{}
		}
		p.Add(mark)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys([]float64{e.avgRank}, []float64{lvl}), Labels: []string{fmt.Sprintf(" %s (%.2f)", e.name, e.avgRank)}})
		if err != nil {
			return nil, fmt.Errorf("critical-difference diagram: %w", err)
		}
		l.TextStyle[0].Font.Size = 9
		l.TextStyle[0].YAlign = draw.YCenter
		if e.avgRank > (1+float64(k))/2 { // labels on the right half read leftwards
			l.TextStyle[0].XAlign = draw.XRight
			l.Labels[0] = fmt.Sprintf("%s (%.2f) ", e.name, e.avgRank)
		}
		p.Add(l)
	}
	// Bars joining recipes not distinguishable: below the axis, one level each.
	for j, b := range bars {
		y := -0.6 * float64(j+1)
		bar, err := plotter.NewLine(xys([]float64{avg[b[0]] - 0.03, avg[b[1]] + 0.03}, []float64{y, y}))
		if err != nil {
			return nil, fmt.Errorf("critical-difference diagram: %w", err)
		}
		bar.LineStyle = solid(color.NRGBA{R: 31, G: 119, B: 180, A: 255}, 3)
		p.Add(bar)
	}
	// The scale: a bar of length CD from rank 1, at the top.
	scale, err := plotter.NewLine(xys([]float64{1, math.Min(1+cd, float64(k))}, []float64{top, top}))
	if err != nil {
		return nil, fmt.Errorf("critical-difference diagram: %w", err)
	}
	scale.LineStyle = solid(colBlack, 1.5)
	p.Add(scale)
	sl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys([]float64{1}, []float64{top + 0.45}), Labels: []string{fmt.Sprintf("CD = %.2f", cd)}})
	if err != nil {
		return nil, fmt.Errorf("critical-difference diagram: %w", err)
	}
	sl.TextStyle[0].Font.Size = 9
	p.Add(sl)
	const w = 520
	h := vg.Length(120 + 18*k + 10*len(bars))
	return toSVG(w, h, func(c draw.Canvas) { p.Draw(c) })
}

// intTicks are labelled ticks at 1..k.
func intTicks(k int) []plot.Tick {
	out := make([]plot.Tick, k)
	for i := range out {
		out[i] = plot.Tick{Value: float64(i + 1), Label: fmt.Sprint(i + 1)}
	}
	return out
}

package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// CostCurve is one entry's cost curve on a leaderboard: its mean excess joint KL over
// exact jem at each of its training checks (over the tasks it ran) against the mean
// gradient evaluations spent by then, and whether it is on the board's frontier.
type CostCurve struct {
	Name     string
	Evals    []float64 // mean gradient evaluations per run at each check, ascending
	Excess   []float64 // mean excess joint KL over exact jem's final (nats) there
	Frontier bool
}

// CostCurves draws a leaderboard's cost curves (the issue's "joint KL against gradient
// evaluations for every method"): one line per entry on a log axis of gradient
// evaluations, its last check marked, the frontier's entries (no other recipe has both
// less excess and fewer evaluations) drawn thick and their final points joined by a
// dashed line, exact jem's excess 0 as the reference. The y axis is linear (an excess
// can be negative), clipped to the entries' final values widened by their span below
// and twice it above, so that the early checks of a slow recipe do not flatten the
// rest. nil without a curve of two checks.
func CostCurves(title string, curves []CostCurve) (out []byte, err error) {
	var cs []CostCurve
	var names []string
	for _, c := range curves {
		if n := len(c.Evals); n >= 2 && n == len(c.Excess) {
			cs = append(cs, c)
			names = append(names, c.Name)
		}
	}
	if len(cs) == 0 {
		return nil, nil
	}
	defer func() { // a figure that cannot be drawn is left out, never fails the board
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("cost curves: %v", r)
		}
	}()
	lo, hi := 0.0, 0.0
	for _, c := range cs {
		v := c.Excess[len(c.Excess)-1]
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	span := max(hi-lo, 1e-3)
	ylo, yhi := lo-span, hi+2*span
	p := newPlot(title, "gradient evaluations per run (mean, log scale)", "excess joint KL over exact JEM (nats)")
	logAxis(&p.X)
	p.Y.Min, p.Y.Max = ylo, yhi
	var legend []legendEntry
	var fx, fy []float64
	for _, c := range cs {
		var xs, ys []float64
		for i, x := range c.Evals {
			y := c.Excess[i]
			if !(x > 0) || math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			xs, ys = append(xs, x), append(ys, min(max(y, ylo), yhi))
		}
		if len(xs) < 2 {
			continue
		}
		col := methodColor(names, c.Name)
		w := vg.Length(1.2)
		if c.Frontier {
			w = 2.6
			fx, fy = append(fx, xs[len(xs)-1]), append(fy, ys[len(ys)-1])
		}
		l, err := plotter.NewLine(xys(xs, ys))
		if err != nil {
			return nil, err
		}
		l.LineStyle = solid(col, w)
		end, err := plotter.NewScatter(xys(xs[len(xs)-1:], ys[len(ys)-1:]))
		if err != nil {
			return nil, err
		}
		end.GlyphStyle = draw.GlyphStyle{Color: col, Radius: 3.5, Shape: methodGlyph(names, c.Name)}
		p.Add(l, end)
		name := c.Name
		if c.Frontier {
			name += " ◆"
		}
		legend = append(legend, legendEntry{name, []plot.Thumbnailer{l, end}})
	}
	if len(fx) >= 2 {
		pts := xys(fx, fy)
		slices.SortFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		f, err := plotter.NewLine(pts)
		if err == nil {
			f.LineStyle = dashed(colBlack, 1)
			p.Add(f)
		}
	}
	p.Add(&refLine{at: 0, LineStyle: dashed(colGrid, 1)})
	return toSVG(760, 420, func(c draw.Canvas) { p.Draw(withLegend(c, 150, legend)) })
}

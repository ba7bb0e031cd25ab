package render

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LadderLine is one entry of a leaderboard's dimension ladder: its mean excess joint
// KL over exact jem at each dimension of the family, with the 95% CI (NaN where it did
// not run).
type LadderLine struct {
	Name           string
	Excess, Lo, Hi []float64 // per dimension, in the ladder's order
}

// LadderBoard draws a family's dimension ladder on a leaderboard: each entry's excess
// over exact jem against D (log-2 axis), one line a recipe with its 95% CIs as error
// bars (each recipe's marks shifted slightly along D so that the bars do not hide one
// another), exact jem's 0 as the reference. nil without two dimensions and a line with
// two finite points.
func LadderBoard(title string, dims []int, lines []LadderLine) (out []byte, err error) {
	if len(dims) < 2 {
		return nil, nil
	}
	var names []string
	for _, l := range lines {
		names = append(names, l.Name)
	}
	defer func() { // a figure that cannot be drawn is left out, never fails the board
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("ladder: %v", r)
		}
	}()
	p := newPlot(title, "dimension D (log scale)", "excess joint KL over exact JEM (nats)")
	logAxis(&p.X)
	var legend []legendEntry
	drawn := 0
	for i, l := range lines {
		shift := math.Pow(2, 0.06*(float64(i)-float64(len(lines)-1)/2)) // a sixteenth of an octave apart
		var pts plotter.XYs
		var errs plotter.YErrors
		for j, d := range dims {
			if j >= len(l.Excess) || math.IsNaN(l.Excess[j]) || math.IsInf(l.Excess[j], 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(d) * shift, Y: l.Excess[j]})
			lo, hi := l.Excess[j]-l.Lo[j], l.Hi[j]-l.Excess[j]
			if math.IsNaN(lo) || math.IsNaN(hi) {
				lo, hi = 0, 0
			}
			errs = append(errs, struct{ Low, High float64 }{max(lo, 0), max(hi, 0)})
		}
		if len(pts) < 2 {
			continue
		}
		drawn++
		col := methodColor(names, l.Name)
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		ln.LineStyle = solid(col, 1.4)
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: 3, Shape: methodGlyph(names, l.Name)}
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs})
		if err != nil {
			return nil, err
		}
		eb.LineStyle = solid(col, 1)
		eb.CapWidth = vg.Points(4)
		p.Add(ln, sc, eb)
		legend = append(legend, legendEntry{l.Name, []plot.Thumbnailer{ln, sc}})
	}
	if drawn == 0 {
		return nil, nil
	}
	p.Add(&refLine{at: 0, LineStyle: dashed(colGrid, 1)})
	return toSVG(760, 440, func(c draw.Canvas) { p.Draw(withLegend(c, 150, legend)) })
}

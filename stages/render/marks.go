package render

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/jemcheck/jemcheck/schemas"
)

// The figures that carry the verdict mark it: ✓ where every grid point drawn there
// holds, ✗ where every one fails, "undecided" where none is decided, ✓k/n when k of n
// hold (with "?u" when u of them are undecided); a heat map cell's outline is green,
// red or amber (undecided or mixed) the same way. Undecided is never marked as a pass.
const (
	markPass      = "✓"
	markFail      = "✗"
	markUndecided = "undecided"
)

var (
	colPass      = color.NRGBA{R: 0x1e, G: 0x8e, B: 0x3e, A: 255}
	colFail      = color.NRGBA{R: 0xc5, G: 0x22, B: 0x1f, A: 255}
	colUndecided = color.NRGBA{R: 0xb0, G: 0x60, B: 0x00, A: 255}
)

// verdictMarkLegend is the legend line of a sweep figure's marks.
const verdictMarkLegend = markPass + " holds / " + markFail + " fails at the points"

// verdictMarkCaption is the caption's sentence on the marks of a figure whose units
// (a cell, a value of an axis) pool grid points.
func verdictMarkCaption(unit string, outlines bool) string {
	out := fmt.Sprintf("%s marks a %s where the claim holds at every grid point drawn there, %s one where it fails at every one, "+
		"%s one where no point is decided (too few tables), %sk/n one where it holds at k of n (?u: u of them undecided)",
		markPass, unit, markFail, markUndecided, markPass)
	if outlines {
		return out + "; the cell's outline is green, red or amber (undecided or mixed) alike."
	}
	return out + " (green, red, amber)."
}

// verdictTally counts the verdicts of the grid points pooled in one mark.
type verdictTally struct{ holds, fails, undecided int }

func (t *verdictTally) add(v schemas.Verdict) {
	switch {
	case v.Holds:
		t.holds++
	case v.Decided:
		t.fails++
	default:
		t.undecided++
	}
}

func (t verdictTally) total() int { return t.holds + t.fails + t.undecided }

// mark is the tally's glyph, "" when it counts no point.
func (t verdictTally) mark() string {
	switch n := t.total(); {
	case n == 0:
		return ""
	case t.holds == n:
		return markPass
	case t.fails == n:
		return markFail
	case t.undecided == n:
		return markUndecided
	case t.undecided > 0:
		return fmt.Sprintf("%s%d/%d ?%d", markPass, t.holds, n, t.undecided)
	default:
		return fmt.Sprintf("%s%d/%d", markPass, t.holds, n)
	}
}

// colour is the mark's colour, nil when it counts no point.
func (t verdictTally) colour() color.Color {
	switch n := t.total(); {
	case n == 0:
		return nil
	case t.holds == n:
		return colPass
	case t.fails == n:
		return colFail
	}
	return colUndecided
}

// sweepMarks labels each value of the axis (index ai, nv values) with the verdicts of
// the points drawn there, above the data (mm grows to make room); nil when no point
// has a verdict.
func (d *data) sweepMarks(ai, nv int, xAt func(int) float64, mm *minMax) (*plotter.Labels, error) {
	tally := make([]verdictTally, nv)
	for _, p := range d.points {
		if p.vals == nil {
			continue
		}
		if v, ok := d.verdicts[p.id]; ok {
			tally[p.vals[ai]].add(v)
		}
	}
	top := mm.hi
	var xyl plotter.XYLabels
	var cols []color.Color
	for i, t := range tally {
		if t.total() == 0 {
			continue
		}
		xyl.XYs = append(xyl.XYs, plotter.XY{X: xAt(i), Y: top * 2.2})
		xyl.Labels = append(xyl.Labels, t.mark())
		cols = append(cols, t.colour())
	}
	if len(cols) == 0 {
		return nil, nil
	}
	mm.add(top * 4)
	l, err := plotter.NewLabels(xyl)
	if err != nil {
		return nil, err
	}
	for k := range l.TextStyle {
		sty := &l.TextStyle[k]
		sty.Font.Size = 13
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		sty.Color = cols[k]
	}
	return l, nil
}

// cellOutlines draws each heat map cell's outline in its verdict's colour (none for a
// nil colour).
type cellOutlines struct {
	cols, rows int
	colour     func(k int) color.Color // k = col*rows + row
}

func (o *cellOutlines) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for col := range o.cols {
		for row := range o.rows {
			clr := o.colour(col*o.rows + row)
			if clr == nil {
				continue
			}
			x0, x1 := trX(float64(col)-0.5), trX(float64(col)+0.5)
			y0, y1 := trY(float64(row)-0.5), trY(float64(row)+0.5)
			in := vg.Points(2)
			var p vg.Path
			p.Move(vg.Point{X: x0 + in, Y: y0 + in})
			p.Line(vg.Point{X: x1 - in, Y: y0 + in})
			p.Line(vg.Point{X: x1 - in, Y: y1 - in})
			p.Line(vg.Point{X: x0 + in, Y: y1 - in})
			p.Close()
			c.SetLineStyle(draw.LineStyle{Color: clr, Width: vg.Points(2.5)})
			c.Stroke(p)
		}
	}
}

// verdictBar is one row of the verdict figure: a deciding check's value and CI over its
// limit (the margin), with the check's own numbers as the checks table prints them.
type verdictBar struct {
	Label            string
	Value, Lo, Hi    float64 // over the limit
	Text             string  // "value [CI]" as in the checks table
	Limit            string  // as in the checks table
	Pass             bool
	PointID          int64
	Check            string
	ValueStr, CIText string
}

// verdictBars are the verdict figure's rows: on one grid point every deciding check;
// on several, each point's deciding check nearest to failing (the highest CI upper end
// over its limit).
func verdictBars(pts []schemas.PointSummary) []verdictBar {
	var out []verdictBar
	for _, ps := range pts {
		var rows []verdictBar
		for _, c := range ps.Verdict.Checks {
			lim := float64(c.Limit)
			if !c.Deciding || c.Name == checkBaselineVsJEM || !(lim > 0) || math.IsInf(lim, 0) {
				continue
			}
			value, ci, limit := fmtCheck(c)
			rows = append(rows, verdictBar{Label: checkLabel(c.Name), Value: float64(c.Value) / lim, Lo: float64(c.CILow) / lim,
				Hi: float64(c.CIHigh) / lim, Text: value + " " + ci, Limit: limit, Pass: c.Pass, PointID: ps.PointID, Check: c.Name,
				ValueStr: value, CIText: ci})
		}
		if len(pts) == 1 {
			out = append(out, rows...)
			continue
		}
		worst := -1
		for i, r := range rows {
			if worst < 0 || nanLow(r.Hi) > nanLow(rows[worst].Hi) {
				worst = i
			}
		}
		if worst >= 0 {
			r := rows[worst]
			r.Label = fmt.Sprintf("point %d: %s", ps.PointID, r.Label)
			out = append(out, r)
		}
	}
	return out
}

func nanLow(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(-1)
	}
	return v
}

// checkLabel is a check's short name for the figure.
func checkLabel(name string) string {
	switch name {
	case "optimisation_gap":
		return "JEM optimisation gap"
	case "marginal_gap":
		return "q(x) optimisation gap"
	case "approximation":
		return "approximation error"
	}
	if m, ok := strings.CutPrefix(name, "sampler_excess_"); ok {
		return m + " excess KL"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// verdictFigure draws the verdict figure, inline SVG: one row per bar, the CI as a band
// and the value as a dot on a log axis of value / limit, the margin (limit) as a red
// line at 1, and ✓ or ✗ with the check's value and CI at the right. "" without bars.
func verdictFigure(bars []verdictBar) template.HTML {
	if len(bars) == 0 {
		return ""
	}
	const (
		plotW, rowH, top = 480.0, 24.0, 30.0
		lmin, lmax       = -3.0, 3.0 // log10 of value / limit
		fontSize         = 13.0      // the figure's font-size
	)
	// The label areas are as wide as their longest text (at least 270 and 250 units),
	// so that no label runs off the figure: a check's numbers in nats
	// ("0.00994 nats [0.00817 nats, 0.0117 nats]") are long.
	left, right := 270.0, 250.0
	for _, r := range bars {
		left = max(left, 10+svgTextWidth(r.Label, fontSize)+8)
		right = max(right, 12+fontSize+svgTextWidth(r.Text, fontSize)+8) // the mark ✓/✗ and a space: one em
	}
	w := left + plotW + right
	h := top + rowH*float64(len(bars)) + 34
	x := func(r float64) float64 {
		l := lmin
		if r > 0 {
			l = math.Max(lmin, math.Min(lmax, math.Log10(r)))
		}
		return left + (l-lmin)/(lmax-lmin)*(w-left-right)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="verdict-figure" viewBox="0 0 %g %g" width="100%%" role="img" aria-label="verdict checks against the margin" xmlns="http://www.w3.org/2000/svg" font-family="Helvetica, Arial, sans-serif" font-size="13">`, w, h)
	for _, e := range []float64{-3, -2, -1, 0, 1, 2, 3} {
		xx := x(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#e3e3e3"/>`, xx, top-8, xx, h-30)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" fill="#555" font-size="11">%s</text>`, xx, h-16, tickLabel(e))
	}
	mx := x(1)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#c5221f" stroke-width="2" stroke-dasharray="6 3"/>`, mx, top-14, mx, h-30)
	fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" fill="#c5221f" font-size="12">margin (limit %s)</text>`, mx, top-18, template.HTMLEscapeString(bars[0].Limit))
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="#555" font-size="11">value ÷ limit (log scale; pass: the CI's upper end left of the margin)</text>`, left+(w-left-right)/2, h-3)
	for i, r := range bars {
		y := top + rowH*float64(i) + rowH/2
		col := "#c5221f"
		mark := markFail
		if r.Pass {
			col, mark = "#1e8e3e", markPass
		}
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, left-10, y, template.HTMLEscapeString(r.Label))
		if !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) {
			x0, x1 := x(r.Lo), x(r.Hi)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="10" fill="%s" fill-opacity="0.3" stroke="%s" stroke-opacity="0.6"/>`, x0, y-5, math.Max(1, x1-x0), col, col)
		}
		if !math.IsNaN(r.Value) {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s"/>`, x(r.Value), y, col)
		}
		fmt.Fprintf(&b, `<text class="check-value" data-point="%d" data-check="%s" x="%g" y="%.1f" dominant-baseline="middle" fill="%s">%s %s</text>`,
			r.PointID, template.HTMLEscapeString(r.Check), w-right+12, y, col, mark, template.HTMLEscapeString(r.Text))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// svgTextWidth is the width of s at size units in Liberation Sans, metric-compatible
// with Helvetica and Arial, the fonts the inline figures name.
func svgTextWidth(s string, size float64) float64 {
	sty := draw.TextStyle{Font: font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, vg.Length(size)), Handler: plot.DefaultTextHandler}
	return float64(sty.Width(s))
}

func tickLabel(e float64) string {
	switch e {
	case 0:
		return "1× (limit)"
	case -1, -2, -3:
		return fmt.Sprintf("%g×", math.Pow(10, e))
	}
	return fmt.Sprintf("%g×", math.Pow(10, e))
}

// verdictCaption explains the verdict figure from the same bars it draws.
func verdictCaption(bars []verdictBar, points int) string {
	if len(bars) == 0 {
		return ""
	}
	pass := 0
	for _, b := range bars {
		if b.Pass {
			pass++
		}
	}
	what := fmt.Sprintf("Each deciding check of the verdict (%d of %d pass)", pass, len(bars))
	if points > 1 {
		what = fmt.Sprintf("Each grid point's deciding check nearest to its limit (the claim holds at %d of %d points)", pass, len(bars))
	}
	return what + ": the dot is the check's value, the band its 95% CI, both over the check's limit on a log axis; " +
		"the dashed red line is the margin. A check passes (" + markPass + ") when its CI's upper end is within the margin, and fails (" + markFail +
		") otherwise; the numbers at the right are those of the verdict-checks table. Values beyond 1000× or below 0.001× of the limit (or negative) are drawn at the edge."
}

// leadFigure picks the one figure that answers first: a sweep's first heat map, else
// its first KL-against-axis figure; on 2-D tasks the first task's truth against the
// methods; else the distribution of the joint KL. It is taken out of its list.
func leadFigure(general, twoD []figure) (*figure, []figure, []figure) {
	take := func(list []figure, prefix string) (*figure, []figure, bool) {
		for i, f := range list {
			if strings.HasPrefix(f.Name, prefix) {
				return &f, append(slices.Clone(list[:i]), list[i+1:]...), true
			}
		}
		return nil, list, false
	}
	for _, prefix := range []string{figHeatmapPrefix, figSweepPrefix} {
		if f, rest, ok := take(general, prefix); ok {
			return f, rest, twoD
		}
	}
	if f, rest, ok := take(twoD, figTask2DPrefix); ok {
		return f, general, rest
	}
	if f, rest, ok := take(general, FigKLDist); ok {
		return f, rest, twoD
	}
	return nil, general, twoD
}

// tableOfContents lists the sections the report shows, in page order.
func tableOfContents(v *reportView) []tocEntry {
	var out []tocEntry
	add := func(ok bool, id, title string) {
		if ok {
			out = append(out, tocEntry{id, title})
		}
	}
	add(v.VerdictFig != "" || v.Lead != nil, "answer", "the answer")
	add(len(v.Samplers) > 0, "samplers", "sampler vs exact JEM")
	add(len(v.Kinds) > 0 || len(v.Methods) > 0, "what-ran", "what ran")
	add(true, "checks", "verdict checks")
	add(true, "figures", "figures")
	add(v.Show2D, "tasks2d", "2-D tasks")
	add(!v.NoSplit, "split", "error split")
	add(true, "summary", "summary table")
	add(len(v.PromiseRows) > 0, "promises", "OOD and calibration")
	add(len(v.RobustRows) > 0, "robust", "2-D robustness")
	add(len(v.SamplerDist) > 0, "samplerdist", "sampler's distribution")
	add(!v.NoExact, "paired", "JEM vs baseline")
	add(len(v.Leaderboard) > 0, "leaderboard", "leaderboard")
	add(len(v.Ladder) > 0 || len(v.LadderBounds) > 0, "ladder", "dimension ladder")
	add(len(v.Warnings) > 0, "warnings", "warnings")
	add(true, "configuration", "configuration")
	return out
}

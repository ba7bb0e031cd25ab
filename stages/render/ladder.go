package render

import (
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"reflect"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// The dimension ladder: the points of one task family (schemas.PointSummary's
// LadderFamily, from its task kind) at several dimensions D, and how each approximate
// method's excess joint KL over exact JEM grows with D.

// ladderFamily is one rung of the ladder: a family's points at two or more dimensions
// (and equal values of the other axes), its figure and its table.
type ladderFamily struct {
	Name   string        // the family, with the other axes' values where the family's points differ in them
	Dims   string        // the dimensions present, "2, 4, 8"
	Figure template.HTML // inline SVG; "" when nothing can be drawn
	Rows   []ladderRow
}

// rungCell is the dimension cell of a rung's table row: the first row of each
// dimension carries it, over Span rows.
type rungCell struct {
	First bool
	Span  int
	D     int
}

func (c *rungCell) cell() *rungCell { return c }

// markSpans marks the first row of each dimension of a rung's table (rows in
// dimension order) and the rows it spans.
func markSpans[R any, P interface {
	*R
	cell() *rungCell
}](rows []R) {
	for i := range rows {
		c := P(&rows[i]).cell()
		if i == 0 || c.D != P(&rows[i-1]).cell().D {
			c.First = true
			for j := i; j < len(rows) && P(&rows[j]).cell().D == c.D; j++ {
				c.Span++
			}
		}
	}
}

// rungSorted are a rung's points by dimension (then point id) and the dimensions
// present, "2, 4, 8".
func rungSorted(r ladderRung) ([]schemas.PointSummary, string) {
	pts := slices.Clone(r.points)
	slices.SortStableFunc(pts, func(a, b schemas.PointSummary) int {
		return cmp.Or(cmp.Compare(a.Dimension, b.Dimension), cmp.Compare(a.PointID, b.PointID))
	})
	var dims []string
	for _, ps := range pts {
		if d := fmt.Sprint(ps.Dimension); len(dims) == 0 || dims[len(dims)-1] != d {
			dims = append(dims, d)
		}
	}
	return pts, strings.Join(dims, ", ")
}

// ladderRow is one method at one dimension of a family.
type ladderRow struct {
	rungCell
	PointID int64
	Method  string
	Options string
	Excess  string // "excess [lo, hi]"
	Marg    string
	Acc     string // "accuracy (Bayes)"
	AUROC   string // "log q(x) (true p(x))"
	CPU     string
}

// ladderLine is one method (with its options) across a family's dimensions: one
// measure of it (a figure may draw several lines of one method and options: the same
// colour and glyph, dashed where dashed is set).
type ladderLine struct {
	method, options string
	label           string // the legend's: the method and the options in which its lines differ
	dashed          bool
	pts             []ladderPoint
}

// ladderPoint is a line's point at one dimension: its value with a 95% CI, and the
// figure's dashed reference at that dimension (NaN for none).
type ladderPoint struct {
	d      float64
	v      float64
	lo, hi float64
	ref    float64
}

// ladderRung gathers a family's points (one panel) before they become a ladderFamily.
type ladderRung struct {
	name   string
	points []schemas.PointSummary
}

// ladderExclude are the axes a family's points may differ in without splitting it: the
// task (its dimension), what the kind derives from it (the values of x, the classes),
// and the methods' own options (lines of one panel).
func ladderExclude(key string) bool {
	return key == "task" || key == "x_values" || key == "classes" || len(methods.Using(key)) > 0
}

// ladderRungs groups the summary's points that keep keeps by family and, within one, by
// the values of the other axes they differ in (ladderExclude aside); only the rungs with
// points at minDims or more dimensions are kept, in the order their families first
// appear.
//
// The excess ladder keeps the points with an exact joint KL (keep: hasExactKL) at two
// or more dimensions; the bounds rung (ladderbounds.go) those without, from one.
func ladderRungs(s schemas.Summary, keep func(schemas.PointSummary) bool, minDims int) []ladderRung {
	var families []string
	byFamily := map[string][]schemas.PointSummary{}
	for _, ps := range s.Points {
		if ps.LadderFamily == "" || ps.Dimension <= 0 || !keep(ps) {
			continue
		}
		if _, ok := byFamily[ps.LadderFamily]; !ok {
			families = append(families, ps.LadderFamily)
		}
		byFamily[ps.LadderFamily] = append(byFamily[ps.LadderFamily], ps)
	}
	var out []ladderRung
	for _, f := range families {
		pts := byFamily[f]
		var differ []string
		for _, a := range schemas.AxisDefs {
			if k := a.Key(); !ladderExclude(k) && slices.ContainsFunc(pts, func(ps schemas.PointSummary) bool {
				return fmt.Sprint(a.Field.Get(&ps.Params)) != fmt.Sprint(a.Field.Get(&pts[0].Params))
			}) {
				differ = append(differ, k)
			}
		}
		var names []string
		byName := map[string][]schemas.PointSummary{}
		for _, ps := range pts {
			name := f
			if len(differ) > 0 {
				name += "; " + schemas.Settings(ps.Params, differ)
			}
			if _, ok := byName[name]; !ok {
				names = append(names, name)
			}
			byName[name] = append(byName[name], ps)
		}
		for _, n := range names {
			dims := map[int]bool{}
			for _, ps := range byName[n] {
				dims[ps.Dimension] = true
			}
			if len(dims) >= minDims {
				out = append(out, ladderRung{name: n, points: byName[n]})
			}
		}
	}
	return out
}

// hasExactKL: some method of the point has a finite joint KL (or an excess over exact
// JEM): the excess ladder has something to show of it. A point whose every joint KL is
// NaN (no exact JEM: the model's Z is unknown) is on the bounds rung instead.
func hasExactKL(ps schemas.PointSummary) bool {
	return len(ps.Samplers) > 0 || slices.ContainsFunc(ps.Methods, func(m schemas.MethodSummary) bool {
		return m.KLJoint.Count > 0 || m.KLJoint.Infinite > 0
	})
}

// ladderMethods are the methods the ladder's figures colour: the results' methods, and
// the summary's (a report from summary.json alone), in the report's order.
func ladderMethods(s schemas.Summary, ms []string) []string {
	ms = slices.Clone(ms)
	for _, ps := range s.Points {
		for _, m := range ps.Methods {
			if !slices.Contains(ms, m.Method) {
				ms = append(ms, m.Method)
			}
		}
	}
	sortMethods(ms)
	return ms
}

// excessAxes are the excess ladder's figure's words.
var excessAxes = ladderAxes{ylabel: "excess joint KL over exact JEM (nats)", none: "no excess", ref: "exact JEM's joint KL"}

// ladderFamilies are the ladder section's rungs (none when no family has points at two
// or more dimensions), with the figures that could not be drawn as warnings.
func ladderFamilies(s schemas.Summary, ms []string) ([]ladderFamily, []string) {
	ms = ladderMethods(s, ms)
	var out []ladderFamily
	var warnings []string
	for _, r := range ladderRungs(s, hasExactKL, 2) {
		f, lines := ladderOf(r)
		svg, err := ladderSVG(f.Name, excessAxes, lines, ms)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the dimension ladder's figure of %s could not be drawn: %v", f.Name, err))
		}
		f.Figure = svg
		out = append(out, f)
	}
	return out, warnings
}

// ladderOf is a rung's table and its figure's lines: per dimension (ascending) every
// method that ran, once per method and options (points that differ only in another
// method's options repeat the same runs: the first is kept).
func ladderOf(r ladderRung) (ladderFamily, []*ladderLine) {
	pts, dims := rungSorted(r)
	f := ladderFamily{Name: r.name, Dims: dims}
	var lines []*ladderLine
	seen := map[string]bool{}
	for _, ps := range pts {
		jem := math.NaN()
		for _, m := range ps.Methods {
			if m.Method == methods.Yardstick() {
				jem = meanOf(m.KLJoint)
			}
		}
		for _, m := range ps.Methods {
			opts := ladderOptions(ps.Params, m.Method)
			key := fmt.Sprint(ps.Dimension, "\x00", m.Method, "\x00", opts)
			if seen[key] {
				continue
			}
			seen[key] = true
			row := ladderRow{rungCell: rungCell{D: ps.Dimension}, PointID: ps.PointID, Method: m.Method, Options: opts, Excess: "—", Marg: "—",
				Acc:   fmtSig(meanOf(m.Accuracy), 3) + " (" + fmtSig(meanOf(m.BayesAccuracy), 3) + ")",
				AUROC: fmtSig(meanOf(m.AUROCPx), 3) + " (" + fmtSig(meanOf(m.AUROCTruePx), 3) + ")",
				CPU:   "—"}
			if m.TrainMS.Count > 0 && m.TrainMS.Mean > 0 {
				row.CPU = fmtSig(m.TrainMS.Mean, 3)
			}
			if m.Method == methods.Yardstick() {
				row.Excess, row.Marg = "0 (reference)", "0"
			}
			for _, c := range ps.Samplers {
				if c.Method != m.Method {
					continue
				}
				row.Excess = fmtSig(c.Excess, 3) + " " + fmtRange(c.ExcessCILow, c.ExcessCIHigh, func(v float64) string { return fmtSig(v, 3) })
				row.Marg = fmtSig(c.MarginalExcess, 3)
				i := slices.IndexFunc(lines, func(l *ladderLine) bool { return l.method == m.Method && l.options == opts })
				if i < 0 {
					lines = append(lines, &ladderLine{method: m.Method, options: opts})
					i = len(lines) - 1
				}
				lines[i].pts = append(lines[i].pts, ladderPoint{d: float64(ps.Dimension), v: c.Excess,
					lo: c.ExcessCILow, hi: c.ExcessCIHigh, ref: jem})
			}
			f.Rows = append(f.Rows, row)
		}
	}
	markSpans(f.Rows)
	labelLines(r.points, lines)
	return f, lines
}

// labelLines names each line by its method and, where a method has several lines, the
// options in which they differ ("pcd proposal=gwg").
func labelLines(points []schemas.PointSummary, lines []*ladderLine) {
	params := map[string]schemas.Grid{} // a point of each line, for its options' values
	for _, ps := range points {
		for _, l := range lines {
			if _, ok := params[l.method+"\x00"+l.options]; !ok && ladderOptions(ps.Params, l.method) == l.options {
				params[l.method+"\x00"+l.options] = ps.Params
			}
		}
	}
	for _, l := range lines {
		l.label = l.method
		m, ok := methods.Lookup(l.method)
		if !ok {
			continue
		}
		var differ []string
		for _, k := range m.Options {
			a, ok := schemas.AxisByKey(k)
			if !ok {
				continue
			}
			g := params[l.method+"\x00"+l.options]
			for _, o := range lines {
				h := params[o.method+"\x00"+o.options]
				if o.method == l.method && fmt.Sprint(a.Field.Get(&g)) != fmt.Sprint(a.Field.Get(&h)) {
					differ = append(differ, k)
					break
				}
			}
		}
		if len(differ) > 0 {
			l.label += " " + schemas.Settings(params[l.method+"\x00"+l.options], differ)
		}
	}
}

// ladderOptions are a method's options set at a point (Resolve zeroes those that do
// not apply: exact jem's training grid on a binary task), "—" for none.
func ladderOptions(g schemas.Grid, method string) string {
	m, ok := methods.Lookup(method)
	if !ok {
		return "—"
	}
	var keys []string
	for _, k := range m.Options {
		if a, ok := schemas.AxisByKey(k); ok && !reflect.ValueOf(a.Field.Get(&g)).IsZero() {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "—"
	}
	return schemas.Settings(g, keys)
}

// meanOf is a distribution's mean, NaN when it has no finite value.
func meanOf(d schemas.Dist) float64 {
	if d.Count == 0 {
		return math.NaN()
	}
	return d.Mean
}

// dimTicks mark the dimensions present on the ladder's log2-spaced x axis.
type dimTicks []float64

func (t dimTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, d := range t {
		if d >= lo && d <= hi {
			out = append(out, plot.Tick{Value: d, Label: fmtNum(d)})
		}
	}
	return out
}

// shade darkens c by f ∈ [0, 1): the second and later lines of one method.
func shade(c color.NRGBA, f float64) color.NRGBA {
	return color.NRGBA{R: uint8(float64(c.R) * (1 - f)), G: uint8(float64(c.G) * (1 - f)), B: uint8(float64(c.B) * (1 - f)), A: c.A}
}

// hollowGlyphs are methodGlyphs' partners, outline for filled and back: a dashed line's
// points, beside the solid line of the same method and options.
var hollowGlyphs = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{}}

// ladderAxes are what a ladder figure says: its y label, the legend's word for a line
// with nothing to draw, and the label of the dashed reference line drawn through the
// points' ref values ("" for none).
type ladderAxes struct {
	ylabel, none, ref string
}

// ladderSVG is a rung's figure: each line's value (95% CI whiskers) against D, both on
// log axes, with the points' reference dashed (the excess ladder: each line's excess
// joint KL over exact JEM, exact JEM's own mean joint KL the reference). Lines of one
// method and options share a colour and glyph (hollow on a dashed line) and a place
// beside D. A value at or below 0 (the method at
// least as good as exact JEM; a lower bound at or below 0), and a CI end there, is
// drawn on the bottom edge. "" with no error when there is nothing positive to draw; a
// figure that cannot be drawn is an error, never a panic.
func ladderSVG(title string, ax ladderAxes, lines []*ladderLine, ms []string) (out template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("ladder: %v", r)
		}
	}()
	mm := newMinMax()
	var dims []float64
	ref := map[float64]float64{}
	for _, l := range lines {
		for _, p := range l.pts {
			mm.add(p.v, p.lo, p.hi, p.ref)
			if !slices.Contains(dims, p.d) {
				dims = append(dims, p.d)
			}
			if _, ok := ref[p.d]; !ok && finite(p.ref) && p.ref > 0 {
				ref[p.d] = p.ref
			}
		}
	}
	if !mm.ok() || len(dims) == 0 {
		return "", nil
	}
	slices.Sort(dims)
	// The y label is drawn beside the plot (leftLabel), not by gonum/plot: on a log
	// axis it reserves the label's room about the linear midpoint of the range, near the
	// top, and squeezes the data area.
	p := newPlot(title, "dimension D", "")
	p.BackgroundColor = nil // toSVG's is white
	logAxis(&p.Y)
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = dimTicks(dims)
	p.X.Min, p.X.Max = dims[0]/1.25, dims[len(dims)-1]*1.25
	p.Y.Min, p.Y.Max = logRange(mm.lo, mm.hi, 0.08)
	clamp := func(v float64) float64 {
		switch {
		case math.IsNaN(v) || v <= p.Y.Min:
			return p.Y.Min
		case v > p.Y.Max:
			return p.Y.Max
		}
		return v
	}

	var legend []legendEntry
	variant := map[string]int{}
	var groups []string // a line's method and options: its colour and glyph
	for _, l := range lines {
		if g := l.method + "\x00" + l.options; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	cols := map[string]color.NRGBA{}
	for _, l := range lines {
		g := l.method + "\x00" + l.options
		col, ok := cols[g]
		if !ok {
			col = methodColor(ms, l.method)
			if v := variant[l.method]; v > 0 {
				col = shade(col, math.Min(0.6, 0.3*float64(v)))
			}
			variant[l.method]++
			cols[g] = col
		}
		i := slices.Index(groups, g)
		dodge := math.Exp2(0.04 * (float64(i) - float64(len(groups)-1)/2)) // the methods' whiskers side by side about D
		style := solid
		if l.dashed {
			style = dashed
		}
		var pts plotter.XYs
		for _, q := range l.pts {
			if math.IsNaN(q.v) {
				continue
			}
			x := q.d * dodge
			pts = append(pts, plotter.XY{X: x, Y: clamp(q.v)})
			if !math.IsNaN(q.lo) && !math.IsNaN(q.hi) {
				ci, err := plotter.NewLine(xys([]float64{x, x}, []float64{clamp(q.lo), clamp(q.hi)}))
				if err == nil {
					ci.LineStyle = solid(col, 1)
					p.Add(ci)
				}
			}
		}
		if len(pts) == 0 {
			legend = append(legend, legendEntry{l.label + ": " + ax.none, nil})
			continue
		}
		line, scatter, err := plotter.NewLinePoints(pts)
		if err != nil {
			continue
		}
		line.LineStyle = style(col, 1.6)
		scatter.GlyphStyle.Color, scatter.GlyphStyle.Radius = col, 3.5
		scatter.GlyphStyle.Shape = methodGlyphs[i%len(methodGlyphs)]
		if l.dashed {
			scatter.GlyphStyle.Shape = hollowGlyphs[i%len(hollowGlyphs)]
		}
		p.Add(line, scatter)
		legend = append(legend, legendEntry{l.label, []plot.Thumbnailer{line, scatter}})
	}
	var refs plotter.XYs
	for _, d := range dims {
		if v, ok := ref[d]; ok {
			refs = append(refs, plotter.XY{X: d, Y: clamp(v)})
		}
	}
	if len(refs) > 0 && ax.ref != "" {
		l, err := plotter.NewLine(refs)
		if err == nil {
			l.LineStyle = dashed(methodColor(ms, methods.Yardstick()), 1.4)
			p.Add(l)
			legend = append(legend, legendEntry{ax.ref, []plot.Thumbnailer{l}})
		}
	}
	svg, err := toSVG(7.5*vg.Inch, 3.8*vg.Inch, func(c draw.Canvas) {
		p.Draw(leftLabel(withLegend(c, legendWidth, legend), p.X.Label.TextStyle, ax.ylabel))
	})
	if err != nil {
		return "", err
	}
	return template.HTML(svg), nil //nolint:gosec // our own SVG
}

// leftLabel writes label up the left edge of c, centred, and returns the area right of
// it (for a plot without a background: gonum/plot's would paint over the label).
func leftLabel(c draw.Canvas, sty text.Style, label string) draw.Canvas {
	h := sty.Height(label)
	sty.Rotation += math.Pi / 2
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	c.FillText(sty, vg.Point{X: c.Min.X + 2, Y: c.Center().Y}, label) // the glyphs' top at the anchor, rotated: right of it
	return draw.Crop(c, h+6, 0, 0, 0)
}

var _ = template.Must(reportTemplate.New("ladder").Parse(`{{if .Ladder}}<h2>Dimension ladder: how the excess over exact JEM grows with D</h2>
<p>Per task family (its points at several dimensions D of x, the other axes equal), each approximate method's mean excess joint KL(p‖q) over exact JEM on the same tasks, with its 95% CI over the tasks, against D.
The figure draws both on log axes, with exact JEM's own mean joint KL dashed for scale: an excess at or below 0 (the method as good as exact JEM), or a CI reaching it, is drawn on the bottom edge.
The table adds q(x)'s part of the excess, the method's accuracy beside the Bayes classifier's, the OOD AUROC of log q(x) beside the true p(x)'s (the ceiling), and its CPU milliseconds of training per run (--timings; — without).</p>
{{range .Ladder}}<h3>{{.Name}} <span class="meta">(D = {{.Dims}})</span></h3>
{{if .Figure}}<figure class="ladder">{{.Figure}}<figcaption><strong>Excess joint KL over exact JEM against D, {{.Name}}.</strong> One line per method and options (bar: 95% CI); dashed: exact JEM's mean joint KL.</figcaption></figure>
{{end}}<div class="scroll"><table>
<thead><tr><th class="key">D</th><th class="l">method</th><th class="l">options</th><th>excess joint KL over exact JEM (nats) [95% CI]</th><th>of which q(x)</th><th>accuracy (Bayes)</th><th>OOD AUROC log q(x) (true p(x))</th><th>CPU ms per run</th></tr></thead>
<tbody>
{{range .Rows}}<tr>{{if .First}}<td class="key" rowspan="{{.Span}}">{{.D}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td class="params">{{.Options}}</td><td>{{.Excess}}</td><td>{{.Marg}}</td><td>{{.Acc}}</td><td>{{.AUROC}}</td><td>{{.CPU}}</td></tr>
{{end}}</tbody>
</table></div>
{{end}}{{end}}`))

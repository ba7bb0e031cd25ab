package render

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Task2D is one 2-D task on its evaluation grid: cell c = i·G + j (x0 = −Box + (i+½)h the slow axis, x1 = −Box + (j+½)h, h = 2·Box/G), class y at index c·K + y.
type Task2D struct {
	PointID, TaskID, Ordinal int64
	Task                     string // e.g. "gmm:3,2", "moons:0.1"
	G                        int
	Box                      float64
	K                        int
	True                     []float64            // p on the grid, G·G·K, sums to 1
	Learned                  map[string][]float64 // method → q on the grid, same layout, sums to 1
	Buffers                  map[string][]float32 // method → final replay buffer, (x0, x1) pairs
	// Frames are each method's long-run Langevin chains of its q(x) from uniform noise,
	// (x0, x1) pairs, at FrameSteps (the samples promise).
	Frames     map[string][][]float32
	FrameSteps []int
}

// Curve is one run's exact KL on the grid against training step.
type Curve struct {
	PointID, TaskID                    int64
	Method                             string
	Steps                              []int
	KLJoint, KLMarginal, KLConditional []float64
}

// Figure names of the 2-D tasks: task2d_p<point>_t<ordinal> per Task2D and
// curves_p<point> per 2-D point with curves.
const (
	figTask2DPrefix = "task2d_"
	figCurvesPrefix = "curves_"
	maxBufferDots   = 2000 // buffer samples drawn per panel (every k-th)
	saturateAt      = 1.5  // the colour scale tops out at this multiple of the true density's maximum
)

// contourMasses are the shares of probability mass the contour lines enclose (highest
// density regions): the first drawn solid, the second dashed.
var contourMasses = [2]float64{0.5, 0.9}

// classColours colour the class-wise contours of the truth panel (light on viridis).
var classColours = []color.NRGBA{
	{R: 255, G: 70, B: 70, A: 255},
	{R: 255, G: 255, B: 255, A: 255},
	{R: 255, G: 165, B: 0, A: 255},
	{R: 255, G: 105, B: 230, A: 255},
	{R: 0, G: 220, B: 255, A: 255},
	{R: 30, G: 30, B: 30, A: 255},
}

// colOverlay draws the true p(x) contours over the learned panels.
var colOverlay = color.NRGBA{R: 235, G: 235, B: 235, A: 230}

// plan2D plans the figures of the 2-D tasks: the task figures in the order of
// in.Tasks2D, then the curves per point in point order.
func (d *data) plan2D(in Input) []plannedFigure {
	var plan []plannedFigure
	var runs map[runKey]*schemas.ResultRow // built on the first draw
	order := pointMethods(in.Summary)
	samples := samplesNames(in.Tasks2D)
	for i, name := range task2DNames(in.Tasks2D) {
		t := &in.Tasks2D[i]
		title := fmt.Sprintf("Task %d (%s, point %d): true and learned p(x) on the %d×%d grid", t.TaskID, t.Task, t.PointID, t.G, t.G)
		plan = append(plan, plannedFigure{name, title, func() ([]byte, string, error) {
			if runs == nil {
				runs = runIndex(in.Results)
			}
			return d.task2DFigure(t, order[t.PointID], runs)
		}})
		if len(t.Frames) > 0 {
			title := fmt.Sprintf("Task %d (%s, point %d): samples of each method's q(x) over the true p(x), chains by step", t.TaskID, t.Task, t.PointID)
			plan = append(plan, plannedFigure{samples[i], title, func() ([]byte, string, error) {
				return d.samplesFigure(t, order[t.PointID])
			}})
		}
	}
	groups := curveGroups(in.Curves)
	for i, name := range curveNames(groups) {
		g := groups[i]
		title := fmt.Sprintf("Point %d: exact KL on the grid against training step", g.point)
		plan = append(plan, plannedFigure{name, title, func() ([]byte, string, error) {
			return d.curvesFigure(g, order[g.point])
		}})
	}
	return plan
}

// task2DNames names the task figures task2d_p<point>_t<ordinal>, deduplicated like
// tripleNames.
func task2DNames(ts []Task2D) []string {
	return pointOrdinalNames(figTask2DPrefix, len(ts), func(i int) (int64, int64) { return ts[i].PointID, ts[i].Ordinal })
}

// pointMethods is each point's method order in the summary (the first entry of an id wins).
func pointMethods(s schemas.Summary) map[int64][]string {
	out := map[int64][]string{}
	for _, ps := range s.Points {
		if _, dup := out[ps.PointID]; dup {
			continue
		}
		ms := []string{}
		for _, m := range ps.Methods {
			ms = append(ms, m.Method)
		}
		out[ps.PointID] = ms
	}
	return out
}

// orderMethods orders ms: those of the point's summary order first, in it, then the
// rest as sortMethods does.
func orderMethods(ms, order []string) []string {
	var first, rest []string
	for _, m := range order {
		if slices.Contains(ms, m) && !slices.Contains(first, m) {
			first = append(first, m)
		}
	}
	for _, m := range ms {
		if !slices.Contains(first, m) {
			rest = append(rest, m)
		}
	}
	sortMethods(rest)
	return append(first, rest...)
}

// colourSet is the method list methodColor reads the colours of extra methods from:
// d.methods and the methods ms, sorted.
func (d *data) colourSet(ms []string) []string {
	set := slices.Clone(d.methods)
	for _, m := range ms {
		if !slices.Contains(set, m) {
			set = append(set, m)
		}
	}
	sortMethods(set)
	return set
}

type runKey struct {
	point, table int64
	method       string
}

// runIndex is the result row of each (point, table, method); of repeats the one with
// the least run id.
func runIndex(rs []schemas.ResultRow) map[runKey]*schemas.ResultRow {
	out := map[runKey]*schemas.ResultRow{}
	for i := range rs {
		r := &rs[i]
		k := runKey{r.PointID, r.TableID, r.Method}
		if o, ok := out[k]; !ok || r.RunID < o.RunID {
			out[k] = r
		}
	}
	return out
}

// density2D is Σ_y v[c·K+y] / h² per cell: a grid joint's marginal as a density per
// unit area; NaN where a class's value is not finite or negative.
func density2D(v []float64, g, k int, h float64) []float64 {
	out := make([]float64, g*g)
	for c := range out {
		s := 0.0
		for y := 0; y < k; y++ {
			x := v[c*k+y]
			if !finite(x) || x < 0 {
				s = math.NaN()
				break
			}
			s += x
		}
		out[c] = s / (h * h)
	}
	return out
}

// classDensity is the density of class y alone, v[c·K+y] / h² per cell.
func classDensity(v []float64, g, k, y int, h float64) []float64 {
	out := make([]float64, g*g)
	for c := range out {
		out[c] = v[c*k+y] / (h * h)
	}
	return out
}

// maxFinite is the largest finite value of vs (NaN when none is).
func maxFinite(vs []float64) float64 {
	top := math.NaN()
	for _, v := range vs {
		if finite(v) && !(v <= top) {
			top = v
		}
	}
	return top
}

// massLevel is the density level whose highest density region holds the share frac of
// the mass of dens (the cells at or above it); NaN when dens has no positive mass.
func massLevel(dens []float64, frac float64) float64 {
	vs := make([]float64, 0, len(dens))
	total := 0.0
	for _, v := range dens {
		if finite(v) && v > 0 {
			vs = append(vs, v)
			total += v
		}
	}
	if total <= 0 {
		return math.NaN()
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(vs)))
	acc := 0.0
	for _, v := range vs {
		acc += v
		if acc >= frac*total {
			return v
		}
	}
	return vs[len(vs)-1]
}

// densityGrid is a G×G grid of values (cell i·G + j, see Task2D) over [−box, box]² as
// a gonum GridXYZ.
func densityGrid(dens []float64, g int, box float64) cellGrid {
	h := 2 * box / float64(g)
	return cellGrid{cols: g, rows: g, z: dens, x0: -box, dx: h, y0: -box, dy: h}
}

// densityHeatMap is the G×G density over [−box, box]² as a rasterised viridis heat map
// over [0, top] (NaN grey, above top the top colour), each cell drawn as a block of
// pixels so that it stays sharp when scaled.
func densityHeatMap(dens []float64, g int, box, top float64) *plotter.HeatMap {
	hm := heatMap(densityGrid(dens, g, box).upsample(max(1, 240/g)), viridis(0, top))
	hm.Rasterized = true
	return hm
}

// densityPanel is a panel of a 2-D figure over the box [−box, box]², titled title in
// font size size, drawing the plotters (a density heat map first). The heat map's
// cells keep a gap to the axes (gonum pads the data area by its glyph boxes), so the
// axes add none.
func densityPanel(title string, size font.Length, box float64, plotters ...plot.Plotter) *plot.Plot {
	p := newPlot(title, "x₀", "x₁")
	p.Title.TextStyle.Font.Size = size
	p.Add(plotters...)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -box, box, -box, box
	p.X.Padding, p.Y.Padding = 0, 0
	return p
}

// massContours are the contours of the G×G density over [−box, box]² around its highest
// density regions holding the shares contourMasses of its mass (contourPolylines): the
// first in style first, the others in style rest. A density without mass has none.
// (gonum's plotter.Contour is not used: its loop excision allocates without bound on
// some grids, e.g. a two-component task read from --tasks_from at G = 20.)
func massContours(dens []float64, g int, box float64, first, rest draw.LineStyle) []plot.Plotter {
	var out []plot.Plotter
	for k, frac := range contourMasses {
		level := massLevel(dens, frac)
		if !finite(level) {
			continue
		}
		style := rest
		if k == 0 {
			style = first
		}
		out = append(out, &contourLines{lines: contourPolylines(dens, g, box, level), style: style})
	}
	return out
}

// contourKey is a contour line's legend key: the line on a dark patch, as it shows on
// the heat map.
type contourKey struct{ draw.LineStyle }

func (k contourKey) Thumbnail(c *draw.Canvas) {
	darkPatch(c)
	y := c.Center().Y
	c.StrokeLine2(k.LineStyle, c.Min.X, y, c.Max.X, y)
}

// darkPatch fills a legend key with the dark end of viridis.
func darkPatch(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(viridisStops[1], pts)
}

// dots fills a small square at each point inside the data area, all in one path.
type dots struct {
	pts  []plotter.XY
	size vg.Length
	fill color.Color
}

func (d *dots) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var path vg.Path
	r := d.size / 2
	for _, pt := range d.pts {
		q := vg.Point{X: trX(pt.X), Y: trY(pt.Y)}
		if !c.Contains(q) {
			continue
		}
		path.Move(vg.Point{X: q.X - r, Y: q.Y - r})
		path.Line(vg.Point{X: q.X + r, Y: q.Y - r})
		path.Line(vg.Point{X: q.X + r, Y: q.Y + r})
		path.Line(vg.Point{X: q.X - r, Y: q.Y + r})
		path.Close()
	}
	if len(path) == 0 {
		return
	}
	c.SetColor(d.fill)
	c.Fill(path)
}

func (d *dots) Thumbnail(c *draw.Canvas) {
	darkPatch(c)
	w := c.Max.X - c.Min.X
	y := c.Center().Y
	r := d.size
	for k := 1; k <= 3; k++ {
		x := c.Min.X + w*vg.Length(k)/4
		c.FillPolygon(d.fill, []vg.Point{{X: x - r, Y: y - r}, {X: x + r, Y: y - r}, {X: x + r, Y: y + r}, {X: x - r, Y: y + r}})
	}
}

// bufferDots are the finite (x0, x1) pairs of a buffer, every k-th of them so that at
// most maxBufferDots remain, and how many of all the pairs lie outside the box.
func bufferDots(buf []float32, box float64) (pts []plotter.XY, total, outside int) {
	n := len(buf) / 2
	stride := max(1, (n+maxBufferDots-1)/maxBufferDots)
	for k := 0; k < n; k++ {
		x, y := float64(buf[2*k]), float64(buf[2*k+1])
		if !finite(x) || !finite(y) {
			outside++
			total++
			continue
		}
		total++
		if math.Abs(x) > box || math.Abs(y) > box {
			outside++
		}
		if k%stride == 0 {
			pts = append(pts, plotter.XY{X: x, Y: y})
		}
	}
	return pts, total, outside
}

// panel2D is one panel of a task figure.
type panel2D struct {
	title string
	dens  []float64
	adds  []plot.Plotter
}

// task2DFigure: the true p(x) with its class-wise contours, then each method's q(x)
// with the true p(x) contours and its replay buffer, on one colour scale.
func (d *data) task2DFigure(t *Task2D, order []string, runs map[runKey]*schemas.ResultRow) ([]byte, string, error) {
	G, K := t.G, t.K
	if G < 2 || K <= 0 || !(t.Box > 0) || !finite(t.Box) || len(t.True) != G*G*K {
		return nil, "", fmt.Errorf("task %d: G=%d K=%d box=%s with %d true cells", t.TaskID, G, K, fmtNum(t.Box), len(t.True))
	}
	h := 2 * t.Box / float64(G)
	truth := density2D(t.True, G, K, h)
	truthTop := maxFinite(truth)
	if !(truthTop > 0) {
		return nil, "", fmt.Errorf("task %d: the true density has no positive cell", t.TaskID)
	}
	var ms, skipped []string
	for m, q := range t.Learned {
		if len(q) == G*G*K {
			ms = append(ms, m)
		} else {
			skipped = append(skipped, m)
		}
	}
	ms = orderMethods(ms, order)
	sortMethods(skipped)
	colours := d.colourSet(ms)

	// The true p(x) contours, for the learned panels.
	overlay := massContours(truth, G, t.Box, solid(colOverlay, 0.7), dashed(colOverlay, 0.7))

	// The truth panel: p(x) with each class's contours.
	var legend []legendEntry
	tp := panel2D{title: "truth p(x)", dens: truth}
	for y := 0; y < K; y++ {
		col := classColours[y%len(classColours)]
		first := solid(col, 1.4)
		tp.adds = append(tp.adds, massContours(classDensity(t.True, G, K, y, h), G, t.Box, first, dashed(col, 1))...)
		if K <= 8 {
			legend = append(legend, legendEntry{fmt.Sprintf("class %d: p(x, y=%d)", y, y), []plot.Thumbnailer{contourKey{first}}})
		}
	}
	panels := []panel2D{tp}
	if len(ms) > 0 {
		legend = append(legend, legendEntry{"true p(x), on q(x)", []plot.Thumbnailer{contourKey{solid(colOverlay, 0.7)}}})
	}

	top := truthTop
	saturated := 0
	var kls, bufNotes []string
	for _, m := range ms {
		dens := density2D(t.Learned[m], G, K, h)
		if mx := maxFinite(dens); mx > saturateAt*truthTop {
			saturated++
			top = saturateAt * truthTop
		} else if mx > top {
			top = mx
		}
		title := m + " q(x)"
		if r := runs[runKey{t.PointID, t.TaskID, m}]; r != nil {
			switch {
			case r.Diverged:
				title += ", diverged"
				kls = append(kls, m+" diverged")
			case finite(r.KLJoint):
				title += ", KL " + fmtKL(r.KLJoint)
				kls = append(kls, m+" "+fmtKL(r.KLJoint))
			}
		}
		p := panel2D{title: title, dens: dens, adds: slices.Clone(overlay)}
		if buf := t.Buffers[m]; len(buf) >= 2 {
			pts, total, outside := bufferDots(buf, t.Box)
			dt := &dots{pts: pts, size: vg.Points(1.2), fill: withAlpha(methodColor(colours, m), 170)}
			p.adds = append(p.adds, dt)
			legend = append(legend, legendEntry{m + " buffer", []plot.Thumbnailer{dt}})
			note := fmt.Sprintf("%s: %d of its %d buffer samples drawn", m, len(pts), total)
			if len(pts) < total {
				note += fmt.Sprintf(" (one in every %d)", max(1, (total+maxBufferDots-1)/maxBufferDots))
			}
			if outside > 0 {
				note += fmt.Sprintf("; %d lie outside the box (or are not finite) and do not show", outside)
			}
			bufNotes = append(bufNotes, note)
		}
		panels = append(panels, p)
	}

	svg, err := drawPanels2D(t, panels, top, legend)
	return svg, task2DCaption(t, ms, skipped, kls, bufNotes, saturated), err
}

// panels2DPerRow is the most panels a row of a 2-D task figure holds.
const panels2DPerRow = 3

// drawPanels2D lays the panels out in rows of at most panels2DPerRow, with the colour
// bar and legend on the right of the first.
func drawPanels2D(t *Task2D, panels []panel2D, top float64, legend []legendEntry) ([]byte, error) {
	var plots []*plot.Plot
	for _, pn := range panels {
		plots = append(plots, densityPanel(pn.title, 11, t.Box, append([]plot.Plotter{densityHeatMap(pn.dens, t.G, t.Box, top)}, pn.adds...)...))
	}
	cb := colourBar(viridis(0, top), "density per unit area")

	// At most panels2DPerRow panels a row: the figure stays narrow enough to be shown
	// at its own size in a 1280 px window, so its text is legible (≥ 11 px).
	pw, ph, right := 3.1*vg.Inch, 3.45*vg.Inch, 2.2*vg.Inch
	cols := min(panels2DPerRow, len(plots))
	rows := (len(plots) + cols - 1) / cols
	w := pw*vg.Length(cols) + right
	return toSVG(w, ph*vg.Length(rows)+0.25*vg.Inch, func(c draw.Canvas) {
		c = figureTitle(c, fmt.Sprintf("Task %d (%s), point %d  (%d×%d grid over [−%s, %s]²)", t.TaskID, t.Task, t.PointID, t.G, t.G, fmtNum(t.Box), fmtNum(t.Box)))
		rh := c.Size().Y / vg.Length(rows)
		for k, p := range plots {
			col, row := vg.Length(k%cols), vg.Length(k/cols)
			p.Draw(draw.Crop(c, pw*col, -(w - pw*(col+1)), c.Size().Y-rh*(row+1), -rh*row))
		}
		rc := draw.Crop(c, w-right, 0, c.Size().Y-rh, 0) // beside the first row
		half := rc.Size().Y * 0.5
		cb.Draw(draw.Crop(rc, 0.15*vg.Inch, -(right - 0.95*vg.Inch), half+0.1*vg.Inch, -0.1*vg.Inch))
		legendBox(draw.Crop(rc, 0.05*vg.Inch, 0, 0, -half), legend)
	})
}

// task2DCaption describes a task figure.
func task2DCaption(t *Task2D, ms, skipped, kls, bufNotes []string, saturated int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %d (%s) at grid point %d, on its %d×%d evaluation grid over [−%s, %s]². "+
		"The first panel is the true density p(x), the sum of p(x, y) over the classes, with the contours of each class's density p(x, y) "+
		"(solid: the region of highest density holding %s of the class's mass; dashed: %s)",
		t.TaskID, t.Task, t.PointID, t.G, t.G, fmtNum(t.Box), fmtNum(t.Box), pct100(contourMasses[0]), pct100(contourMasses[1]))
	if len(ms) == 0 {
		b.WriteString("; no method's learned joint was sent.")
	} else {
		fmt.Fprintf(&b, "; the others are each method's learned q(x) (the sum over y of exp f(x)[y] / Z) on the same colour scale, "+
			"with the true p(x)'s %s and %s contours in thin light lines for comparison, and a sampler's final replay buffer in small dots. "+
			"The baseline fits p(y|x) only, so its q(x) is arbitrary; JEM's should reproduce the truth.", pct100(contourMasses[0]), pct100(contourMasses[1]))
	}
	if len(kls) > 0 {
		fmt.Fprintf(&b, " Joint KL(p‖q) on the grid: %s.", strings.Join(kls, ", "))
	}
	if len(bufNotes) > 0 {
		fmt.Fprintf(&b, " Buffers: %s.", strings.Join(bufNotes, "; "))
	}
	if saturated > 0 {
		fmt.Fprintf(&b, " The colour scale tops out at %s× the true density's maximum: %d learned panel(s) exceed it and are drawn at the top colour there.", fmtNum(saturateAt), saturated)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, " Learned joints of the wrong size were left out: %s.", strings.Join(skipped, ", "))
	}
	return b.String()
}

// pct100 writes a share as a whole percentage: 0.5 → "50%".
func pct100(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

// curveGroup is the curves of one point.
type curveGroup struct {
	point  int64
	curves []*Curve
}

// curveGroups groups the curves by point, in point order, keeping the points with a
// finite joint KL at some step.
func curveGroups(cs []Curve) []curveGroup {
	byPoint := map[int64][]*Curve{}
	for i := range cs {
		c := &cs[i]
		byPoint[c.PointID] = append(byPoint[c.PointID], c)
	}
	var out []curveGroup
	for p, g := range byPoint {
		ok := slices.ContainsFunc(g, func(c *Curve) bool {
			return slices.ContainsFunc(c.KLJoint[:min(len(c.KLJoint), len(c.Steps))], finite)
		})
		if ok {
			out = append(out, curveGroup{point: p, curves: g})
		}
	}
	slices.SortFunc(out, func(a, b curveGroup) int { return cmp.Compare(a.point, b.point) })
	return out
}

// curveNames names the curve figures curves_p<point>, with the group's index appended
// when a name repeats (a negative point id is written without its sign).
func curveNames(gs []curveGroup) []string {
	seen := map[string]bool{}
	names := make([]string, len(gs))
	for i, g := range gs {
		name := fmt.Sprintf("%sp%d", figCurvesPrefix, absID(g.point))
		if seen[name] {
			name = fmt.Sprintf("%s_%d", name, i)
		}
		seen[name] = true
		names[i] = name
	}
	return names
}

// stepSeries is a method's curves summarised per training step.
type stepSeries struct {
	xs, med, p10, p90 []float64
	clamped           int // values ≤ klEpsilon, drawn at it
}

// stepQuantiles summarises the curves' values (pick) per step: median, p10 and p90
// of the finite ones, those ≤ klEpsilon raised to it.
func stepQuantiles(cs []*Curve, pick func(*Curve) []float64) stepSeries {
	at := map[int][]float64{}
	var s stepSeries
	for _, c := range cs {
		vs := pick(c)
		for i := 0; i < min(len(vs), len(c.Steps)); i++ {
			v := vs[i]
			if !finite(v) {
				continue
			}
			if v <= klEpsilon {
				v = klEpsilon
				s.clamped++
			}
			at[c.Steps[i]] = append(at[c.Steps[i]], v)
		}
	}
	steps := make([]int, 0, len(at))
	for st := range at {
		steps = append(steps, st)
	}
	slices.Sort(steps)
	for _, st := range steps {
		ds := describe(at[st])
		s.xs = append(s.xs, float64(st))
		s.med, s.p10, s.p90 = append(s.med, ds.median), append(s.p10, ds.p10), append(s.p90, ds.p90)
	}
	return s
}

// curvesFigure: each method's exact joint KL (and, when there are any, marginal KL)
// against training step at a point: the median over its curves with a p10–p90 band.
func (d *data) curvesFigure(g curveGroup, order []string) ([]byte, string, error) {
	var ms []string
	runs := map[string]int{}
	for _, c := range g.curves {
		if runs[c.Method] == 0 {
			ms = append(ms, c.Method)
		}
		runs[c.Method]++
	}
	ms = orderMethods(ms, order)
	colours := d.colourSet(ms)
	joint := func(c *Curve) []float64 { return c.KLJoint }
	marg := func(c *Curve) []float64 { return c.KLMarginal }

	var legend []legendEntry
	clamped := map[string]int{}
	panel := func(title, ylabel string, pick func(*Curve) []float64, withLegend bool) (*plot.Plot, error) {
		p := newPlot(title, "training step", ylabel)
		logAxis(&p.Y)
		mm, xs := newMinMax(), minMax{math.Inf(1), math.Inf(-1)}
		for _, m := range ms {
			var cs []*Curve
			for _, c := range g.curves {
				if c.Method == m {
					cs = append(cs, c)
				}
			}
			s := stepQuantiles(cs, pick)
			clamped[m] += s.clamped
			if len(s.xs) == 0 {
				continue
			}
			col := methodColor(colours, m)
			b := &band{xs: s.xs, lo: s.p10, hi: s.p90, fill: withAlpha(col, 40)}
			l, sc, err := plotter.NewLinePoints(xys(s.xs, s.med))
			if err != nil {
				return nil, err
			}
			l.LineStyle = solid(col, 1.8)
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}}
			p.Add(b, l, sc)
			mm.add(s.med...)
			mm.add(s.p10...)
			mm.add(s.p90...)
			xs.lo, xs.hi = math.Min(xs.lo, s.xs[0]), math.Max(xs.hi, s.xs[len(s.xs)-1])
			if withLegend {
				legend = append(legend, legendEntry{fmt.Sprintf("%s median (%d runs)", m, runs[m]), []plot.Thumbnailer{l, sc}},
					legendEntry{"  " + m + " p10–p90", []plot.Thumbnailer{b}})
			}
		}
		if !mm.ok() {
			return nil, nil
		}
		p.Y.Min, p.Y.Max = logRange(mm.lo, mm.hi, 0.05)
		pad := math.Max(0.5, (xs.hi-xs.lo)*0.03)
		p.X.Min, p.X.Max = xs.lo-pad, xs.hi+pad
		return p, nil
	}
	pj, err := panel("(a) joint KL(p‖q)", "KL  [nats, log scale]", joint, true)
	if err != nil || pj == nil {
		return nil, "", err
	}
	pm, err := panel("(b) marginal KL(p(x)‖q(x))", "KL  [nats, log scale]", marg, false)
	if err != nil {
		return nil, "", err
	}
	w := 8.5 * vg.Inch
	if pm != nil {
		w = 13 * vg.Inch
	}
	svg, err := toSVG(w, 4.6*vg.Inch, func(c draw.Canvas) {
		body := withLegend(c, legendWidth, legend)
		if pm == nil {
			pj.Draw(body)
			return
		}
		half := body.Size().X / 2
		pj.Draw(draw.Crop(body, 0, -half-6, 0, 0))
		pm.Draw(draw.Crop(body, half+6, 0, 0, 0))
	})
	panels := "the joint KL(p‖q)"
	if pm != nil {
		panels = "(a) the joint KL(p‖q) and (b) the KL of the marginal p(x) against q(x)"
	}
	caption := fmt.Sprintf("Exact KL on the evaluation grid against training step at grid point %d: %s, on log axes, for the runs of the first tasks of the point. "+
		"The line is each method's median over its runs at each evaluated step, the shaded band their 10th–90th percentile. "+
		"A sampler (sgld) approximates exact JEM's gradient of log Z, so its curve should approach JEM's; a gap that stays is the sampler's excess.%s",
		g.point, panels, clampNote(ms, clamped, "are drawn at "+fmtNum(klEpsilon)))
	return svg, caption, err
}

// markFloorless counts the points without a floor (the 2-D tasks have none) and notes
// whether no point has one (raw: the KL figures draw nats, with no floor line).
func (d *data) markFloorless() {
	for _, p := range d.points {
		if !(p.floor > 0) {
			d.floorless++
		}
	}
	d.raw = d.floorless > 0 && d.floorless == len(d.points)
}

// leftOut2D says that the points without a floor (the 2-D tasks) are left out of a
// figure that divides by the floor or draws it; "" when there are none or none is left
// out.
func (d *data) leftOut2D() string {
	if d.floorless == 0 || d.raw {
		return ""
	}
	return fmt.Sprintf(" The %d 2-D grid point(s) have no floor (X·K−1)/(2N) and are left out here; the sweep figures and the 2-D tasks section show them.", d.floorless)
}

// gridPoint is the centre of cell (i, j) of a G×G grid over [−box, box]².
func gridPoint(i, j int, box, h float64) (float64, float64) {
	return -box + (float64(i)+0.5)*h, -box + (float64(j)+0.5)*h
}

// contourPolylines traces the level set {dens = level} of the G×G grid of values
// (cell i·G + j at the cell centres) by marching squares and joins its segments into
// polylines; NaN counts as below the level. The result depends only on its arguments.
func contourPolylines(dens []float64, g int, box, level float64) [][]plotter.XY {
	if !finite(level) || g < 2 {
		return nil
	}
	h := 2 * box / float64(g)
	above := func(i, j int) bool { return dens[i*g+j] >= level }
	// Edge ids: 2·(i·G+j) from (i,j) to (i+1,j), 2·(i·G+j)+1 from (i,j) to (i,j+1).
	cross := func(e int) plotter.XY {
		c, vert := e/2, e%2 == 1
		i, j := c/g, c%g
		i2, j2 := i+1, j
		if vert {
			i2, j2 = i, j+1
		}
		a, b := dens[i*g+j], dens[i2*g+j2]
		t := 0.5
		if finite(a) && finite(b) && a != b {
			t = math.Max(0, math.Min(1, (level-a)/(b-a)))
		}
		x0, y0 := gridPoint(i, j, box, h)
		x1, y1 := gridPoint(i2, j2, box, h)
		return plotter.XY{X: x0 + t*(x1-x0), Y: y0 + t*(y1-y0)}
	}
	type seg struct{ a, b int }
	var segs []seg
	for i := 0; i+1 < g; i++ {
		for j := 0; j+1 < g; j++ {
			ca, cb, cc, cd := above(i, j), above(i+1, j), above(i+1, j+1), above(i, j+1)
			e := [4]int{2 * (i*g + j), 2*((i+1)*g+j) + 1, 2 * (i*g + j + 1), 2*(i*g+j) + 1} // bottom, right, top, left
			on := [4]bool{ca != cb, cb != cc, cd != cc, ca != cd}
			var hit []int
			for k := range e {
				if on[k] {
					hit = append(hit, e[k])
				}
			}
			switch len(hit) {
			case 2:
				segs = append(segs, seg{hit[0], hit[1]})
			case 4: // a saddle: the centre decides which corners are cut off
				centre := (dens[i*g+j]+dens[(i+1)*g+j]+dens[(i+1)*g+j+1]+dens[i*g+j+1])/4 >= level
				if ca == centre {
					segs = append(segs, seg{e[0], e[1]}, seg{e[2], e[3]})
				} else {
					segs = append(segs, seg{e[3], e[0]}, seg{e[1], e[2]})
				}
			}
		}
	}
	at := map[int][]int{} // edge → segments through it
	for s, sg := range segs {
		at[sg.a] = append(at[sg.a], s)
		at[sg.b] = append(at[sg.b], s)
	}
	used := make([]bool, len(segs))
	next := func(e int) (int, bool) { // an unused segment through e, and its other edge
		for _, s := range at[e] {
			if !used[s] {
				used[s] = true
				if segs[s].a == e {
					return segs[s].b, true
				}
				return segs[s].a, true
			}
		}
		return 0, false
	}
	var out [][]plotter.XY
	for s := range segs {
		if used[s] {
			continue
		}
		used[s] = true
		chain := []int{segs[s].a, segs[s].b}
		for e, ok := next(chain[len(chain)-1]); ok; e, ok = next(e) {
			chain = append(chain, e)
		}
		var back []int
		for e, ok := next(chain[0]); ok; e, ok = next(e) {
			back = append(back, e)
		}
		slices.Reverse(back)
		chain = append(back, chain...)
		line := make([]plotter.XY, len(chain))
		for k, e := range chain {
			line[k] = cross(e)
		}
		out = append(out, line)
	}
	return out
}

// contourLines strokes polylines in data coordinates, all in one path.
type contourLines struct {
	lines [][]plotter.XY
	style draw.LineStyle
}

func (l *contourLines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var path vg.Path
	for _, ln := range l.lines {
		for k, pt := range ln {
			q := vg.Point{X: trX(pt.X), Y: trY(pt.Y)}
			if k == 0 {
				path.Move(q)
			} else {
				path.Line(q)
			}
		}
	}
	if len(path) == 0 {
		return
	}
	c.SetLineStyle(l.style)
	c.Stroke(path)
}

// Thumbnail draws the line on a dark patch, as it shows on the heat map.
func (l *contourLines) Thumbnail(c *draw.Canvas) { contourKey{l.style}.Thumbnail(c) }

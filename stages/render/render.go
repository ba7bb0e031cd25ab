// Package render turns a run's results into a human-readable report: report.html and
// the SVG figures it shows. Everything here is a pure function of its Input: the same
// Input gives the same bytes.
package render

import (
	"fmt"
	jm "github.com/jemcheck/jemcheck/methods"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Triple is one table with its true joint and the joints the methods learned on it.
type Triple struct {
	TableID int64 // the user's table id, shown in titles
	Ordinal int64 // the table's position 0..T-1 in its point (id order), used in file names
	PointID int64
	X, K    int
	True    []float64            // true joint p(x,y), row-major x*K+y
	Learned map[string][]float64 // method → learned joint q(x,y), row-major
}

// Input is everything the report shows.
type Input struct {
	Title   string
	Config  any // resolved configuration, shown as a JSON block in the report
	Summary schemas.Summary
	Results []schemas.ResultRow // the runs of (the first FigureTables tables of) each point
	// FigureTables is the number of tables per point Results was cut to (0: Results
	// holds every run). The per-table figures say so when a point has more tables.
	FigureTables int
	Triples      []Triple // the first few tables of (each of the first FigurePoints) point(s), for the triple plot
	// FigurePoints is the number of points, the first by id, that per-table figures
	// (triple plots, 2-D task figures) were kept for (0: every point). Their captions
	// say so when the run has more points.
	FigurePoints int
	// Tasks2D are the first tasks of each 2-D point with their learned joints and the
	// sampler runs' final replay buffers, for the task figures.
	Tasks2D []Task2D
	// Curves are the KL-against-training-step curves of the runs of the first tasks of
	// each 2-D point (see schemas.CurveRow).
	Curves []Curve
	// Kinds are the run's task kinds' own sentences on their tasks (tasks.Kind.About),
	// and Methods the method table's doc lines of the run's methods.
	Kinds   []string
	Methods []MethodDoc
}

// MethodDoc is a method's name and its doc line (methods.Method).
type MethodDoc struct{ Name, Doc string }

// Figure names (files are figures/<name>.svg). Triple plots are triple_p<point>_t<ordinal>,
// sweep plots kl_vs_<axis> and the heat maps heatmap_<axis>_<axis>, with the axis keys
// of axisDefs.
const (
	FigKLDist         = "kl_dist"
	FigBaselineVsJEM  = "baseline_vs_jem"
	figSweepPrefix    = "kl_vs_"
	figHeatmapPrefix  = "heatmap_"
	figTriplePrefix   = "triple_"
	maxScatterPoints  = 20000
	klEpsilon         = 1e-9 // KL values at or below this are drawn at it on log axes
	maxPointTableRows = 40   // points in the summary table before it is collapsed
	maxHeatmapAxes    = 4    // heat maps pair the first this many varying axes (6 pairs)
)

// Render draws every figure and the report. The keys of the result are "report.html"
// and "figures/<name>.svg".
func Render(in Input) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := RenderTo(in, func(key string, data []byte) error {
		out[key] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RenderTo draws every figure and the report like Render, handing each file to put as
// soon as it is drawn (figures first, report.html last), so that the caller need not
// hold them all.
func RenderTo(in Input, put func(key string, data []byte) error) error {
	var warnings []string
	var large int
	if in.Triples, large = plottableTriples(in.Triples); large > 0 {
		warnings = append(warnings, fmt.Sprintf("%d learned joint(s) have more than %d cells (x values × classes): too many bars for a triple plot, so none is drawn for them", large, maxTripleCells))
	}
	d := prepare(in)
	var figs []figure
	var putErr error

	add := func(name, title string, build func() (svg []byte, caption string, err error)) {
		if putErr != nil {
			return
		}
		svg, caption, err := safeBuild(build)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("figure %s could not be drawn: %v", name, err))
			return
		}
		if svg == nil {
			return
		}
		if note := in.sampleNote(); note != "" && !strings.HasPrefix(name, figTriplePrefix) && !strings.HasPrefix(name, figTask2DPrefix) &&
			!strings.HasPrefix(name, figSamplesPrefix) {
			caption += " " + note
		}
		if note := in.pointsNote(); note != "" && (strings.HasPrefix(name, figTriplePrefix) || strings.HasPrefix(name, figTask2DPrefix)) {
			caption += " " + note
		}
		file := "figures/" + name + ".svg"
		if putErr = put(file, svg); putErr != nil {
			return
		}
		figs = append(figs, figure{Name: name, File: file, Title: title, Caption: caption})
	}

	for _, f := range d.figurePlan() {
		add(f.name, f.title, f.build)
	}
	if d.unplaced > 0 {
		warnings = append(warnings, fmt.Sprintf("%d grid point(s) of the results are missing from the summary: "+
			"their grid values are unknown, so the sweep figures and heat maps leave them out", d.unplaced))
	}
	for i, name := range tripleNames(in.Triples) {
		t := &in.Triples[i]
		title := fmt.Sprintf("Table %d (point %d): true joint, marginal and conditional vs learned", t.TableID, t.PointID)
		add(name, title, func() ([]byte, string, error) { return tripleFigure(t, d.methods) })
	}
	for _, f := range d.plan2D(in) {
		add(f.name, f.title, f.build)
	}
	for _, f := range d.planPromises(in) {
		add(f.name, f.title, f.build)
	}

	if putErr != nil {
		return putErr
	}
	html, err := renderHTML(in, d, figs, warnings)
	if err != nil {
		return err
	}
	return put("report.html", html)
}

// pointsNote says that the per-table figures cover the first points only, when
// FigurePoints cut them.
func (in Input) pointsNote() string {
	if in.FigurePoints <= 0 || len(in.Summary.Points) <= in.FigurePoints {
		return ""
	}
	return fmt.Sprintf("Per-table figures are drawn for the first %d of the %d grid points (by id); summary.json and results/ cover every point.",
		in.FigurePoints, len(in.Summary.Points))
}

// sampleNote says that the per-table figures show the first tables of each point, when
// Results was cut (see FigureTables).
func (in Input) sampleNote() string {
	most := 0
	for _, ps := range in.Summary.Points {
		most = max(most, ps.Tables)
	}
	if in.FigureTables <= 0 || most <= in.FigureTables {
		return ""
	}
	return fmt.Sprintf("Drawn from the first %d tables of each grid point (of up to %d; tables are independent draws, so "+
		"these are a random sample); the tables of this report and summary.json cover every table.", in.FigureTables, most)
}

// FigureNames lists the figure names Render draws for the input, in report order,
// without drawing them (triple plots and the 2-D task figures included).
func FigureNames(in Input) []string {
	in.Triples, _ = plottableTriples(in.Triples)
	d := prepare(in)
	var names []string
	for _, f := range d.figurePlan() {
		names = append(names, f.name)
	}
	names = append(names, tripleNames(in.Triples)...)
	for _, f := range d.plan2D(in) {
		names = append(names, f.name)
	}
	for _, f := range d.planPromises(in) {
		names = append(names, f.name)
	}
	return names
}

// maxTripleCells is the most cells X·K of a table its triple plot draws (one bar per
// cell and method): a larger joint (a block task's B·G² x values) is left out.
const maxTripleCells = 4096

// MaxTripleCells is maxTripleCells, for the stage that gathers the triples: a larger
// table's joints are left out of its Triple (only its count is reported).
const MaxTripleCells = maxTripleCells

// plottableTriples are the triples with at most maxTripleCells cells, and how many
// were left out for their size. A triple with no joint at all, true or learned (an
// image-like task: its joint is a density, never enumerated), has no triple plot to
// draw and is dropped silently: the figure does not apply, it did not fail. A learned
// joint without its truth is still drawn, and its failure reported.
func plottableTriples(ts []Triple) ([]Triple, int) {
	out := make([]Triple, 0, len(ts))
	large := 0
	for _, t := range ts {
		switch {
		case len(t.True) == 0 && !slices.ContainsFunc(slices.Collect(maps.Values(t.Learned)), func(q []float64) bool { return len(q) > 0 }):
		case t.X*t.K > maxTripleCells:
			large++
		default:
			out = append(out, t)
		}
	}
	return out, large
}

// tripleNames names the triple figures: triple_p<point>_t<ordinal>, with the triple's
// index appended when a (point, ordinal) repeats. The ordinal, not the user's table id,
// keeps the names free of minus signs and stable under a renumbering of the tables;
// a negative point or ordinal (never made by the pipeline) is written without its sign
// and so deduplicated like a repeat.
func tripleNames(ts []Triple) []string {
	return pointOrdinalNames(figTriplePrefix, len(ts), func(i int) (int64, int64) { return ts[i].PointID, ts[i].Ordinal })
}

// pointOrdinalNames names n figures <prefix>p<point>_t<ordinal>, with the figure's index
// appended when a (point, ordinal) repeats.
func pointOrdinalNames(prefix string, n int, key func(i int) (point, ordinal int64)) []string {
	seen := map[string]bool{}
	names := make([]string, n)
	for i := range n {
		p, o := key(i)
		name := fmt.Sprintf("%sp%d_t%d", prefix, absID(p), absID(o))
		if seen[name] {
			name = fmt.Sprintf("%s_%d", name, i)
		}
		seen[name] = true
		names[i] = name
	}
	return names
}

// absID is |v| as an unsigned number (so math.MinInt64 too).
func absID(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

func safeBuild(build func() ([]byte, string, error)) (svg []byte, caption string, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, caption, err = nil, "", fmt.Errorf("panic: %v", r)
		}
	}()
	return build()
}

type figure struct {
	Name, File, Title, Caption string
}

type plannedFigure struct {
	name, title string
	build       func() ([]byte, string, error)
}

// figurePlan decides which figures the data supports.
func (d *data) figurePlan() []plannedFigure {
	var plan []plannedFigure
	if d.histRuns() > 0 {
		plan = append(plan, plannedFigure{FigKLDist, "Distribution of the joint KL per method", d.klDistFigure})
	}
	if len(d.pairs) > 0 {
		plan = append(plan, plannedFigure{FigBaselineVsJEM, "Baseline vs JEM joint KL, table by table", d.scatterFigure})
	}
	for _, ax := range d.varying {
		plan = append(plan, plannedFigure{figSweepPrefix + ax.key, "Joint KL vs " + ax.label, func() ([]byte, string, error) { return d.sweepFigure(ax) }})
	}
	hm := d.heatmapAxes()
	for i, a := range hm {
		for _, b := range hm[i+1:] {
			plan = append(plan, plannedFigure{figHeatmapPrefix + a.key + "_" + b.key,
				"Mean JEM joint KL over " + a.label + " × " + b.label,
				func() ([]byte, string, error) { return d.heatmapFigure(a, b) }})
		}
	}
	return plan
}

// heatmapAxes are the varying axes the heat maps pair, every pair of them once: the
// first maxHeatmapAxes of d.varying (in axisDefs order), none without JEM runs or with
// fewer than two varying axes.
func (d *data) heatmapAxes() []*axisDef {
	if len(d.varying) < 2 || !slices.Contains(d.methods, jm.Yardstick()) {
		return nil
	}
	return d.varying[:min(len(d.varying), maxHeatmapAxes)]
}

// axisValue is one value of a grid axis; values sort by (a, b, s).
type axisValue struct {
	a, b  float64
	s     string
	label string
}

func (v axisValue) less(w axisValue) bool {
	if v.a != w.a {
		return v.a < w.a
	}
	if v.b != w.b {
		return v.b < w.b
	}
	return v.s < w.s
}

// axisDef is a grid axis the sweep figures can follow (schemas.GridAxes). Its value is
// read from a point's schemas.Grid (the summary), never from a result row: rows carry
// per-run values (a baseline row's px_weight is 0 whatever the point's is).
type axisDef struct {
	key, label string
	value      func(p *schemas.Grid) axisValue
	numeric    bool // x coordinate is the value itself (else the category's index)
	log        bool // numeric on a log axis

	values []axisValue // distinct values, sorted
}

func axisDefs() []*axisDef {
	var out []*axisDef
	for _, ax := range schemas.GridAxes() {
		value, numeric := ax.Value, ax.Numeric
		out = append(out, &axisDef{key: ax.Key, label: ax.Label, numeric: numeric, value: func(g *schemas.Grid) axisValue {
			v := value(g)
			if numeric {
				v.Label = tidyExp(v.Label)
			}
			return axisValue{a: v.Num, b: v.Tie, s: v.Str, label: v.Label}
		}})
	}
	return out
}

// point is one grid point as seen in the results.
type point struct {
	id     int64
	params *schemas.Grid // its grid values, from the summary (nil when the summary lacks the point)
	floor  float64       // mean floor of its rows (0 if unknown)
	rows   int
	vals   []int                 // index into axisDef.values, per axis (nil when params is nil)
	kl     map[string][]float64  // method → clean joint KLs (as they are; clampKL draws them on log axes), table order
	byTab  map[string][]tableKL  // method → (table, KL) for pairing: the clean runs not flagged nonfinite
	emp    float64               // mean finite empirical KL (tables with an empty cell, +Inf, left out)
	counts map[string]*runCounts // method → counts
}

type tableKL struct {
	table int64
	kl    float64
}

type runCounts struct {
	total, diverged, nonFinite, clamped int
}

type pair struct {
	baseline, jem, floor float64
}

type data struct {
	methods   []string
	points    []*point
	axes      []*axisDef
	varying   []*axisDef
	pairs     []pair
	counts    map[string]*runCounts // over all points
	cleanRuns int
	oneFloor  bool                      // every point has the same (positive) floor
	floorless int                       // points without a floor (the 2-D tasks)
	raw       bool                      // no point has a floor: KLs are drawn in nats, with no floor line
	floor     float64                   // that floor
	tables    int                       // distinct (point, table) pairs in the results
	unplaced  int                       // points of the results the summary lacks: on no axis
	empInf    int                       // of them, those whose empirical KL is +Inf (an empty cell): left out of its means
	verdicts  map[int64]schemas.Verdict // each point's verdict, from the summary (the figures' pass/fail marks)
}

// methodRank places the roles first: the baseline, the yardstick (jem), the oracle.
func methodRank(m string) int {
	switch {
	case m == jm.Baseline():
		return 0
	case m == jm.Yardstick():
		return 1
	case jm.Has(m, func(x jm.Method) bool { return x.Fresh }):
		return 2
	}
	return 3
}

func sortMethods(ms []string) {
	sort.Slice(ms, func(i, j int) bool {
		ri, rj := methodRank(ms[i]), methodRank(ms[j])
		if ri != rj {
			return ri < rj
		}
		return ms[i] < ms[j]
	})
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// clampKL raises a KL value ≤ klEpsilon (zero up to round-off) to klEpsilon, where a
// log axis can draw it.
func clampKL(v float64) float64 { return math.Max(v, klEpsilon) }

// rowFloor is the floor of a row: its floor column; none (0) when the column is NaN,
// as on a row without a floor (a 2-D task's); (X·K−1)/(2N) of its point's grid values
// when the column is unset (0 when those are unknown too).
func rowFloor(r *schemas.ResultRow, pp *schemas.Grid) float64 {
	switch {
	case math.IsNaN(r.Floor):
		return 0
	case finite(r.Floor) && r.Floor > 0:
		return r.Floor
	case pp != nil && pp.Samples > 0 && pp.XValues*pp.Classes > 1:
		return prob.Floor(int(pp.XValues*pp.Classes), int64(pp.Samples))
	}
	return 0
}

func prepare(in Input) *data {
	rs := in.Results
	idx := make([]int32, len(rs))
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.Slice(idx, func(i, j int) bool {
		a, b := &rs[idx[i]], &rs[idx[j]]
		if a.PointID != b.PointID {
			return a.PointID < b.PointID
		}
		if a.TableID != b.TableID {
			return a.TableID < b.TableID
		}
		if a.Method != b.Method {
			return a.Method < b.Method
		}
		return a.RunID < b.RunID
	})

	// A point's grid values come from the summary, matched by point id (the first entry
	// of an id wins).
	params := make(map[int64]*schemas.Grid, len(in.Summary.Points))
	for i := range in.Summary.Points {
		ps := &in.Summary.Points[i]
		if _, dup := params[ps.PointID]; !dup {
			params[ps.PointID] = &ps.Params
		}
	}

	d := &data{counts: map[string]*runCounts{}, axes: axisDefs(), verdicts: map[int64]schemas.Verdict{}}
	for _, ps := range in.Summary.Points {
		if _, dup := d.verdicts[ps.PointID]; !dup {
			d.verdicts[ps.PointID] = ps.Verdict
		}
	}
	methodSet := map[string]bool{}
	var cur *point
	var floorSum, empSum float64
	var floorN, empN int
	finish := func() {
		if cur == nil {
			return
		}
		if floorN > 0 {
			cur.floor = floorSum / float64(floorN)
		}
		if empN > 0 {
			cur.emp = empSum / float64(empN)
		}
		d.points = append(d.points, cur)
	}
	infCounted := false // the current table's +Inf empirical KL is counted
	for k, i := range idx {
		r := &rs[i]
		if k == 0 || r.PointID != rs[idx[k-1]].PointID || r.TableID != rs[idx[k-1]].TableID {
			d.tables++
			infCounted = false
		}
		if !infCounted && math.IsInf(r.KLEmpirical, 1) {
			d.empInf++
			infCounted = true
		}
		if cur == nil || cur.id != r.PointID {
			finish()
			cur = &point{id: r.PointID, params: params[r.PointID], kl: map[string][]float64{}, byTab: map[string][]tableKL{}, counts: map[string]*runCounts{}}
			floorSum, empSum, floorN, empN = 0, 0, 0, 0
		}
		cur.rows++
		if f := rowFloor(r, cur.params); f > 0 {
			floorSum += f
			floorN++
		}
		if finite(r.KLEmpirical) && r.KLEmpirical > 0 {
			empSum += r.KLEmpirical
			empN++
		}
		methodSet[r.Method] = true
		c := cur.counts[r.Method]
		if c == nil {
			c = &runCounts{}
			cur.counts[r.Method] = c
		}
		c.total++
		switch {
		case r.Diverged:
			c.diverged++
			continue
		case isBoundsRow(r): // no exact joint KL exists (the ladder's bounds rung shows the run): not a non-finite one
			continue
		case !finite(r.KLJoint):
			c.nonFinite++
			continue
		}
		if r.KLJoint <= klEpsilon {
			c.clamped++
		}
		cur.kl[r.Method] = append(cur.kl[r.Method], r.KLJoint)
		if !r.Nonfinite { // paired as summary.json pairs them
			cur.byTab[r.Method] = append(cur.byTab[r.Method], tableKL{r.TableID, r.KLJoint})
		}
		d.cleanRuns++
	}
	finish()

	for m := range methodSet {
		d.methods = append(d.methods, m)
	}
	sortMethods(d.methods)

	// Totals.
	for _, p := range d.points {
		for m, c := range p.counts {
			t := d.counts[m]
			if t == nil {
				t = &runCounts{}
				d.counts[m] = t
			}
			t.total += c.total
			t.diverged += c.diverged
			t.nonFinite += c.nonFinite
			t.clamped += c.clamped
		}
	}

	// Floors.
	d.oneFloor = len(d.points) > 0
	for i, p := range d.points {
		if p.floor <= 0 || (i > 0 && math.Abs(p.floor-d.points[0].floor) > 1e-12*d.points[0].floor) {
			d.oneFloor = false
		}
	}
	if d.oneFloor {
		d.floor = d.points[0].floor
	}
	d.markFloorless()

	// Pairs (both runs clean, same point and table).
	for _, p := range d.points {
		bs, js := p.byTab[jm.Baseline()], p.byTab[jm.Yardstick()]
		i, j := 0, 0
		for i < len(bs) && j < len(js) {
			switch {
			case bs[i].table < js[j].table:
				i++
			case bs[i].table > js[j].table:
				j++
			default:
				d.pairs = append(d.pairs, pair{bs[i].kl, js[j].kl, p.floor})
				i++
				j++
			}
		}
	}

	// Axes, over the points whose grid values are known.
	for _, p := range d.points {
		if p.params == nil {
			d.unplaced++
		}
	}
	for _, ax := range d.axes {
		for _, p := range d.points {
			if p.params == nil {
				continue
			}
			v := ax.value(p.params)
			k, found := sort.Find(len(ax.values), func(i int) int {
				switch {
				case v.less(ax.values[i]):
					return -1
				case ax.values[i].less(v):
					return 1
				}
				return 0
			})
			if !found {
				ax.values = slices.Insert(ax.values, k, v)
			}
		}
		if len(ax.values) < 2 {
			continue
		}
		if ax.key == "batch_size" && ax.values[0].a == 0 {
			ax.numeric = false // "full" has no position on a numeric axis
		}
		if ax.numeric {
			lo, hi := ax.values[0].a, ax.values[len(ax.values)-1].a
			ax.log = lo > 0 && (ax.key == "samples" || hi/lo >= 5)
		}
		d.varying = append(d.varying, ax)
	}
	for _, p := range d.points {
		if p.params == nil {
			continue
		}
		p.vals = make([]int, len(d.axes))
		for a, ax := range d.axes {
			v := ax.value(p.params)
			p.vals[a] = sort.Search(len(ax.values), func(i int) bool { return !ax.values[i].less(v) })
		}
	}
	return d
}

func (d *data) axisIndex(ax *axisDef) int {
	for i, a := range d.axes {
		if a == ax {
			return i
		}
	}
	return -1
}

// describeLeftOut says which runs of the methods a KL figure shows are left out of it
// (diverged, or with a non-finite joint KL); "" when none.
func (d *data) describeLeftOut(methods []string) string {
	div, nf := map[string]int{}, map[string]int{}
	for _, m := range methods {
		if c := d.counts[m]; c != nil {
			div[m], nf[m] = c.diverged, c.nonFinite
		}
	}
	var parts []string
	if n := sumCounts(div); n > 0 {
		parts = append(parts, fmt.Sprintf("%d diverged run(s) are left out (%s)", n, perMethod(methods, div)))
	}
	if n := sumCounts(nf); n > 0 {
		parts = append(parts, fmt.Sprintf("%d run(s) with a non-finite KL are left out (%s)", n, perMethod(methods, nf)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.ToUpper(parts[0][:1]) + parts[0][1:] + joinTail(parts[1:]) + "."
}

// clamped counts the clean KL values ≤ klEpsilon of each of the methods (all points).
func (d *data) clamped(methods []string) map[string]int {
	out := map[string]int{}
	for _, m := range methods {
		if c := d.counts[m]; c != nil {
			out[m] = c.clamped
		}
	}
	return out
}

// clampNote says how many of the KL values a log-axis figure uses (per method, as
// counted by the figure) are ≤ klEpsilon and what the figure does with them (e.g.
// "are drawn at 1e-9"); "" when none.
func clampNote(methods []string, clamped map[string]int, what string) string {
	n := sumCounts(clamped)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" %d KL value(s) ≤ %s (zero up to round-off; %s) %s.", n, fmtNum(klEpsilon), perMethod(methods, clamped), what)
}

// histRuns counts the clean runs the KL histogram can draw: KL above klEpsilon, and a
// positive floor when KLs are divided by their point's floor.
func (d *data) histRuns() int {
	n := 0
	for _, p := range d.points {
		if !d.oneFloor && !d.raw && !(p.floor > 0) {
			continue
		}
		for _, vs := range p.kl {
			for _, v := range vs {
				if v > klEpsilon {
					n++
				}
			}
		}
	}
	return n
}

func sumCounts(c map[string]int) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// perMethod lists the non-zero counts in method order: "baseline 2, oracle 834".
func perMethod(methods []string, c map[string]int) string {
	ms := slices.Clone(methods)
	sortMethods(ms)
	var parts []string
	for _, m := range ms {
		if c[m] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", m, c[m]))
		}
	}
	return strings.Join(parts, ", ")
}

func joinTail(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("; ")
		b.WriteString(p)
	}
	return b.String()
}

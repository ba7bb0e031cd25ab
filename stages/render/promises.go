package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure names of the paper's promises on the 2-D points: reliability_p<point> (the
// reliability diagram per method) and ood_scores_p<point> (the histograms of the
// density score in and out of distribution), one each per 2-D point with Task2D data.
const (
	figReliabilityPrefix = "reliability_"
	figOODPrefix         = "ood_scores_"
	reliabilityBins      = 15 // equal-width confidence bins on [0, 1], as the ECE of the summary
	oodHistBins          = 30
	oodLowMass           = 0.005 // the share of a method's score mass the shared axis may leave below its start
)

// promiseGroup is the Task2D entries of one 2-D point, in the order of in.Tasks2D.
type promiseGroup struct {
	point int64
	tasks []*Task2D
}

// promiseGroups groups in.Tasks2D by point, points in order of first appearance.
func promiseGroups(ts []Task2D) []promiseGroup {
	var out []promiseGroup
	idx := map[int64]int{}
	for i := range ts {
		t := &ts[i]
		k, ok := idx[t.PointID]
		if !ok {
			k = len(out)
			idx[t.PointID] = k
			out = append(out, promiseGroup{point: t.PointID})
		}
		out[k].tasks = append(out[k].tasks, t)
	}
	return out
}

// methods are the methods with a learned grid in the group, in the point's order.
func (g promiseGroup) methods(order []string) []string {
	var ms []string
	for _, t := range g.tasks {
		for m := range t.Learned {
			if !slices.Contains(ms, m) {
				ms = append(ms, m)
			}
		}
	}
	sortMethods(ms)
	return orderMethods(ms, order)
}

// planPromises plans the promise figures of the 2-D points: per point the reliability
// diagram, then the OOD score histograms.
func (d *data) planPromises(in Input) []plannedFigure {
	var plan []plannedFigure
	order := pointMethods(in.Summary)
	for _, g := range promiseGroups(in.Tasks2D) {
		ms := g.methods(order[g.point])
		if len(ms) == 0 {
			continue
		}
		ps := pointSummary(in.Summary, g.point)
		name := fmt.Sprintf("%sp%d", figReliabilityPrefix, absID(g.point))
		plan = append(plan, plannedFigure{name, fmt.Sprintf("Point %d: reliability diagram, exact on the grid", g.point),
			func() ([]byte, string, error) { return d.reliabilityFigure(g, ms, ps) }})
		name = fmt.Sprintf("%sp%d", figOODPrefix, absID(g.point))
		plan = append(plan, plannedFigure{name, fmt.Sprintf("Point %d: density score log q(x) in and out of distribution", g.point),
			func() ([]byte, string, error) { return d.oodFigure(g, ms, ps) }})
	}
	return plan
}

// pointSummary is the summary of the point (the first entry of its id; empty when the
// summary lacks it).
func pointSummary(s schemas.Summary, point int64) schemas.PointSummary {
	for _, ps := range s.Points {
		if ps.PointID == point {
			return ps
		}
	}
	return schemas.PointSummary{PointID: point}
}

// tableCells maps each method of rows to its cell of a table (cell picks it from the
// row): a figure that repeats a table's number reads it here.
func tableCells[R any](rows []R, cell func(R) (method, text string)) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		m, text := cell(r)
		out[m] = text
	}
	return out
}

// calibItems are the cells of the group's tasks that have the method's learned grid, as
// items of a weighted reliability diagram: conf = max_y q(y|c), acc = p(ŷ|c) and
// weight = p(c)/n, n the number of those tasks (so the weights sum to 1). Cells where q
// has no mass are left out (no prediction); cells where p has none get acc 0 (weight 0).
func calibItems(tasks []*Task2D, method string) (conf, acc, weight []float64) {
	var use []*Task2D
	for _, t := range tasks {
		if q := t.Learned[method]; len(q) == t.G*t.G*t.K && len(t.True) == len(q) && t.K > 0 {
			use = append(use, t)
		}
	}
	n := float64(len(use))
	for _, t := range use {
		q, k := t.Learned[method], t.K
		for c := 0; c < t.G*t.G; c++ {
			qs, ps := 0.0, 0.0
			best := 0
			for y := range k {
				qs += q[c*k+y]
				ps += t.True[c*k+y]
				if q[c*k+y] > q[c*k+best] {
					best = y
				}
			}
			if !(qs > 0) || !finite(qs) {
				continue
			}
			a := 0.0
			if ps > 0 {
				a = t.True[c*k+best] / ps
			}
			conf = append(conf, q[c*k+best]/qs)
			acc = append(acc, a)
			weight = append(weight, math.Max(ps, 0)/n)
		}
	}
	return conf, acc, weight
}

// relBin is a non-empty bin of a weighted reliability diagram: its weighted mean
// confidence and accuracy and its weight.
type relBin struct{ conf, acc, weight float64 }

// reliabilityCurve bins the items into bins equal-width bins on [0, 1] (right-closed,
// 0 in the first), as prob.ECEWeighted does, and returns the bins of positive weight.
func reliabilityCurve(conf, acc, weight []float64, bins int) []relBin {
	w, c, a := make([]float64, bins), make([]float64, bins), make([]float64, bins)
	for i, ci := range conf {
		if math.IsNaN(ci) || math.IsNaN(acc[i]) {
			continue
		}
		m := 0
		if ci > 0 {
			m = min(bins-1, max(0, int(math.Ceil(ci*float64(bins)))-1))
			for m > 0 && ci <= float64(m)/float64(bins) {
				m--
			}
			for m < bins-1 && ci > float64(m+1)/float64(bins) {
				m++
			}
		}
		w[m] += weight[i]
		c[m] += weight[i] * ci
		a[m] += weight[i] * acc[i]
	}
	var out []relBin
	for m := range w {
		if w[m] > 0 {
			out = append(out, relBin{conf: c[m] / w[m], acc: a[m] / w[m], weight: w[m]})
		}
	}
	return out
}

// reliabilityFigure: the reliability diagram of each method, exact on the grids of the
// group's tasks, with the method's ECE from the robustness table of ps in the legend.
func (d *data) reliabilityFigure(g promiseGroup, ms []string, ps schemas.PointSummary) ([]byte, string, error) {
	colours := d.colourSet(ms)
	eces := tableCells(robustRows(ps), func(r robustRow) (string, string) { return r.Method, r.ECE })
	p := newPlot("", "confidence max_y q(y|x)  (weighted bin mean)", "accuracy p(ŷ|x)  (weighted bin mean)")
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, "", err
	}
	diag.LineStyle = dashed(colTrue, 1.2)
	p.Add(diag)
	legend := []legendEntry{{"perfect calibration", []plot.Thumbnailer{diag}}}
	drawn := 0
	for _, m := range ms {
		conf, acc, w := calibItems(g.tasks, m)
		bins := reliabilityCurve(conf, acc, w, reliabilityBins)
		if len(bins) == 0 {
			continue
		}
		xs, ys := make([]float64, len(bins)), make([]float64, len(bins))
		for i, b := range bins {
			xs[i], ys[i] = b.conf, b.acc
		}
		col := methodColor(colours, m)
		l, sc, err := plotter.NewLinePoints(xys(xs, ys))
		if err != nil {
			return nil, "", err
		}
		l.LineStyle = solid(col, 1.6)
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(2.4), Shape: methodGlyph(colours, m)}
		p.Add(l, sc)
		name := m
		if ece, ok := eces[m]; ok {
			name += " (ECE " + ece + ")"
		}
		legend = append(legend, legendEntry{name, []plot.Thumbnailer{l, sc}})
		drawn++
	}
	if drawn == 0 {
		return nil, "", nil
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	svg, err := toSVG(8.5*vg.Inch, 5.6*vg.Inch, func(c draw.Canvas) {
		p.Draw(withLegend(c, legendWidth, legend))
	})
	caption := fmt.Sprintf("Reliability diagram at grid point %d, exact on the evaluation grid and pooled over the point's first %d task(s): "+
		"every cell x is an item with confidence max_y q(y|x), the learned classifier's top probability, and accuracy p(ŷ|x), the true probability of its predicted class, "+
		"weighted by p(x). The points are the weighted mean accuracy against the weighted mean confidence in each non-empty one of %d equal-width confidence bins; "+
		"a calibrated classifier lies on the dashed diagonal, below it is over-confident.",
		g.point, len(g.tasks), reliabilityBins)
	if len(eces) > 0 {
		caption += " The legend gives each method's ECE (15 bins) of the robustness table: the mean over the point's converged runs of the binned ECE on " +
			"the held-out draws of each task. Those finite draws add sampling noise to each bin, which a binned ECE counts as miscalibration, " +
			"so it can exceed what these exact curves show."
	}
	return svg, caption, err
}

// oodScores are the density score log Σ_y q(x, y) per cell of a task, with the weights
// of the cell in distribution (p(x)) and out of it (uniform over the box, 1/G²).
func oodScores(t *Task2D, method string) (score, in, out []float64, ok bool) {
	q, k := t.Learned[method], t.K
	cells := t.G * t.G
	if k <= 0 || len(q) != cells*k || len(t.True) != len(q) {
		return nil, nil, nil, false
	}
	score, in, out = make([]float64, cells), make([]float64, cells), make([]float64, cells)
	for c := range cells {
		qs, ps := 0.0, 0.0
		for y := range k {
			qs += q[c*k+y]
			ps += t.True[c*k+y]
		}
		score[c], in[c], out[c] = math.Log(qs), math.Max(ps, 0), 1/float64(cells)
	}
	return score, in, out, true
}

// oodFigure: per method, the histograms of the density score in and out of
// distribution, exact on the grids of the group's tasks, titled with the method's AUROC
// log q(x) from the beyond-the-joint table of ps.
func (d *data) oodFigure(g promiseGroup, ms []string, ps schemas.PointSummary) ([]byte, string, error) {
	colours := d.colourSet(ms)
	aurocs := tableCells(promiseRows(ps), func(r promiseRow) (string, string) { return r.Method, r.AUROCPx })
	type taskScores struct{ score, in, out []float64 }
	type methodScores struct {
		m  string
		ts []taskScores
	}
	// The panels share their axes, so that the methods compare by eye: the bins span
	// every method's scores from the lowest that holds mass (oodLowMass of the mass in
	// or out of distribution below it: scores lower still, where q(x) is all but 0,
	// are counted in the first bin) to the highest.
	var all []methodScores
	hi := math.Inf(-1)
	for _, m := range ms {
		var ts []taskScores
		for _, t := range g.tasks {
			s, in, out, ok := oodScores(t, m)
			if !ok {
				continue
			}
			ts = append(ts, taskScores{s, in, out})
			for _, v := range s {
				if finite(v) {
					hi = math.Max(hi, v)
				}
			}
		}
		if len(ts) > 0 {
			all = append(all, methodScores{m, ts})
		}
	}
	if len(all) == 0 {
		return nil, "", nil
	}
	lo := math.Inf(1)
	for _, ms := range all { // the lowest of the methods' oodLowMass quantiles
		var mv, mw []float64
		for _, t := range ms.ts {
			for c, v := range t.score {
				if finite(v) {
					mv, mw = append(mv, v), append(mw, t.in[c]+t.out[c])
				}
			}
		}
		if len(mv) > 0 {
			lo = math.Min(lo, weightedQuantile(mv, mw, oodLowMass))
		}
	}
	if !(lo <= hi) {
		return nil, "", nil
	}
	if hi-lo < 1e-12 {
		lo, hi = lo-0.5, hi+0.5
	}
	width := (hi - lo) / oodHistBins
	xs := make([]float64, oodHistBins)
	for i := range xs {
		xs[i] = lo + (float64(i)+0.5)*width
	}
	var panels []*plot.Plot
	var legend []legendEntry
	leftOut, below := 0, 0
	ymax := 0.0
	for _, ms := range all {
		m := ms.m
		hIn, hOut := make([]float64, oodHistBins), make([]float64, oodHistBins)
		n := float64(len(ms.ts))
		for _, t := range ms.ts {
			for c, v := range t.score {
				if !finite(v) {
					leftOut++
					continue
				}
				if v < lo {
					below++
				}
				b := min(oodHistBins-1, max(0, int((v-lo)/width)))
				hIn[b] += t.in[c] / n
				hOut[b] += t.out[c] / n
			}
		}
		for i := range hIn {
			ymax = math.Max(ymax, math.Max(hIn[i], hOut[i]))
		}
		col := methodColor(colours, m)
		title := m
		if auroc, ok := aurocs[m]; ok {
			title += ": AUROC " + auroc
		}
		p := newPlot(title, "log q(x) + const", "probability mass")
		bOut := &bars{xs: xs, vs: hOut, w: width, fill: withAlpha(colTrue, 110)}
		bIn := &bars{xs: xs, vs: hIn, w: width, fill: withAlpha(col, 140)}
		p.Add(bOut, bIn)
		panels = append(panels, p)
		legend = append(legend, legendEntry{m + ": x ~ p(x)", []plot.Thumbnailer{bIn}})
		if len(legend) == 1 {
			legend = append([]legendEntry{{"x ~ uniform over the box", []plot.Thumbnailer{bOut}}}, legend...)
		}
	}
	for _, p := range panels {
		p.X.Min, p.X.Max = lo, hi
		p.Y.Min, p.Y.Max = 0, ymax*1.05
	}
	// Two panels a row: the figure is shown at its own size in a 1280 px window.
	pw, ph := 3.9*vg.Inch, 3.1*vg.Inch
	cols := min(2, len(panels))
	rows := (len(panels) + cols - 1) / cols
	w := pw*vg.Length(cols) + legendWidth
	svg, err := toSVG(w, ph*vg.Length(rows), func(c draw.Canvas) {
		body := withLegend(c, legendWidth, legend)
		cw, rh := body.Size().X/vg.Length(cols), body.Size().Y/vg.Length(rows)
		for i, p := range panels {
			col, row := vg.Length(i%cols), vg.Length(i/cols)
			p.Draw(draw.Crop(body, cw*col, -(body.Size().X - cw*(col+1)), body.Size().Y-rh*(row+1), -rh*row))
		}
	})
	note := " The panels share their axes."
	if below > 0 {
		note += fmt.Sprintf(" The axis starts where all but %s of a method's mass lies above it: %d cell(s) scoring lower (q(x) all but 0 there) are counted in the first bin.",
			fmtNum(100*oodLowMass)+"%", below)
	}
	if leftOut > 0 {
		note += fmt.Sprintf(" %d cell(s) where q(x) is 0 (score −∞) are left out of the histograms (not of the AUROC).", leftOut)
	}
	caption := fmt.Sprintf("Out-of-distribution detection at grid point %d with the paper's density score log q(x) = log Σ_y exp f(x)[y] (up to the constant log Z), "+
		"exact on the evaluation grid over the point's first %d task(s): per method, the histogram (%d bins over the range of the scores) of the score's "+
		"distribution in distribution (cells weighted by p(x)) and out of it (uniform over the box, the default OOD distribution).%s",
		g.point, len(g.tasks), oodHistBins, note)
	if len(aurocs) > 0 {
		caption += " A panel's title gives the method's AUROC log q(x) of the beyond-the-joint table: the mean over the point's converged runs, " +
			"on the held-out draws of each task against its OOD draws (--ood); 0.5 is chance."
	}
	return svg, caption, err
}

// claimLine is one promise of the paper at one 2-D point: what the paper claims and
// what the run measured.
type claimLine struct {
	PointID  int64
	Promise  string
	Claim    string
	Measured string
}

// claimLines are the promise sentences of a point whose promises were measured on
// held-out draws (a 2-D task's), from its summary; nil for any other point.
func claimLines(ps schemas.PointSummary) []claimLine {
	if !heldOutPromises(ps) {
		return nil
	}
	pick := func(f func(m *schemas.MethodSummary) schemas.Dist, format func(float64) string) string {
		var parts []string
		for i := range ps.Methods {
			m := &ps.Methods[i]
			if d := f(m); d.Count > 0 {
				parts = append(parts, m.Method+" "+format(d.Mean))
			}
		}
		return strings.Join(parts, ", ")
	}
	var out []claimLine
	add := func(promise, claim string, clauses ...string) {
		var ms []string
		for _, c := range clauses {
			if c != "" {
				ms = append(ms, c)
			}
		}
		if len(ms) > 0 {
			out = append(out, claimLine{ps.PointID, promise, claim, strings.Join(ms, "; ") + "."})
		}
	}
	labelled := func(label, list string) string {
		if list == "" {
			return ""
		}
		return label + ": " + list
	}

	ceiling := ""
	for _, m := range ps.Methods {
		if m.AUROCTruePx.Count > 0 {
			ceiling = fmtNA(m.AUROCTruePx.Mean)
			break
		}
	}
	px := pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AUROCPx }, fmtNA)
	if px != "" && ceiling != "" {
		px = "AUROC against uniform over the box with log q(x), of the " + ceiling + " ceiling that log p(x) reaches: " + px
	} else {
		px = labelled("AUROC against uniform over the box with log q(x)", px)
	}
	add("OOD detection", "the paper scores with log q(x), which a JEM models and a plain classifier does not",
		px,
		labelled("with max_y q(y|x)", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AUROCPy }, fmtNA)),
		labelled("with the gradient norm of log q(x)", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AUROCPxGrad }, fmtNA)))
	add("Calibration", "the paper finds JEM's classifier better calibrated than a plain one",
		labelled("expected calibration error (15 bins, on the held-out draws)", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.ECE }, fmtNA)),
		labelled("calibration error against the Bayes posterior", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.CalibrationErrorTrue }, fmtNA)))
	add("Robustness", "the paper finds JEM more robust to adversarial attacks, more so after purifying inputs with SGLD",
		labelled("accuracy clean", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AccClean }, fmtPct)),
		labelled("attacked", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AccAttacked }, fmtPct)),
		labelled("purified", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AccPurified }, fmtPct)),
		labelled("Bayes classifier on purified inputs", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.AccBayesPurified }, fmtPct)))
	add("Samples", "the paper draws samples of p(x) from SGLD chains started at noise",
		labelled("total variation of noise-started samples from the truth on the grid", pick(func(m *schemas.MethodSummary) schemas.Dist { return m.SamplesTVNoise }, fmtNA)))
	return out
}

// weightedQuantile is the lowest value v of vs with at least q of the total weight at
// or below it.
func weightedQuantile(vs, ws []float64, q float64) float64 {
	idx := make([]int, len(vs))
	total := 0.0
	for i := range idx {
		idx[i] = i
		total += ws[i]
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(vs[a], vs[b]) })
	acc := 0.0
	for _, i := range idx {
		acc += ws[i]
		if acc >= q*total {
			return vs[i]
		}
	}
	return vs[idx[len(idx)-1]]
}

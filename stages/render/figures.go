package render

import (
	"fmt"
	jm "github.com/jemcheck/jemcheck/methods"
	"image/color"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/models/prob"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

const legendWidth = 2.1 * vg.Inch

// floorText describes the floor line of the distribution and scatter figures.
func (d *data) floorText() string {
	if d.raw {
		return "The 2-D tasks have no floor: the KL values are in nats, exact on the evaluation grid, with no reference line."
	}
	if d.oneFloor {
		return fmt.Sprintf("The dashed black line is the floor (X·K−1)/(2N) = %s: only the first-order asymptotic expected KL of a fit of N draws, a scale for the eye "+
			"(the verdict uses the exact finite-N reference of the error split).", fmtSig(d.floor, 3))
	}
	return "The grid points have different floors, so every KL is divided by its point's floor (X·K−1)/(2N), the first-order asymptotic expected KL of a fit of N draws; " +
		"the dashed black line at 1 is the floor, a scale for the eye (the verdict uses the exact finite-N reference of the error split)."
}

// empiricalLeftOut says which tables the empirical-KL line leaves out: those with an
// empty cell, whose KL(p‖p̂) is +Inf.
func (d *data) empiricalLeftOut() string {
	if d.empInf == 0 {
		return " (no table has an empty cell)"
	}
	return fmt.Sprintf(" over the tables without an empty cell (on the %d of %d tables with one, KL(p‖p̂) is +Inf; they are left out)", d.empInf, d.tables)
}

// scaled returns a clean KL, divided by the floor when the points' floors differ
// (ok false when that is impossible).
func (d *data) scaled(v, floor float64) (float64, bool) {
	if d.oneFloor || d.raw {
		return v, true
	}
	if !(floor > 0) {
		return 0, false
	}
	return v / floor, true
}

func (d *data) floorAt() float64 {
	if d.oneFloor {
		return d.floor
	}
	return 1
}

// drawnAt says where a figure with klLabel's axes draws a KL value ≤ klEpsilon.
func (d *data) drawnAt() string {
	if d.oneFloor || d.raw {
		return "are drawn at " + fmtNum(klEpsilon)
	}
	return "are drawn at " + fmtNum(klEpsilon) + " divided by their point's floor"
}

func (d *data) klLabel() string {
	if d.oneFloor || d.raw {
		return "joint KL(p‖q)  [nats, log scale]"
	}
	return "joint KL(p‖q) / floor  [log scale]"
}

// klDistFigure: histograms of the joint KL per method on log10 bins. KL values at or
// below klEpsilon (zero up to round-off) have no place on a log axis: they are left out
// of the histogram (divided by different floors they would fake a spread-out
// distribution) and counted in the legend and the caption; the median, computed as
// summary.json's, still counts them.
func (d *data) klDistFigure() ([]byte, string, error) {
	per := map[string][]float64{} // the values drawn
	all := map[string][]float64{} // the values of the median
	zeros := map[string]int{}
	mm := newMinMax()
	for _, p := range d.points {
		for _, m := range d.methods {
			for _, v := range p.kl[m] {
				if v <= klEpsilon {
					zeros[m]++
				}
				s, ok := d.scaled(v, p.floor)
				if !ok {
					continue
				}
				all[m] = append(all[m], s)
				if v > klEpsilon {
					per[m] = append(per[m], s)
					mm.add(s)
				}
			}
		}
	}
	if !mm.ok() {
		return nil, "", nil
	}
	if !d.raw {
		mm.add(d.floorAt())
	}
	lo, hi := math.Log10(mm.lo), math.Log10(mm.hi)
	nmax := 0
	for _, vs := range per {
		nmax = max(nmax, len(vs))
	}
	target := min(40, max(8, int(math.Ceil(math.Sqrt(float64(nmax))))))
	w := niceStep((hi - lo) / float64(target))
	lo = math.Floor(lo/w) * w
	hi = math.Ceil(hi/w) * w
	if hi-lo < w/2 {
		hi = lo + w
	}
	nb := int(math.Round((hi - lo) / w))

	p := newPlot("", d.klLabel(), "share of runs per bin")
	logAxis(&p.X)
	var legend []legendEntry
	ymax := 0.0
	for _, m := range d.methods {
		vs := per[m]
		if len(vs) == 0 {
			if z := zeros[m]; z > 0 {
				legend = append(legend, legendEntry{fmt.Sprintf("%s: %d ≤ %s", m, z, fmtNum(klEpsilon)), nil})
			}
			continue
		}
		counts := make([]float64, nb)
		for _, v := range vs {
			k := int((math.Log10(v) - lo) / w)
			k = max(0, min(nb-1, k))
			counts[k]++
		}
		var pts plotter.XYs
		edge := func(k int) float64 { return math.Pow(10, lo+float64(k)*w) }
		pts = append(pts, plotter.XY{X: edge(0), Y: 0})
		for k, c := range counts {
			f := c / float64(len(vs)+zeros[m])
			ymax = math.Max(ymax, f)
			pts = append(pts, plotter.XY{X: edge(k), Y: f}, plotter.XY{X: edge(k + 1), Y: f})
		}
		pts = append(pts, plotter.XY{X: edge(nb), Y: 0})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, "", err
		}
		col := methodColor(d.methods, m)
		l.LineStyle = solid(col, 1.6)
		l.FillColor = withAlpha(col, 28)
		p.Add(l)
		legend = append(legend, legendEntry{fmt.Sprintf("%s (n=%d)", m, len(vs)), []plot.Thumbnailer{l}})
		if z := zeros[m]; z > 0 {
			legend = append(legend, legendEntry{fmt.Sprintf("  +%d ≤ %s", z, fmtNum(klEpsilon)), nil})
		}
		// The median over all the method's clean runs, the undrawn ones included.
		med := describe(all[m]).median
		if med >= math.Pow(10, lo) {
			ml := &refLine{vertical: true, at: med, LineStyle: dotted(col, 1.4)}
			p.Add(ml)
			legend = append(legend, legendEntry{"  median " + fmtKL(med), []plot.Thumbnailer{ml}})
		} else {
			legend = append(legend, legendEntry{"  median " + fmtKL(med) + " (off the axis)", nil})
		}
	}
	if !d.raw {
		fl := &refLine{vertical: true, at: d.floorAt(), LineStyle: dashed(colBlack, 1.4)}
		p.Add(fl)
		legend = append(legend, legendEntry{"floor", []plot.Thumbnailer{fl}})
	}
	p.X.Min, p.X.Max = math.Pow(10, lo), math.Pow(10, hi)
	p.Y.Min, p.Y.Max = 0, ymax*1.08

	svg, err := toSVG(8.5*vg.Inch, 4.5*vg.Inch, func(c draw.Canvas) {
		p.Draw(withLegend(c, legendWidth, legend))
	})
	pooled := ""
	if len(d.points) > 1 {
		pooled = fmt.Sprintf(" Runs are pooled over all %d grid points.", len(d.points))
	}
	zeroNote := ""
	if n := sumCounts(zeros); n > 0 {
		zeroNote = fmt.Sprintf(" %d KL value(s) ≤ %s (zero up to round-off; %s) have no place on a log axis and are not in the histogram; "+
			"the shares and medians count them.", n, fmtNum(klEpsilon), perMethod(d.methods, zeros))
	}
	claim := "If the claim holds, the JEM curve sits near the statistical reference (to first order, the floor) and the baseline's well to its right " +
		"(the baseline only fits p(y|x), so its joint is arbitrary); the oracle is JEM trained on the true table, " +
		"so its KL is the model family's approximation error plus the optimiser's residual after the same steps."
	if d.raw {
		claim = "The baseline only fits p(y|x), so its joint is arbitrary and its curve should lie well to the right of exact JEM's; " +
			"a sampler (sgld) approximates JEM's gradient of log Z, so the distance between its curve and JEM's is the sampler's cost."
	}
	caption := fmt.Sprintf("Histogram of each method's joint KL(p‖q) over the tables, on log10 bins %s decades wide; "+
		"a curve's height is the share of that method's runs in the bin, and the dotted line in its colour is its median. %s "+
		"%s%s%s%s%s",
		fmtNum(w), d.floorText(), claim, pooled, d.describeLeftOut(d.methods), zeroNote, d.leftOut2D())
	return svg, caption, err
}

// niceStep rounds a bin width (in decades) up to 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, ...
func niceStep(raw float64) float64 {
	for _, s := range []float64{0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10} {
		if raw <= s {
			return s
		}
	}
	return 10
}

// scatterFigure: baseline vs JEM joint KL, one dot per table.
func (d *data) scatterFigure() ([]byte, string, error) {
	stride := (len(d.pairs) + maxScatterPoints - 1) / maxScatterPoints
	var win, lose plotter.XYs
	nWin := 0
	mm := newMinMax()
	total := 0
	clamped := map[string]int{}
	for i, pr := range d.pairs {
		b, okb := d.scaled(clampKL(pr.baseline), pr.floor)
		j, okj := d.scaled(clampKL(pr.jem), pr.floor)
		if !okb || !okj {
			continue
		}
		total++
		if pr.baseline <= klEpsilon {
			clamped[jm.Baseline()]++
		}
		if pr.jem <= klEpsilon {
			clamped[jm.Yardstick()]++
		}
		jemLower := pr.jem < pr.baseline // as summary.json's win share counts it
		if jemLower {
			nWin++
		}
		if i%stride != 0 {
			continue
		}
		mm.add(b, j)
		if jemLower {
			win = append(win, plotter.XY{X: b, Y: j})
		} else {
			lose = append(lose, plotter.XY{X: b, Y: j})
		}
	}
	if !mm.ok() {
		return nil, "", nil
	}
	if !d.raw {
		mm.add(d.floorAt())
	}
	lo, hi := logRange(mm.lo, mm.hi, 0.04)

	p := newPlot("", "baseline "+d.klLabel(), "JEM "+d.klLabel())
	logAxis(&p.X)
	logAxis(&p.Y)
	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, "", err
	}
	diag.LineStyle = solid(colTrue, 1)
	fv := &refLine{vertical: true, at: d.floorAt(), LineStyle: dashed(colBlack, 1.2)}
	fh := &refLine{vertical: false, at: d.floorAt(), LineStyle: dashed(colBlack, 1.2)}
	p.Add(diag)
	if !d.raw {
		p.Add(fv, fh)
	}
	radius := vg.Points(2.6)
	alpha := uint8(170)
	if len(win)+len(lose) > 2000 {
		radius, alpha = vg.Points(1.5), 90
	}
	var legend []legendEntry
	for _, s := range []struct {
		pts  plotter.XYs
		m    string
		name string
	}{
		{win, jm.Yardstick(), fmt.Sprintf("JEM lower: %s", pct(nWin, total))},
		{lose, jm.Baseline(), fmt.Sprintf("baseline ≤ JEM: %s", pct(total-nWin, total))},
	} {
		sc, err := plotter.NewScatter(nonNil(s.pts))
		if err != nil {
			return nil, "", err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: withAlpha(methodColor(d.methods, s.m), alpha), Radius: radius, Shape: draw.CircleGlyph{}}
		if len(s.pts) > 0 {
			p.Add(sc)
		}
		legend = append(legend, legendEntry{s.name, []plot.Thumbnailer{sc}})
	}
	legend = append(legend, legendEntry{"y = x", []plot.Thumbnailer{diag}})
	if !d.raw {
		legend = append(legend, legendEntry{"floor", []plot.Thumbnailer{fh}})
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi

	svg, err := toSVG(7.9*vg.Inch, 6*vg.Inch, func(c draw.Canvas) {
		p.Draw(withLegend(c, legendWidth, legend))
	})
	shown := fmt.Sprintf(" JEM is lower on %d of %d tables.", nWin, total)
	if stride > 1 {
		shown = fmt.Sprintf(" JEM is lower on %d of %d tables; one table in every %d is drawn (%d dots), the shares in the legend are over all of them.", nWin, total, stride, len(win)+len(lose))
	}
	claim := " A claim that holds puts the cloud below the diagonal, near the horizontal floor line (to first order, the statistical error)."
	if d.raw {
		claim = " A claim that holds puts the cloud below the diagonal."
	}
	caption := fmt.Sprintf("One dot per table (and grid point) where both runs converged: x is the baseline's joint KL, y is JEM's, both on log axes. "+
		"Dots below the diagonal y = x mean JEM fits the joint better on that table (blue), dots above mean the baseline does (red). "+
		"%s%s%s%s%s%s",
		d.floorText(), claim, shown, d.describeLeftOut([]string{jm.Baseline(), jm.Yardstick()}), clampNote([]string{jm.Baseline(), jm.Yardstick()}, clamped, d.drawnAt()), d.leftOut2D())
	return svg, caption, err
}

// pct is the share n/total as the tables print a share of tables (fmtPct); "—" when
// total is 0.
func pct(n, total int) string {
	if total == 0 {
		return "—"
	}
	return fmtPct(float64(n) / float64(total))
}

func nonNil(p plotter.XYs) plotter.XYs {
	if p == nil {
		return plotter.XYs{}
	}
	return p
}

// sweepFigure: joint KL against one varying grid axis, mean and p10–p90 band per method.
func (d *data) sweepFigure(ax *axisDef) ([]byte, string, error) {
	ai := d.axisIndex(ax)
	nv := len(ax.values)
	perVal := make([]map[string][]float64, nv)
	floorSum := make([]float64, nv)
	floorW := make([]float64, nv)
	empSum := make([]float64, nv)
	empW := make([]float64, nv)
	for i := range perVal {
		perVal[i] = map[string][]float64{}
	}
	for _, p := range d.points {
		if p.vals == nil {
			continue // grid values unknown (warned about)
		}
		v := p.vals[ai]
		for m, kl := range p.kl {
			for _, x := range kl {
				perVal[v][m] = append(perVal[v][m], clampKL(x))
			}
		}
		if p.floor > 0 {
			floorSum[v] += p.floor * float64(p.rows)
			floorW[v] += float64(p.rows)
		}
		if p.emp > 0 {
			empSum[v] += p.emp * float64(p.rows)
			empW[v] += float64(p.rows)
		}
	}
	xAt := func(i int) float64 {
		if ax.numeric {
			return ax.values[i].a
		}
		return float64(i)
	}

	p := newPlot("", ax.label, "joint KL(p‖q)  [nats, log scale]")
	logAxis(&p.Y)
	mm := newMinMax()
	var legend []legendEntry
	type series struct {
		xs, mean, p10, p90 []float64
	}
	for _, m := range d.methods {
		var s series
		for i := 0; i < nv; i++ {
			vs := perVal[i][m]
			if len(vs) == 0 {
				continue
			}
			ds := describe(vs)
			s.xs = append(s.xs, xAt(i))
			s.mean = append(s.mean, ds.mean)
			s.p10 = append(s.p10, ds.p10)
			s.p90 = append(s.p90, ds.p90)
			mm.add(ds.mean, ds.p10, ds.p90)
		}
		if len(s.xs) == 0 {
			continue
		}
		col := methodColor(d.methods, m)
		b := &band{xs: s.xs, lo: s.p10, hi: s.p90, fill: withAlpha(col, 40)}
		l, sc, err := plotter.NewLinePoints(xys(s.xs, s.mean))
		if err != nil {
			return nil, "", err
		}
		l.LineStyle = solid(col, 1.8)
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: methodGlyph(d.methods, m)}
		p.Add(b, l, sc)
		legend = append(legend, legendEntry{m + " mean", []plot.Thumbnailer{l, sc}}, legendEntry{"  " + m + " p10–p90", []plot.Thumbnailer{b}})
	}
	if !mm.ok() {
		return nil, "", nil
	}
	marks, err := d.sweepMarks(ai, nv, xAt, &mm)
	if err != nil {
		return nil, "", err
	}
	if marks != nil {
		p.Add(marks)
		legend = append(legend, legendEntry{verdictMarkLegend, nil})
	}
	var fx, fy, ex, ey []float64
	for i := 0; i < nv; i++ {
		if floorW[i] > 0 {
			fx = append(fx, xAt(i))
			fy = append(fy, floorSum[i]/floorW[i])
		}
		if empW[i] > 0 {
			ex = append(ex, xAt(i))
			ey = append(ey, empSum[i]/empW[i])
		}
	}
	if len(fx) > 0 {
		l, err := plotter.NewLine(xys(fx, fy))
		if err != nil {
			return nil, "", err
		}
		l.LineStyle = dashed(colBlack, 1.4)
		p.Add(l)
		mm.add(fy...)
		legend = append(legend, legendEntry{"floor (X·K−1)/(2N)", []plot.Thumbnailer{l}})
	}
	if len(ex) > 0 {
		l, err := plotter.NewLine(xys(ex, ey))
		if err != nil {
			return nil, "", err
		}
		l.LineStyle = dotted(colTrue, 1.4)
		p.Add(l)
		mm.add(ey...)
		legend = append(legend, legendEntry{"empirical KL (finite)", []plot.Thumbnailer{l}})
	}
	p.Y.Min, p.Y.Max = logRange(mm.lo, mm.hi, 0.05)

	labels := make([]string, nv)
	for i, v := range ax.values {
		labels[i] = v.label
	}
	switch {
	case !ax.numeric:
		p.NominalX(labels...)
		p.X.Min, p.X.Max = -0.5, float64(nv)-0.5
	case ax.log:
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = logRange(ax.values[0].a, ax.values[nv-1].a, 0.05)
		if nv <= 12 {
			p.X.Tick.Marker = valueTicks(ax)
		} else {
			p.X.Tick.Marker = logTicks{}
		}
	default:
		pad := (ax.values[nv-1].a - ax.values[0].a) * 0.05
		p.X.Min, p.X.Max = ax.values[0].a-pad, ax.values[nv-1].a+pad
		if nv <= 12 {
			p.X.Tick.Marker = valueTicks(ax)
		}
	}

	svg, err := toSVG(8.5*vg.Inch, 4.8*vg.Inch, func(c draw.Canvas) {
		p.Draw(withLegend(c, legendWidth, legend))
	})
	xs := "log"
	if !ax.log {
		xs = "linear"
		if !ax.numeric {
			xs = "categorical"
		}
	}
	var others, partners []string
	for _, o := range d.varying {
		if o != ax {
			others = append(others, o.label)
		}
	}
	if hm := d.heatmapAxes(); slices.Contains(hm, ax) {
		for _, o := range hm {
			if o != ax {
				partners = append(partners, o.label)
			}
		}
	}
	pooled := ""
	if len(others) > 0 {
		pooled = " At each value the runs are pooled over the other varying axes (" + strings.Join(others, ", ") + ")"
		switch {
		case len(partners) == 0:
			pooled += "."
		case len(others) == 1:
			pooled += "; the heat map shows the interaction."
		case len(partners) == len(others):
			pooled += "; the heat maps show the interactions."
		default:
			pooled += "; the heat maps with " + strings.Join(partners, ", ") + " show those interactions."
		}
	}
	lines := fmt.Sprintf("The dashed black line is the floor (X·K−1)/(2N), only the first-order asymptotic expected KL of a fit of N draws (it falls as 1/N); "+
		"the dotted grey line is the mean measured KL(p‖p̂) of the empirical tables p̂%s. "+
		"JEM tracking the floor while the baseline stays above it is in line with the claim; the verdict itself compares JEM's optimisation gap with the statistical error from the exact finite-N reference (see the verdict checks).",
		d.empiricalLeftOut())
	switch {
	case d.floorless > 0 && len(fx) == 0 && len(ex) == 0:
		lines = "The 2-D tasks have no floor and no empirical table, so no reference line is drawn; their KL is exact on the evaluation grid."
	case d.floorless > 0:
		lines += " The 2-D grid points have no floor and no empirical table: the reference lines leave them out."
	}
	markText := ""
	if marks != nil {
		markText = " " + verdictMarkCaption("value of "+ax.label, false)
	}
	caption := fmt.Sprintf("Joint KL(p‖q) against %s (%s x axis, log y axis): the line is each method's mean over tables, the shaded band its 10th–90th percentile.%s "+
		"%s%s%s%s",
		ax.label, xs, markText, lines, pooled, d.describeLeftOut(d.methods), clampNote(d.methods, d.clamped(d.methods), "are drawn at "+fmtNum(klEpsilon)))
	return svg, caption, err
}

// valueTicks labels exactly the grid values of a numeric axis.
func valueTicks(ax *axisDef) plot.ConstantTicks {
	var t plot.ConstantTicks
	for _, v := range ax.values {
		t = append(t, plot.Tick{Value: v.a, Label: v.label})
	}
	return t
}

// heatmapFigure: mean JEM joint KL over two varying axes.
func (d *data) heatmapFigure(a, b *axisDef) ([]byte, string, error) {
	ai, bi := d.axisIndex(a), d.axisIndex(b)
	nc, nr := len(a.values), len(b.values)
	sum := make([]float64, nc*nr)
	cnt := make([]float64, nc*nr)
	cellVerdicts := make([]verdictTally, nc*nr)
	fsum := make([]float64, nc*nr)
	fw := make([]float64, nc*nr)
	for _, p := range d.points {
		if p.vals == nil {
			continue // grid values unknown (warned about)
		}
		k := p.vals[ai]*nr + p.vals[bi]
		cellVerdicts[k].add(d.verdicts[p.id])
		vs := p.kl[jm.Yardstick()]
		for _, v := range vs {
			sum[k] += v
		}
		cnt[k] += float64(len(vs))
		if p.floor > 0 && len(vs) > 0 {
			fsum[k] += p.floor * float64(len(vs))
			fw[k] += float64(len(vs))
		}
	}
	// The colour is log10 of the mean, a mean ≤ klEpsilon taking klEpsilon's; NaN: no run.
	mean, colour := make([]float64, nc*nr), make([]float64, nc*nr)
	lmin, lmax := math.Inf(1), math.Inf(-1)
	for k := range mean {
		mean[k], colour[k] = math.NaN(), math.NaN()
		if cnt[k] > 0 {
			mean[k] = sum[k] / cnt[k]
			colour[k] = math.Log10(clampKL(mean[k]))
			lmin, lmax = math.Min(lmin, colour[k]), math.Max(lmax, colour[k])
		}
	}
	if lmin > lmax {
		return nil, "", nil
	}
	if lmax-lmin < 1e-9 {
		lmin, lmax = lmin-0.5, lmax+0.5
	}
	cm := viridis(lmin, lmax)
	p := newPlot("", a.label, b.label)
	p.Add(heatMap(cellGrid{cols: nc, rows: nr, z: colour, x0: -0.5, dx: 1, y0: -0.5, dy: 1}, cm))
	if nc*nr <= 144 {
		labels, err := cellLabels(nc, nr, func(k int) string {
			mark := cellVerdicts[k].mark()
			if mark != "" {
				mark += " "
			}
			switch {
			case math.IsNaN(mean[k]):
				return mark + "n/a"
			case fw[k] > 0:
				return mark + fmtKL(mean[k]) + "\n" + fmtTimes(mean[k]/(fsum[k]/fw[k])) + " floor"
			}
			return mark + fmtKL(mean[k])
		}, func(k int) color.Color {
			if !math.IsNaN(colour[k]) && (colour[k]-lmin)/(lmax-lmin) < 0.6 {
				return color.White // on the dark end of viridis
			}
			return colBlack
		})
		if err != nil {
			return nil, "", err
		}
		p.Add(labels)
	}
	p.Add(&cellOutlines{cols: nc, rows: nr, colour: func(k int) color.Color { return cellVerdicts[k].colour() }})
	xl := make([]string, nc)
	for i, v := range a.values {
		xl[i] = v.label
	}
	yl := make([]string, nr)
	for i, v := range b.values {
		yl[i] = v.label
	}
	p.NominalX(xl...)
	p.NominalY(yl...)
	p.X.Min, p.X.Max = -0.5, float64(nc)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(nr)-0.5

	cb := colourBar(cm, "mean JEM joint KL (log scale)")
	var ticks plot.ConstantTicks
	for _, t := range (logTicks{}).Ticks(math.Pow(10, lmin), math.Pow(10, lmax)) {
		ticks = append(ticks, plot.Tick{Value: math.Log10(t.Value), Label: t.Label})
	}
	cb.Y.Tick.Marker = ticks

	w := vg.Length(math.Max(6.5, math.Min(11, 1.0*float64(nc)+3.2))) * vg.Inch
	h := vg.Length(math.Max(3.8, math.Min(9, 0.55*float64(nr)+1.6))) * vg.Inch
	svg, err := toSVG(w, h, func(c draw.Canvas) {
		cbw := 1.4 * vg.Inch
		p.Draw(draw.Crop(c, 0, -cbw, 0, 0))
		cc := draw.Crop(c, c.Size().X-cbw+0.2*vg.Inch, -0.3*vg.Inch, 0.3*vg.Inch, -0.3*vg.Inch)
		cb.Draw(cc)
	})
	var others []string
	for _, o := range d.varying {
		if o != a && o != b {
			others = append(others, o.label)
		}
	}
	pooled := ""
	if len(others) > 0 {
		pooled = " Runs are pooled over the other varying axes (" + strings.Join(others, ", ") + ")."
	}
	if hm := d.heatmapAxes(); len(hm) < len(d.varying) {
		var paired, left []string
		for _, o := range d.varying {
			if slices.Contains(hm, o) {
				paired = append(paired, o.label)
			} else {
				left = append(left, o.label)
			}
		}
		verb := "are"
		if len(left) == 1 {
			verb = "is"
		}
		pooled += fmt.Sprintf(" Of the %d varying axes only the first %d (%s) are paired in heat maps, %d of them; %s %s in none.",
			len(d.varying), len(hm), strings.Join(paired, ", "), len(hm)*(len(hm)-1)/2, strings.Join(left, ", "), verb)
	}
	cellText := "Each cell shows the mean KL and, below it, that mean as a multiple of the cell's floor (X·K−1)/(2N): " +
		"values near 1× mean that JEM is at the first-order statistical scale (the verdict uses the exact finite-N reference instead). " +
		"A cell of one grid point shows the mean joint KL and the mean joint / floor of that point's jem row in the summary table."
	if d.floorless > 0 {
		cellText += " Cells of 2-D tasks have no floor and show the mean KL only."
	}
	cellText += " " + verdictMarkCaption("cell", true)
	caption := fmt.Sprintf("Mean joint KL(p‖q) of JEM for every combination of %s (columns) and %s (rows); the colour is on a log scale (darker is lower). "+
		"%s Grey cells have no converged JEM runs.%s%s%s",
		a.label, b.label, cellText, pooled, d.describeLeftOut([]string{jm.Yardstick()}), clampNote([]string{jm.Yardstick()}, d.clamped([]string{jm.Yardstick()}), "count in the means as they are (a mean ≤ "+fmtNum(klEpsilon)+" would take the colour of "+fmtNum(klEpsilon)+")"))
	return svg, caption, err
}

// tripleFigure: the true table against each method's learned joint, marginal and conditional.
func tripleFigure(t *Triple, allMethods []string) ([]byte, string, error) {
	X, K := t.X, t.K
	if X <= 0 || K <= 0 || len(t.True) != X*K {
		return nil, "", fmt.Errorf("triple table %d: X=%d K=%d with %d true cells", t.TableID, X, K, len(t.True))
	}
	var ms []string
	var skipped []string
	for m, q := range t.Learned {
		if len(q) == X*K {
			ms = append(ms, m)
		} else {
			skipped = append(skipped, m)
		}
	}
	sortMethods(ms)
	sortMethods(skipped)
	colourSet := append([]string(nil), allMethods...)
	for _, m := range ms {
		if methodRank(m) == 3 && !slices.Contains(colourSet, m) {
			colourSet = append(colourSet, m)
		}
	}
	sortMethods(colourSet)

	type series struct {
		name  string
		fill  color.NRGBA
		joint []float64
		marg  []float64
		cond  []float64
		kl    float64
	}
	mk := func(name string, joint []float64, fill color.NRGBA) series {
		s := series{name: name, fill: fill, joint: make([]float64, X*K), marg: make([]float64, X), cond: make([]float64, X*K)}
		for i, v := range joint {
			if !finite(v) {
				v = math.NaN()
			}
			s.joint[i] = v
		}
		for x := 0; x < X; x++ {
			var sm float64
			for y := 0; y < K; y++ {
				sm += s.joint[x*K+y]
			}
			s.marg[x] = sm
			for y := 0; y < K; y++ {
				s.cond[x*K+y] = math.NaN()
				if sm > 0 {
					s.cond[x*K+y] = s.joint[x*K+y] / sm
				}
			}
		}
		s.kl = prob.KL(t.True, s.joint) // NaN when q has a NaN cell where p > 0
		return s
	}
	all := []series{mk("true p", t.True, colTrue)}
	for _, m := range ms {
		all = append(all, mk(m, t.Learned[m], methodColor(colourSet, m)))
	}
	ns := len(all)
	bw := 0.8 / float64(ns)
	off := func(s int) float64 { return -0.4 + bw*(float64(s)+0.5) }
	index := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
		}
		return xs
	}
	// cellLabels names the cells "x,y" when there is room for maxLabels labels, else
	// labels the first cell of every few x groups with its x.
	cellLabels := func(maxLabels int) (plot.ConstantTicks, string) {
		n := X * K
		var out plot.ConstantTicks
		if n <= maxLabels {
			for i := 0; i < n; i++ {
				out = append(out, plot.Tick{Value: float64(i), Label: fmt.Sprintf("%d,%d", i/K, i%K)})
			}
			return out, "cell (x, y)"
		}
		step := (X + maxLabels - 1) / maxLabels
		for x := 0; x < X; x += step {
			out = append(out, plot.Tick{Value: float64(x*K) + float64(K-1)/2, Label: fmt.Sprint(x)})
		}
		return out, fmt.Sprintf("x  (each group holds the %d cells y = 0…%d)", K, K-1)
	}
	xLabels := func() plot.ConstantTicks {
		step := 1
		if X > 40 {
			step = (X + 39) / 40
		}
		var out plot.ConstantTicks
		for i := 0; i < X; i += step {
			out = append(out, plot.Tick{Value: float64(i), Label: fmt.Sprint(i)})
		}
		return out
	}
	separators := func(p *plot.Plot) {
		if K < 2 || X > 64 {
			return
		}
		for x := 1; x < X; x++ {
			p.Add(&refLine{vertical: true, at: float64(x*K) - 0.5, LineStyle: solid(color.NRGBA{R: 200, G: 200, B: 200, A: 255}, 0.6)})
		}
	}
	panel := func(title, xlabel, ylabel string, n int, vals func(s series) []float64, ticks plot.ConstantTicks, ymax float64) *plot.Plot {
		p := newPlot(title, xlabel, ylabel)
		top := 0.0
		for i, s := range all {
			vs := vals(s)
			for _, v := range vs {
				if finite(v) {
					top = math.Max(top, v)
				}
			}
			p.Add(&bars{xs: index(n), vs: vs, off: off(i), w: bw * 0.92, fill: s.fill})
		}
		p.X.Tick.Marker = ticks
		p.X.Tick.Width, p.X.Tick.Length, p.X.Width = 0, 0, 0
		p.X.Min, p.X.Max = -0.5, float64(n)-0.5
		p.Y.Min, p.Y.Max = 0, top*1.06
		if ymax > 0 {
			p.Y.Max = ymax
		}
		if p.Y.Max <= 0 {
			p.Y.Max = 1
		}
		return p
	}

	// Large tables with K > 2 get three full-width rows, the rest (a) over (b) | (c).
	stacked := K > 2 && X*K > 24
	labA, axA := cellLabels(32)
	pa := panel("(a) joint p(x,y) vs learned q(x,y)", axA, "probability", X*K,
		func(s series) []float64 { return s.joint }, labA, 0)
	separators(pa)
	pb := panel("(b) marginal p(x)", "x", "p(x)", X, func(s series) []float64 { return s.marg }, xLabels(), 0)
	var pc *plot.Plot
	condDesc := ""
	if K == 2 {
		pc = panel("(c) conditional p(y=1 | x)", "x", "p(y=1 | x)", X, func(s series) []float64 {
			out := make([]float64, X)
			for x := range out {
				out[x] = s.cond[x*K+1]
			}
			return out
		}, xLabels(), 1)
		condDesc = "p(y=1|x) for each x"
	} else {
		maxC := 14
		if stacked {
			maxC = 32
		}
		labC, axC := cellLabels(maxC)
		pc = panel("(c) conditional p(y | x)", axC, "p(y | x)", X*K, func(s series) []float64 { return s.cond }, labC, 1)
		separators(pc)
		condDesc = "p(y|x) for every cell, grouped by x"
	}

	var legend []legendEntry
	var kls []string
	for i, s := range all {
		name := s.name
		if i > 0 {
			name = fmt.Sprintf("%s q  (KL %s)", s.name, fmtKL(s.kl))
			kls = append(kls, s.name+" "+fmtKL(s.kl))
		}
		legend = append(legend, legendEntry{name, []plot.Thumbnailer{&bars{fill: s.fill}}})
	}

	h := 7.8 * vg.Inch
	if stacked {
		h = 11 * vg.Inch
	}
	svg, err := toSVG(11*vg.Inch, h, func(c draw.Canvas) {
		c = figureTitle(c, fmt.Sprintf("Table %d, point %d  (X=%d, K=%d)", t.TableID, t.PointID, X, K))
		body := withLegend(c, legendWidth, legend)
		if stacked {
			third := body.Size().Y / 3
			pa.Draw(draw.Crop(body, 0, 0, 2*third+14, 0))
			pb.Draw(draw.Crop(body, 0, 0, third+14, -third))
			pc.Draw(draw.Crop(body, 0, 0, 0, -2*third))
			return
		}
		hTop := body.Size().Y * 0.52
		top := draw.Crop(body, 0, 0, body.Size().Y-hTop, 0)
		bottom := draw.Crop(body, 0, 0, 0, -hTop-6)
		half := bottom.Size().X / 2
		pa.Draw(top)
		pb.Draw(draw.Crop(bottom, 0, -half-8, 0, 0))
		pc.Draw(draw.Crop(bottom, half+8, 0, 0, 0))
	})
	note := ""
	if len(skipped) > 0 {
		note = fmt.Sprintf(" Learned joints of the wrong size were left out: %s.", strings.Join(skipped, ", "))
	}
	caption := fmt.Sprintf("Table %d at grid point %d (X=%d, K=%d). Grey bars are the truth, coloured bars each method's learned distribution q(x,y) = exp f(x)[y] / Z. "+
		"(a) every cell of the joint; (b) the marginal over x; (c) the conditional, %s. "+
		"The baseline is trained on p(y|x) only, so it can match (c) while its joint (a) and marginal (b) are arbitrary; JEM fits the joint, so its bars should track the grey ones in all three panels. "+
		"Joint KL(p‖q) on this table: %s.%s",
		t.TableID, t.PointID, X, K, condDesc, strings.Join(kls, ", "), note)
	return svg, caption, err
}

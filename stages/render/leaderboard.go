package render

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

// leaderRow is one method at one point of the leaderboard: its excess joint KL over
// exact jem on the same tasks (with 95% CI) and q(x)'s part, and the method's own
// means of the Z-free metrics, the temperature diagnostic and its CPU cost per run.
type leaderRow struct {
	First   bool
	Span    int
	PointID int64
	Task    string
	Rank    string
	Method  string
	Options string
	Excess  string
	CI      string
	Marg    string
	KLJoint string
	KLCond  string
	Acc     string
	ECE     string
	AUROC   string
	Beta    string
	KLBeta  string
	CPU     string
	// OverBest is the recipe's mean paired excess over the point's best recipe, OverCI
	// its 95% CI, BestP the Holm-adjusted p of its comparison with the best and MDE the
	// smallest difference from the best the point's tasks can detect; Set marks the
	// recipes indistinguishable from the best.
	OverBest string
	OverCI   string
	BestP    string
	MDE      string
	Set      bool
	// Stats (on a point's first row) says what the point's ranking supports, and CDFig
	// is its critical-difference diagram (inline SVG; empty when none is drawn).
	Stats    string
	CDFig    template.HTML
	excess   float64
	cpu      float64
	excessLo float64
	excessHi float64
	rank     int // the recipe's rank by mean excess, 1 = best (0: not ranked)
}

// leaderRows are a point's leaderboard rows: every method that ran there, the
// approximate ones ranked by their excess over exact jem (exact jem 0 by definition),
// present when some approximate method was paired with exact jem.
func leaderRows(ps schemas.PointSummary) []leaderRow {
	if len(ps.Samplers) == 0 {
		return nil
	}
	task := ps.Params.Task
	var rows []leaderRow
	for _, ms := range ps.Methods {
		r := leaderRow{PointID: ps.PointID, Task: task, Method: ms.Method, Options: samplerOptions(ps.Params, ms.Method),
			Excess: "—", CI: "—", Marg: "—", OverBest: "—", OverCI: "—", BestP: "—", MDE: "—", excess: math.NaN(), excessLo: math.NaN(), excessHi: math.NaN(),
			KLJoint: fmtSig(ms.KLJoint.Mean, 3), KLCond: fmtSig(ms.KLConditional.Mean, 3),
			Acc:   fmtSig(ms.Accuracy.Mean, 3) + " / " + fmtSig(ms.BayesAccuracy.Mean, 3),
			ECE:   fmtSig(ms.ECE.Mean, 2),
			AUROC: fmtSig(ms.AUROCPx.Mean, 3) + " / " + fmtSig(ms.AUROCTruePx.Mean, 3),
			Beta:  fmtSig(ms.BestTemperature.Mean, 3), KLBeta: fmtSig(ms.KLJointBestTemperature.Mean, 3),
			CPU: "—", cpu: math.NaN()}
		if ms.TrainMS.Count > 0 && ms.TrainMS.Mean > 0 {
			r.cpu = ms.TrainMS.Mean / 1000
			r.CPU = fmtSig(r.cpu, 3)
		}
		if ms.Method == methods.Yardstick() {
			r.excess, r.Excess = 0, "0 (reference)"
		}
		for _, c := range ps.Samplers {
			if c.Method == ms.Method {
				r.excess, r.excessLo, r.excessHi, r.rank = c.Excess, c.ExcessCILow, c.ExcessCIHigh, c.Rank
				r.Excess = fmtSig(c.Excess, 3)
				r.CI = fmtRange(c.ExcessCILow, c.ExcessCIHigh, func(v float64) string { return fmtSig(v, 3) })
				r.Marg = fmtSig(c.MarginalExcess, 3)
				if c.Rank > 0 {
					r.Set = c.InBestSet
					r.OverBest = fmtSig(float64(c.OverBest), 3)
					r.OverCI = fmtRange(float64(c.OverBestLo), float64(c.OverBestHi), func(v float64) string { return fmtSig(v, 3) })
					r.BestP, r.MDE = fmtP(float64(c.BestPHolm)), fmtSig(float64(c.MDE), 3)
					if math.IsNaN(float64(c.MDE)) && c.Pairs >= 2 && !verdict.Detectable(c.Pairs, max(rankedCount(ps)-1, 1), verdict.RankAlpha) {
						r.MDE = "none at this n"
					}
					if c.Method == bestOf(ps) {
						r.OverBest, r.OverCI, r.BestP, r.MDE = "best", "", "—", "—"
					}
				}
			}
		}
		rows = append(rows, r)
	}
	// Ranked: the recipes by rank, then the others with an excess (exact jem,
	// jem-converged) by it, then the rest (baseline, oracle) in the table's order.
	slices.SortStableFunc(rows, func(a, b leaderRow) int {
		if a.rank > 0 || b.rank > 0 {
			switch {
			case a.rank == 0:
				return 1
			case b.rank == 0:
				return -1
			case a.rank != b.rank:
				return cmp.Compare(a.rank, b.rank)
			}
		}
		an, bn := math.IsNaN(a.excess), math.IsNaN(b.excess)
		if an || bn {
			switch {
			case an && bn:
				return 0
			case an:
				return 1
			}
			return -1
		}
		return cmp.Compare(a.excess, b.excess)
	})
	for i := range rows {
		rows[i].First, rows[i].Span = i == 0, len(rows)
		if rows[i].rank > 0 {
			rows[i].Rank = fmt.Sprint(rows[i].rank)
			if rows[i].Set {
				rows[i].Rank += " ≈"
			}
		} else if !math.IsNaN(rows[i].excess) {
			rows[i].Rank = "ref."
		}
	}
	if len(rows) > 0 {
		rows[0].Stats, rows[0].CDFig = rankingText(ps), cdFigure(ps)
	}
	return rows
}

// rankingText says what a point's ranking supports: the set indistinguishable from the
// best, the Friedman test and critical difference, and the smallest difference its tasks
// can detect (the median of its recipes' MDEs at the median of their paired tasks).
func rankingText(ps schemas.PointSummary) string {
	var set []string
	var mdes, pairs []float64
	var c0 *schemas.SamplerComparison
	ranked := 0
	byRank := slices.Clone(ps.Samplers)
	slices.SortStableFunc(byRank, func(a, b schemas.SamplerComparison) int { return cmp.Compare(a.Rank, b.Rank) })
	for i, c := range byRank {
		if c.Rank == 0 {
			continue
		}
		ranked++
		if c0 == nil {
			c0 = &byRank[i]
		}
		if c.InBestSet {
			set = append(set, c.Method)
		}
		if &byRank[i] == c0 { // the best: not compared with itself
			continue
		}
		if m := float64(c.MDE); !math.IsNaN(m) {
			mdes, pairs = append(mdes, m), append(pairs, float64(c.Pairs))
		} else if c.Pairs >= 2 {
			pairs = append(pairs, float64(c.Pairs)) // null: no difference detectable at its n
		}
	}
	if c0 == nil {
		return ""
	}
	text := fmt.Sprintf("Point %d (%s): the best is %s; indistinguishable from it (≈): {%s} (paired Wilcoxon against the best, Holm-corrected over the %d comparisons with it, p ≥ 0.05).",
		ps.PointID, ps.Params.Task, c0.Method, strings.Join(set, ", "), ranked-1)
	if cd := float64(c0.CriticalDifference); !math.IsNaN(cd) && c0.FriedmanTasks >= 2 {
		text += fmt.Sprintf(" Friedman test over the %d recipes on the %d tasks every one has: p = %s; Nemenyi critical difference %s average ranks (α = 0.05).",
			ranked, c0.FriedmanTasks, fmtP(float64(c0.FriedmanP)), fmtSig(cd, 3))
	}
	n := 0
	if len(pairs) > 0 {
		n = int(math.Round(prob.Median(pairs)))
	}
	switch {
	case n >= 2 && !verdict.Detectable(n, max(ranked-1, 1), verdict.RankAlpha):
		text += fmt.Sprintf(" At n = %d tasks the board cannot detect any difference from the best: the exact signed-rank test's smallest p there, 2/2^%d, exceeds α/(k−1) = 0.05/%d.",
			n, n, max(ranked-1, 1))
	case len(mdes) > 0:
		text += fmt.Sprintf(" At n = %d tasks the board can detect a difference of %s nats from the best (80%% power, family-wise α = 0.05, Bonferroni over the %d comparisons with the best).",
			n, fmtSig(prob.Median(mdes), 3), ranked-1)
	}
	return text
}

// bestOf is a point's best recipe: the first of rank 1 in the order of its samplers
// (verdict.Rank keeps that order among recipes of equal mean).
func bestOf(ps schemas.PointSummary) string {
	for _, c := range ps.Samplers {
		if c.Rank == 1 {
			return c.Method
		}
	}
	return ""
}

// rankedCount is the number of ranked recipes of a point.
func rankedCount(ps schemas.PointSummary) int {
	n := 0
	for _, c := range ps.Samplers {
		if c.Rank > 0 {
			n++
		}
	}
	return n
}

// cdFigure is a point's critical-difference diagram (empty when it cannot be drawn).
func cdFigure(ps schemas.PointSummary) template.HTML {
	var es []cdEntry
	cd := math.NaN()
	for _, c := range ps.Samplers {
		if c.Rank > 0 {
			es = append(es, cdEntry{name: c.Method, avgRank: float64(c.AvgRank), inSet: c.InBestSet})
			cd = float64(c.CriticalDifference)
		}
	}
	svg, err := cdDiagramSVG(fmt.Sprintf("point %d: %s", ps.PointID, ps.Params.Task), es, cd)
	if err != nil || svg == nil {
		return ""
	}
	return template.HTML(svg) //nolint:gosec // our own SVG
}

// frontierSVG is the leaderboard's figure: each approximate method's excess joint KL
// over exact jem (95% CI) against its CPU seconds per run, one panel per point.
func frontierSVG(rows []leaderRow, ms []string) (out template.HTML, err error) {
	type panel struct {
		id   int64
		task string
		rows []leaderRow
	}
	var panels []panel
	for _, r := range rows {
		if math.IsNaN(r.excess) || !(r.cpu > 0) || r.Method == methods.Yardstick() {
			continue
		}
		if len(panels) == 0 || panels[len(panels)-1].id != r.PointID {
			panels = append(panels, panel{id: r.PointID, task: r.Task})
		}
		panels[len(panels)-1].rows = append(panels[len(panels)-1].rows, r)
	}
	if len(panels) == 0 {
		return "", nil
	}
	const pw, ph = 300, 260
	defer func() { // a figure that cannot be drawn leaves the report without it, never fails the run
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("frontier: %v", r)
		}
	}()
	svg, err := toSVG(vg.Length(pw*len(panels)), ph, func(c draw.Canvas) {
		tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: 6}
		for i, pn := range panels {
			p := newPlot(fmt.Sprintf("point %d: %s", pn.id, pn.task), "CPU seconds per run", "excess joint KL over exact JEM (nats)")
			logAxis(&p.X)
			lo, hi := math.Inf(1), 0.0
			for _, r := range pn.rows {
				lo, hi = min(lo, r.cpu), max(hi, r.cpu)
			}
			p.X.Min, p.X.Max = lo/2, hi*2 // a log axis needs a positive range, one point or many
			for _, r := range pn.rows {
				col := methodColor(ms, r.Method)
				s, err := plotter.NewScatter(xys([]float64{r.cpu}, []float64{r.excess}))
				if err != nil {
					continue
				}
				s.GlyphStyle.Color, s.GlyphStyle.Shape, s.GlyphStyle.Radius = col, methodGlyph(ms, r.Method), 4
				p.Add(s)
				if !math.IsNaN(r.excessLo) {
					ci, err := plotter.NewLine(xys([]float64{r.cpu, r.cpu}, []float64{r.excessLo, r.excessHi}))
					if err == nil {
						ci.LineStyle = solid(col, 1)
						p.Add(ci)
					}
				}
				l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys([]float64{r.cpu}, []float64{r.excess}), Labels: []string{" " + r.Method}})
				if err == nil {
					l.TextStyle[0].Font.Size = 9
					l.TextStyle[0].Color = col
					p.Add(l)
				}
			}
			p.Add(&refLine{at: 0, LineStyle: dashed(colGrid, 1)})
			p.Draw(tiles.At(c, i, 0))
		}
	})
	if err != nil {
		return "", err
	}
	return template.HTML(svg), nil //nolint:gosec // our own SVG
}

var _ = template.Must(reportTemplate.New("leaderboard").Parse(`{{if .Leaderboard}}<h2>Leaderboard: which recipe learns the density</h2>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">task</th><th>rank</th><th class="l">method</th><th class="l">options</th><th>excess joint KL over exact JEM (nats)</th><th>95% CI</th><th>over the best (nats) [95% CI]</th><th>Holm p vs best</th><th>MDE (nats)</th><th>of which q(x)</th><th>mean joint KL</th><th>mean KL(p(y|x)‖q(y|x))</th><th>accuracy / Bayes</th><th>ECE</th><th>OOD AUROC log q(x) / ceiling</th><th>β*</th><th>joint KL at β*</th><th>CPU s per run</th></tr></thead>
<tbody>
{{range .Leaderboard}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td><td class="l" rowspan="{{.Span}}">{{.Task}}</td>{{end}}<td>{{.Rank}}</td><td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td class="params">{{.Options}}</td><td>{{.Excess}}</td><td>{{.CI}}</td><td>{{.OverBest}} {{.OverCI}}</td><td>{{.BestP}}</td><td>{{.MDE}}</td><td>{{.Marg}}</td><td>{{.KLJoint}}</td><td>{{.KLCond}}</td><td>{{.Acc}}</td><td>{{.ECE}}</td><td>{{.AUROC}}</td><td>{{.Beta}}</td><td>{{.KLBeta}}</td><td>{{.CPU}}</td></tr>
{{end}}</tbody>
</table></div>
<p>Per point (a task family), every method on the same tasks, draws and initial parameters, ranked by its mean excess joint KL(p‖q) over exact JEM on the same tasks (95% CI over the tasks; q(x)'s part beside it; 1 = best, exact JEM and jem-converged are references, ref.).
Each recipe is compared with the best recipe alone: its mean paired excess over the best's with a paired-bootstrap 95% CI, and a two-sided paired Wilcoxon test Holm-corrected over the comparisons with the best; ≈ marks the recipes indistinguishable from the best (Holm p ≥ 0.05; the best itself included).
MDE is the smallest difference from the best the point's tasks can detect: (z<sub>1−α/(2(k−1))</sub> + z<sub>0.8</sub>)·sd/√n, sd the spread of the recipe's paired differences to the best over its n tasks (80% power, Bonferroni over the k−1 comparisons).
The other columns are the method's own means over its converged runs: the joint KL, the conditional KL, accuracy against the Bayes classifier's, the expected calibration error, the OOD AUROC of log q(x) against the true density's (the ceiling),
the temperature diagnostic β* = argmin<sub>β</sub> KL(p‖q<sup>β</sup>/Z<sub>β</sub>) (1 for a correct fit; below 1: q too cold, above: too hot) with the joint KL at β* (what is left when the temperature is corrected), and the run's own CPU seconds of training (--timings; — without).</p>
{{range .Leaderboard}}{{if .Stats}}<p>{{.Stats}}</p>{{end}}{{if .CDFig}}<figure class="cd">{{.CDFig}}<figcaption><strong>Critical-difference diagram, point {{.PointID}}.</strong> Each recipe's average rank over the tasks every recipe has (Friedman; 1 = best, on the left; filled: indistinguishable from the best); the thick bars join recipes whose average ranks differ by less than the Nemenyi critical difference (CD, the scale bar at the top; α = 0.05), which that test cannot tell apart (Demšar 2006).</figcaption></figure>{{end}}{{end}}
{{if .Frontier}}<figure id="frontier">{{.Frontier}}<figcaption><strong>Excess KL against CPU cost.</strong> Each approximate method's mean excess joint KL over exact JEM (bar: 95% CI) against its mean CPU seconds per run; lower and further left is better.</figcaption></figure>{{end}}
{{end}}`))

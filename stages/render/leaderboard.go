package render

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// leaderRow is one method at one point of the leaderboard: its excess joint KL over
// exact jem on the same tasks (with 95% CI) and q(x)'s part, and the method's own
// means of the Z-free metrics, the temperature diagnostic and its CPU cost per run.
type leaderRow struct {
	First    bool
	Span     int
	PointID  int64
	Task     string
	Rank     string
	Method   string
	Options  string
	Excess   string
	CI       string
	Marg     string
	KLJoint  string
	KLCond   string
	Acc      string
	ECE      string
	AUROC    string
	Beta     string
	KLBeta   string
	CPU      string
	excess   float64
	cpu      float64
	excessLo float64
	excessHi float64
	rank     int // the recipe's rank group (0: not ranked)
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
			Excess: "—", CI: "—", Marg: "—", excess: math.NaN(), excessLo: math.NaN(), excessHi: math.NaN(),
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
			}
		}
		rows = append(rows, r)
	}
	// Ranked: the recipes by rank group, then the others with an excess (exact jem,
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
		} else if !math.IsNaN(rows[i].excess) {
			rows[i].Rank = "ref."
		}
	}
	return rows
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
<thead><tr><th class="l key">point</th><th class="l">task</th><th>rank</th><th class="l">method</th><th class="l">options</th><th>excess joint KL over exact JEM (nats)</th><th>95% CI</th><th>of which q(x)</th><th>mean joint KL</th><th>mean KL(p(y|x)‖q(y|x))</th><th>accuracy / Bayes</th><th>ECE</th><th>OOD AUROC log q(x) / ceiling</th><th>β*</th><th>joint KL at β*</th><th>CPU s per run</th></tr></thead>
<tbody>
{{range .Leaderboard}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td><td class="l" rowspan="{{.Span}}">{{.Task}}</td>{{end}}<td>{{.Rank}}</td><td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td class="params">{{.Options}}</td><td>{{.Excess}}</td><td>{{.CI}}</td><td>{{.Marg}}</td><td>{{.KLJoint}}</td><td>{{.KLCond}}</td><td>{{.Acc}}</td><td>{{.ECE}}</td><td>{{.AUROC}}</td><td>{{.Beta}}</td><td>{{.KLBeta}}</td><td>{{.CPU}}</td></tr>
{{end}}</tbody>
</table></div>
<p>Per point (a task family), every method on the same tasks, draws and initial parameters, ranked in groups by its excess joint KL(p‖q) over exact JEM on the same tasks (95% CI over the tasks; q(x)'s part beside it): recipes whose paired differences are not significant (Holm-corrected paired Wilcoxon tests, α = 0.05) share a rank; exact JEM and jem-converged are references (ref.).
The other columns are the method's own means over its converged runs: the joint KL, the conditional KL, accuracy against the Bayes classifier's, the expected calibration error, the OOD AUROC of log q(x) against the true density's (the ceiling),
the temperature diagnostic β* = argmin<sub>β</sub> KL(p‖q<sup>β</sup>/Z<sub>β</sub>) (1 for a correct fit; below 1: q too cold, above: too hot) with the joint KL at β* (what is left when the temperature is corrected), and the run's own CPU seconds of training (--timings; — without).</p>
{{if .Frontier}}<figure id="frontier">{{.Frontier}}<figcaption><strong>Excess KL against CPU cost.</strong> Each approximate method's mean excess joint KL over exact JEM (bar: 95% CI) against its mean CPU seconds per run; lower and further left is better.</figcaption></figure>{{end}}
{{end}}`))

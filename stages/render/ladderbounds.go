package render

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// The dimension ladder's rung without exact JEM: a task family whose model's Z is
// unknown (an image kind's CNN), so no method has an exact joint KL and no excess over
// exact JEM exists. Its rows carry instead a stochastic lower bound on the joint KL
// (kl_joint_lower, from forward annealed importance sampling, NaN where the task's AIS
// calibration on the truth was refused), the exact-in-expectation conditional KL and
// the Z-free metrics against the Bayes classifier and the true density. The rung is
// told by those columns, never by the kind's or a method's name: a point is on it when
// its rows have no joint KL and a calibration was attempted (isBoundsRow), and no method
// of its summary has an exact joint KL (hasExactKL). It shows from one dimension on.

// boundsFamily is one rung without exact JEM: a family's points at one or more
// dimensions, its figure and its table.
type boundsFamily struct {
	Name   string
	Dims   string
	Figure template.HTML
	Upper  bool   // some run has an upper bound (exact draws of its model): the table shows the column
	Note   string // the rows were cut to the first tasks of each point ("" when not)
	Rows   []boundsRow
}

// boundsRow is one method at one dimension of a rung without exact JEM: means over its
// converged runs (one a task), each "mean [95% CI]" (meanCI95).
type boundsRow struct {
	rungCell
	PointID  int64
	Method   string
	Options  string
	Tasks    string // converged runs, with the diverged ones beside
	Lower    string // joint KL ≥ …: the forward-AIS lower bound over the accepted tasks
	Accepted string // "k of n": the tasks whose AIS calibration on the truth was accepted
	Refused  string // why the others were refused (a hover title)
	Upper    string // joint KL ≤ … where the model has exact draws
	Marginal string // KL(p(x)‖q(x)) ≥ kl_joint_lower − kl_conditional
	Share    string // q(x)'s share of the joint, ≥ Σ(lower − conditional) / Σ lower
	Cond     string // KL(p(y|x)‖q(y|x))
	Acc      string // accuracy (Bayes)
	ECE      string // ece (calibration_error_true)
	AUROC    string // log q(x) (true p(x))
	ESS      string // the forward AIS's effective sample size
}

// isBoundsRow: a result row of a point without exact JEM (its joint KL is NaN) whose
// task's AIS calibration on the truth was run (accepted, or refused with a reason;
// kl_joint_lower is finite only where accepted). Other kinds' rows, and files written
// before these columns, read false and "" (and kl_joint_lower 0): never on the rung.
func isBoundsRow(r *schemas.ResultRow) bool {
	return math.IsNaN(r.KLJoint) && (r.AISAccepted || r.AISRefused != "")
}

// boundsFamilies are the rungs without exact JEM, from the result rows of the points
// that have them (none without rows: a report from summary.json alone), with the
// figures that could not be drawn as warnings. figureTables is Input.FigureTables.
func boundsFamilies(s schemas.Summary, rows []schemas.ResultRow, figureTables int, ms []string) ([]boundsFamily, []string) {
	type key struct {
		point  int64
		method string
	}
	runs := map[key][]*schemas.ResultRow{}
	on := map[int64]bool{}
	for i := range rows {
		r := &rows[i]
		if isBoundsRow(r) {
			on[r.PointID] = true
		}
		runs[key{r.PointID, r.Method}] = append(runs[key{r.PointID, r.Method}], r)
	}
	if len(on) == 0 {
		return nil, nil
	}
	ms = ladderMethods(s, ms)
	keep := func(ps schemas.PointSummary) bool { return on[ps.PointID] && !hasExactKL(ps) }
	var out []boundsFamily
	var warnings []string
	for _, r := range ladderRungs(s, keep, 1) {
		f, lines := boundsOf(r, func(point int64, method string) []*schemas.ResultRow { return runs[key{point, method}] })
		if figureTables > 0 && slices.ContainsFunc(r.points, func(ps schemas.PointSummary) bool { return ps.Tables > figureTables }) {
			f.Note = fmt.Sprintf("From the report's rows: the first %d tasks of each point (summary.json covers every task).", figureTables)
		}
		svg, err := ladderSVG(f.Name, boundsAxes, lines, ms)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the dimension ladder's figure of %s could not be drawn: %v", f.Name, err))
		}
		f.Figure = svg
		out = append(out, f)
	}
	return out, warnings
}

// boundsAxes are the bounds rung's figure's words (no dashed reference: the dashed
// lines are the methods' lower bounds).
var boundsAxes = ladderAxes{ylabel: "KL (nats)", none: "no value"}

// boundsOf is a rung's table and its figure's lines: per dimension (ascending) every
// method that ran, once per method and options (as ladderOf), from its runs' rows;
// per method and options a line of its conditional KL and, where some task's bound
// was accepted, a dashed line of its joint KL's lower bound.
func boundsOf(r ladderRung, runsOf func(point int64, method string) []*schemas.ResultRow) (boundsFamily, []*ladderLine) {
	pts, dims := rungSorted(r)
	f := boundsFamily{Name: r.name, Dims: dims}
	var cond, lower []*ladderLine
	seen := map[string]bool{}
	for _, ps := range pts {
		for _, m := range ps.Methods {
			opts := ladderOptions(ps.Params, m.Method)
			k := fmt.Sprint(ps.Dimension, "\x00", m.Method, "\x00", opts)
			rs := runsOf(ps.PointID, m.Method)
			if seen[k] || len(rs) == 0 {
				continue
			}
			seen[k] = true
			row, c, l := boundsStats(rs)
			row.D, row.PointID, row.Method, row.Options = ps.Dimension, ps.PointID, m.Method, opts
			f.Upper = f.Upper || row.Upper != "—"
			f.Rows = append(f.Rows, row)
			i := slices.IndexFunc(cond, func(l *ladderLine) bool { return l.method == m.Method && l.options == opts })
			if i < 0 {
				cond = append(cond, &ladderLine{method: m.Method, options: opts})
				lower = append(lower, &ladderLine{method: m.Method, options: opts, dashed: true})
				i = len(cond) - 1
			}
			c.d, l.d = float64(ps.Dimension), float64(ps.Dimension)
			cond[i].pts = append(cond[i].pts, c)
			lower[i].pts = append(lower[i].pts, l)
		}
	}
	markSpans(f.Rows)
	labelLines(r.points, cond)
	var lines []*ladderLine
	for i, c := range cond {
		lines = append(lines, c)
		c.label += ": KL(p(y|x)‖q(y|x))"
		if slices.ContainsFunc(lower[i].pts, func(p ladderPoint) bool { return !math.IsNaN(p.v) }) {
			lower[i].label = strings.TrimSuffix(c.label, ": KL(p(y|x)‖q(y|x))") + ": joint KL ≥"
			lines = append(lines, lower[i])
		}
	}
	return f, lines
}

// boundsStats are a method's cells at one point from its runs' rows (the converged
// ones: a diverged run is counted, not measured), and its figure points (the
// conditional KL's and the joint KL's lower bound's; d unset).
func boundsStats(rs []*schemas.ResultRow) (boundsRow, ladderPoint, ladderPoint) {
	var ok []*schemas.ResultRow
	for _, r := range rs {
		if !r.Diverged {
			ok = append(ok, r)
		}
	}
	col := func(f func(*schemas.ResultRow) float64) []float64 {
		out := make([]float64, len(ok))
		for i, r := range ok {
			out[i] = f(r)
		}
		return out
	}
	ci := func(vs, ses []float64) (string, ladderPoint) {
		m, lo, hi := meanCI95(vs, ses)
		if math.IsNaN(m) {
			return "—", ladderPoint{v: m, lo: lo, hi: hi, ref: math.NaN()}
		}
		return fmtSig(m, 3) + " " + fmtRange(lo, hi, func(v float64) string { return fmtSig(v, 3) }), ladderPoint{v: m, lo: lo, hi: hi, ref: math.NaN()}
	}
	mean := func(f func(*schemas.ResultRow) float64) float64 { m, _, _ := meanCI95(col(f), nil); return m }
	row := boundsRow{Tasks: fmt.Sprint(len(ok))}
	if d := len(rs) - len(ok); d > 0 {
		row.Tasks += fmt.Sprintf(" (%d diverged)", d)
	}

	lowers, lowerSEs := col(func(r *schemas.ResultRow) float64 { return r.KLJointLower }), col(func(r *schemas.ResultRow) float64 { return r.KLJointLowerSE })
	var lp ladderPoint
	row.Lower, lp = ci(lowers, lowerSEs)
	accepted, measured := 0, 0
	var reasons []string
	for _, r := range ok {
		if r.AISAccepted {
			accepted++
		}
		if finite(r.KLJointLower) {
			measured++
		}
		if r.AISRefused != "" && !slices.Contains(reasons, r.AISRefused) {
			reasons = append(reasons, r.AISRefused)
		}
	}
	row.Accepted = fmt.Sprintf("%d of %d", accepted, len(ok))
	if measured != accepted {
		row.Accepted += fmt.Sprintf(" (%d measured)", measured)
	}
	row.Refused = strings.Join(reasons, "; ")
	row.Upper, _ = ci(col(func(r *schemas.ResultRow) float64 { return r.KLJointUpper }), nil)

	// q(x)'s part: KL(p(x,y)‖q(x,y)) = KL(p(x)‖q(x)) + E_p KL(p(y|x)‖q(y|x)), the
	// conditional exact in expectation, so lower − conditional bounds q(x)'s part below,
	// task by task; its share of the joint, Σ part / Σ lower, bounds q(x)'s share below
	// (the share KLx/(KLx + C) grows with KLx).
	marg, margSE := make([]float64, len(ok)), make([]float64, len(ok))
	var sumMarg, sumLower float64
	for i, r := range ok {
		marg[i], margSE[i] = math.NaN(), math.NaN()
		if finite(r.KLJointLower) && finite(r.KLConditional) {
			marg[i] = r.KLJointLower - r.KLConditional
			margSE[i] = math.Hypot(r.KLJointLowerSE, r.KLConditionalSE)
			sumMarg += marg[i]
			sumLower += r.KLJointLower
		}
	}
	row.Marginal, _ = ci(marg, margSE)
	row.Share = "—"
	if sumLower > 0 {
		row.Share = fmtPct(sumMarg / sumLower)
	}
	var cp ladderPoint
	row.Cond, cp = ci(col(func(r *schemas.ResultRow) float64 { return r.KLConditional }), col(func(r *schemas.ResultRow) float64 { return r.KLConditionalSE }))

	row.Acc = fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.Accuracy }), 3) + " (" + fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.BayesAccuracy }), 3) + ")"
	row.ECE = fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.ECE }), 3) + " (" + fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.CalibrationErrorTrue }), 3) + ")"
	row.AUROC = fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.AUROCPx }), 3) + " (" + fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.AUROCTruePx }), 3) + ")"
	row.ESS = fmtSig(mean(func(r *schemas.ResultRow) float64 { return r.AISESS }), 3)
	return row, cp, lp
}

var _ = template.Must(reportTemplate.New("ladderbounds").Parse(`{{if .LadderBounds}}<h2>Dimension ladder without exact JEM: bounds on the joint KL, q(x)'s share and the Z-free metrics against D</h2>
<p>Per task family whose model's normaliser Z is unknown (no exact JEM, so no excess over it), each method against the truth itself, at each dimension D of x (from one D on).
The joint KL(p‖q) is a <strong>lower bound</strong>: log Z<sub>θ</sub> from forward annealed importance sampling (AIS) is a stochastic lower bound on log Z<sub>θ</sub>, so the KL it gives is a stochastic lower bound on the KL, taken only on the tasks whose AIS schedule passed its calibration on the truth (log Z = 0 run both ways; "k of n" accepted; hover for why the others were refused).
The chain rule KL(p(x,y)‖q(x,y)) = KL(p(x)‖q(x)) + E<sub>p</sub> KL(p(y|x)‖q(y|x)), with the conditional KL exact in expectation (Z-free), makes the joint's lower bound minus the conditional KL a lower bound on q(x)'s part, and that part over the joint's bound a lower bound on q(x)'s share of the joint.
Beside them the Z-free metrics: accuracy against the Bayes classifier's, the ECE (against the true p(y|x) in brackets), the OOD AUROC of log q(x) against the true density's (the ceiling) and the forward AIS's effective sample size.
Every value is a mean over the method's converged runs (one a task) with its 95% CI: Student's t over the tasks, or ± 1.96 of the one task's own Monte Carlo SE.</p>
{{range .LadderBounds}}<h3>{{.Name}} <span class="meta">(D = {{.Dims}}; no exact JEM)</span></h3>
{{if .Figure}}<figure class="ladder">{{.Figure}}<figcaption><strong>Conditional KL and the joint KL's lower bound against D, {{.Name}}.</strong> Solid, filled: KL(p(y|x)‖q(y|x)); dashed, hollow: the forward-AIS lower bound on the joint KL(p‖q), where a task's calibration was accepted (bars: 95% CI; a value at or below 0 on the bottom edge).</figcaption></figure>
{{end}}{{if .Note}}<p class="meta">{{.Note}}</p>
{{end}}<div class="scroll"><table>
<thead><tr><th class="key">D</th><th class="l">method</th><th class="l">options</th><th>tasks</th><th>joint KL(p‖q) ≥ (lower bound, nats) [95% CI]</th><th>calibration accepted</th>{{if .Upper}}<th>joint KL ≤ (upper bound) [95% CI]</th>{{end}}<th>q(x) part KL(p(x)‖q(x)) ≥ [95% CI]</th><th>q(x) share of the joint ≥</th><th>KL(p(y|x)‖q(y|x)) [95% CI]</th><th>accuracy (Bayes)</th><th>ECE (vs true p(y|x))</th><th>OOD AUROC log q(x) (true p(x))</th><th>AIS ESS</th></tr></thead>
<tbody>
{{$upper := .Upper}}{{range .Rows}}<tr>{{if .First}}<td class="key" rowspan="{{.Span}}">{{.D}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td class="params">{{.Options}}</td><td>{{.Tasks}}</td><td>{{.Lower}}</td><td{{if .Refused}} title="{{.Refused}}"{{end}}>{{.Accepted}}</td>{{if $upper}}<td>{{.Upper}}</td>{{end}}<td>{{.Marginal}}</td><td>{{.Share}}</td><td>{{.Cond}}</td><td>{{.Acc}}</td><td>{{.ECE}}</td><td>{{.AUROC}}</td><td>{{.ESS}}</td></tr>
{{end}}</tbody>
</table></div>
{{end}}{{end}}`))

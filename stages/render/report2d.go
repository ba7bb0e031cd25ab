package render

import (
	"fmt"
	"html/template"
	"math"
	"reflect"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

// samplerRow is one sampler method at one point in the sampler-against-exact-JEM table.
type samplerRow struct {
	First    bool // first sampler of its point: carries the point cells
	Span     int
	PointID  int64
	Task     string
	Method   string
	Options  string // the sampler's options at the point
	Pairs    string // "pairs (excluded)"
	Exact    string
	Sampler  string
	Excess   string
	CI       string
	Grade    string // the verdict's grade in words (jem-converged: reference)
	Bad      bool   // the grade fails
	Good     bool   // the grade matches
	Unstable string // "unstable of runs"
	Marg     string
	MargCI   string
	Worse    string
	P        string
	// OverConv is the recipe's excess over the converged yardstick with its CI (on
	// jem-converged's own row, exact jem's excess over it), "—" without it; Below flags
	// a recipe below the converged yardstick (suspect, not a win).
	OverConv string
	Below    bool
}

// samplerRows are a point's rows of the sampler table, one per sampler method.
func samplerRows(ps schemas.PointSummary) []samplerRow {
	task := ps.Params.Task
	if task == "" {
		task = schemas.TaskTable
	}
	var out []samplerRow
	for i, c := range ps.Samplers {
		out = append(out, samplerRow{
			First: i == 0, Span: len(ps.Samplers), PointID: ps.PointID, Task: task,
			Method: c.Method, Options: samplerOptions(ps.Params, c.Method),
			Pairs:    fmt.Sprintf("%d (%d)", c.Pairs, c.Excluded),
			Exact:    fmtSig(c.MeanExact, 3),
			Sampler:  fmtSig(c.MeanSampler, 3),
			Excess:   fmtSig(c.Excess, 3),
			CI:       fmtRange(c.ExcessCILow, c.ExcessCIHigh, func(v float64) string { return fmtSig(v, 3) }),
			Grade:    gradeText(c),
			Bad:      !c.Reference && (c.Grade == verdict.GradeWorse || c.Grade == verdict.GradeInfinite),
			Good:     !c.Reference && c.Grade == verdict.GradeMatches,
			Unstable: fmt.Sprintf("%d of %d", c.Unstable, c.Runs),
			Marg:     fmtSig(c.MarginalExcess, 3),
			MargCI:   fmtRange(c.MarginalCILow, c.MarginalCIHigh, func(v float64) string { return fmtSig(v, 3) }),
			Worse:    fmtPct(c.WorseShare),
			P:        fmtP(c.WilcoxonP),
			OverConv: overConvergedText(c),
			Below:    c.BelowConverged,
		})
	}
	return out
}

// samplerOptions writes a method's own options at a point (the method table's
// Options), "—" for a method without any.
func samplerOptions(g schemas.Grid, method string) string {
	if m, ok := methods.Lookup(method); ok && len(m.Options) > 0 {
		return schemas.Settings(g, m.Options)
	}
	return "—"
}

// samplerParams is the methods' options a point's parameters show (those set, for
// the point's methods: Resolve zeroes the others), "" when it sets none.
func samplerParams(p schemas.Grid) string {
	var keys []string
	for _, a := range schemas.AxisDefs {
		k := a.Key()
		if a.IsOption() { // a method's own option: set only on a point that trains it
			if _, ok := p.Options[k]; ok {
				keys = append(keys, k)
			}
			continue
		}
		if len(methods.Using(k)) > 0 && !reflect.ValueOf(a.Field.Get(&p)).IsZero() {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return "; " + schemas.Settings(p, keys)
}

// fmtParams2D writes a 2-D point's grid values.
func fmtParams2D(p schemas.Grid) string {
	batch := "full"
	if p.BatchSize > 0 {
		batch = fmt.Sprint(p.BatchSize)
	}
	return fmt.Sprintf("task=%s, grid=%d×%d over [−%s, %s]², K=%d, N=%d, lr=%s, steps=%d, batch=%s, model=%s, p(x) weight=%s, train grid=%d, replicate=%d",
		p.Task, p.GridCells, p.GridCells, fmtNum(p.Box), fmtNum(p.Box), p.Classes, p.Samples, fmtNum(p.LR), p.Steps, batch, p.Model,
		fmtNum(p.PxWeight), p.TrainGrid, p.Replicate) + samplerParams(p)
}

// fmtTimes prints a ratio as a multiple; NaN (a ratio that does not exist) is a dash.
func fmtTimes(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtSig(v, 3) + "×"
}

// splitFigures separates the 2-D task figures (their own section) from the others.
func splitFigures(figs []figure) (general, twoD []figure) {
	for _, f := range figs {
		if strings.HasPrefix(f.Name, figTask2DPrefix) || strings.HasPrefix(f.Name, figSamplesPrefix) || strings.HasPrefix(f.Name, figCurvesPrefix) ||
			strings.HasPrefix(f.Name, figReliabilityPrefix) || strings.HasPrefix(f.Name, figOODPrefix) {
			twoD = append(twoD, f)
		} else {
			general = append(general, f)
		}
	}
	return general, twoD
}

// The report's sampler table and 2-D tasks section, called from reportTemplate.
var _ = template.Must(reportTemplate.New("samplers").Parse(`{{if .Samplers}}<section id="samplers"><h2>Sampler against exact JEM</h2>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">task</th><th class="l">sampler method</th><th class="l">sampler options</th><th>pairs (excluded)</th><th>mean KL exact JEM</th><th>mean KL sampler</th><th>excess KL (nats)</th><th>95% CI</th><th class="l">grade</th><th>unstable runs</th><th>q(x) excess KL (nats)</th><th>95% CI</th><th>share of tasks worse</th><th>Wilcoxon p (two-sided)</th><th>excess over the converged yardstick (nats) [95% CI]</th></tr></thead>
<tbody>
{{range .Samplers}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td><td class="l" rowspan="{{.Span}}">{{.Task}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td class="params">{{.Options}}</td><td>{{.Pairs}}</td><td>{{.Exact}}</td><td>{{.Sampler}}</td><td>{{.Excess}}</td><td>{{.CI}}</td><td class="l"><span class="{{if .Bad}}bad-cell{{else if .Good}}ok-cell{{end}}">{{.Grade}}</span></td><td>{{.Unstable}}</td><td>{{.Marg}}</td><td>{{.MargCI}}</td><td>{{.Worse}}</td><td>{{.P}}</td><td class="l"><span class="{{if .Below}}bad-cell{{end}}">{{.OverConv}}</span></td></tr>
{{end}}</tbody>
</table></div>
<p>A sampler method trains the JEM loss with the gradient of log Z estimated from samples (sgld: SGLD chains from a replay buffer; pcd: persistent Markov chains), where exact JEM computes it. Over the tasks (tables) where both its run and exact JEM's converged
(pairs; excluded: either diverged or is missing): the mean joint KL(p‖q) of each, the sampler's excess KL<sub>sampler</sub> − KL<sub>jem</sub> (positive when the sampler is worse) with its 95% CI,
its grade in nats (see the bands under the verdict; jem-converged, exact JEM on full batches, is a reference shown beside the recipes and never judged), the runs flagged unstable (kept in the means), the same excess for the marginal KL(p(x)‖q(x)), the share of tasks where the sampler's KL is higher, and the two-sided Wilcoxon signed-rank test of the paired differences.
The last column is the excess over the converged yardstick: jem-converged, trained until its best held-out NLL improves by less than a stated tolerance over the last fifth of its checks, up to a cap (a truth-free rule: its numbers are in the protocol line), on the tasks both ran; on jem-converged's own row, exact JEM's excess at the shared budget over it (how far the verdict's yardstick is from converged). A recipe whose CI there lies below 0 is flagged “below”: suspect, never a win.</p></section>
{{end}}`))

var _ = template.Must(reportTemplate.New("tasks2d").Parse(`{{if .Show2D}}<section id="tasks2d"><h2>2-D tasks</h2>
<p>A 2-D task is a continuous joint p(x, y) over the plane (a Gaussian mixture, two moons or circles) with K classes. Its KLs are exact on the evaluation grid:
p and every learned q(x, y) = exp f(x)[y] / Z are normalised over the G×G cells of the box [−b, b]² and the K classes. Exact JEM (jem) computes Z on its training grid;
a sampler (sgld) replaces it by SGLD samples from a replay buffer. The tasks have no add-½ reference and no floor, so the error split and the floor columns do not apply to them.</p>
{{if .Claims}}<h3>What the paper claims / what we measured</h3>
<ul class="claims">
{{range .Claims}}<li><strong>Point {{.PointID}}, {{.Promise}}:</strong> {{.Claim}}; here {{.Measured}}</li>
{{end}}</ul>
{{end}}{{if .Figures2D}}<details class="section" id="figures2d"><summary><strong>{{len .Figures2D}} 2-D task figure(s)</strong>: truth against each method, training curves, calibration, OOD scores, samples</summary>
{{range .Figures2D}}<figure id="{{.Name}}">
<img src="{{.File}}" alt="{{.Title}}" loading="lazy">
<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption>
</figure>
{{end}}</details>
{{else}}<p>No 2-D task figures: the run sent no learned grids or curves.</p>
{{end}}</section>{{end}}`))

// overConvergedText is a comparison's excess over the converged yardstick with its
// 95% CI for the sampler table: the recipe's, or on jem-converged's own row exact
// jem's ("jem: …"), flagged when below it; "—" without it.
func overConvergedText(c schemas.SamplerComparison) string {
	f := func(v float64) string { return fmtSig(v, 3) }
	switch {
	case !math.IsNaN(float64(c.JemOverConverged)):
		return "jem: " + f(float64(c.JemOverConverged)) + " " + fmtRange(float64(c.JemOverConvergedLo), float64(c.JemOverConvergedHi), f)
	case math.IsNaN(float64(c.OverConverged)):
		return "—"
	}
	s := f(float64(c.OverConverged)) + " " + fmtRange(float64(c.OverConvergedLo), float64(c.OverConvergedHi), f)
	if c.BelowConverged {
		s += ": below (suspect, not a win)"
	}
	return s
}

// gradeText is a comparison's grade in words for the sampler table.
func gradeText(c schemas.SamplerComparison) string {
	if c.Reference {
		return "reference (not judged)"
	}
	switch c.Grade {
	case "":
		return "—"
	case verdict.GradeMatches:
		return "matches (within " + fmtSig(c.MatchesWithin, 3) + " nats)"
	case verdict.GradeClose:
		return fmt.Sprintf("within %g nat", verdict.BandClose)
	case verdict.GradeShort:
		return fmt.Sprintf("within %g nat", verdict.BandFar)
	case verdict.GradeWorse:
		return fmt.Sprintf("worse than %g nat: fails", verdict.BandFar)
	case verdict.GradeInfinite:
		return "infinite KL: fails"
	case verdict.GradeNone:
		return "no pair"
	}
	return c.Grade
}

package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

type reportView struct {
	Title       string
	Pipeline    string
	Seed        uint64
	NPoints     int
	NRuns       int
	Holds       bool
	Decided     bool
	HasVerdict  bool
	Reason      string
	Varying     string
	PointRows   []pointRow
	OpenPoints  bool
	Comparisons []comparisonRow
	Notes       []string
	Warnings    []string
	Figures     []figure
	ConfigJSON  string
}

type pointRow struct {
	First    bool // first method of its point: carries the point cells
	Span     int
	PointID  int64
	Params   string
	Tables   int
	Holds    bool
	Verdict  string
	Method   string
	Runs     int
	Diverged int
	Joint    [4]string // mean, median, p10, p90
	Marginal [2]string // mean, median
	Cond     [2]string
	Floor    string
	Ratio    string
	Acc      string
	Bayes    string
	Emp      string
}

type comparisonRow struct {
	PointID  int64
	Params   string
	Pairs    int
	WinShare string
	MeanDiff string
	CI       string
	W, Z, P  string
	Ratio    string
	Holds    bool
	Verdict  string
}

func renderHTML(in Input, d *data, figs []figure, warnings []string) ([]byte, error) {
	s := in.Summary
	v := reportView{
		Title:      in.Title,
		Pipeline:   s.Pipeline,
		Seed:       s.Seed,
		NPoints:    len(s.Points),
		NRuns:      len(in.Results),
		Holds:      s.Verdict.Holds,
		Decided:    s.Verdict.Decided,
		HasVerdict: s.Verdict.Reason != "" || len(s.Points) > 0,
		Reason:     s.Verdict.Reason,
		Figures:    figs,
		Warnings:   warnings,
		OpenPoints: len(s.Points) <= maxPointTableRows,
	}
	if v.Title == "" {
		v.Title = "jemcheck report"
	}
	var vary []string
	for _, ax := range d.varying {
		vary = append(vary, fmt.Sprintf("%s (%d values)", ax.label, len(ax.values)))
	}
	v.Varying = strings.Join(vary, ", ")

	for _, ps := range s.Points {
		params := fmtParams(ps.Params)
		verdict := verdictText(ps.Verdict)
		for i, m := range ps.Methods {
			r := pointRow{
				First: i == 0, Span: len(ps.Methods), PointID: ps.PointID, Params: params, Tables: ps.Tables,
				Holds: ps.Verdict.Holds, Verdict: verdict,
				Method: m.Method, Runs: m.Runs, Diverged: m.Diverged,
				Joint:    [4]string{fmtSig(m.KLJoint.Mean, 3), fmtSig(m.KLJoint.Median, 3), fmtSig(m.KLJoint.P10, 3), fmtSig(m.KLJoint.P90, 3)},
				Marginal: [2]string{fmtSig(m.KLMarginal.Mean, 3), fmtSig(m.KLMarginal.Median, 3)},
				Cond:     [2]string{fmtSig(m.KLConditional.Mean, 3), fmtSig(m.KLConditional.Median, 3)},
				Floor:    fmtSig(ps.Floor, 3),
				Ratio:    fmtSig(m.FloorRatio, 3) + "×",
				Acc:      fmtPct(m.Accuracy.Mean),
				Bayes:    fmtPct(m.BayesAccuracy.Mean),
				Emp:      fmtSig(m.KLEmpirical.Mean, 3),
			}
			v.PointRows = append(v.PointRows, r)
		}
		if len(ps.Methods) == 0 {
			v.PointRows = append(v.PointRows, pointRow{First: true, Span: 1, PointID: ps.PointID, Params: params,
				Tables: ps.Tables, Holds: ps.Verdict.Holds, Verdict: verdict, Method: "—"})
		}
		if c := ps.Comparison; c != nil {
			v.Comparisons = append(v.Comparisons, comparisonRow{
				PointID:  ps.PointID,
				Params:   params,
				Pairs:    c.Pairs,
				WinShare: fmtPct(c.JEMWinShare),
				MeanDiff: fmtSig(c.MeanDiff, 3),
				CI:       "[" + fmtSig(c.DiffCILow, 3) + ", " + fmtSig(c.DiffCIHigh, 3) + "]",
				W:        fmtSig(c.WilcoxonW, 6),
				Z:        fmtSig(c.WilcoxonZ, 3),
				P:        fmtP(c.WilcoxonP),
				Ratio:    fmtSig(c.BaselineToJEM, 3) + "×",
				Holds:    ps.Verdict.Holds,
				Verdict:  verdict,
			})
		}
	}

	for _, m := range d.methods {
		c := d.counts[m]
		if c.diverged+c.nonFinite+c.clamped == 0 {
			continue
		}
		v.Notes = append(v.Notes, fmt.Sprintf("%s: %d of %d runs diverged, %d had a non-finite joint KL, %d joint KL values ≤ %s were clamped to it on log axes.",
			m, c.diverged, c.total, c.nonFinite, c.clamped, fmtNum(klEpsilon)))
	}

	var cfg bytes.Buffer
	enc := json.NewEncoder(&cfg)
	enc.SetEscapeHTML(false) // the template escapes it
	enc.SetIndent("", "  ")
	conf := in.Config
	if raw, ok := conf.(json.RawMessage); ok {
		// Already encoded, typically by json.Marshal, which escapes <, > and & as
		// \u003c, \u003e and \u0026; the template escapes them again, so undo the first.
		conf = json.RawMessage(unescapeHTML(raw))
	}
	if err := enc.Encode(conf); err != nil {
		v.ConfigJSON = "configuration could not be encoded as JSON: " + err.Error()
	} else {
		v.ConfigJSON = strings.TrimSuffix(cfg.String(), "\n")
	}

	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("render: report template: %w", err)
	}
	return buf.Bytes(), nil
}

// verdictText is a point's verdict for the tables: its reason as it is when it already
// says the outcome (it starts with HOLDS, FAILS or undecided, as stages writes it),
// otherwise "holds" or "does not hold", then the reason.
func verdictText(v schemas.Verdict) string {
	word, _, _ := strings.Cut(strings.TrimSpace(v.Reason), ":")
	switch strings.ToLower(word) {
	case "holds", "fails", "undecided":
		return v.Reason
	}
	out := "does not hold"
	if v.Holds {
		out = "holds"
	}
	if v.Reason != "" {
		out += ": " + v.Reason
	}
	return out
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes of JSON text back into <, >
// and & (all valid inside JSON strings); every other escape, an escaped backslash
// followed by "u003c" included, is kept as it is.
func unescapeHTML(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			out = append(out, raw[i])
			continue
		}
		if raw[i+1] == 'u' && i+6 <= len(raw) {
			switch strings.ToLower(string(raw[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, raw[i], raw[i+1]), i+1 // any other escape, kept whole
	}
	return out
}

func fmtPct(v float64) string {
	if !finite(v) {
		return fmtSig(v, 3)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// fmtParams writes a point's grid values.
func fmtParams(p schemas.PointParams) string {
	batch := "full"
	if p.BatchSize > 0 {
		batch = fmt.Sprint(p.BatchSize)
	}
	return fmt.Sprintf("X×K=%d×%d, N=%d, lr=%s, steps=%d, batch=%s, model=%s, encoding=%s, generator=%s, p(x) weight=%s, replicate=%d",
		p.XValues, p.Classes, p.Samples, fmtNum(p.LR), p.Steps, batch, p.Model, p.Encoding, p.Generator, fmtNum(p.PxWeight), p.Replicate)
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1.5em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.meta { color: #666; margin-top: 0; }
.verdict { font-size: 1.25em; padding: 0.8em 1em; border-radius: 6px; margin: 1.2em 0; border-left: 8px solid; }
.verdict.ok { background: #e6f4ea; border-color: #1e8e3e; color: #0d5223; }
.verdict.bad { background: #fce8e6; border-color: #c5221f; color: #7a1210; }
.verdict.undecided { background: #fef7e0; border-color: #b06000; color: #5c3300; }
.verdict .label { font-weight: 700; margin-right: 0.5em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.76em; margin: 0.6em 0; line-height: 1.3; }
th, td { border: 1px solid #ddd; padding: 0.22em 0.35em; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; white-space: normal; vertical-align: bottom; }
td { vertical-align: top; }
td.l, th.l { text-align: left; }
th[colspan] { text-align: center; }
td.key, th.key { position: sticky; left: 0; z-index: 1; background: #fff; }
th.key { background: #f4f4f4; }
td.params { white-space: normal; min-width: 7em; max-width: 16em; text-align: left; color: #444; }
td.verdict-text { white-space: normal; min-width: 14em; text-align: left; }
@media print {
  @page { size: A4 landscape; margin: 1cm; }
  body { max-width: none; margin: 0; padding: 0; }
  .scroll { overflow: visible; }
  table { font-size: 6.5pt; }
  td.key, th.key { position: static; }
  figure { break-inside: avoid; }
}
.ok-cell { color: #1e8e3e; font-weight: 600; }
.bad-cell { color: #c5221f; font-weight: 600; }
.method-baseline { color: #d62728; font-weight: 600; }
.method-jem { color: #1f77b4; font-weight: 600; }
.method-oracle { color: #2ca02c; font-weight: 600; }
figure { margin: 2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.92em; color: #333; max-width: 60em; margin-top: 0.4em; }
pre { background: #f7f7f7; border: 1px solid #e3e3e3; padding: 1em; overflow-x: auto; font-size: 0.85em; }
.notes li, .warnings li { font-size: 0.92em; }
.warnings { color: #a34700; }
dl.howto dt { font-weight: 600; }
dl.howto dd { margin: 0 0 0.5em 1.5em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">pipeline {{if .Pipeline}}{{.Pipeline}}{{else}}—{{end}} · seed {{.Seed}} · {{.NPoints}} grid point(s) · {{.NRuns}} run(s){{if .Varying}} · varying: {{.Varying}}{{end}}</p>
{{if .HasVerdict}}<div class="verdict {{if .Holds}}ok{{else if .Decided}}bad{{else}}undecided{{end}}"><span class="label">{{if .Holds}}✔ The JEM claim holds.{{else if .Decided}}✘ The JEM claim does not hold.{{else}}? Undecided: no verdict.{{end}}</span>{{.Reason}}</div>
{{else}}<div class="verdict bad"><span class="label">No verdict:</span>the summary has no grid points.</div>
{{end}}
<p>JEM (Grathwohl et al. 2020) claims that a classifier's logits f(x)[y], read as negative energies, define a joint q(x,y) = exp f(x)[y] / Z.
Here a model is trained on N samples of a known table p(x,y) with cross-entropy (<span class="method-baseline">baseline</span>: only p(y|x) is fitted, the joint is arbitrary),
with the exact JEM joint likelihood (<span class="method-jem">jem</span>), and with the JEM loss on the true table (<span class="method-oracle">oracle</span>: the model family's approximation floor).
The claim holds when JEM's joint KL(p‖q) is near the statistical floor (X·K−1)/(2N) — the expected KL of the empirical table itself — and the baseline's is not.</p>

<h2>Summary per grid point and method</h2>
<details{{if .OpenPoints}} open{{end}}><summary>{{len .PointRows}} row(s); KL values in nats over converged runs</summary>
<div class="scroll"><table>
<thead>
<tr><th class="l key" rowspan="2">point</th><th class="l" rowspan="2">parameters</th><th rowspan="2">tables</th><th class="l" rowspan="2">method</th><th rowspan="2">runs</th><th rowspan="2">diverged</th>
<th colspan="4">joint KL</th><th colspan="2">marginal KL p(x)</th><th colspan="2">conditional KL p(y|x)</th><th rowspan="2">floor</th><th rowspan="2">mean joint / floor</th><th rowspan="2">accuracy</th><th rowspan="2">Bayes accuracy</th><th rowspan="2">empirical KL</th></tr>
<tr><th>mean</th><th>median</th><th>p10</th><th>p90</th><th>mean</th><th>median</th><th>mean</th><th>median</th></tr>
</thead>
<tbody>
{{range .PointRows}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}" title="{{.Verdict}}"><span class="{{if .Holds}}ok-cell{{else}}bad-cell{{end}}">{{.PointID}} {{if .Holds}}✔{{else}}✘{{end}}</span></td><td class="params" rowspan="{{.Span}}">{{.Params}}</td><td rowspan="{{.Span}}">{{.Tables}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.Runs}}</td><td>{{.Diverged}}</td><td>{{index .Joint 0}}</td><td>{{index .Joint 1}}</td><td>{{index .Joint 2}}</td><td>{{index .Joint 3}}</td><td>{{index .Marginal 0}}</td><td>{{index .Marginal 1}}</td><td>{{index .Cond 0}}</td><td>{{index .Cond 1}}</td><td>{{.Floor}}</td><td>{{.Ratio}}</td><td>{{.Acc}}</td><td>{{.Bayes}}</td><td>{{.Emp}}</td></tr>
{{end}}</tbody>
</table></div></details>
<p>“mean joint / floor” near 1× means the method's joint is as good as N samples allow; the empirical KL is the measured KL between the true and the empirical tables (its expectation is the floor).
Accuracy is the learned classifier's; Bayes accuracy is that of the Bayes classifier argmax p(y|x), the best any classifier can do.</p>

<h2>JEM vs baseline, paired by table</h2>
{{if .Comparisons}}<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">parameters</th><th>pairs</th><th>JEM win share</th><th>mean KL<sub>baseline</sub> − KL<sub>jem</sub></th><th>95% bootstrap CI</th><th>Wilcoxon W<sup>+</sup></th><th>z</th><th>p (two-sided)</th><th>baseline / JEM</th><th class="l">verdict</th></tr></thead>
<tbody>
{{range .Comparisons}}<tr><td class="l key">{{.PointID}}</td><td class="params">{{.Params}}</td><td>{{.Pairs}}</td><td>{{.WinShare}}</td><td>{{.MeanDiff}}</td><td>{{.CI}}</td><td>{{.W}}</td><td>{{.Z}}</td><td>{{.P}}</td><td>{{.Ratio}}</td><td class="verdict-text"><span class="{{if .Holds}}ok-cell{{else}}bad-cell{{end}}">{{.Verdict}}</span></td></tr>
{{end}}</tbody>
</table></div>
<p>Over the tables where both runs converged: the win share is the share of tables where JEM's joint KL is lower; the mean difference is positive when JEM is better, with a 95% bootstrap confidence interval;
the Wilcoxon signed-rank test asks whether the paired differences are centred on zero (W<sup>+</sup> sums the ranks of the tables JEM wins).</p>
{{else}}<p>No paired comparison: the baseline and JEM did not both run.</p>
{{end}}
{{if .Notes}}<h3>Data notes</h3><ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Warnings}}<h3>Warnings</h3><ul class="warnings">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>Figures</h2>
<dl class="howto">
<dt>Reading the log axes</dt><dd>KL values span orders of magnitude, so they are drawn on log axes; a method at the dashed floor line fits the joint as well as N samples allow.</dd>
</dl>
{{range .Figures}}<figure id="{{.Name}}">
<img src="{{.File}}" alt="{{.Title}}">
<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption>
</figure>
{{else}}<p>No figures: there are no results to draw.</p>
{{end}}
<h2>Configuration</h2>
<pre>{{.ConfigJSON}}</pre>
</body>
</html>
`))

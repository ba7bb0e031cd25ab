package render

import (
	"bytes"
	"fmt"
	"html/template"
	"math"

	"github.com/jemcheck/jemcheck/verdict"
)

// Compare renders compare.html: the runs side by side, a table per grid point with each
// method's mean joint KL [95% CI] in every run and each later run's difference from the
// first (paired per task where the tasks are the same), the differences whose CI
// excludes 0 marked.
func Compare(c verdict.Comparison) ([]byte, error) {
	type cell struct{ Text, Class string }
	type row struct {
		Method string
		Cells  []cell
	}
	type point struct {
		Params   string
		Verdicts []string
		Rows     []row
	}
	var pts []point
	changed := 0
	for _, p := range c.Points {
		pt := point{Params: fmtParams(p.Params), Verdicts: p.Verdicts}
		for _, m := range p.Methods {
			r := row{Method: m.Method}
			for _, s := range m.Runs {
				if s.N == 0 {
					r.Cells = append(r.Cells, cell{Text: "—"})
					continue
				}
				r.Cells = append(r.Cells, cell{Text: fmt.Sprintf("%s [%s, %s] (n %d)", fmtNA(s.Mean), fmtNA(s.Lo), fmtNA(s.Hi), s.N)})
			}
			for _, d := range m.Diffs {
				how := "unpaired"
				if d.Paired {
					how = "paired"
				}
				cl := ""
				switch {
				case d.Lo > 0:
					cl, changed = "bad-cell", changed+1
				case d.Hi < 0:
					cl, changed = "ok-cell", changed+1
				}
				txt := "—"
				if !math.IsNaN(d.Mean) {
					txt = fmt.Sprintf("%+.4g [%+.4g, %+.4g] %s, n %d", d.Mean, d.Lo, d.Hi, how, d.N)
				}
				r.Cells = append(r.Cells, cell{Text: txt, Class: cl})
			}
			pt.Rows = append(pt.Rows, r)
		}
		pts = append(pts, pt)
	}
	var buf bytes.Buffer
	later := make([]int, 0, len(c.Runs))
	for i := 1; i < len(c.Runs); i++ {
		later = append(later, i)
	}
	err := compareTemplate.Execute(&buf, map[string]any{"Runs": c.Runs, "Later": later, "Points": pts, "Changed": changed})
	return buf.Bytes(), err
}

var compareTemplate = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jemcheck: {{len .Runs}} runs compared</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1.5em; color: #222; line-height: 1.45; }
h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; font-size: 1.1em; }
.answer { font-size: 1.2em; padding: 0.8em 1em; border-left: 8px solid #1f77b4; background: #eef4fb; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.4em; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; white-space: normal; }
td.l, th.l { text-align: left; }
td.v { white-space: normal; text-align: left; min-width: 20em; font-size: 0.95em; }
.ok-cell { color: #1e8e3e; font-weight: 600; }
.bad-cell { color: #c5221f; font-weight: 600; }
</style>
</head>
<body>
<h1>{{len .Runs}} runs compared</h1>
<p class="answer">{{if .Changed}}{{.Changed}} method(s) changed their mean joint KL beyond the 95% CI of the difference from the first run (red: higher, green: lower).{{else}}No method's mean joint KL differs from the first run's beyond the 95% CI of the difference.{{end}}</p>
<p>Runs: {{range $i, $r := .Runs}}{{if $i}}, {{end}}<b>{{$i}}</b> {{$r}}{{end}}. Each cell is a method's mean joint KL(p‖q) in nats with its bootstrap 95% CI over tasks; Δ is a run's mean minus run 0's, paired per task where the tasks are the same (same run seed and point values: the same truths and draws), else the difference of the means with a normal 95% CI.</p>
{{range .Points}}<h2>{{.Params}}</h2>
<div class="scroll"><table>
<tr><th class="l">method</th>{{range $i, $r := $.Runs}}<th>run {{$i}}: mean KL [95% CI]</th>{{end}}{{range $.Later}}<th>Δ run {{.}} − run 0 [95% CI]</th>{{end}}</tr>
{{range .Rows}}<tr><td class="l">{{.Method}}</td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table></div>
<table>{{range $i, $v := .Verdicts}}<tr><td class="l">verdict, run {{$i}}</td><td class="v">{{if $v}}{{$v}}{{else}}— (not in this run){{end}}</td></tr>{{end}}</table>
{{end}}
</body>
</html>
`))

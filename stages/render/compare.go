package render

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

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
	answer := CompareAnswer(c)
	later := make([]int, 0, len(c.Runs))
	for i := 1; i < len(c.Runs); i++ {
		later = append(later, i)
	}
	err := compareTemplate.Execute(&buf, map[string]any{"Runs": c.Runs, "Later": later, "Points": pts, "Changed": changed, "Answer": answer})
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
<p class="answer">{{range $i, $l := .Answer}}{{if $i}}<br>{{end}}{{$l}}{{end}}{{if .Changed}} (red: higher, green: lower){{end}}</p>
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

// CompareAnswer is a comparison's answer in one or two lines, the same on the page
// and on the terminal: which methods' mean joint KL changed beyond the 95% CI of their
// difference from the first run (the largest changes named), or that none did and the
// largest difference seen.
func CompareAnswer(c verdict.Comparison) []string {
	type change struct {
		method string
		point  int
		run    int
		d      verdict.ComparedDiff
	}
	var changed []change
	var largest *change
	total := 0
	for pi, p := range c.Points {
		for _, m := range p.Methods {
			for i, d := range m.Diffs {
				if math.IsNaN(d.Mean) {
					continue
				}
				total++
				ch := change{m.Method, pi, i + 1, d}
				if d.Lo > 0 || d.Hi < 0 {
					changed = append(changed, ch)
				}
				if largest == nil || math.Abs(d.Mean) > math.Abs(largest.d.Mean) {
					largest = &ch
				}
			}
		}
	}
	where := func(ch change) string {
		how := "unpaired"
		if ch.d.Paired {
			how = "paired"
		}
		at := ""
		if len(c.Points) > 1 {
			at = fmt.Sprintf(" at grid point %d", ch.point)
		}
		if len(c.Runs) > 2 {
			at += fmt.Sprintf(" in run %d", ch.run)
		}
		return fmt.Sprintf("%s%s %+.3g nats [%+.3g, %+.3g] (%s, n %d)", ch.method, at, ch.d.Mean, ch.d.Lo, ch.d.Hi, how, ch.d.N)
	}
	if total == 0 {
		shared := 0
		for _, p := range c.Points {
			if !slices.Contains(p.Verdicts, "") {
				shared++
			}
		}
		if shared == 0 {
			return []string{"Nothing compared: no grid point is in every run (a point is matched by all its values: task, shape, N, steps, lr, …)."}
		}
		return []string{"Nothing compared: no method has converged runs at a grid point in both the first run and a later one."}
	}
	if len(changed) == 0 {
		return []string{
			fmt.Sprintf("No method's mean joint KL differs from the first run's beyond the 95%% CI of the difference (%d comparison(s)).", total),
			"Largest difference: " + where(*largest) + ".",
		}
	}
	slices.SortStableFunc(changed, func(a, b change) int { return cmp.Compare(math.Abs(b.d.Mean), math.Abs(a.d.Mean)) })
	var up, down int
	for _, ch := range changed {
		if ch.d.Lo > 0 {
			up++
		} else {
			down++
		}
	}
	named := make([]string, 0, 3)
	for _, ch := range changed[:min(3, len(changed))] {
		named = append(named, where(ch))
	}
	more := ""
	if len(changed) > 3 {
		more = fmt.Sprintf("; %d more on the page", len(changed)-3)
	}
	return []string{
		fmt.Sprintf("%d of %d method comparison(s) changed their mean joint KL beyond the 95%% CI of the difference from the first run: %d higher, %d lower.",
			len(changed), total, up, down),
		"Largest: " + strings.Join(named, "; ") + more + ".",
	}
}

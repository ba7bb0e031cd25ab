package render

import (
	"html"
	"maps"
	"regexp"
	"strings"
	"testing"
)

var (
	svgText    = regexp.MustCompile(`>([^<>]*)</text>`)
	htmlTable  = regexp.MustCompile(`(?s)<table>.*?</table>`)
	htmlRow    = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	htmlCell   = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	methodCell = regexp.MustCompile(`class="method-`)
)

// svgTexts are the texts of an SVG figure in drawing order.
func svgTexts(svg []byte) []string {
	var out []string
	for _, m := range svgText.FindAllSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(string(m[1])))
	}
	return out
}

// tableRows are the body rows of the report's table whose head contains header: the
// cells (tags stripped) from the method cell on, so that the rows line up whether or
// not they carry their point's cells, the method cell first; all of a row's cells when
// it has none.
func tableRows(t *testing.T, report, header string) [][]string {
	t.Helper()
	for _, tbl := range htmlTable.FindAllString(report, -1) {
		head, body, ok := strings.Cut(tbl, "</thead>")
		if !ok || !strings.Contains(head, header) {
			continue
		}
		var out [][]string
		for _, row := range htmlRow.FindAllStringSubmatch(body, -1) {
			var cells []string
			for _, c := range htmlCell.FindAllStringSubmatch(row[1], -1) {
				if methodCell.MatchString(c[1]) {
					cells = nil
				}
				cells = append(cells, html.UnescapeString(htmlTag.ReplaceAllString(c[1], "")))
			}
			out = append(out, cells)
		}
		return out
	}
	t.Fatalf("no table with the header %q", header)
	return nil
}

// pick maps the cell key of each row to its cell value (the method cell is cell 0),
// over the rows of method (all rows when method is "").
func pick(rows [][]string, method string, key, value int) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		if method == "" || r[0] == method {
			out[r[key]] = r[value]
		}
	}
	return out
}

// matches maps the first group of re to its second group over the texts.
func matches(re *regexp.Regexp, texts []string) map[string]string {
	out := map[string]string{}
	for _, s := range texts {
		if m := re.FindStringSubmatch(s); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// TestLegendsMatchTables: every number a figure's legend, titles, cells or caption
// repeats from a table of the report is that table's number, as the report prints it.
func TestLegendsMatchTables(t *testing.T) {
	const summary, robust, promise, comparison = "conditional KL p(y|x)", "ECE (15 bins)", "AUROC log q(x)", "JEM win share"
	// Cells after the method cell in the summary table.
	const median, mean, floor, ratio = 4, 3, 11, 12
	medians := func(texts []string, _ string) map[string]string {
		out := map[string]string{}
		method := ""
		for _, s := range texts {
			if m, _, ok := strings.Cut(s, " (n="); ok {
				method = m
			}
			if v, ok := strings.CutPrefix(s, "  median "); ok {
				out[method] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		in     Input
		figure string // its name
		header string // of its table
		// inFigure and inTable give the numbers to compare, keyed alike.
		inFigure func(texts []string, caption string) map[string]string
		inTable  func(rows [][]string) map[string]string
	}{
		{"kl_dist medians", singleInput(), FigKLDist, summary, medians,
			func(rows [][]string) map[string]string { return pick(rows, "", 0, median) }},
		{"kl_dist medians, 2-D", input2D(), FigKLDist, summary, medians,
			func(rows [][]string) map[string]string { return pick(rows, "", 0, median) }},
		{"kl_dist floor", singleInput(), FigKLDist, summary,
			func(_ []string, caption string) map[string]string {
				return matches(regexp.MustCompile(`(floor) \(X·K−1\)/\(2N\) = (\S+):`), []string{caption})
			},
			func(rows [][]string) map[string]string { return map[string]string{"floor": rows[0][floor]} }},
		{"baseline_vs_jem win share", singleInput(), FigBaselineVsJEM, comparison,
			func(texts []string, _ string) map[string]string {
				return matches(regexp.MustCompile(`^(JEM) lower: (\S+)$`), texts)
			},
			func(rows [][]string) map[string]string { return map[string]string{"JEM": rows[0][3]} }},
		{"heatmap cells", sweepInput(), figHeatmapPrefix + "samples_lr", summary,
			func(texts []string, _ string) map[string]string {
				out := map[string]string{} // a cell's mean → its multiple of the floor
				for i := 1; i < len(texts); i++ {
					if r, ok := strings.CutSuffix(texts[i], " floor"); ok {
						_, mean, _ := strings.Cut(texts[i-1], " ") // after the verdict mark
						out[mean] = r
					}
				}
				return out
			},
			func(rows [][]string) map[string]string { return pick(rows, "jem", mean, ratio) }}, // a cell is one point
		{"reliability ECE", inputPromises(), "reliability_p3", robust,
			func(texts []string, _ string) map[string]string {
				return matches(regexp.MustCompile(`^(\S+) \(ECE (\S+)\)$`), texts)
			},
			func(rows [][]string) map[string]string { return pick(rows, "", 0, 3) }}, // method, runs, gradient AUROC, ECE
		{"ood_scores AUROC", inputPromises(), "ood_scores_p3", promise,
			func(texts []string, _ string) map[string]string {
				return matches(regexp.MustCompile(`^(\S+): AUROC (\S+)$`), texts)
			},
			func(rows [][]string) map[string]string { return pick(rows, "", 0, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			report := string(out["report.html"])
			svg, ok := out["figures/"+tc.figure+".svg"]
			if !ok {
				t.Fatalf("no figure %s", tc.figure)
			}
			got := tc.inFigure(svgTexts(svg), html.UnescapeString(captionOf(t, report, tc.figure)))
			want := tc.inTable(tableRows(t, report, tc.header))
			if len(got) == 0 || !maps.Equal(got, want) {
				t.Errorf("figure %v, table %v", got, want)
			}
		})
	}
}

// TestVerdictMarksMatchTables checks the figures that carry the verdict against the
// report's tables: each heat map cell's mark (a cell is one point here) against that
// point's word in the per-point verdict table, keyed by JEM's mean joint KL in the
// summary table; and each row of the verdict figure against the verdict-checks table.
func TestVerdictMarksMatchTables(t *testing.T) {
	out, err := Render(sweepInput())
	if err != nil {
		t.Fatal(err)
	}
	report := string(out["report.html"])
	var means []string
	for _, r := range tableRows(t, report, "conditional KL p(y|x)") {
		if r[0] == "jem" {
			means = append(means, r[3])
		}
	}
	words := tableRows(t, report, "JEM optimisation gap / statistical error")
	if len(means) != len(words) || len(means) == 0 {
		t.Fatalf("%d jem rows, %d verdict rows", len(means), len(words))
	}
	want := map[string]string{}
	for i, r := range words {
		want[means[i]] = map[string]string{"holds": markPass, "fails": markFail}[r[2]]
	}
	got := map[string]string{}
	for _, s := range svgTexts(out["figures/"+figHeatmapPrefix+"samples_lr.svg"]) {
		if mark, mean, ok := strings.Cut(s, " "); ok && (mark == markPass || mark == markFail) {
			got[mean] = mark
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("heat map marks %v, tables %v", got, want)
	}

	for _, in := range []Input{singleInput(), sweepInput(), input2D()} {
		out, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		report := string(out["report.html"])
		checks := map[string]string{} // point/check → ✓|✗ value CI, as the checks table prints them
		point := ""
		for _, tbl := range htmlTable.FindAllString(report, -1) {
			if !strings.Contains(tbl, "what it measures") {
				continue
			}
			for _, row := range htmlRow.FindAllStringSubmatch(tbl, -1) {
				var cells []string
				for _, c := range htmlCell.FindAllStringSubmatch(row[1], -1) {
					cells = append(cells, html.UnescapeString(strings.TrimSpace(htmlTag.ReplaceAllString(c[1], ""))))
				}
				if len(cells) == 8 {
					point, _, _ = strings.Cut(cells[0], " ")
					cells = cells[1:]
				}
				if len(cells) != 7 {
					continue
				}
				mark := markFail
				if cells[5] == "pass" {
					mark = markPass
				}
				checks[point+"/"+cells[0]] = mark + " " + cells[2] + " " + cells[3]
			}
		}
		fig := regexp.MustCompile(`<text class="check-value" data-point="(\d+)" data-check="([^"]+)"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(report, -1)
		if len(fig) == 0 && strings.Contains(report, "<td class=\"l\">deciding</td>") {
			t.Fatalf("%s: no verdict figure", in.Title)
		}
		for _, m := range fig {
			key := m[1] + "/" + html.UnescapeString(m[2])
			if got, want := html.UnescapeString(m[3]), checks[key]; got != want {
				t.Errorf("%s: verdict figure %s says %q, checks table %q", in.Title, key, got, want)
			}
		}
	}
}

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
						out[texts[i-1]] = r
					}
				}
				return out
			},
			func(rows [][]string) map[string]string { return pick(rows, "jem", mean, ratio) }}, // a cell is one point
		{"reliability ECE", inputPromises(), "reliability_p3", robust,
			func(texts []string, _ string) map[string]string {
				return matches(regexp.MustCompile(`^(\S+) \(ECE (\S+)\)$`), texts)
			},
			func(rows [][]string) map[string]string { return pick(rows, "", 0, 2) }},
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

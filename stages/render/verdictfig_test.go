package render

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestVerdictFigureLabelsFit: every text of the verdict figure lies inside its canvas,
// the right-hand numbers of a sampler check in nats included (the 2-D report cut them
// at "0.00994 nats [0.00817 nats, 0.0117 na"), and the plot area keeps its width.
func TestVerdictFigureLabelsFit(t *testing.T) {
	short := verdictBar{Label: "JEM optimisation gap", Value: 0.5, Lo: 0.4, Hi: 0.6, Text: "5.75% [3.67%, 8.21%]", Limit: "≤ 10%", Pass: true}
	nats := verdictBar{Label: "ed excess KL", Value: 0.1, Lo: 0.08, Hi: 0.12, Text: "0.00994 nats [0.00817 nats, 0.0117 nats]", Limit: "≤ 0.1 nats", Pass: true}
	long := verdictBar{Label: "point 12: sgld-langevin-noisefree excess KL", Value: 30, Lo: 20, Hi: 40,
		Text: "−0.000123 nats [−0.000456 nats, 0.000789 nats] on 1000 tasks", Limit: "≤ 0.1 nats"}
	textEl := regexp.MustCompile(`<text([^>]*)>([^<]*)</text>`)
	attr := func(attrs, name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(attrs)
		if m == nil {
			return ""
		}
		return m[1]
	}
	for _, tc := range []struct {
		name string
		bars []verdictBar
	}{{"a table check", []verdictBar{short}}, {"a sampler check in nats (2-D)", []verdictBar{short, nats}}, {"long label and numbers", []verdictBar{long, nats}}} {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(verdictFigure(tc.bars))
			m := svgViewBox.FindStringSubmatch(svg)
			if m == nil {
				t.Fatal("no viewBox")
			}
			width, _ := strconv.ParseFloat(m[1], 64)
			texts := 0
			for _, el := range textEl.FindAllStringSubmatch(svg, -1) {
				txt := html.UnescapeString(el[2])
				x, _ := strconv.ParseFloat(attr(el[1], "x"), 64)
				size := 13.0
				if s := attr(el[1], "font-size"); s != "" {
					size, _ = strconv.ParseFloat(s, 64)
				}
				// ✓ and ✗ are not in Liberation Sans: an em each.
				w := svgTextWidth(strings.NewReplacer(markPass, "", markFail, "").Replace(txt), size) +
					size*float64(strings.Count(txt, markPass)+strings.Count(txt, markFail))
				lo, hi := x, x+w
				switch attr(el[1], "text-anchor") {
				case "end":
					lo, hi = x-w, x
				case "middle":
					lo, hi = x-w/2, x+w/2
				}
				if lo < 0 || hi > width {
					t.Errorf("text %q spans [%.1f, %.1f], outside the figure's [0, %.1f]", txt, lo, hi, width)
				}
				texts++
			}
			if texts < len(tc.bars)*2 {
				t.Errorf("%d texts found for %d bars (the SVG's text format changed?)", texts, len(tc.bars))
			}
		})
	}
	if w := svgTextWidth("0.00994 nats [0.00817 nats, 0.0117 nats]", 13); w < 200 || w > 320 {
		t.Errorf("the 2-D label is %.0f units wide at 13: the font's metrics are not found", w)
	}
}

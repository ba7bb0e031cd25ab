package render

import (
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// reportWidthPx is the width a figure gets in a 1280 px window: the page's 1200 px
// column less the image's border.
const reportWidthPx = 1198

var (
	svgViewBox = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
	// A text, with whether a rotate group opens just before it.
	svgTextEl = regexp.MustCompile(`(?s)(<g transform="rotate\([^)]*\)">\s*)?<text x="([-0-9.]+)" y="([-0-9.]+)"[^>]*font-weight:([a-z]+);[^>]*font-size:([0-9.]+)px">([^<]*)</text>`)
)

type svgTextBox struct {
	text          string
	x, w, size    float64
	rotated, bold bool
}

// svgTextBoxes are the texts of an SVG written by toSVG, with their left edge and
// width in the SVG's units (gonum lays text out left-aligned with Liberation Serif's
// metrics, which toSVG names first) and their font size; rotated texts (the y-axis
// labels) have no horizontal box.
func svgTextBoxes(t *testing.T, svg []byte) (width float64, out []svgTextBox) {
	t.Helper()
	m := svgViewBox.FindSubmatch(svg)
	if m == nil {
		t.Fatal("no viewBox")
	}
	width, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, m := range svgTextEl.FindAllSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(string(m[2]), 64)
		size, _ := strconv.ParseFloat(string(m[5]), 64)
		txt := html.UnescapeString(string(m[6]))
		f := font.From(plot.DefaultFont, vg.Length(size))
		if string(m[4]) == "bold" {
			f.Weight = 3
		}
		sty := draw.TextStyle{Font: f, Handler: plot.DefaultTextHandler}
		w := 0.0
		for _, line := range strings.Split(txt, "\n") {
			w = max(w, float64(sty.Width(line)))
		}
		out = append(out, svgTextBox{text: txt, x: x, w: w, size: size, rotated: len(m[1]) > 0, bold: string(m[4]) == "bold"})
	}
	return width, out
}

// TestSVGTextInsideFigure: no text of any figure of the table, sweep and 2-D reports
// runs off its figure (a legend entry cut at the right edge, "(off the axis"), and
// every 2-D figure's text is at least 11 px in a 1280 px window.
func TestSVGTextInsideFigure(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		twoD bool
	}{{"single", singleInput(), false}, {"sweep", sweepInput(), false}, {"2-D", input2D(), true}, {"median off the axis", offAxisInput(), false}} {
		out, err := Render(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for name, svg := range out {
			if !strings.HasSuffix(name, ".svg") {
				continue
			}
			width, boxes := svgTextBoxes(t, svg)
			if tc.name == "median off the axis" && name == "figures/"+FigKLDist+".svg" && !strings.Contains(string(svg), "(off the axis)") {
				t.Errorf("the histogram has no median off the axis: the case tests nothing")
			}
			if len(boxes) == 0 {
				t.Errorf("%s %s: no text found (the SVG's text format changed?)", tc.name, name)
			}
			scale := min(1, reportWidthPx/(width*4/3)) * 4 / 3 // px per SVG unit on the page
			for _, b := range boxes {
				if !b.rotated && (b.x < -0.5 || b.x+b.w > width+0.5) {
					t.Errorf("%s %s: text %q spans [%.1f, %.1f], outside the figure's [0, %.1f]", tc.name, name, b.text, b.x, b.x+b.w, width)
				}
				if px := b.size * scale; tc.twoD && px < 11 {
					t.Errorf("%s %s: text %q is %.1f px at 1280 px (the figure is %.0f units wide), want ≥ 11", tc.name, name, b.text, px, width)
				}
			}
		}
	}
}

// offAxisInput is the single report's input with most of the oracle's joint KLs at
// 0 (clamped, left out of the histogram) and a few above: the oracle's median is off
// the histogram's axis, the legend's longest entry.
func offAxisInput() Input {
	in := singleInput()
	rows := slices.Clone(in.Results)
	for _, r := range in.Results {
		if r.Method == "jem" {
			o := r
			o.Method, o.RunID, o.KLJoint = "oracle", strings.Replace(r.RunID, "jem", "oracle", 1), 7.15e-15
			if r.TableID%5 == 0 {
				o.KLJoint = r.KLJoint
			}
			rows = append(rows, o)
		}
	}
	in.Results = rows
	return in
}

package render

import (
	"bytes"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	colTrue  = color.NRGBA{R: 110, G: 110, B: 110, A: 255}
	colBlack = color.NRGBA{A: 255}
	colGrid  = color.NRGBA{R: 225, G: 225, B: 225, A: 255}
	extra    = []color.NRGBA{
		{R: 255, G: 127, B: 14, A: 255},
		{R: 148, G: 103, B: 189, A: 255},
		{R: 140, G: 86, B: 75, A: 255},
		{R: 227, G: 119, B: 194, A: 255},
		{R: 188, G: 189, B: 34, A: 255},
	}
)

// methodColor is a method's colour: the baseline red, the yardstick (jem) blue, the
// oracle (trained on the truth) green, the others from extra.
func methodColor(methods []string, m string) color.NRGBA {
	switch methodRank(m) {
	case 0:
		return color.NRGBA{R: 214, G: 39, B: 40, A: 255}
	case 1:
		return color.NRGBA{R: 31, G: 119, B: 180, A: 255}
	case 2:
		return color.NRGBA{R: 44, G: 160, B: 44, A: 255}
	}
	k := 0
	for _, o := range methods {
		if o == m {
			break
		}
		if methodRank(o) == 3 {
			k++
		}
	}
	return extra[k%len(extra)]
}

func withAlpha(c color.NRGBA, a uint8) color.NRGBA {
	c.A = a
	return c
}

var methodGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}

func methodGlyph(methods []string, m string) draw.GlyphDrawer {
	for i, o := range methods {
		if o == m {
			return methodGlyphs[i%len(methodGlyphs)]
		}
	}
	return draw.CircleGlyph{}
}

// newPlot is a plot with the report's common style.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 12
	p.Title.Padding = 6
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Label.TextStyle.Font.Size = 11
	p.Y.Label.TextStyle.Font.Size = 11
	p.X.Tick.Label.Font.Size = 9
	p.Y.Tick.Label.Font.Size = 9
	p.X.Tick.Marker, p.Y.Tick.Marker = roundedTicks{}, roundedTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color = colGrid
	g.Horizontal.Color = colGrid
	p.Add(g)
	return p
}

func logAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = logTicks{}
}

// logTicks marks a log axis: labelled decades (or 1-2-5 steps on short ranges) with
// unlabelled minor ticks, only within the range.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	lo := int(math.Floor(math.Log10(min)))
	hi := int(math.Ceil(math.Log10(max)))
	decades := hi - lo
	in := func(v float64) bool { return v >= min*(1-1e-12) && v <= max*(1+1e-12) }
	var labelSets = [][]int{{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}
	stride := 1
	if decades > 7 {
		stride = (decades + 6) / 7
	}
	for _, set := range labelSets {
		var ticks []plot.Tick
		labelled := 0
		for e := lo; e <= hi; e++ {
			for m := 1; m <= 9; m++ {
				v := decadeValue(m, e)
				if !in(v) {
					continue
				}
				isLabel := false
				for _, s := range set {
					if s == m {
						isLabel = true
					}
				}
				if m == 1 && (e-lo)%stride != 0 {
					isLabel = false
				}
				if isLabel {
					ticks = append(ticks, plot.Tick{Value: v, Label: tickText(v)})
					labelled++
				} else if stride == 1 {
					ticks = append(ticks, plot.Tick{Value: v})
				}
			}
		}
		if labelled >= 2 {
			return ticks
		}
	}
	// A range narrower than one step of 1..9: linear ticks read fine.
	return roundedTicks{}.Ticks(min, max)
}

// decadeValue is m·10^e as the float64 nearest to it: m * math.Pow10(e) rounds twice
// (6 × 0.1 is 0.6000000000000001), the decimal literal once.
func decadeValue(m, e int) float64 {
	v, _ := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(e), 64)
	return v
}

// tickText is a tick's label: %g-style with at most tickDigits significant digits, so
// a value computed in binary floating point (0.1 + 0.2) reads as the decimal it stands
// for (0.3), never 0.30000000000000004.
func tickText(v float64) string {
	if v == 0 {
		return "0" // never −0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', tickDigits, 64), 64) // rounded to tickDigits
	return fmtNum(r)                                                            // then the shortest: 0.6, 250, 3e6
}

// tickDigits are the most significant digits of a tick label: far more than any axis
// needs to tell its ticks apart, far fewer than float64's round-off shows.
const tickDigits = 10

// roundedTicks are gonum's default linear ticks with every label written by tickText
// (gonum's own labels keep a fixed number of decimals), a tick within a billionth of
// the range of 0 labelled 0.
type roundedTicks struct{}

func (roundedTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		if math.Abs(ticks[i].Value) < 1e-9*(max-min) {
			ticks[i].Value = 0
		}
		ticks[i].Label = tickText(ticks[i].Value)
	}
	return ticks
}

// logRange pads [lo, hi] on a log axis by frac of its span (in decades).
func logRange(lo, hi, frac float64) (float64, float64) {
	if !(lo > 0) || !(hi > 0) {
		return 1e-3, 1
	}
	if hi/lo < 1.0001 {
		return lo / 2, hi * 2
	}
	span := math.Log10(hi) - math.Log10(lo)
	f := math.Pow(10, span*frac)
	return lo / f, hi * f
}

// minMax tracks a range of positive finite values.
type minMax struct{ lo, hi float64 }

func newMinMax() minMax { return minMax{math.Inf(1), math.Inf(-1)} }

func (m *minMax) add(vs ...float64) {
	for _, v := range vs {
		if finite(v) && v > 0 {
			m.lo = math.Min(m.lo, v)
			m.hi = math.Max(m.hi, v)
		}
	}
}

func (m minMax) ok() bool { return m.lo <= m.hi }

// refLine is a horizontal or vertical reference line across the whole data area.
type refLine struct {
	vertical bool
	at       float64
	draw.LineStyle
}

func (r *refLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	if r.vertical {
		if r.at < p.X.Min || r.at > p.X.Max {
			return
		}
		x := trX(r.at)
		c.StrokeLine2(r.LineStyle, x, c.Min.Y, x, c.Max.Y)
		return
	}
	if r.at < p.Y.Min || r.at > p.Y.Max {
		return
	}
	y := trY(r.at)
	c.StrokeLine2(r.LineStyle, c.Min.X, y, c.Max.X, y)
}

func (r *refLine) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(r.LineStyle, c.Min.X, y, c.Max.X, y)
}

func dashed(col color.Color, w vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: col, Width: w, Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

func dotted(col color.Color, w vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: col, Width: w, Dashes: []vg.Length{vg.Points(1.5), vg.Points(2)}}
}

func solid(col color.Color, w vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: col, Width: w}
}

// bars is a bar series in data units: bar i spans [x[i]+off−w/2, x[i]+off+w/2] × [0, v[i]].
type bars struct {
	xs, vs []float64
	off, w float64
	fill   color.Color
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.vs {
		if !finite(v) {
			continue
		}
		x0, x1 := trX(b.xs[i]+b.off-b.w/2), trX(b.xs[i]+b.off+b.w/2)
		y0, y1 := trY(0), trY(v)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.fill, c.ClipPolygonXY(pts))
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for i, v := range b.vs {
		xmin = math.Min(xmin, b.xs[i]+b.off-b.w/2)
		xmax = math.Max(xmax, b.xs[i]+b.off+b.w/2)
		if finite(v) {
			ymax = math.Max(ymax, v)
		}
	}
	return
}

func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.fill, c.ClipPolygonY(pts))
}

// band is a filled area between lo and hi over xs (a p10–p90 band).
type band struct {
	xs, lo, hi []float64
	fill       color.Color
}

func (b *band) Plot(c draw.Canvas, p *plot.Plot) {
	if len(b.xs) < 2 {
		return
	}
	trX, trY := p.Transforms(&c)
	var pts []vg.Point
	for i := range b.xs {
		pts = append(pts, vg.Point{X: trX(b.xs[i]), Y: trY(b.hi[i])})
	}
	for i := len(b.xs) - 1; i >= 0; i-- {
		pts = append(pts, vg.Point{X: trX(b.xs[i]), Y: trY(b.lo[i])})
	}
	c.FillPolygon(b.fill, c.ClipPolygonXY(pts))
}

func (b *band) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.fill, c.ClipPolygonY(pts))
}

// viridisStops are control colours of the viridis colour map, dark to light; their
// luminance increases, as moreland.NewLuminance needs.
var viridisStops = []color.Color{
	color.NRGBA{R: 0x44, G: 0x01, B: 0x54, A: 255}, color.NRGBA{R: 0x48, G: 0x24, B: 0x75, A: 255},
	color.NRGBA{R: 0x41, G: 0x44, B: 0x87, A: 255}, color.NRGBA{R: 0x35, G: 0x5f, B: 0x8d, A: 255},
	color.NRGBA{R: 0x2a, G: 0x78, B: 0x8e, A: 255}, color.NRGBA{R: 0x21, G: 0x91, B: 0x8c, A: 255},
	color.NRGBA{R: 0x22, G: 0xa8, B: 0x84, A: 255}, color.NRGBA{R: 0x44, G: 0xbf, B: 0x70, A: 255},
	color.NRGBA{R: 0x7a, G: 0xd1, B: 0x51, A: 255}, color.NRGBA{R: 0xbd, G: 0xdf, B: 0x26, A: 255},
	color.NRGBA{R: 0xfd, G: 0xe7, B: 0x25, A: 255},
}

// colNaN fills the heat map cells without a value.
var colNaN = color.NRGBA{R: 215, G: 215, B: 215, A: 255}

// paletteColours is the number of colours a heat map takes from its colour map.
const paletteColours = 256

// viridis is the viridis colour map over [lo, hi] (lo < hi): gonum's interpolation
// between viridisStops, linear in luminance.
func viridis(lo, hi float64) palette.ColorMap {
	cm, err := moreland.NewLuminance(viridisStops)
	if err != nil {
		panic(err) // fixed stops of increasing luminance (TestViridis)
	}
	cm.SetMin(lo)
	cm.SetMax(hi)
	return cm
}

// heatMap is a gonum heat map of g in the colours of cm over [cm.Min(), cm.Max()]:
// values beyond it take the end colours, NaN is grey.
func heatMap(g plotter.GridXYZ, cm palette.ColorMap) *plotter.HeatMap {
	pal := cm.Palette(paletteColours)
	hm := plotter.NewHeatMap(g, pal)
	hm.Min, hm.Max = cm.Min(), cm.Max()
	cs := pal.Colors()
	hm.Underflow, hm.Overflow, hm.NaN = cs[0], cs[len(cs)-1], colNaN
	return hm
}

// colourBar is a vertical gonum colour bar of cm, its axis labelled label.
func colourBar(cm palette.ColorMap, label string) *plot.Plot {
	cb := plot.New()
	cb.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	cb.HideX()
	cb.Y.Label.Text = label
	cb.Y.Label.TextStyle.Font.Size = 10
	cb.Y.Tick.Label.Font.Size = 9
	cb.Y.Tick.Marker = roundedTicks{}
	cb.Y.Padding = 0
	cb.Y.Min, cb.Y.Max = cm.Min(), cm.Max()
	return cb
}

// cellGrid is a gonum GridXYZ of cols×rows cells: the value of column c, row r is
// z[c·rows + r], at x0 + (c+½)·dx, y0 + (r+½)·dy.
type cellGrid struct {
	cols, rows     int
	z              []float64
	x0, dx, y0, dy float64
}

func (g cellGrid) Dims() (c, r int)   { return g.cols, g.rows }
func (g cellGrid) Z(c, r int) float64 { return g.z[c*g.rows+r] }
func (g cellGrid) X(c int) float64    { return g.x0 + (float64(c)+0.5)*g.dx }
func (g cellGrid) Y(r int) float64    { return g.y0 + (float64(r)+0.5)*g.dy }

// upsample splits every cell of g into s×s cells of its value: a rasterised heat map
// of the result stays sharp where an image of few pixels would be smoothed.
func (g cellGrid) upsample(s int) cellGrid {
	out := cellGrid{cols: g.cols * s, rows: g.rows * s, x0: g.x0, dx: g.dx / float64(s), y0: g.y0, dy: g.dy / float64(s)}
	out.z = make([]float64, out.cols*out.rows)
	for c := range out.cols {
		for r := range out.rows {
			out.z[c*out.rows+r] = g.Z(c/s, r/s)
		}
	}
	return out
}

// cellLabels is a gonum Labels plotter writing text(k) in colour(k) on the centre of
// cell k = c·rows + r of a heat map whose cells are centred on integer (c, r); a "\n"
// in a text breaks its line.
func cellLabels(cols, rows int, text func(k int) string, colour func(k int) color.Color) (*plotter.Labels, error) {
	var xyl plotter.XYLabels
	for c := range cols {
		for r := range rows {
			xyl.XYs = append(xyl.XYs, plotter.XY{X: float64(c), Y: float64(r)})
			xyl.Labels = append(xyl.Labels, text(c*rows+r))
		}
	}
	l, err := plotter.NewLabels(xyl)
	if err != nil {
		return nil, err
	}
	for k := range l.TextStyle {
		sty := &l.TextStyle[k]
		sty.Font.Size = 8
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		sty.Color = colour(k)
	}
	return l, nil
}

// legendBox draws a legend into the given area (entries from the top).
func legendBox(c draw.Canvas, entries []legendEntry) {
	l := newLegend()
	for _, e := range entries {
		l.Add(e.name, e.thumbs...)
	}
	l.Draw(c)
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top = true
	l.Left = true
	l.TextStyle.Font.Size = 10
	l.Padding = 3
	l.ThumbnailWidth = vg.Points(22)
	return l
}

// legendSpan is the width legendBox takes for entries: the thumbnail, a space and the
// longest text.
func legendSpan(entries []legendEntry) vg.Length {
	l := newLegend()
	w := vg.Length(0)
	for _, e := range entries {
		w = max(w, l.TextStyle.Width(e.name))
	}
	return l.ThumbnailWidth + l.TextStyle.Width(" ") + w + 2
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// figureTitle writes a title across the top of c and returns the area below it.
func figureTitle(c draw.Canvas, title string) draw.Canvas {
	if title == "" {
		return c
	}
	sty := plot.New().Title.TextStyle
	sty.Font = font.From(plot.DefaultFont, 13)
	sty.Font.Weight = 3 // golang.org/x/image/font.WeightBold
	h := sty.Height(title)
	c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - 4}, title)
	return draw.Crop(c, 0, 0, 0, -(h + 10))
}

// toSVG draws into a w×h SVG and returns its bytes.
func toSVG(w, h vg.Length, drawFn func(c draw.Canvas)) ([]byte, error) {
	cv := vgsvg.New(w, h)
	dc := draw.New(cv)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	drawFn(dc)
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, err
	}
	// The text was laid out with Liberation Serif's metrics; Times New Roman has the
	// same metrics, so name it as the fallback where Liberation is not installed.
	out := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Serif;"),
		[]byte("font-family:'Liberation Serif','Times New Roman',Times,serif;"))
	// vgsvg labels its PNG images (heat maps, colour bars) as JPEG, which strict SVG
	// renderers refuse, and leaves them the default aspect ratio, which would shrink an
	// image to fit its rectangle (a colour bar of one column of pixels to a line).
	out = bytes.ReplaceAll(out, []byte(`"data:image/jpg;base64,`), []byte(`"data:image/png;base64,`))
	return bytes.ReplaceAll(out, []byte("<image "), []byte(`<image preserveAspectRatio="none" `)), nil
}

// withLegend splits c into a plot area and a legend column of width lw on the right,
// wider where an entry's text needs it (no legend text runs off the figure).
func withLegend(c draw.Canvas, lw vg.Length, entries []legendEntry) draw.Canvas {
	lw = max(lw, legendSpan(entries)+8+4)
	lc := draw.Crop(c, c.Size().X-lw+8, 0, 0, -8)
	legendBox(lc, entries)
	return draw.Crop(c, 0, -lw, 0, -6)
}

func xys(xs, ys []float64) plotter.XYs {
	pts := make(plotter.XYs, len(xs))
	for i := range xs {
		pts[i].X, pts[i].Y = xs[i], ys[i]
	}
	return pts
}

package render

import (
	"bytes"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
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

// methodColor is a method's colour: baseline red, jem blue, oracle green.
func methodColor(methods []string, m string) color.NRGBA {
	switch m {
	case "baseline":
		return color.NRGBA{R: 214, G: 39, B: 40, A: 255}
	case "jem":
		return color.NRGBA{R: 31, G: 119, B: 180, A: 255}
	case "oracle":
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
			base := math.Pow10(e)
			for m := 1; m <= 9; m++ {
				v := float64(m) * base
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
					ticks = append(ticks, plot.Tick{Value: v, Label: fmtNum(v)})
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
	return plot.DefaultTicks{}.Ticks(min, max)
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

// cells fills the unit squares centred on integer (col, row) positions: a heat map
// with categorical axes. Missing values (NaN) are grey.
type cells struct {
	cols, rows int
	colour     func(c, r int) color.Color
	labels     func(c, r int) []string
	labelColor func(c, r int) color.Color
	fontSize   vg.Length
}

func (h *cells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := p.X.Tick.Label
	sty.Font.Size = h.fontSize
	sty.XAlign = draw.XCenter
	sty.YAlign = draw.YCenter
	for i := 0; i < h.cols; i++ {
		for j := 0; j < h.rows; j++ {
			x0, x1 := trX(float64(i)-0.5), trX(float64(i)+0.5)
			y0, y1 := trY(float64(j)-0.5), trY(float64(j)+0.5)
			pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			c.FillPolygon(h.colour(i, j), pts)
			c.StrokeLines(solid(color.White, 1), append(pts, pts[0]))
			if h.labels == nil {
				continue
			}
			lines := h.labels(i, j)
			sty.Color = h.labelColor(i, j)
			lh := sty.Height("0") * 1.15
			top := (y0+y1)/2 + lh*vg.Length(len(lines)-1)/2
			for k, l := range lines {
				c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: top - lh*vg.Length(k)}, l)
			}
		}
	}
}

func (h *cells) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(h.cols) - 0.5, -0.5, float64(h.rows) - 0.5
}

// gradient draws a vertical colour scale over [lo, hi] for a colour bar plot.
type gradient struct {
	lo, hi float64
	colour func(t float64) color.Color // t in [0, 1]
}

func (g *gradient) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	const n = 64
	for i := 0; i < n; i++ {
		v0 := g.lo + (g.hi-g.lo)*float64(i)/n
		v1 := g.lo + (g.hi-g.lo)*float64(i+1)/n
		x0, x1 := trX(0), trX(1)
		y0, y1 := trY(v0), trY(v1)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1 + 0.3}, {X: x0, Y: y1 + 0.3}}
		c.FillPolygon(g.colour((float64(i)+0.5)/n), pts)
	}
}

func (g *gradient) DataRange() (xmin, xmax, ymin, ymax float64) { return 0, 1, g.lo, g.hi }

// viridis interpolates the viridis colour map at t in [0, 1].
func viridis(t float64) color.NRGBA {
	stops := [...][3]uint8{
		{0x44, 0x01, 0x54}, {0x48, 0x24, 0x75}, {0x41, 0x44, 0x87}, {0x35, 0x5f, 0x8d},
		{0x2a, 0x78, 0x8e}, {0x21, 0x91, 0x8c}, {0x22, 0xa8, 0x84}, {0x44, 0xbf, 0x70},
		{0x7a, 0xd1, 0x51}, {0xbd, 0xdf, 0x26}, {0xfd, 0xe7, 0x25},
	}
	if !(t > 0) {
		t = 0
	}
	if t > 1 {
		t = 1
	}
	pos := t * float64(len(stops)-1)
	i := int(pos)
	if i >= len(stops)-1 {
		i = len(stops) - 2
	}
	f := pos - float64(i)
	mix := func(a, b uint8) uint8 { return uint8(math.Round(float64(a) + f*(float64(b)-float64(a)))) }
	a, b := stops[i], stops[i+1]
	return color.NRGBA{R: mix(a[0], b[0]), G: mix(a[1], b[1]), B: mix(a[2], b[2]), A: 255}
}

// legendBox draws a legend into the given area (entries from the top).
func legendBox(c draw.Canvas, entries []legendEntry) {
	l := plot.NewLegend()
	l.Top = true
	l.Left = true
	l.TextStyle.Font.Size = 10
	l.Padding = 3
	l.ThumbnailWidth = vg.Points(22)
	for _, e := range entries {
		l.Add(e.name, e.thumbs...)
	}
	l.Draw(c)
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
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Serif;"),
		[]byte("font-family:'Liberation Serif','Times New Roman',Times,serif;")), nil
}

// withLegend splits c into a plot area and a legend column of width lw on the right.
func withLegend(c draw.Canvas, lw vg.Length, entries []legendEntry) draw.Canvas {
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

// colourBar is the viridis colour bar of a heat map over [lo, hi], labelled label.
func colourBar(lo, hi float64, label string) *plot.Plot {
	cb := plot.New()
	cb.Add(&gradient{lo: lo, hi: hi, colour: func(t float64) color.Color { return viridis(t) }})
	cb.HideX()
	cb.Y.Label.Text = label
	cb.Y.Label.TextStyle.Font.Size = 10
	cb.Y.Tick.Label.Font.Size = 9
	cb.Y.Min, cb.Y.Max = lo, hi
	return cb
}

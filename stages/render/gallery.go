package render

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The sample gallery of a 2-D task: samples_p<point>_t<ordinal> per Task2D with Frames.
const (
	figSamplesPrefix = "samples_"
	maxChainDots     = 1000 // chain samples drawn per panel (every k-th)
)

// colChains fills the chains' dots (bright on viridis).
var colChains = color.NRGBA{R: 255, G: 70, B: 70, A: 210}

// samplesNames names the sample galleries samples_p<point>_t<ordinal>, one per Task2D
// (deduplicated like tripleNames); only those of tasks with Frames are drawn.
func samplesNames(ts []Task2D) []string {
	return pointOrdinalNames(figSamplesPrefix, len(ts), func(i int) (int64, int64) { return ts[i].PointID, ts[i].Ordinal })
}

// chainDots are the finite (x0, x1) pairs of a frame, every k-th so that at most
// maxChainDots remain, the number of pairs and how many lie outside the box (or are
// not finite).
func chainDots(frame []float32, box float64) (pts []plotter.XY, total, outside int) {
	n := len(frame) / 2
	stride := max(1, (n+maxChainDots-1)/maxChainDots)
	for k := 0; k < n; k++ {
		total++
		x, y := float64(frame[2*k]), float64(frame[2*k+1])
		if !finite(x) || !finite(y) {
			outside++
			continue
		}
		if math.Abs(x) > box || math.Abs(y) > box {
			outside++
		}
		if k%stride == 0 {
			pts = append(pts, plotter.XY{X: x, Y: y})
		}
	}
	return pts, total, outside
}

// samplesFigure: one row per method, one column per frame step; each panel the true
// p(x) heat map with its contours and the method's chains at that step as small dots.
func (d *data) samplesFigure(t *Task2D, order []string) ([]byte, string, error) {
	G, K := t.G, t.K
	if G < 2 || K <= 0 || !(t.Box > 0) || !finite(t.Box) || len(t.True) != G*G*K {
		return nil, "", fmt.Errorf("task %d: G=%d K=%d box=%s with %d true cells", t.TaskID, G, K, fmtNum(t.Box), len(t.True))
	}
	if len(t.FrameSteps) == 0 {
		return nil, "", fmt.Errorf("task %d: frames without frame steps", t.TaskID)
	}
	h := 2 * t.Box / float64(G)
	truth := density2D(t.True, G, K, h)
	top := maxFinite(truth)
	if !(top > 0) {
		return nil, "", fmt.Errorf("task %d: the true density has no positive cell", t.TaskID)
	}
	var ms, skipped []string
	for m, fs := range t.Frames {
		if len(fs) == len(t.FrameSteps) {
			ms = append(ms, m)
		} else {
			skipped = append(skipped, m)
		}
	}
	ms = orderMethods(ms, order)
	sortMethods(skipped)
	if len(ms) == 0 {
		return nil, "", fmt.Errorf("task %d: no method has a frame per frame step (%d steps; wrong: %s)", t.TaskID, len(t.FrameSteps), strings.Join(skipped, ", "))
	}

	overlay := massContours(truth, G, t.Box, solid(colOverlay, 0.7), dashed(colOverlay, 0.7))
	hm := densityHeatMap(truth, G, t.Box, top)

	legendDots := &dots{size: vg.Points(1.2), fill: colChains}
	legend := []legendEntry{{"true p(x) contours", []plot.Thumbnailer{contourKey{solid(colOverlay, 0.7)}}}, {"chain samples", []plot.Thumbnailer{legendDots}}}
	rows := make([][]*plot.Plot, len(ms))
	var notes []string
	for r, m := range ms {
		for c, step := range t.FrameSteps {
			p := densityPanel(fmt.Sprintf("%s, step %d", m, step), 10, t.Box, append([]plot.Plotter{hm}, overlay...)...)
			pts, total, outside := chainDots(t.Frames[m][c], t.Box)
			if len(pts) > 0 {
				p.Add(&dots{pts: pts, size: vg.Points(1.2), fill: colChains})
			}
			rows[r] = append(rows[r], p)
			if c == len(t.FrameSteps)-1 || outside > 0 || len(pts) < total {
				note := fmt.Sprintf("%s at step %d: %d of %d chains drawn", m, step, len(pts), total)
				if outside > 0 {
					note += fmt.Sprintf(", %d outside the box (or not finite)", outside)
				}
				notes = append(notes, note)
			}
		}
	}

	cb := colourBar(viridis(0, top), "true density per unit area")

	pw, ph, right, head := 2.5*vg.Inch, 2.7*vg.Inch, 2.0*vg.Inch, 0.4*vg.Inch
	w := pw*vg.Length(len(t.FrameSteps)) + right
	ht := ph*vg.Length(len(ms)) + head
	svg, err := toSVG(w, ht, func(c draw.Canvas) {
		c = figureTitle(c, fmt.Sprintf("Task %d (%s), point %d: Langevin chains of q(x) over the true p(x)", t.TaskID, t.Task, t.PointID))
		rh := c.Size().Y / vg.Length(len(rows))
		for r, row := range rows {
			for k, p := range row {
				p.Draw(draw.Crop(c, pw*vg.Length(k), -(w - pw*vg.Length(k+1)), rh*vg.Length(len(rows)-1-r), -rh*vg.Length(r)))
			}
		}
		rc := draw.Crop(c, w-right, 0, 0, 0)
		sz := min(rc.Size().Y*0.5, 2.6*vg.Inch)
		cb.Draw(draw.Crop(rc, 0.15*vg.Inch, -(right - 0.95*vg.Inch), rc.Size().Y-sz, -0.1*vg.Inch))
		legendBox(draw.Crop(rc, 0.05*vg.Inch, 0, 0, -sz-0.1*vg.Inch), legend)
	})

	var b strings.Builder
	fmt.Fprintf(&b, "Task %d (%s) at grid point %d: samples of each method's learned q(x) over the true density p(x) (heat map, with its %s and %s highest-density contours in light lines). "+
		"Each row is one method, each column one step of %d long-run Langevin chains of q(x) started from uniform noise over the box [−%s, %s]²; "+
		"the chains should settle on the truth's modes where q(x) matches p(x). At most %d chains are drawn per panel. Chains: %s.",
		t.TaskID, t.Task, t.PointID, pct100(contourMasses[0]), pct100(contourMasses[1]), len(t.Frames[ms[0]][0])/2, fmtNum(t.Box), fmtNum(t.Box), maxChainDots, strings.Join(notes, "; "))
	if len(skipped) > 0 {
		fmt.Fprintf(&b, " Methods whose frames do not match the %d frame steps were left out: %s.", len(t.FrameSteps), strings.Join(skipped, ", "))
	}
	return svg, b.String(), err
}

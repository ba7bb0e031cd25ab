package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// gauss2D is an isotropic Gaussian component of a 2-D fixture task.
type gauss2D struct{ x0, x1, sd, w float64 }

// gridJoint is the joint of one Gaussian per class on the G×G grid over [−box, box]²,
// normalised on the grid (cell c = i·G + j, class y at c·K + y).
func gridJoint(g int, box float64, comps []gauss2D) []float64 {
	k := len(comps)
	cells := densityGrid(nil, g, box)
	out := make([]float64, g*g*k)
	s := 0.0
	for i := 0; i < g; i++ {
		for j := 0; j < g; j++ {
			x0, x1 := cells.X(i), cells.Y(j)
			for y, c := range comps {
				d2 := (x0-c.x0)*(x0-c.x0) + (x1-c.x1)*(x1-c.x1)
				v := c.w * math.Exp(-d2/(2*c.sd*c.sd)) / (c.sd * c.sd)
				out[(i*g+j)*k+y] = v
				s += v
			}
		}
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// input2D is one 2-D point (id 7, G=16, K=2, box 3) with two tasks, the methods
// baseline, jem and sgld (with its replay buffers), their curves and a sampler
// comparison in the summary.
func input2D() Input {
	const g, box = 16, 3.0
	methods := []string{"baseline", "jem", "sgld"}
	params := schemas.Grid{XValues: g * g, Classes: 2, Samples: 500, Model: "mlp:32,32", LR: 0.01, Steps: 1000, PxWeight: 1,
		Task: "gmm:2,2", GridCells: g, Box: box, TrainGrid: 32,
		SGLDPreset: "official", SGLDLR: 1, SGLDSteps: 20, BufferSize: 3000, ReinitFreq: 0.05}
	nan := math.NaN()
	in := Input{Title: "2-D: gmm", Config: map[string]any{"task": "gmm:2,2"}}
	r := rand.New(rand.NewPCG(5, 8))
	kls := map[string][]float64{}
	for task := int64(0); task < 2; task++ {
		shift := 0.3 * float64(task)
		truth := []gauss2D{{-1 + shift, 0, 0.6, 0.5}, {1, 0.5 - shift, 0.5, 0.5}}
		learned := map[string][]gauss2D{
			"baseline": {{2.5, 2.5, 0.4, 0.5}, {2.5, -2.5, 0.4, 0.5}},
			"jem":      {{-0.95 + shift, 0.05, 0.62, 0.5}, {1, 0.45 - shift, 0.52, 0.5}},
			"sgld":     {{-0.8 + shift, 0.2, 0.8, 0.5}, {1.1, 0.5 - shift, 0.7, 0.5}},
		}
		t := Task2D{PointID: 7, TaskID: 100 + task, Ordinal: task, Task: params.Task, G: g, Box: box, K: 2,
			True: gridJoint(g, box, truth), Learned: map[string][]float64{}, Buffers: map[string][]float32{}}
		for _, m := range methods {
			t.Learned[m] = gridJoint(g, box, learned[m])
		}
		var buf []float32
		for n := 0; n < 3000; n++ {
			c := learned["sgld"][n%2]
			buf = append(buf, float32(c.x0+c.sd*r.NormFloat64()), float32(c.x1+c.sd*r.NormFloat64()))
		}
		buf[0], buf[1] = 3.5, 0 // outside the box
		t.Buffers["sgld"] = buf
		in.Tasks2D = append(in.Tasks2D, t)

		for _, m := range methods {
			kl := prob.KL(t.True, t.Learned[m])
			kls[m] = append(kls[m], kl)
			row := schemas.ResultRow{RunID: fmt.Sprintf("p0007-t%07d-%s", t.TaskID, m), TableID: t.TaskID, Method: m, PointID: 7,
				KLJoint: kl, KLMarginal: 0.6 * kl, KLConditional: 0.4 * kl, Accuracy: 0.9, BayesAccuracy: 0.92,
				Floor: nan, KLEmpirical: nan, KLApproximation: nan, KLOptimisationGap: nan, KLEstimation: nan, KLMarginalGap: nan,
				KLReference: nan, KLReferenceExpected: nan, KLMarginalReferenceExpected: nan,
				BufferInBox: nan, BufferTVTruth: nan, BufferTVModel: nan}
			px := 1.0
			if m == "baseline" {
				px = 0
			}
			params.SetColumns(&row, px)
			in.Results = append(in.Results, row)

			c := Curve{PointID: 7, TaskID: t.TaskID, Method: m}
			for st := 0; st <= 1000; st += 100 {
				v := kl * (1 + 20*math.Exp(-float64(st)/200)*(1+0.1*float64(task)))
				c.Steps = append(c.Steps, st)
				c.KLJoint, c.KLMarginal, c.KLConditional = append(c.KLJoint, v), append(c.KLMarginal, 0.6*v), append(c.KLConditional, 0.4*v)
			}
			in.Curves = append(in.Curves, c)
		}
	}

	ps := schemas.PointSummary{PointID: 7, Params: params, Tables: 2, Floor: nan, EmptyCellShare: nan, ReferenceExpected: nan, Reference: nan}
	for _, m := range methods {
		d := describe(kls[m])
		none := schemas.Dist{Mean: nan, Median: nan, P10: nan, P90: nan}
		ps.Methods = append(ps.Methods, schemas.MethodSummary{Method: m, Runs: 2,
			KLJoint:    schemas.Dist{Count: 2, Mean: d.mean, Median: d.median, P10: d.p10, P90: d.p90},
			KLMarginal: schemas.Dist{Count: 2, Mean: 0.6 * d.mean, Median: 0.6 * d.median}, KLConditional: schemas.Dist{Count: 2, Mean: 0.4 * d.mean, Median: 0.4 * d.median},
			Accuracy: schemas.Dist{Count: 2, Mean: 0.9}, BayesAccuracy: schemas.Dist{Count: 2, Mean: 0.92},
			KLEmpirical: none, FloorRatio: nan, KLApproximation: none, KLOptimisationGap: none, KLEstimation: none, KLMarginalGap: none,
			ReferenceRatio: nan, GapRatio: nan})
	}
	ps.Comparison = &schemas.Comparison{Pairs: 2, JEMWinShare: 1, MeanDiff: 0.5, DiffCILow: 0.4, DiffCIHigh: 0.6, WilcoxonW: 3, WilcoxonZ: 1.3, WilcoxonP: 0.5, BaselineToJEM: 40}
	ps.Samplers = []schemas.SamplerComparison{{Method: "sgld", Pairs: 2, Excluded: 1, MeanExact: 0.0123, MeanSampler: 0.0456,
		Excess: 0.0333, ExcessCILow: 0.0211, ExcessCIHigh: 0.0455, MarginalExcess: 0.0222, MarginalCILow: 0.0101, MarginalCIHigh: 0.0343,
		WorseShare: 1, WilcoxonP: 0.5, ExcessRatio: 2.71, Grade: "within_0.1_nat", MatchesWithin: 0.00123, Runs: 3, Unstable: 1}}
	ps.Verdict = schemas.Verdict{Holds: true, Decided: true, Pairs: 2, Reason: "HOLDS: exact JEM fits the grid joint"}
	in.Summary = schemas.Summary{Pipeline: "control", Seed: 1, Points: []schemas.PointSummary{ps}, Verdict: ps.Verdict}
	return in
}

// svgNames are the names of the figures in out, sorted.
func svgNames(out map[string][]byte) []string {
	var names []string
	for k := range out {
		if n, ok := strings.CutPrefix(k, "figures/"); ok {
			names = append(names, strings.TrimSuffix(n, ".svg"))
		}
	}
	sort.Strings(names)
	return names
}

// checkXML fails when b is not well-formed XML.
func checkXML(t *testing.T, name string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Errorf("%s is not XML: %v", name, err)
			return
		}
	}
}

// TestTask2D: a 2-D point draws its task figures and curves with no warning, every
// figure FigureNames lists, SVGs that parse, the same bytes twice (and for its rows and
// curves in another order), and the sampler table with its numbers.
func TestTask2D(t *testing.T) {
	in := input2D()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	if strings.Contains(html, "could not be drawn") {
		t.Fatalf("figure warnings:\n%s", html)
	}
	want := []string{"baseline_vs_jem", "curves_p7", "kl_dist", "ood_scores_p7", "reliability_p7", "task2d_p7_t0", "task2d_p7_t1"}
	if got := svgNames(out); !slices.Equal(got, want) {
		t.Errorf("figures %v, want %v", got, want)
	}
	names := FigureNames(in)
	sort.Strings(names)
	if !slices.Equal(names, want) {
		t.Errorf("FigureNames %v, want %v", names, want)
	}
	for k, v := range out {
		if strings.HasSuffix(k, ".svg") {
			checkXML(t, k, v)
		}
	}

	shuffled := in
	shuffled.Results, shuffled.Curves = slices.Clone(in.Results), slices.Clone(in.Curves)
	r := rand.New(rand.NewPCG(2, 3))
	r.Shuffle(len(shuffled.Results), func(i, j int) { shuffled.Results[i], shuffled.Results[j] = shuffled.Results[j], shuffled.Results[i] })
	r.Shuffle(len(shuffled.Curves), func(i, j int) { shuffled.Curves[i], shuffled.Curves[j] = shuffled.Curves[j], shuffled.Curves[i] })
	for _, x := range []Input{in, shuffled} {
		again, err := Render(x)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sortedKeys(again), sortedKeys(out)) {
			t.Fatalf("keys differ: %v vs %v", sortedKeys(again), sortedKeys(out))
		}
		for k := range out {
			if !bytes.Equal(out[k], again[k]) {
				t.Errorf("%s differs between renders", k)
			}
		}
	}

	// The panels carry their run's KL; the buffer is subsampled to every 2nd sample.
	svg := string(out["figures/task2d_p7_t1.svg"])
	for _, m := range []string{"baseline", "jem", "sgld"} {
		if want := m + " q(x), KL " + fmtKL(in.Results[3+slices.Index([]string{"baseline", "jem", "sgld"}, m)].KLJoint); !strings.Contains(svg, want) {
			t.Errorf("task2d_p7_t1 lacks the panel title %q", want)
		}
	}
	caption := captionOf(t, html, "task2d_p7_t1")
	for _, want := range []string{"sgld: 1500 of its 3000 buffer samples drawn (one in every 2); ", "Joint KL(p‖q) on the grid: baseline "} {
		if !strings.Contains(caption, want) {
			t.Errorf("task caption lacks %q: %s", want, caption)
		}
	}

	_, samplers, ok := strings.Cut(html, "<h2>Sampler against exact JEM</h2>")
	if !ok {
		t.Fatal("no sampler table")
	}
	samplers, _, _ = strings.Cut(samplers, "<h2>")
	row := `<td class="l key" rowspan="1">7</td><td class="l" rowspan="1">gmm:2,2</td><td class="l"><span class="method-sgld">sgld</span></td>` +
		`<td class="params">sgld_preset=official, sgld_lr=1, sgld_std=0.01, sgld_steps=20, sgld_clamp=false, buffer_size=3000, reinit_freq=0.05</td>` +
		`<td>2 (1)</td><td>0.0123</td><td>0.0456</td><td>0.0333</td><td>[0.0211, 0.0455]</td><td class="l"><span class="">within 0.1 nat</span></td><td>1 of 3</td><td>0.0222</td><td>[0.0101, 0.0343]</td><td>100.0%</td><td>0.5</td>`
	if !strings.Contains(samplers, row) {
		t.Errorf("sampler table lacks\n%s\nin\n%s", row, samplers)
	}
	for _, want := range []string{
		"<h2>2-D tasks</h2>",
		`<figure id="task2d_p7_t0">`,
		`<figure id="curves_p7">`,
		"task=gmm:2,2, grid=16×16 over [−3, 3]², K=2, N=500",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The error split does not apply to 2-D tasks: no section, no link to one.
	for _, bad := range []string{"NaN", "—×", "n/a×", `id="split"`, `href="#split"`, "No error split"} {
		if strings.Contains(html, bad) {
			t.Errorf("report shows %q", bad)
		}
	}
	// The 2-D figures are in their section, not under Figures.
	_, figs, _ := strings.Cut(html, "<h2>Figures</h2>")
	figs, _, _ = strings.Cut(figs, "<h2>2-D tasks</h2>")
	if strings.Contains(figs, "task2d_") || !strings.Contains(figs, `<figure id="kl_dist">`) {
		t.Errorf("figures section:\n%s", figs)
	}
	// No floor line on the KL figures of 2-D tasks.
	if c := captionOf(t, html, "kl_dist"); !strings.Contains(c, "The 2-D tasks have no floor") {
		t.Errorf("kl_dist caption: %s", c)
	}
	if strings.Contains(string(out["figures/kl_dist.svg"]), ">floor<") {
		t.Errorf("kl_dist of 2-D tasks draws a floor")
	}
}

// TestTask2DMixed: a table point beside a 2-D point keeps its floor figures, which
// leave the 2-D point out and say so, and its error split, which notes the 2-D point.
func TestTask2DMixed(t *testing.T) {
	in := fixture("mixed", []grid{{id: 0, x: 4, k: 2, samples: 200, steps: 500, lr: 0.05, model: "linear", enc: "onehot", gen: "uniform",
		tables: 4, methods: []string{"baseline", "jem"}, jemScale: 1.1, bScale: 6}})
	two := input2D()
	in.Results = append(in.Results, two.Results...)
	in.Summary.Points = append(in.Summary.Points, two.Summary.Points...)
	in.Tasks2D, in.Curves = two.Tasks2D, two.Curves
	out, _ := renderFigures(t, in)
	for _, want := range []string{"baseline_vs_jem", "curves_p7", "kl_dist", "kl_vs_task", "task2d_p7_t0", "task2d_p7_t1"} {
		if !slices.Contains(svgNames(out), want) {
			t.Errorf("figures %v lack %s", svgNames(out), want)
		}
	}
	html := string(out["report.html"])
	for _, name := range []string{"kl_dist", "baseline_vs_jem"} {
		if c := captionOf(t, html, name); !strings.Contains(c, "The 1 2-D grid point(s) have no floor") {
			t.Errorf("%s caption does not say the 2-D point is left out: %s", name, c)
		}
	}
	for _, want := range []string{"The 2-D grid points have no add-½ reference: they are not in the error split.", "<h2>2-D tasks</h2>"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestTask2DBad: a task of the wrong shape is a warning, not a failure; NaN in a
// learned joint is drawn grey; curves without a finite value draw no figure.
func TestTask2DBad(t *testing.T) {
	in := input2D()
	in.Tasks2D[0].True = in.Tasks2D[0].True[:10]
	in.Tasks2D[1].Learned["jem"][5] = math.NaN()
	in.Tasks2D[1].Learned["oracle"] = []float64{1} // wrong size: left out
	in.Tasks2D[1].Buffers["sgld"] = append(in.Tasks2D[1].Buffers["sgld"], float32(math.NaN()))
	in.Curves = append(in.Curves, Curve{PointID: 9, Method: "jem", Steps: []int{1, 2}, KLJoint: []float64{math.NaN(), math.Inf(1)}})
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	if !strings.Contains(html, "figure task2d_p7_t0 could not be drawn") {
		t.Errorf("no warning for the bad task")
	}
	if strings.Contains(html, "task2d_p7_t1 could not be drawn") || out["figures/task2d_p7_t1.svg"] == nil {
		t.Errorf("task with a NaN cell not drawn")
	}
	if c := captionOf(t, html, "task2d_p7_t1"); !strings.Contains(c, "Learned joints of the wrong size were left out: oracle.") {
		t.Errorf("caption: %s", c)
	}
	if slices.Contains(FigureNames(in), "curves_p9") {
		t.Errorf("curves without a finite value are named")
	}
}

// TestMassContours: the contours of a density are traced at the levels of its
// highest density regions, solid then dashed; a density without mass has none.
func TestMassContours(t *testing.T) {
	const g, box = 40, 2.0
	radial := make([]float64, g*g)
	cells := densityGrid(radial, g, box)
	for i := 0; i < g; i++ {
		for j := 0; j < g; j++ {
			x, y := cells.X(i), cells.Y(j)
			radial[i*g+j] = math.Exp(-(x*x + y*y))
		}
	}
	first, rest := solid(colOverlay, 1), dashed(colOverlay, 1)
	for _, tc := range []struct {
		name   string
		dens   []float64
		levels []float64
	}{
		{"radial", radial, []float64{massLevel(radial, contourMasses[0]), massLevel(radial, contourMasses[1])}},
		{"no mass", make([]float64, g*g), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := massContours(tc.dens, g, box, first, rest)
			if len(got) != len(tc.levels) {
				t.Fatalf("%d contours, want %d", len(got), len(tc.levels))
			}
			for k, pl := range got {
				c, ok := pl.(*contourLines)
				if !ok {
					t.Fatalf("contour %d is a %T", k, pl)
				}
				want := first
				if k > 0 {
					want = rest
				}
				if len(c.lines) == 0 || len(c.style.Dashes) != len(want.Dashes) {
					t.Errorf("contour %d: %d lines, style %v; want lines at level %v, dashes %v", k, len(c.lines), c.style, tc.levels[k], want.Dashes)
				}
			}
		})
	}
}

// TestCellGrid: a density grid puts cell i·G + j at the centre of its cell, and
// upsampling splits each cell into s×s cells of its value over the same area.
func TestCellGrid(t *testing.T) {
	dens := []float64{1, 2, 3, 4} // G = 2: (i, j) = (0,0) 1, (0,1) 2, (1,0) 3, (1,1) 4
	for _, tc := range []struct {
		name        string
		g           cellGrid
		cols        int
		z           map[[2]int]float64
		x0, x1, dx0 float64 // X(0), Y(rows−1), X(1)−X(0)
	}{
		{"density", densityGrid(dens, 2, 1), 2, map[[2]int]float64{{0, 0}: 1, {0, 1}: 2, {1, 0}: 3, {1, 1}: 4}, -0.5, 0.5, 1},
		{"upsampled", densityGrid(dens, 2, 1).upsample(2), 4,
			map[[2]int]float64{{0, 0}: 1, {1, 1}: 1, {0, 3}: 2, {3, 0}: 3, {2, 2}: 4, {3, 3}: 4}, -0.75, 0.75, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, r := tc.g.Dims(); c != tc.cols || r != tc.cols {
				t.Errorf("dims %d×%d, want %d×%d", c, r, tc.cols, tc.cols)
			}
			for cr, want := range tc.z {
				if got := tc.g.Z(cr[0], cr[1]); got != want {
					t.Errorf("Z%v = %v, want %v", cr, got, want)
				}
			}
			if x, y, dx := tc.g.X(0), tc.g.Y(tc.cols-1), tc.g.X(1)-tc.g.X(0); math.Abs(x-tc.x0) > 1e-12 || math.Abs(y-tc.x1) > 1e-12 || math.Abs(dx-tc.dx0) > 1e-12 {
				t.Errorf("X(0) %v, Y(last) %v, step %v; want %v, %v, %v", x, y, dx, tc.x0, tc.x1, tc.dx0)
			}
		})
	}
}

// TestViridis: the viridis colour map builds from its stops and runs from the first
// stop at its minimum to the last at its maximum.
func TestViridis(t *testing.T) {
	cm := viridis(-2, 3)
	for _, tc := range []struct {
		name string
		at   float64
		want color.Color
	}{
		{"minimum", -2, viridisStops[0]},
		{"maximum", 3, viridisStops[len(viridisStops)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cm.At(tc.at)
			if err != nil {
				t.Fatal(err)
			}
			r0, g0, b0, _ := got.RGBA()
			r1, g1, b1, _ := tc.want.RGBA()
			for _, d := range []int{int(r0) - int(r1), int(g0) - int(g1), int(b0) - int(b1)} {
				if d < -0x200 || d > 0x200 { // within 2 of 255 per channel
					t.Errorf("At(%v) = %v, want %v", tc.at, got, tc.want)
					break
				}
			}
		})
	}
}

// TestMassLevel: the level's region holds at least the share of the mass.
func TestMassLevel(t *testing.T) {
	d := []float64{4, 3, 2, 1, math.NaN(), 0}
	if l := massLevel(d, 0.5); l != 3 {
		t.Errorf("level %v, want 3 (4+3 ≥ 5)", l)
	}
	if l := massLevel(d, 0.9); l != 2 {
		t.Errorf("level %v, want 2 (4+3+2 ≥ 9)", l)
	}
	if l := massLevel(d, 0.95); l != 1 {
		t.Errorf("level %v, want 1", l)
	}
	if l := massLevel([]float64{0, math.NaN()}, 0.5); !math.IsNaN(l) {
		t.Errorf("level of no mass %v", l)
	}
}

// TestContourCircle: the level set of a radial function on a grid is one closed
// polyline at the level's radius.
func TestContourCircle(t *testing.T) {
	const g, box, radius = 40, 2.0, 1.0
	h := 2 * box / g
	dens := make([]float64, g*g)
	for i := 0; i < g; i++ {
		for j := 0; j < g; j++ {
			x, y := gridPoint(i, j, box, h)
			dens[i*g+j] = math.Exp(-(x*x + y*y))
		}
	}
	lines := contourPolylines(dens, g, box, math.Exp(-radius*radius))
	if len(lines) != 1 {
		t.Fatalf("%d polylines, want 1", len(lines))
	}
	ln := lines[0]
	if ln[0] != ln[len(ln)-1] || len(ln) < 20 {
		t.Errorf("polyline of %d points not closed: %v … %v", len(ln), ln[0], ln[len(ln)-1])
	}
	for _, p := range ln {
		if r := math.Hypot(p.X, p.Y); math.Abs(r-radius) > 0.05 {
			t.Errorf("point %v at radius %.3f, want %.3f", p, r, radius)
		}
	}
	if got := contourPolylines(dens, g, box, math.NaN()); got != nil {
		t.Errorf("NaN level: %d polylines", len(got))
	}
}

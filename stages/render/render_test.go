package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// grid is one fixture grid point.
type grid struct {
	id               int64
	x, k             int64
	samples, steps   int64
	lr               float64
	batch            int64
	model, enc, gen  string
	tables           int
	methods          []string
	jemScale, bScale float64               // KL as a multiple of the floor
	pxWeight         float64               // JEM's p(x) weight; 0 stands for 1
	more             func(p *schemas.Grid) // sets the task and sampler axes (nil: none)
}

func (g grid) floor() float64 { return float64(g.x*g.k-1) / (2 * float64(g.samples)) }

func (g grid) px() float64 {
	if g.pxWeight == 0 {
		return 1
	}
	return g.pxWeight
}

func (g grid) params() schemas.Grid {
	p := schemas.Grid{XValues: int(g.x), Classes: int(g.k), Samples: int(g.samples), Steps: int(g.steps), LR: g.lr, BatchSize: int(g.batch),
		Model: g.model, Encoding: g.enc, Generator: g.gen, PxWeight: g.px()}
	if g.more != nil {
		g.more(&p)
	}
	return p
}

// fixture builds results and a matching hand-made summary for the grid points.
func fixture(title string, pts []grid) Input {
	r := rand.New(rand.NewPCG(7, 11))
	in := Input{Title: title, Config: map[string]any{"seed": 42, "tables": pts[0].tables, "note": "<b>escaped</b> & fine"}}
	in.Summary = schemas.Summary{Pipeline: "control", Seed: 42}
	for _, g := range pts {
		fl := g.floor()
		// Every fourth table drew no sample in some cell: its empirical KL is +Inf. The
		// family is complete (one-hot x), so the approximation error is 0.
		empty := 0
		for t := 0; t < g.tables; t++ {
			if t%4 == 0 {
				empty++
			}
		}
		refExp, ref := 1.2*fl, 1.1*fl
		ps := schemas.PointSummary{PointID: g.id, Params: g.params(), Tables: g.tables, Floor: fl, Family: "complete",
			EmptyCellShare: float64(empty) / float64(g.tables), ReferenceExpected: refExp, Reference: ref}
		var jemGap, jemMGap []float64
		var jemKL, baseKL []float64
		for _, m := range g.methods {
			ms := schemas.MethodSummary{Method: m}
			var kls, gaps, ests, mgaps []float64
			for t := 0; t < g.tables; t++ {
				scale := g.jemScale
				switch m {
				case "baseline":
					scale = g.bScale
				case "oracle":
					scale = 0.05
				}
				kl := fl * scale * math.Exp(0.6*r.NormFloat64())
				gapShare := 0.05 // the share of the joint KL that is optimisation gap
				switch m {
				case "baseline":
					gapShare = 0.9
				case "oracle":
					gapShare = 1 // trained on p: no estimation error
				}
				acc := 0.7 + 0.1*r.Float64()
				emp, cells := fl*math.Exp(0.3*r.NormFloat64()), int64(0)
				if t%4 == 0 {
					emp, cells = math.Inf(1), 1
				}
				px := g.px()
				if m == "baseline" {
					px = 0 // as stages.EvaluateRun writes it
				}
				row := schemas.ResultRow{
					RunID: fmt.Sprintf("p%04d-t%07d-%s", g.id, t, m), TableID: int64(t), Method: m, PointID: g.id,
					XValues: g.x, Classes: g.k, Encoding: g.enc, Generator: g.gen, Model: g.model,
					Samples: g.samples, Steps: g.steps, LR: g.lr, BatchSize: g.batch, PxWeight: px,
					KLJoint: kl, KLMarginal: kl * 0.6, KLConditional: kl * 0.4,
					Accuracy: acc, BayesAccuracy: 0.8, Floor: fl,
					KLEmpirical: emp, EmptyCells: cells, FinalLoss: 1.2,
					KLOptimisationGap: gapShare * kl, KLEstimation: (1 - gapShare) * kl, KLMarginalGap: 0.5 * gapShare * kl,
					KLReference: ref, KLReferenceExpected: refExp, KLMarginalReferenceExpected: fl,
				}
				in.Results = append(in.Results, row)
				kls = append(kls, kl)
				gaps, ests, mgaps = append(gaps, row.KLOptimisationGap), append(ests, row.KLEstimation), append(mgaps, row.KLMarginalGap)
				switch m {
				case "jem":
					jemKL = append(jemKL, kl)
					jemGap, jemMGap = append(jemGap, row.KLOptimisationGap), append(jemMGap, row.KLMarginalGap)
				case "baseline":
					baseKL = append(baseKL, kl)
				}
			}
			ms.Runs = len(kls)
			d := describe(kls)
			ms.KLJoint = schemas.Dist{Count: d.n, Mean: d.mean, Median: d.median, P10: d.p10, P90: d.p90}
			ms.KLMarginal = schemas.Dist{Count: d.n, Mean: d.mean * 0.6, Median: d.median * 0.6}
			ms.KLConditional = schemas.Dist{Count: d.n, Mean: d.mean * 0.4, Median: d.median * 0.4}
			ms.Accuracy = schemas.Dist{Count: d.n, Mean: 0.75}
			ms.BayesAccuracy = schemas.Dist{Count: d.n, Mean: 0.8}
			ms.KLEmpirical = schemas.Dist{Count: d.n - empty, Infinite: empty, Mean: fl}
			ms.FloorRatio = d.mean / fl
			dg, de, dm := describe(gaps), describe(ests), describe(mgaps)
			ms.KLApproximation = schemas.Dist{Count: d.n}
			ms.KLOptimisationGap = schemas.Dist{Count: dg.n, Mean: dg.mean, Median: dg.median, P10: dg.p10, P90: dg.p90}
			ms.KLEstimation = schemas.Dist{Count: de.n, Mean: de.mean, Median: de.median, P10: de.p10, P90: de.p90}
			ms.KLMarginalGap = schemas.Dist{Count: dm.n, Mean: dm.mean, Median: dm.median, P10: dm.p10, P90: dm.p90}
			ms.ReferenceRatio = d.mean / refExp
			ms.GapRatio = dg.mean / refExp
			ps.Methods = append(ps.Methods, ms)
		}
		if len(jemKL) > 0 && len(baseKL) > 0 {
			var wins float64
			for i := range jemKL {
				if jemKL[i] < baseKL[i] {
					wins++
				}
			}
			ps.Comparison = &schemas.Comparison{Pairs: len(jemKL), JEMWinShare: wins / float64(len(jemKL)),
				MeanDiff: 0.01, DiffCILow: 0.005, DiffCIHigh: 0.015, WilcoxonW: 50, WilcoxonZ: 2.5, WilcoxonP: 0.012, BaselineToJEM: g.bScale / g.jemScale}
		}
		holds := g.jemScale < 2 && g.bScale > 3
		word := map[bool]string{true: "HOLDS", false: "FAILS"}[holds]
		ps.Verdict = schemas.Verdict{Holds: holds, Decided: true, Pairs: len(jemKL),
			Reason: fmt.Sprintf("%s: JEM at %.1f× floor, baseline at %.1f×", word, g.jemScale, g.bScale)}
		if len(jemGap) > 0 {
			share := func(vs []float64, scale float64) schemas.Number { return schemas.Number(describe(vs).mean / scale) }
			opt, marg := share(jemGap, refExp), share(jemMGap, fl)
			ps.Verdict.Checks = []schemas.Check{
				{Name: "optimisation_gap", What: "JEM's optimisation gap, over the statistical error", Value: opt, CILow: opt * 0.8, CIHigh: opt * 1.25,
					Limit: 0.1, Pass: opt*1.25 <= 0.1, Deciding: true},
				{Name: "marginal_gap", What: "the optimisation gap of q(x), over its statistical error", Value: marg, CILow: marg * 0.8, CIHigh: marg * 1.25,
					Limit: 0.1, Pass: marg*1.25 <= 0.1, Deciding: true},
				{Name: "approximation", What: "the model family's approximation error, over the statistical error", Value: 0, CILow: 0, CIHigh: 0,
					Limit: 0.1, Pass: true, Deciding: true},
				{Name: "paired_reference", What: "JEM's excess KL over the add-½ reference's on the same counts", Value: 1.02, CILow: 0.97, CIHigh: 1.08,
					Limit: 1.1, Pass: true},
			}
			if c := ps.Comparison; c != nil {
				ps.Verdict.Checks = append(ps.Verdict.Checks, schemas.Check{Name: "baseline_vs_jem", What: "paired Wilcoxon signed-rank test (p-value)",
					Value: schemas.Number(c.WilcoxonP), CILow: schemas.Number(math.NaN()), CIHigh: schemas.Number(math.NaN()), Limit: 0.01, Pass: false})
			}
			if !holds {
				ps.Verdict.Cause = "steps"
			}
		}
		in.Summary.Points = append(in.Summary.Points, ps)
	}
	in.Summary.Verdict = schemas.Verdict{Holds: true, Reason: "JEM's joint KL is within 2× of the floor at every point; the baseline's is not."}
	return in
}

func triple(r *rand.Rand, point, table int64, x, k int, methods []string) Triple {
	norm := func(n int, noise float64, base []float64) []float64 {
		v := make([]float64, n)
		var s float64
		for i := range v {
			if base != nil {
				v[i] = base[i] * math.Exp(noise*r.NormFloat64())
			} else {
				v[i] = r.ExpFloat64()
			}
			s += v[i]
		}
		for i := range v {
			v[i] /= s
		}
		return v
	}
	p := norm(x*k, 0, nil)
	t := Triple{TableID: table, Ordinal: table, PointID: point, X: x, K: k, True: p, Learned: map[string][]float64{}}
	for _, m := range methods {
		noise := 0.1
		if m == "baseline" {
			noise = 0.8
		}
		t.Learned[m] = norm(x*k, noise, p)
	}
	return t
}

func singleInput() Input {
	in := fixture("JEM control: 4×2 tables", []grid{{
		id: 0, x: 4, k: 2, samples: 200, steps: 500, lr: 0.05, model: "linear", enc: "onehot", gen: "uniform",
		tables: 10, methods: []string{"baseline", "jem"}, jemScale: 1.1, bScale: 6,
	}})
	r := rand.New(rand.NewPCG(3, 5))
	in.Triples = []Triple{triple(r, 0, 0, 4, 2, []string{"baseline", "jem"}), triple(r, 0, 1, 3, 3, []string{"baseline", "jem"})}
	return in
}

func sweepInput() Input {
	var pts []grid
	id := int64(0)
	for _, n := range []int64{100, 1000} {
		for _, lr := range []float64{0.01, 0.1} {
			pts = append(pts, grid{id: id, x: 3, k: 2, samples: n, steps: 300, lr: lr, model: "linear", enc: "onehot", gen: "uniform",
				tables: 5, methods: []string{"baseline", "jem", "oracle"}, jemScale: 1 + 10*lr, bScale: 8})
			id++
		}
	}
	in := fixture("Sweep: samples × lr", pts)
	in.Summary.Pipeline = "sweep"
	r := rand.New(rand.NewPCG(9, 9))
	in.Triples = []Triple{triple(r, 3, 0, 3, 2, []string{"baseline", "jem", "oracle"})}
	return in
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{{"single", singleInput()}, {"sweep", sweepInput()}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out["report.html"], []byte("could not be drawn")) {
				t.Errorf("report has figure warnings")
			}
			dir := filepath.Join("testdata", tc.name)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				for k, v := range out {
					p := filepath.Join(dir, filepath.FromSlash(k))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, v, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			var golden []string
			err = filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
				if err != nil || de.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				golden = append(golden, filepath.ToSlash(rel))
				return nil
			})
			if err != nil {
				t.Fatalf("reading goldens (run with -update to create them): %v", err)
			}
			if got := sortedKeys(out); !slices.Equal(got, golden) {
				t.Fatalf("files: got %v, golden %v", got, golden)
			}
			for _, k := range golden {
				want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out[k], want) {
					t.Errorf("%s differs from its golden file (run go test -update after checking the change)", k)
				}
			}
		})
	}
}

func sortedKeys(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestDeterministic(t *testing.T) {
	in := sweepInput()
	a, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	// The same rows in another order render the same bytes.
	shuffled := in
	shuffled.Results = slices.Clone(in.Results)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled.Results), func(i, j int) {
		shuffled.Results[i], shuffled.Results[j] = shuffled.Results[j], shuffled.Results[i]
	})
	for _, x := range []Input{in, shuffled} {
		b, err := Render(x)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sortedKeys(a), sortedKeys(b)) {
			t.Fatalf("keys differ: %v vs %v", sortedKeys(a), sortedKeys(b))
		}
		for k := range a {
			if !bytes.Equal(a[k], b[k]) {
				t.Errorf("%s differs between renders", k)
			}
		}
	}
}

func figureSet(out map[string][]byte) []string {
	var names []string
	for k := range out {
		if n, ok := strings.CutPrefix(k, "figures/"); ok {
			n = strings.TrimSuffix(n, ".svg")
			if !strings.HasPrefix(n, figTriplePrefix) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

func TestFigureSelection(t *testing.T) {
	base := grid{x: 4, k: 2, samples: 100, steps: 200, lr: 0.01, model: "linear", enc: "onehot", gen: "uniform",
		tables: 3, methods: []string{"baseline", "jem"}, jemScale: 1, bScale: 5}
	vary := func(f ...func(g *grid)) []grid {
		var out []grid
		for i, fn := range f {
			g := base
			g.id = int64(i)
			fn(&g)
			out = append(out, g)
		}
		return out
	}
	same := func(g *grid) {}
	for _, tc := range []struct {
		name string
		pts  []grid
		want []string
	}{
		{"single point", vary(same), []string{"baseline_vs_jem", "kl_dist"}},
		{"replicates only", vary(same, same), []string{"baseline_vs_jem", "kl_dist"}},
		{"samples", vary(same, func(g *grid) { g.samples = 1000 }, func(g *grid) { g.samples = 10000 }),
			[]string{"baseline_vs_jem", "kl_dist", "kl_vs_samples"}},
		{"lr", vary(same, func(g *grid) { g.lr = 0.1 }), []string{"baseline_vs_jem", "kl_dist", "kl_vs_lr"}},
		{"steps and model", vary(same, func(g *grid) { g.steps = 2000 }, func(g *grid) { g.model = "mlp:16" }),
			[]string{"baseline_vs_jem", "heatmap_steps_model", "kl_dist", "kl_vs_model", "kl_vs_steps"}},
		{"size and batch", vary(same, func(g *grid) { g.x, g.k = 8, 3; g.batch = 32 }),
			[]string{"baseline_vs_jem", "heatmap_size_batch_size", "kl_dist", "kl_vs_batch_size", "kl_vs_size"}},
		{"encoding and generator", vary(same, func(g *grid) { g.enc = "scalar" }, func(g *grid) { g.gen = "dirichlet:0.5" }),
			[]string{"baseline_vs_jem", "heatmap_encoding_generator", "kl_dist", "kl_vs_encoding", "kl_vs_generator"}},
		{"no jem", vary(func(g *grid) { g.methods = []string{"baseline"} }, func(g *grid) { g.methods = []string{"baseline"}; g.samples = 1000 }),
			[]string{"kl_dist", "kl_vs_samples"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fixture(tc.name, tc.pts)
			out, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := figureSet(out); !slices.Equal(got, tc.want) {
				t.Errorf("figures %v, want %v", got, tc.want)
			}
			names := FigureNames(in)
			sort.Strings(names)
			if !slices.Equal(names, tc.want) {
				t.Errorf("FigureNames %v, want %v", names, tc.want)
			}
			if bytes.Contains(out["report.html"], []byte("could not be drawn")) {
				t.Errorf("report has figure warnings")
			}
		})
	}
}

func TestBadValues(t *testing.T) {
	in := sweepInput()
	rows := in.Results
	rows[0].KLJoint = math.NaN()
	rows[1].KLJoint = math.Inf(1)
	rows[2].KLJoint = 0
	rows[3].KLJoint = -1e-17
	rows[4].Diverged = true
	rows[4].KLJoint = math.NaN()
	rows[5].Floor = math.NaN()
	rows[6].KLEmpirical = math.Inf(1)
	in.Summary.Points[0].Methods[0].KLJoint.Mean = math.NaN()
	in.Summary.Points[0].Comparison.WilcoxonP = math.Inf(1)
	in.Triples[0].Learned["jem"][0] = math.NaN()
	in.Triples[0].Learned["oracle"] = []float64{1} // wrong size: left out
	in.Config = map[string]any{"bad": math.NaN()}  // not JSON: reported, not fatal
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	if strings.Contains(html, "could not be drawn") {
		t.Errorf("figure warnings in report")
	}
	for _, want := range []string{"baseline: 1 of 20 runs diverged, 2 had a non-finite joint KL, 2 joint KL values", "were clamped", "could not be encoded"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// Every run bad: no KL figures, still a report.
	for i := range rows {
		rows[i].KLJoint = math.NaN()
	}
	out, err = Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := figureSet(out); len(got) != 0 {
		t.Errorf("figures from all-NaN results: %v", got)
	}

	// All KL zero (clamped to one value) still draws.
	for i := range rows {
		rows[i].KLJoint = 0
		rows[i].Diverged = false
	}
	out, err = Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out["report.html"]), "could not be drawn") {
		t.Errorf("figure warnings with all-zero KL:\n%s", out["report.html"])
	}
}

func TestEmptyInput(t *testing.T) {
	out, err := Render(Input{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out["report.html"] == nil {
		t.Errorf("keys %v", sortedKeys(out))
	}
}

func TestEscaping(t *testing.T) {
	in := singleInput()
	in.Title = `<script>alert("x")</script>`
	in.Summary.Verdict.Reason = "<img src=x onerror=alert(1)>"
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	if strings.Contains(html, "<script>alert") || strings.Contains(html, "<img src=x") {
		t.Errorf("unescaped input in report")
	}
}

func TestBadTriple(t *testing.T) {
	in := singleInput()
	in.Triples = append(in.Triples, Triple{TableID: 9, Ordinal: 9, X: 2, K: 2, True: []float64{1}})
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out["report.html"]), "triple_p0_t9 could not be drawn") {
		t.Errorf("malformed triple not reported")
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi  float64
		minLabs int
	}{{1e-4, 1e-1, 3}, {0.002, 0.009, 2}, {0.0031, 0.0039, 2}, {1e-12, 1e3, 2}, {10, 10000, 3}} {
		labs := 0
		for _, tk := range (logTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Value < tc.lo*(1-1e-9) || tk.Value > tc.hi*(1+1e-9) {
				t.Errorf("[%g,%g]: tick %g out of range", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label != "" {
				labs++
			}
		}
		if labs < tc.minLabs {
			t.Errorf("[%g,%g]: %d labels", tc.lo, tc.hi, labs)
		}
	}
}

// TestLarge renders many runs quickly, with the scatter downsampled.
func TestLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	in := fixture("large", []grid{{id: 0, x: 4, k: 2, samples: 100, steps: 10, lr: 0.1, model: "linear", enc: "onehot", gen: "uniform",
		tables: 30000, methods: []string{"baseline", "jem"}, jemScale: 1, bScale: 5}})
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out["figures/baseline_vs_jem.svg"], []byte("<path")); n > maxScatterPoints+500 {
		t.Errorf("scatter has %d paths", n)
	}
	if !strings.Contains(string(out["report.html"]), "one table in every 2 is drawn") {
		t.Errorf("downsampling not mentioned")
	}
}

// captionOf returns the caption of a figure in report.html.
func captionOf(t *testing.T, html, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(html, `<figure id="`+name+`">`)
	if !ok {
		t.Fatalf("no figure %s", name)
	}
	c, _, _ := strings.Cut(rest, "</figcaption>")
	return c
}

// TestCaptionCounts: a caption counts the clamped, diverged and non-finite runs of the
// methods its figure shows only, and the histogram leaves clamped values out.
func TestCaptionCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{{"one floor", singleInput()}, {"floors differ", sweepInput()}} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			rows := slices.Clone(in.Results)
			oracle := 0
			for i := range rows {
				r := &rows[i]
				switch {
				case r.Method == "oracle":
					r.KLJoint = 0 // clamped: not on the scatter
					oracle++
				case r.Method == "jem" && r.TableID == 0 && r.PointID == 0:
					r.KLJoint = 1e-12 // one clamped value on the scatter
				}
			}
			if tc.name == "one floor" {
				// Add oracle rows: clamped, on the histogram only.
				for _, r := range in.Results {
					if r.Method == "jem" {
						o := r
						o.Method, o.RunID, o.KLJoint = "oracle", strings.Replace(r.RunID, "jem", "oracle", 1), 0
						rows = append(rows, o)
						oracle++
					}
				}
			}
			in.Results = rows
			out, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			html := string(out["report.html"])
			scatter := captionOf(t, html, FigBaselineVsJEM)
			if !strings.Contains(scatter, "1 KL value(s) ≤ 1e-9 (zero up to round-off; jem 1)") || strings.Contains(scatter, "oracle") {
				t.Errorf("scatter caption counts other methods: %s", scatter)
			}
			hist := captionOf(t, html, FigKLDist)
			want := fmt.Sprintf("%d KL value(s) ≤ 1e-9 (zero up to round-off; jem 1, oracle %d) have no place on a log axis and are not in the histogram", oracle+1, oracle)
			if !strings.Contains(hist, want) {
				t.Errorf("histogram caption lacks %q: %s", want, hist)
			}
			// The oracle's values are all clamped: it has no histogram curve, only a legend line.
			svg := string(out["figures/"+FigKLDist+".svg"])
			if !strings.Contains(svg, fmt.Sprintf("oracle: %d ≤ 1e-9", oracle)) || strings.Contains(svg, "oracle (n=") {
				t.Errorf("histogram draws clamped oracle values")
			}
			if strings.Contains(html, "holds: HOLDS") || strings.Contains(html, "does not hold: FAILS") {
				t.Errorf("verdict word repeated")
			}
		})
	}
}

func TestConfigNotEscapedTwice(t *testing.T) {
	in := singleInput()
	in.Config = json.RawMessage(`{"spec":"a\u003cb\u003e \u0026 c","literal":"\\u003c kept"}`)
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	_, pre, _ := strings.Cut(html, "<h2>Configuration</h2>")
	if !strings.Contains(pre, "a&lt;b&gt; &amp; c") || strings.Contains(pre, `\u003cb`) {
		t.Errorf("configuration block: %s", pre)
	}
	if !strings.Contains(pre, `\\u003c kept`) {
		t.Errorf("an escaped backslash was unescaped: %s", pre)
	}
}

func TestTripleNamesUseOrdinal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := triple(r, 0, 0, 2, 2, []string{"jem"}), triple(r, 0, 1, 2, 2, []string{"jem"})
	a.TableID, b.TableID = -5, math.MaxInt64
	out, err := Render(Input{Triples: []Triple{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(out); !slices.Equal(got, []string{"figures/triple_p0_t0.svg", "figures/triple_p0_t1.svg", "report.html"}) {
		t.Errorf("files %v", got)
	}
	if html := string(out["report.html"]); !strings.Contains(html, "Table -5 (point 0)") || !strings.Contains(html, "Table 9223372036854775807 (point 0)") {
		t.Errorf("titles do not show the user's table ids")
	}
}

// wrongClaims are phrases the report once used for the floor, the empirical table and
// the oracle, each wrong: the floor (X·K−1)/(2N) is only the first-order expected KL,
// the empirical table's KL is +Inf whenever a cell can be empty, and the oracle's KL is
// the approximation error plus the optimiser's residual.
var wrongClaims = []string{
	"expected KL of the empirical table",
	"approximation floor",
	"what a perfect fit",
	"as well as N samples allow",
	"its expectation is the floor",
	"the model family's own approximation error",
	"reaches what the sample size allows",
}

func TestNoWrongClaims(t *testing.T) {
	for _, in := range []Input{singleInput(), sweepInput()} {
		out, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range out {
			text := strings.ReplaceAll(string(b), "&#39;", "'")
			for _, w := range wrongClaims {
				if strings.Contains(text, w) {
					t.Errorf("%s: %s repeats %q", in.Title, name, w)
				}
			}
		}
		html := strings.ReplaceAll(string(out["report.html"]), "&#39;", "'")
		for _, want := range []string{
			"its KL is the model family's approximation error plus the optimiser's residual after the same steps",
			"only the first-order asymptotic expected KL",
		} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: report lacks %q", in.Title, want)
			}
		}
	}
}

// TestVerdictChecks: the checks table shows every check with shares as percentages,
// the paired line as a ratio, the Wilcoxon line as a p-value and NaN as n/a; a failing
// point shows its cause.
func TestVerdictChecks(t *testing.T) {
	in := singleInput()
	ps := &in.Summary.Points[0]
	ps.Verdict.Holds, ps.Verdict.Cause = false, "minibatch"
	ps.Verdict.Reason = "FAILS (minibatch noise): JEM's optimisation gap is 31% of the statistical error"
	ps.Verdict.Checks[0] = schemas.Check{Name: "optimisation_gap", What: "JEM's optimisation gap, over the statistical error",
		Value: 0.31, CILow: 0.25, CIHigh: 0.38, Limit: 0.1, Deciding: true}
	nan := schemas.Number(math.NaN())
	ps.Verdict.Checks[2] = schemas.Check{Name: "approximation", What: "no statistical error", Value: nan, CILow: nan, CIHigh: nan, Limit: 0.1, Pass: true, Deciding: true}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	_, checks, ok := strings.Cut(html, "<h2>Verdict checks</h2>")
	if !ok {
		t.Fatal("no verdict checks section")
	}
	checks, _, _ = strings.Cut(checks, "<h2>")
	for _, want := range []string{
		`<td class="l">optimisation_gap</td><td class="what">JEM&#39;s optimisation gap, over the statistical error</td><td>31%</td><td>[25%, 38%]</td><td>≤ 10%</td><td><span class="bad-cell">fail</span></td><td class="l">deciding</td>`,
		`<td class="l">approximation</td><td class="what">no statistical error</td><td>n/a</td><td>n/a</td><td>≤ 10%</td><td><span class="ok-cell">pass</span></td><td class="l">deciding</td>`,
		`<td>1.02×</td><td>[0.97×, 1.08×]</td><td>≤ 1.1×</td><td><span class="ok-cell">pass</span></td><td class="l">reported</td>`,
		`<td>p = 0.012</td><td>n/a</td><td>p &lt; 0.01</td>`,
		`<strong>Cause:</strong> Point 0: the claim fails for minibatch (minibatch noise at a constant learning rate).`,
	} {
		if !strings.Contains(checks, want) {
			t.Errorf("checks section lacks %s\n%s", want, checks)
		}
	}

	// A p-value that underflows is a bound; an undecided point has no checks.
	ps.Verdict.Checks[4].Value = 0
	ps.Verdict.Checks = ps.Verdict.Checks[:5]
	out, _ = Render(in)
	if !strings.Contains(string(out["report.html"]), "<td>p &lt; 1e-300</td>") {
		t.Errorf("underflowing p-value not shown as a bound")
	}
	ps.Verdict = schemas.Verdict{Reason: "undecided: every jem run diverged"}
	out, _ = Render(in)
	if !strings.Contains(string(out["report.html"]), "No verdict checks") {
		t.Errorf("undecided point: no note that it has no checks")
	}
}

// TestErrorSplit: the error split shows per method the means of the split, the gap
// and reference ratios, and per point the empty-cell share, the expected reference
// beside the floor and the family; the empirical KL's +Inf tables are counted.
func TestErrorSplit(t *testing.T) {
	in := singleInput()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	ps := in.Summary.Points[0]
	jem := ps.Methods[1]
	row := fmt.Sprintf(`<span class="method-jem">jem</span></td><td>%s</td><td>0</td><td>%s</td><td>%s</td><td>%s</td><td>%s%%</td><td>%s×</td></tr>`,
		fmtSig(jem.KLJoint.Mean, 3), fmtSig(jem.KLOptimisationGap.Mean, 3), fmtSig(jem.KLEstimation.Mean, 3), fmtSig(jem.KLMarginalGap.Mean, 3),
		fmtSig(100*jem.GapRatio, 3), fmtSig(jem.ReferenceRatio, 3))
	for _, want := range []string{
		"<h2>Error split per grid point and method</h2>",
		row,
		fmt.Sprintf("Point 0: model family complete; 30%% of its 10 tables have an empty cell; the exact expected KL of the add-½ estimate over N-draw datasets is %s, "+
			"beside the first-order (X·K−1)/(2N) = %s (1.2×)", fmtSig(ps.ReferenceExpected, 3), fmtSig(ps.Floor, 3)),
		"On 3 of 10 tables a cell drew no sample",
		"(&#43;3 ∞)",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %s", want)
		}
	}

	// A sweep gets the compact per-point verdict table, with the cause of a failing point.
	out, err = Render(sweepInput())
	if err != nil {
		t.Fatal(err)
	}
	html = string(out["report.html"])
	for _, want := range []string{
		`<span class="bad-cell">fails</span></td><td class="l">steps (too few optimiser steps)</td>`,
		`<span class="ok-cell">holds</span></td><td class="l">—</td>`,
		"on the 8 of 20 tables with one, KL(p‖p̂) is &#43;Inf; they are left out",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("sweep report lacks %s", want)
		}
	}
}

// axisBase is the grid point the axis tests vary, and axisChange moves it along each
// axis of axisDefs (a second value of that axis).
var (
	axisBase = grid{x: 4, k: 2, samples: 100, steps: 200, lr: 0.01, model: "linear", enc: "onehot", gen: "uniform",
		tables: 3, methods: []string{"baseline", "jem"}, jemScale: 1, bScale: 5, pxWeight: 0.5,
		more: func(p *schemas.Grid) { p.Task, p.SGLDPreset, p.Proposal = schemas.TaskTable, "official", "uniform" }}
	axisChange = map[string]func(g *grid){
		"size":       func(g *grid) { g.x, g.k = 8, 3 },
		"samples":    func(g *grid) { g.samples = 1000 },
		"lr":         func(g *grid) { g.lr = 0.1 },
		"steps":      func(g *grid) { g.steps = 2000 },
		"batch_size": func(g *grid) { g.batch = 32 },
		"model":      func(g *grid) { g.model = "mlp:16" },
		"encoding":   func(g *grid) { g.enc = "scalar" },
		"generator":  func(g *grid) { g.gen = "dirichlet:0.5" },
		"px_weight":  func(g *grid) { g.pxWeight = 2 },
		// The task and sampler axes (in the summary only, like the others).
		"task":        func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.Task = "gmm:3,2" }) }, // a 2-D point: no floor
		"grid":        func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.GridCells = 32 }) },
		"box":         func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.Box = 4 }) },
		"train_grid":  func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.TrainGrid = 64 }) },
		"sgld_preset": func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.SGLDPreset, p.SGLDStd = "langevin", 0.01 }) }, // the same noise
		"sgld_lr":     func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.SGLDLR = 0.5 }) },
		"sgld_std":    func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.SGLDStd = 0.05 }) },
		"sgld_steps":  func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.SGLDSteps = 20 }) },
		"sgld_clamp":  func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.SGLDClamp = true }) },
		"buffer_size": func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.BufferSize = 1000 }) },
		"reinit_freq": func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.ReinitFreq = 0.05 }) },
		"chain_steps": func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.ChainSteps = 5 }) },
		"proposal":    func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { p.Proposal = "neighbour" }) },
	}
)

// axisChangeOf is axisChange's case for the axis key or, for an axis of
// schemas.AxisDefs with none (its field is zero at axisBase), a move to its default.
func axisChangeOf(key string) func(g *grid) {
	if change, ok := axisChange[key]; ok {
		return change
	}
	for _, a := range schemas.AxisDefs {
		if a.Label != "" && a.ReportKey() == key {
			v := a.Field.Default()
			if a.IsOption() { // unset, an option reads as its default: change it
				switch x := v.(type) {
				case int:
					v = x + 1
				case float64:
					v = 2*x + 1
				case string:
					v = x + "x"
				case bool:
					v = !x
				}
			}
			return func(g *grid) { alsoGrid(g, func(p *schemas.Grid) { a.Field.Set(p, v) }) }
		}
	}
	return nil
}

// alsoGrid makes f set more grid values of g, after those g sets already.
func alsoGrid(g *grid, f func(p *schemas.Grid)) {
	before := g.more
	g.more = func(p *schemas.Grid) {
		if before != nil {
			before(p)
		}
		f(p)
	}
}

// axisInput is a fixture with the base point and one point per change (ids 0, 1, ...).
// Every row then gets the base point's grid columns, the baseline's px_weight 0 (as
// stages.EvaluateRun writes it): the grid values live in the summary only.
func axisInput(t *testing.T, keys ...string) Input {
	t.Helper()
	pts := []grid{axisBase}
	for i, k := range keys {
		change := axisChangeOf(k)
		if change == nil {
			t.Fatalf("no change for axis %q", k)
		}
		g := axisBase
		g.id = int64(i + 1)
		change(&g)
		pts = append(pts, g)
	}
	in := fixture(strings.Join(keys, " × "), pts)
	b := axisBase
	for i := range in.Results {
		r := &in.Results[i]
		r.XValues, r.Classes, r.Samples, r.Steps, r.LR, r.BatchSize = b.x, b.k, b.samples, b.steps, b.lr, b.batch
		r.Model, r.Encoding, r.Generator, r.PxWeight = b.model, b.enc, b.gen, b.px()
		if r.Method == "baseline" {
			r.PxWeight = 0
		}
	}
	return in
}

func axisKeys() []string {
	var keys []string
	for _, ax := range axisDefs() {
		keys = append(keys, ax.key)
	}
	return keys
}

// renderFigures renders in, fails on figure warnings and returns the non-triple figures.
func renderFigures(t *testing.T, in Input) (map[string][]byte, []string) {
	t.Helper()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out["report.html"], []byte("could not be drawn")) {
		t.Errorf("report has figure warnings")
	}
	return out, figureSet(out)
}

// TestSweepAxes: two points that differ in one axis of axisDefs, in the summary only,
// draw that axis's sweep figure and no heat map. For px_weight the baseline rows of
// both points carry 0 (the bug of issue 11 read the axis from them).
func TestSweepAxes(t *testing.T) {
	for _, key := range axisKeys() {
		t.Run(key, func(t *testing.T) {
			in := axisInput(t, key)
			out, got := renderFigures(t, in)
			want := []string{"baseline_vs_jem", "kl_dist", "kl_vs_" + key}
			if !slices.Equal(got, want) {
				t.Fatalf("figures %v, want %v", got, want)
			}
			d := prepare(in)
			if len(d.varying) != 1 || len(d.varying[0].values) != 2 {
				t.Fatalf("varying axes %v", d.varying)
			}
			svg := string(out["figures/kl_vs_"+key+".svg"])
			for _, v := range d.varying[0].values {
				if !strings.Contains(svg, ">"+v.label+"<") {
					t.Errorf("kl_vs_%s does not label the value %s", key, v.label)
				}
			}
		})
	}
	for k := range axisChange {
		if !slices.Contains(axisKeys(), k) {
			t.Errorf("axisChange changes %q, which is no axis of axisDefs", k)
		}
	}
}

// TestHeatmapPairs: any two swept axes draw their heat map (named in axisDefs order).
// The pairs grow with the square of the axes (every method option is one): the default
// suite renders every pair with one of the first two axes and every fifth other pair;
// JEMCHECK_SLOW=1 (CI) renders them all.
func TestHeatmapPairs(t *testing.T) {
	keys := axisKeys()
	all := os.Getenv(testenv.SlowEnv) == "1"
	for i, a := range keys {
		for j, b := range keys[i+1:] {
			if !all && i >= 2 && (i+j)%5 != 0 {
				continue
			}
			t.Run(a+"_"+b, func(t *testing.T) {
				_, got := renderFigures(t, axisInput(t, a, b))
				want := []string{"baseline_vs_jem", "heatmap_" + a + "_" + b, "kl_dist", "kl_vs_" + a, "kl_vs_" + b}
				sort.Strings(want)
				if !slices.Equal(got, want) {
					t.Errorf("figures %v, want %v", got, want)
				}
			})
		}
	}
}

// TestHeatmapEveryPair: three swept axes draw three heat maps; more than maxHeatmapAxes
// pair only the first ones and say so in the captions.
func TestHeatmapEveryPair(t *testing.T) {
	out, got := renderFigures(t, axisInput(t, "lr", "steps", "px_weight"))
	want := []string{"baseline_vs_jem", "heatmap_lr_px_weight", "heatmap_lr_steps", "heatmap_steps_px_weight",
		"kl_dist", "kl_vs_lr", "kl_vs_px_weight", "kl_vs_steps"}
	if !slices.Equal(got, want) {
		t.Errorf("figures %v, want %v", got, want)
	}
	html := string(out["report.html"])
	if c := captionOf(t, html, "kl_vs_lr"); !strings.Contains(c, "the heat maps show the interactions.") {
		t.Errorf("sweep caption: %s", c)
	}
	if c := captionOf(t, html, "heatmap_lr_steps"); strings.Contains(c, "paired in heat maps") {
		t.Errorf("uncapped heat map says it is capped: %s", c)
	}

	keys := []string{"samples", "lr", "steps", "model", "generator", "px_weight"}
	out, got = renderFigures(t, axisInput(t, keys...))
	var maps []string
	for _, n := range got {
		if strings.HasPrefix(n, figHeatmapPrefix) {
			maps = append(maps, n)
		}
	}
	wantMaps := []string{"heatmap_lr_model", "heatmap_lr_steps", "heatmap_samples_lr", "heatmap_samples_model",
		"heatmap_samples_steps", "heatmap_steps_model"}
	if !slices.Equal(maps, wantMaps) {
		t.Errorf("heat maps %v, want %v", maps, wantMaps)
	}
	html = string(out["report.html"])
	capped := "Of the 6 varying axes only the first 4 (samples N, learning rate, optimiser steps, model) are paired in heat maps, 6 of them; " +
		"generator, JEM p(x) weight are in none."
	if c := captionOf(t, html, "heatmap_samples_lr"); !strings.Contains(c, capped) {
		t.Errorf("capped heat map caption lacks %q: %s", capped, c)
	}
	if c := captionOf(t, html, "kl_vs_generator"); strings.Contains(c, "heat map") {
		t.Errorf("an axis in no heat map points to one: %s", c)
	}
	if c := captionOf(t, html, "kl_vs_lr"); !strings.Contains(c, "the heat maps with samples N, optimiser steps, model show those interactions.") {
		t.Errorf("sweep caption: %s", c)
	}
}

// TestPointMissingFromSummary: rows of a point the summary lacks have no grid values:
// they stay in the pooled figures, the sweep figures leave them out with a warning.
func TestPointMissingFromSummary(t *testing.T) {
	in := axisInput(t, "lr", "steps")
	in.Summary.Points = in.Summary.Points[:2] // drop the steps point
	out, got := renderFigures(t, in)
	want := []string{"baseline_vs_jem", "kl_dist", "kl_vs_lr"}
	if !slices.Equal(got, want) {
		t.Errorf("figures %v, want %v", got, want)
	}
	if !strings.Contains(string(out["report.html"]), "1 grid point(s) of the results are missing from the summary") {
		t.Errorf("no warning about the missing point")
	}
}

// TestPromiseRows: the beyond-the-joint table shows each method's means beside the
// point's ceiling, and nothing for a summary written before those columns existed.
func TestPromiseRows(t *testing.T) {
	d := func(v float64) schemas.Dist { return schemas.Dist{Count: 10, Mean: v} }
	ps := schemas.PointSummary{PointID: 3, Methods: []schemas.MethodSummary{
		{Method: "baseline", AUROCPx: d(0.49), AUROCPy: d(0.47), AUROCTruePx: d(0.5675), CalibrationErrorTrue: d(0.0152)},
		{Method: "jem", AUROCPx: d(0.5671), AUROCPy: d(0.4716), AUROCTruePx: d(0.5675), CalibrationErrorTrue: d(0.0153)},
	}}
	rows := promiseRows(ps)
	if len(rows) != 2 || !rows[0].First || rows[1].First || rows[0].Span != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if rows[1].Method != "jem" || rows[1].AUROCPx != fmtNA(0.5671) || rows[0].Ceiling != fmtNA(0.5675) || rows[1].Calib != fmtNA(0.0153) {
		t.Errorf("jem row %+v, first %+v", rows[1], rows[0])
	}
	ps.Methods[0].AUROCTruePx, ps.Methods[1].AUROCTruePx = schemas.Dist{}, schemas.Dist{}
	if rows := promiseRows(ps); rows != nil {
		t.Errorf("old summary: %d rows, want none", len(rows))
	}
}

package render

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// inputPromises is one 2-D point (id 3, G=8, K=2) with two tasks and the methods
// baseline and jem, jem's learned joint equal to the truth.
func inputPromises() Input {
	const g, box = 8, 3.0
	params := schemas.Grid{XValues: g * g, Classes: 2, Samples: 200, Model: "mlp:8", LR: 0.01, Steps: 10, PxWeight: 1,
		Task: "gmm:2,2", GridCells: g, Box: box, TrainGrid: 8}
	d := func(v float64) schemas.Dist { return schemas.Dist{Count: 2, Mean: v, Median: v, P10: v, P90: v} }
	in := Input{Title: "promises"}
	in.Summary.Points = []schemas.PointSummary{{PointID: 3, Params: params, Tables: 2, Methods: []schemas.MethodSummary{
		{Method: "baseline", Runs: 2, AUROCPx: d(0.431), AUROCPy: d(0.6), AUROCTruePx: d(0.922), ECE: d(0.05),
			AccClean: d(0.9), AccAttacked: d(0.3)},
		{Method: "jem", Runs: 2, AUROCPx: d(0.92), AUROCPy: d(0.61), AUROCTruePx: d(0.922), ECE: d(0.0123),
			AccClean: d(0.91), AccAttacked: d(0.45), SamplesTVNoise: d(0.12)},
	}}}
	for task := int64(0); task < 2; task++ {
		shift := 0.4 * float64(task)
		truth := gridJoint(g, box, []gauss2D{{-1 + shift, 0, 0.7, 0.5}, {1, 0.5 - shift, 0.6, 0.5}})
		base := gridJoint(g, box, []gauss2D{{2, 2, 0.5, 0.5}, {2, -2, 0.5, 0.5}})
		in.Tasks2D = append(in.Tasks2D, Task2D{PointID: 3, TaskID: 10 + task, Ordinal: task, Task: params.Task, G: g, Box: box, K: 2,
			True: truth, Learned: map[string][]float64{"baseline": base, "jem": slices.Clone(truth)}})
	}
	return in
}

func TestPromiseFigures(t *testing.T) {
	in := inputPromises()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	if strings.Contains(html, "could not be drawn") {
		t.Fatalf("figure warnings:\n%s", html)
	}
	names := FigureNames(in)
	for _, n := range []string{"reliability_p3", "ood_scores_p3"} {
		if !slices.Contains(names, n) {
			t.Errorf("FigureNames %v lacks %s", names, n)
		}
		b, ok := out["figures/"+n+".svg"]
		if !ok {
			t.Errorf("figure %s not drawn", n)
			continue
		}
		checkXML(t, n, b)
		if !strings.Contains(html, `id="`+n+`"`) {
			t.Errorf("report does not show %s", n)
		}
	}
	if got := svgNames(out); !slices.Equal(got, func() []string { s := slices.Clone(names); slices.Sort(s); return s }()) {
		t.Errorf("drawn %v, FigureNames %v", got, names)
	}

	// q = p: every bin of the reliability curve lies on the diagonal.
	var tasks []*Task2D
	for i := range in.Tasks2D {
		tasks = append(tasks, &in.Tasks2D[i])
	}
	conf, acc, w := calibItems(tasks, "jem")
	bins := reliabilityCurve(conf, acc, w, reliabilityBins)
	if len(bins) == 0 {
		t.Fatal("no reliability bins for jem")
	}
	total := 0.0
	for _, b := range bins {
		total += b.weight
		if math.Abs(b.acc-b.conf) >= 1e-12 {
			t.Errorf("jem bin off the diagonal: conf %v acc %v", b.conf, b.acc)
		}
	}
	if math.Abs(total-1) > 1e-12 {
		t.Errorf("bin weights sum to %v, want 1", total)
	}
	// The baseline, far from p, is not calibrated.
	off := 0.0
	c2, a2, w2 := calibItems(tasks, "baseline")
	for _, b := range reliabilityCurve(c2, a2, w2, reliabilityBins) {
		off = math.Max(off, math.Abs(b.acc-b.conf))
	}
	if off < 1e-3 {
		t.Errorf("baseline reliability within %v of the diagonal", off)
	}

	// The claims section quotes the summary's numbers.
	for _, s := range []string{"What the paper claims / what we measured", "OOD detection", "0.922 ceiling",
		"jem 0.92", "baseline 0.431", "Calibration", "jem 0.0123", "Robustness", "jem 45.0%", "Samples", "jem 0.12"} {
		if !strings.Contains(html, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// TestClaimsTableOnly: a table point has no claims section.
func TestClaimsTableOnly(t *testing.T) {
	if got := claimLines(schemas.PointSummary{PointID: 1, Methods: []schemas.MethodSummary{{Method: "jem", AUROCPx: schemas.Dist{Count: 1, Mean: 0.9}}}}); got != nil {
		t.Errorf("table point claims %v", got)
	}
}

package stages

import (
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/stages/render"
)

// The report's tables carry their cells to the report only where a triple plot draws
// them (render.MaxTripleCells): a D = 20 binary task's 2^21 cells a run are not held
// until every block is done. A triple takes its truth from whichever run carries it
// (tasks/bits: the task's first method's).
func TestFirstTablesCells(t *testing.T) {
	cells := func(n int) []float64 { return make([]float64, n) }
	big := render.MaxTripleCells + 2
	p := []float64{0.25, 0.25, 0.5, 0}
	b := LearnedBlock{PointID: 0, Runs: []Learned{
		{RunID: "a", Ordinal: 0, Method: "baseline", X: 2, K: 2, Logits: cells(4), Q: cells(4), P: p},
		{RunID: "b", Ordinal: 0, Method: "pcd", X: 2, K: 2, Logits: cells(4), Q: []float64{1, 0, 0, 0}},
		{RunID: "c", Ordinal: 1, Method: "baseline", X: big / 2, K: 2, Logits: cells(big), Q: cells(big), P: cells(big)},
		{RunID: "d", Ordinal: 5, Method: "baseline", X: 2, K: 2, Logits: cells(4), Q: cells(4), P: p}, // not a report table
	}}
	var kept []Learned
	(&firstTablesFn{N: 2}).ProcessElement(b, func(l Learned) { kept = append(kept, l) })
	if len(kept) != 3 {
		t.Fatalf("kept %d runs, want 3", len(kept))
	}
	if kept[0].P == nil || kept[1].Q == nil {
		t.Errorf("a plotted table lost its cells")
	}
	if l := kept[2]; l.Logits != nil || l.Q != nil || l.P != nil || l.X*l.K != big {
		t.Errorf("a table of %d cells kept its cells (%d, %d, %d) or its shape", big, len(l.Logits), len(l.Q), len(l.P))
	}
	ts, _, _ := triples(iter(kept))
	if len(ts) != 2 {
		t.Fatalf("%d triples, want 2", len(ts))
	}
	if !slices.Equal(ts[0].True, p) || len(ts[0].Learned) != 2 || ts[0].Learned["pcd"][0] != 1 {
		t.Errorf("triple 0: true %v, learned %v", ts[0].True, ts[0].Learned)
	}
	// the big table still counts: the report says a triple was left out
	in := render.Input{Triples: ts}
	if names := render.FigureNames(in); slices.ContainsFunc(names, func(n string) bool { return n == "triple_p0_t1" }) {
		t.Errorf("a triple plot of %d cells is named: %v", big, names)
	}
}

// TestReportBounds: the rows and per-table figures the report holds do not grow with a
// sweep's points beyond the stated budgets: at most SweepFigureTablesBudget tables (2 a
// point at least) and the triple plots of FigurePoints points.
func TestReportBounds(t *testing.T) {
	for _, tc := range []struct {
		name           string
		points         int
		tables, figPts int64
	}{
		{"one point", 1, FigureTablesBudget, 1},
		{"kl-vs-n", 8, 500, 8},
		{"100 points", 100, 40, 24},
		{"1,000 points", 1000, 4, 24},
		{"10,000 points", 10000, 2, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := make([]Point, tc.points)
			for i := range pts {
				pts[i].ID = int64(tc.points - 1 - i) // ids in any order
			}
			if got := FigureTables(tc.points); got != tc.tables {
				t.Errorf("FigureTables(%d) = %d, want %d", tc.points, got, tc.tables)
			}
			ids := figurePointIDs(pts)
			if int64(len(ids)) != tc.figPts || ids[0] != 0 || !slices.IsSorted(ids) {
				t.Errorf("figure points %v, want the first %d ids", ids, tc.figPts)
			}
			f := &firstTablesFn{N: 3, Points: ids}
			if f.drawn(int64(tc.figPts)) || !f.drawn(0) {
				t.Errorf("drawn: point %d drawn or point 0 not", tc.figPts)
			}
		})
	}
}

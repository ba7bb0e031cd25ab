package render

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestLeaderRows: a point's recipes are listed by their rank groups (two that tie
// share a rank), then the references with an excess (jem, "ref."), then the methods
// without one (baseline) unranked; the frontier figure draws every
// ranked approximate method with a CPU cost.
func TestLeaderRows(t *testing.T) {
	ms := func(m string, cpu float64) schemas.MethodSummary {
		return schemas.MethodSummary{Method: m, KLJoint: schemas.Dist{Count: 3, Mean: 1}, TrainMS: schemas.Dist{Count: 3, Mean: cpu}}
	}
	nan := schemas.Number(math.NaN())
	ps := schemas.PointSummary{PointID: 4, Params: schemas.Grid{Task: "moons:0.1"},
		Methods: []schemas.MethodSummary{ms("baseline", 100), ms("jem", 900), ms("sgld", 400), ms("ed", 50), ms("mala", 60)},
		Samplers: []schemas.SamplerComparison{
			{Method: "sgld", Rank: 3, AvgRank: 3, CriticalDifference: 1.1, FriedmanTasks: 10, FriedmanP: 0.001, OverBest: 2, OverBestLo: 1.4, OverBestHi: 2.8, BestPHolm: 0.004, MDE: 0.5, Pairs: 10, Excess: 2.1, ExcessCILow: 1.5, ExcessCIHigh: 2.9, MarginalExcess: 2},
			{Method: "ed", Rank: 1, InBestSet: true, AvgRank: 1.4, CriticalDifference: 1.1, FriedmanTasks: 10, FriedmanP: 0.001, OverBest: 0, OverBestLo: 0, OverBestHi: 0, BestPHolm: 1, MDE: nan, Pairs: 10, Excess: 0.1, ExcessCILow: 0.05, ExcessCIHigh: 0.2, MarginalExcess: 0.09},
			{Method: "mala", Rank: 1, InBestSet: true, AvgRank: 1.6, CriticalDifference: 1.1, FriedmanTasks: 10, FriedmanP: 0.001, OverBest: 0, OverBestLo: -0.01, OverBestHi: 0.01, BestPHolm: 1, MDE: 0.02, Pairs: 10, Excess: 0.12, ExcessCILow: 0.05, ExcessCIHigh: 0.2, MarginalExcess: 0.09},
		}}
	rows := leaderRows(ps)
	var order, ranks []string
	for _, r := range rows {
		order, ranks = append(order, r.Method), append(ranks, r.Rank)
	}
	if got := strings.Join(order, ","); got != "ed,mala,sgld,jem,baseline" {
		t.Errorf("order %s, want ed,mala,sgld,jem,baseline", got)
	}
	if got := strings.Join(ranks, ","); got != "1 ≈,1 ≈,3,ref.," {
		t.Errorf("ranks %q, want 1 ≈,1 ≈,3,ref. (≈: the best's set) and none for the baseline", got)
	}
	if r := rows[2]; r.OverBest != "2" || r.OverCI != "[1.4, 2.8]" || r.MDE != "0.5" || r.Set {
		t.Errorf("sgld row: over the best %q %q, MDE %q, in the best's set %v", r.OverBest, r.OverCI, r.MDE, r.Set)
	}
	for _, want := range []string{"the best is ed; indistinguishable from it (≈): {ed, mala}", "on the 10 tasks every one has", "critical difference 1.1 average ranks",
		"At n = 10 tasks the board can detect a difference of 0.26 nats from the best"} {
		if !strings.Contains(rows[0].Stats, want) {
			t.Errorf("the point's statistics lack %q: %s", want, rows[0].Stats)
		}
	}
	if rows[0].CDFig == "" || rows[1].Stats != "" || rows[1].CDFig != "" {
		t.Errorf("the point's first row, and only it, carries the CD diagram and statistics")
	}
	if rows[0].CPU != "0.05" || rows[0].CI != "[0.05, 0.2]" {
		t.Errorf("ed row: CPU %q, CI %q", rows[0].CPU, rows[0].CI)
	}
	svg, err := frontierSVG(rows, []string{"baseline", "jem", "sgld", "ed", "mala"})
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(svg)), "<?xml") && !strings.Contains(string(svg), "<svg") {
		t.Fatalf("frontier: %v, %.80q", err, svg)
	}
	for _, m := range []string{">sgld<", ">ed<"} {
		if !strings.Contains(strings.ReplaceAll(string(svg), " ", ""), m) {
			t.Errorf("the frontier does not label %s", m)
		}
	}
	if leaderRows(schemas.PointSummary{Methods: ps.Methods}) != nil {
		t.Error("a point without samplers has leaderboard rows")
	}
}

// TestRankingTextUndetectable: a point whose tasks are too few for the signed-rank test
// to reject at α/(k−1) (5 tasks, one comparison: 2/2⁵ = 0.0625 > 0.05; its MDE is
// null) says no difference is detectable, and its MDE column says so.
func TestRankingTextUndetectable(t *testing.T) {
	nan := schemas.Number(math.NaN())
	ps := schemas.PointSummary{PointID: 2, Params: schemas.Grid{Task: "moons:0.1"},
		Methods: []schemas.MethodSummary{{Method: "ed"}, {Method: "sgld"}},
		Samplers: []schemas.SamplerComparison{
			{Method: "sgld", Rank: 2, Pairs: 5, MDE: nan, AvgRank: 2, CriticalDifference: 0.88, FriedmanTasks: 5, FriedmanP: 0.03, OverBest: 1, OverBestLo: 0.5, OverBestHi: 1.5, BestPHolm: 0.0625},
			{Method: "ed", Rank: 1, InBestSet: true, Pairs: 5, MDE: nan, AvgRank: 1, CriticalDifference: 0.88, FriedmanTasks: 5, FriedmanP: 0.03, BestPHolm: 1},
		}}
	rows := leaderRows(ps)
	want := "At n = 5 tasks the board cannot detect any difference from the best: the exact signed-rank test's smallest p there, 2/2^5, exceeds α/(k−1) = 0.05/1."
	if !strings.Contains(rows[0].Stats, want) || !strings.Contains(rows[0].Stats, "{ed}") {
		t.Errorf("statistics %q lack %q or the set {ed}", rows[0].Stats, want)
	}
	if rows[1].Method != "sgld" || rows[1].MDE != "none at this n" || rows[0].MDE != "—" || rows[0].OverBest != "best" {
		t.Errorf("MDE column: %s %q, %s %q", rows[0].Method, rows[0].MDE, rows[1].Method, rows[1].MDE)
	}
}

// TestCDDiagram: the critical-difference diagram is well-formed SVG that labels every
// recipe with its average rank, draws one thick bar per group closer than CD
// (verdict.CDBars) and the CD scale, keeps its text inside the figure, and is left out
// when there is nothing to compare.
func TestCDDiagram(t *testing.T) {
	five := []cdEntry{{"ed", 1.2, true}, {"mala", 1.9, true}, {"sgld", 3.4, false}, {"nce", 2.6, false}, {"drl tuned", 4.9, false}}
	cases := []struct {
		name   string
		es     []cdEntry
		cd     float64
		bars   int // thick bars (stroke-width 3)
		labels []string
	}{
		{"overlapping-groups", five, 1.25, 3, []string{" ed (1.20)", " mala (1.90)", " nce (2.60)", "sgld (3.40) ", "drl tuned (4.90) ", "CD = 1.25"}},
		{"all-apart", five, 0.5, 0, []string{" ed (1.20)", "drl tuned (4.90) ", "CD = 0.50"}},
		{"one-group", []cdEntry{{"a", 1.4, true}, {"b", 1.6, true}}, 1.0, 1, []string{" a (1.40)", "b (1.60) "}},
		{"a-recipe-without-rank-left-out", append(slices.Clone(five[:2]), cdEntry{"none", math.NaN(), false}), 1.25, 1, []string{" ed (1.20)", "mala (1.90) "}},
		{"one-recipe", five[:1], 1.25, -1, nil},
		{"no-cd", five, math.NaN(), -1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svg, err := cdDiagramSVG("point 1: moons", tc.es, tc.cd)
			if err != nil {
				t.Fatal(err)
			}
			if tc.bars < 0 {
				if svg != nil {
					t.Errorf("a diagram drawn with nothing to compare")
				}
				return
			}
			dec := xml.NewDecoder(strings.NewReader(string(svg)))
			root := ""
			for {
				tok, err := dec.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed XML: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok && root == "" {
					root = se.Name.Local
				}
			}
			if root != "svg" {
				t.Errorf("root element %q, want svg", root)
			}
			if got := strings.Count(string(svg), "stroke-width:3\""); got != tc.bars {
				t.Errorf("%d thick bars, want %d", got, tc.bars)
			}
			width, boxes := svgTextBoxes(t, svg)
			var texts []string
			for _, b := range boxes {
				texts = append(texts, b.text)
				if b.x < -0.5 || b.x+b.w > width+0.5 {
					t.Errorf("text %q spans [%.1f, %.1f], outside [0, %.1f]", b.text, b.x, b.x+b.w, width)
				}
			}
			for _, l := range tc.labels {
				if !slices.Contains(texts, l) {
					t.Errorf("no label %q among %q", l, texts)
				}
			}
			if slices.Contains(texts, " none (NaN)") || slices.Contains(texts, "none (NaN) ") {
				t.Errorf("a recipe without an average rank is drawn")
			}
		})
	}
}

package render

import (
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
	ps := schemas.PointSummary{PointID: 4, Params: schemas.Grid{Task: "moons:0.1"},
		Methods: []schemas.MethodSummary{ms("baseline", 100), ms("jem", 900), ms("sgld", 400), ms("ed", 50), ms("mala", 60)},
		Samplers: []schemas.SamplerComparison{
			{Method: "sgld", Rank: 3, Excess: 2.1, ExcessCILow: 1.5, ExcessCIHigh: 2.9, MarginalExcess: 2},
			{Method: "ed", Rank: 1, Excess: 0.1, ExcessCILow: 0.05, ExcessCIHigh: 0.2, MarginalExcess: 0.09},
			{Method: "mala", Rank: 1, Excess: 0.12, ExcessCILow: 0.05, ExcessCIHigh: 0.2, MarginalExcess: 0.09},
		}}
	rows := leaderRows(ps)
	var order, ranks []string
	for _, r := range rows {
		order, ranks = append(order, r.Method), append(ranks, r.Rank)
	}
	if got := strings.Join(order, ","); got != "ed,mala,sgld,jem,baseline" {
		t.Errorf("order %s, want ed,mala,sgld,jem,baseline", got)
	}
	if got := strings.Join(ranks, ","); got != "1,1,3,ref.," {
		t.Errorf("ranks %q, want 1,1,3,ref. and none for the baseline", got)
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

package verdict

import (
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestMethodTable: the terminal's table says what was compared, gives exact jem as the
// yardstick, each recipe's excess with CI, grade and rank, and marks an undecided
// point's recipes undecided, never graded.
func TestMethodTable(t *testing.T) {
	d := func(m float64) schemas.Dist { return schemas.Dist{Count: 10, Mean: m, P10: m / 2, P90: 2 * m} }
	ps := schemas.PointSummary{Params: schemas.Grid{Task: "gmm:3,2"}, Verdict: schemas.Verdict{Decided: true},
		Methods:  []schemas.MethodSummary{{Method: "baseline", Runs: 10, KLJoint: d(3)}, {Method: "jem", Runs: 10, KLJoint: d(0.1)}, {Method: "sgld", Runs: 10, KLJoint: d(1.7)}},
		Samplers: []schemas.SamplerComparison{{Method: "sgld", Rank: 1, Excess: 1.6, ExcessCILow: 1.5, ExcessCIHigh: 1.7, Grade: GradeWorse}}}
	cases := []struct {
		name    string
		decided bool
		want    []string
	}{
		{"decided", true, []string{"compared on 10 tasks of gmm:3,2", "0 (the yardstick)", "+1.6 [1.5, 1.7]", "worse than 1 nat", " 1"}},
		{"undecided", false, []string{"undecided"}},
	}
	t.Run("no exact joint KL", func(t *testing.T) {
		ps := schemas.PointSummary{Params: schemas.Grid{Task: "images:8,2"}, Methods: []schemas.MethodSummary{
			{Method: "baseline", Runs: 3, KLConditional: d(0.5), KLJointLower: schemas.Dist{Count: 2, Mean: 135}, AISAccepted: schemas.Dist{Count: 3, Mean: 2.0 / 3}},
			{Method: "sgld", Runs: 3, KLConditional: d(0.5)}}}
		got := strings.Join(MethodTable(ps), "\n")
		for _, w := range []string{"against the truth itself", "joint KL ≥ (k of n)", "135 (2 of 3)", "sgld           —"} {
			if !strings.Contains(got, w) {
				t.Errorf("table lacks %q:\n%s", w, got)
			}
		}
	})
	t.Run("no run with a value", func(t *testing.T) { // every estimate refused: no KL, not a KL of 0
		ps := ps
		ps.Methods = append(slices.Clone(ps.Methods), schemas.MethodSummary{Method: "ed", Runs: 4})
		got := strings.Join(MethodTable(ps), "\n")
		if !strings.Contains(got, "— (none of 4 runs)") || strings.Contains(got, "0 [0, 0]") {
			t.Errorf("a method without values:\n%s", got)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps.Verdict.Decided = tc.decided
			got := strings.Join(MethodTable(ps), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("table lacks %q:\n%s", w, got)
				}
			}
			if !tc.decided && strings.Contains(got, "worse than") {
				t.Errorf("an undecided point graded:\n%s", got)
			}
		})
	}
}

package schemas

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestVerdictHoldsNull: a verdict not taken writes "holds": null in summary.json and
// verdict.json (never false, which a filter on holds == false reads as a failure);
// a decided one writes true or false; holds stays the first key, and null reads back
// as an undecided verdict.
func TestVerdictHoldsNull(t *testing.T) {
	tests := []struct {
		name  string
		v     Verdict
		holds string
	}{
		{"holds", Verdict{Holds: true, Decided: true, Reason: "HOLDS", Level: "holds"}, "true"},
		{"fails", Verdict{Decided: true, Reason: "FAILS (steps)", Level: "fails"}, "false"},
		{"undecided", Verdict{Reason: "undecided: 3 tables", Level: "undecided"}, "null"},
		{"undecided, holds set by mistake", Verdict{Holds: true, Reason: "undecided"}, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for what, x := range map[string]any{
				"summary.json": Summary{Points: []PointSummary{{Verdict: tt.v}}, Verdict: tt.v},
				"verdict.json": VerdictFile{Holds: tt.v.Holds, Decided: tt.v.Decided, Reason: tt.v.Reason},
			} {
				raw, err := json.Marshal(x)
				if err != nil {
					t.Fatal(err)
				}
				want := `{"holds":` + tt.holds + `,"decided":`
				if n := strings.Count(string(raw), want); what == "summary.json" && n != 2 || what == "verdict.json" && !strings.HasPrefix(string(raw), want) {
					t.Errorf("%s: %s, want every verdict to open with %s", what, raw, want)
				}
				var back struct {
					Verdict struct {
						Holds   *bool `json:"holds"`
						Decided bool  `json:"decided"`
					} `json:"verdict"`
				}
				if what == "summary.json" {
					if err := json.Unmarshal(raw, &back); err != nil {
						t.Fatal(err)
					}
					if got := back.Verdict.Holds; (got == nil) != (tt.holds == "null") || got != nil && *got != (tt.holds == "true") {
						t.Errorf("%s: holds read back as %v, want %s", what, got, tt.holds)
					}
					var s Summary
					if err := json.Unmarshal(raw, &s); err != nil || s.Verdict.Decided != tt.v.Decided || s.Verdict.Holds != (tt.holds == "true") {
						t.Errorf("%s: read back as %+v (%v), want decided %v holds %v", what, s.Verdict, err, tt.v.Decided, tt.holds == "true")
					}
				}
			}
		})
	}
}

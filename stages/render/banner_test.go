package render

import (
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

// TestBanner: the banner's colour and label follow the verdict's level and name what
// fails: a recipe that ties with exact JEM is not red; sgld worse than 1 nat is named
// beside exact JEM holding; exact JEM failing itself says so; jem-converged never is.
func TestBanner(t *testing.T) {
	comp := func(m, grade string) schemas.SamplerComparison {
		return schemas.SamplerComparison{Method: m, Grade: grade, Reference: m == "jem-converged"}
	}
	sum := func(v schemas.Verdict, cs ...schemas.SamplerComparison) schemas.Summary {
		ps := schemas.PointSummary{Samplers: cs, Verdict: v}
		return schemas.Summary{Points: []schemas.PointSummary{ps}, Verdict: v}
	}
	tests := []struct {
		name        string
		s           schemas.Summary
		class, want string
	}{
		{"jem+ed tie", sum(schemas.Verdict{Decided: true, Holds: true, Level: verdict.LevelHolds}, comp("ed", verdict.GradeMatches)), "ok", "holds"},
		{"jem+ed within 0.1 nat", sum(schemas.Verdict{Decided: true, Level: verdict.LevelShort, Exact: verdict.ExactHolds},
			comp("ed", verdict.GradeClose)), "short", "but ed does not match exact JEM"},
		{"sgld 2.77", sum(schemas.Verdict{Decided: true, Level: verdict.LevelFails, Exact: verdict.ExactHolds},
			comp("sgld", verdict.GradeWorse), comp("ed", verdict.GradeMatches), comp("jem-converged", verdict.GradeWorse)), "bad", "✘ sgld fails; exact JEM holds."},
		{"exact JEM fails", sum(schemas.Verdict{Decided: true, Level: verdict.LevelFails, Exact: verdict.ExactFails},
			comp("ed", verdict.GradeMatches)), "bad", "✘ Exact JEM itself does not hold."},
		{"undecided", sum(schemas.Verdict{Level: verdict.LevelUndecided}), "undecided", "Undecided"},
		{"summary without levels", sum(schemas.Verdict{Decided: true}), "bad", "does not hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, label := bannerOf(tt.s)
			if class != tt.class || !strings.Contains(label, tt.want) {
				t.Errorf("banner %q %q, want %q containing %q", class, label, tt.class, tt.want)
			}
		})
	}
}

package verdict

import (
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestOverConverged: every recipe's excess over the converged yardstick
// (jem-converged) is reported beside its excess over exact jem, with its CI; a recipe
// whose CI lies below the converged yardstick is flagged in the reason, never
// celebrated; jem-converged's own entry carries exact jem's excess over it; without
// jem-converged none of it appears.
func TestOverConverged(t *testing.T) {
	const n = 12
	jem := func(i int) float64 { return 0.03 + 0.002*float64(i%4) }
	conv := func(i int) float64 { return jem(i) - 0.01 + jitter(i, 0.002) } // exact jem is +0.01 over it
	nan := math.NaN()
	tests := []struct {
		name      string
		kl        map[string]func(int) float64
		over      float64 // ed's mean excess over jem-converged (NaN: none)
		below     bool
		jemOver   float64 // exact jem's over jem-converged (NaN: none)
		contains  []string
		lacks     []string
		edPairs   int
		convEntry bool
	}{
		{"recipe above the converged yardstick", map[string]func(int) float64{"jem": jem, "jem-converged": conv,
			"ed": func(i int) float64 { return jem(i) + 0.003 + jitter(i, 0.001) }},
			0.013, false, 0.01, []string{"over the converged yardstick (jem-converged) +0.01", "exact JEM at the shared budget is +0.01"},
			[]string{"BELOW"}, n, true},
		{"recipe below the converged yardstick: flagged", map[string]func(int) float64{"jem": jem, "jem-converged": conv,
			"ed": func(i int) float64 { return conv(i) - 0.005 + jitter(i, 0.001) }},
			-0.005, true, 0.01, []string{"over the converged yardstick (jem-converged) −0.005", BelowConvergedWords}, nil, n, true},
		{"no converged yardstick", map[string]func(int) float64{"jem": jem, "ed": func(i int) float64 { return jem(i) + 0.003 + jitter(i, 0.001) }},
			nan, false, nan, nil, []string{"converged yardstick", "BELOW"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := rowsGraded(n, tt.kl, nil)
			ps := Summarize(rows, 1, DefaultThresholds(), ruleOf).Points[0]
			var ed, cv *schemas.SamplerComparison
			for i := range ps.Samplers {
				switch ps.Samplers[i].Method {
				case "ed":
					ed = &ps.Samplers[i]
				case "jem-converged":
					cv = &ps.Samplers[i]
				}
			}
			if ed == nil || (cv != nil) != tt.convEntry {
				t.Fatalf("comparisons %+v", ps.Samplers)
			}
			check := func(what string, got schemas.Number, lo, hi schemas.Number, want float64) {
				t.Helper()
				switch {
				case math.IsNaN(want) && !(math.IsNaN(float64(got)) && math.IsNaN(float64(lo)) && math.IsNaN(float64(hi))):
					t.Errorf("%s = %v [%v, %v], want NaN", what, got, lo, hi)
				case !math.IsNaN(want) && (math.Abs(float64(got)-want) > 5e-4 || !(lo <= got && got <= hi)):
					t.Errorf("%s = %v [%v, %v], want about %v inside its CI", what, got, lo, hi, want)
				}
			}
			check("ed over jem-converged", ed.OverConverged, ed.OverConvergedLo, ed.OverConvergedHi, tt.over)
			check("ed's jem over jem-converged", ed.JemOverConverged, ed.JemOverConvergedLo, ed.JemOverConvergedHi, nan)
			if ed.BelowConverged != tt.below || ed.ConvergedPairs != tt.edPairs {
				t.Errorf("ed: below %v on %d pairs, want %v on %d", ed.BelowConverged, ed.ConvergedPairs, tt.below, tt.edPairs)
			}
			if cv != nil {
				check("jem over jem-converged", cv.JemOverConverged, cv.JemOverConvergedLo, cv.JemOverConvergedHi, tt.jemOver)
				check("jem-converged over itself", cv.OverConverged, cv.OverConvergedLo, cv.OverConvergedHi, nan)
				if cv.BelowConverged {
					t.Error("jem-converged flagged below itself")
				}
			}
			for _, s := range tt.contains {
				if !strings.Contains(ps.Verdict.Reason, s) {
					t.Errorf("reason lacks %q:\n%s", s, ps.Verdict.Reason)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(ps.Verdict.Reason, s) {
					t.Errorf("reason has %q:\n%s", s, ps.Verdict.Reason)
				}
			}
			// the folded summary (blocks of rows, as a sweep aggregates) agrees on the means
			folded := foldedSummary(t, rows, 4, 1)
			for _, f := range folded.Samplers {
				for _, e := range ps.Samplers {
					if f.Method == e.Method && !(sameNumber(f.OverConverged, e.OverConverged) && sameNumber(f.JemOverConverged, e.JemOverConverged) && f.BelowConverged == e.BelowConverged) {
						t.Errorf("%s folded: over %v (jem %v, below %v), exact %v (jem %v, below %v)", f.Method, f.OverConverged, f.JemOverConverged, f.BelowConverged,
							e.OverConverged, e.JemOverConverged, e.BelowConverged)
					}
				}
			}
		})
	}
}

// sameNumber: equal to rounding, or both NaN.
func sameNumber(a, b schemas.Number) bool {
	return (math.IsNaN(float64(a)) && math.IsNaN(float64(b))) || math.Abs(float64(a-b)) <= 1e-12
}

package verdict

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestGradeBands: the grade is read off the CI's upper end against the stated bands;
// "matches" is the reference's own statistical error (margin × scale), or a CI that
// covers 0 and ends within BandClose.
func TestGradeBands(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name             string
		pairs, nonfinite int
		lo, hi, scale    float64
		want             string
		within           float64
	}{
		{"tie: CI covers 0", 10, 0, -0.007, 0.013, 0.0773, GradeMatches, BandClose},
		{"tiny excess within the statistical error", 40, 0, 0.00007, 0.00013, 0.12, GradeMatches, 0.012},
		{"small excess, table scale", 10, 0, 0.0001, 0.0009, 0.013, GradeMatches, 0.0013},
		{"excess beyond the error, under 0.1 nat", 10, 0, 0.035, 0.053, 0.0364, GradeClose, 0.00364},
		{"exactly 0.1 nat", 10, 0, 0.05, BandClose, 0.03, GradeClose, 0.003},
		{"within 1 nat", 10, 0, 0.47, 0.78, 0.0364, GradeShort, 0.00364},
		{"wide CI covering 0 is not a match", 10, 0, -0.5, 0.6, 0.05, GradeShort, BandClose},
		{"exactly 1 nat", 10, 0, 0.5, BandFar, 0.05, GradeShort, 0.005},
		{"worse: sgld's 2.77 [1.46, 5.25]", 10, 0, 1.46, 5.25, 0.0364, GradeWorse, 0.00364},
		{"infinite on some tasks", 8, 2, 0.001, 0.002, 0.1, GradeInfinite, 0.01},
		{"no pairs", 0, 0, nan, nan, nan, GradeNone, 0},
		{"unknown scale, no CI over 0", 10, 0, 0.01, 0.02, nan, GradeClose, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, within := gradeOf(tt.pairs, tt.nonfinite, tt.lo, tt.hi, tt.scale, DefaultThresholds().Margin)
			if g != tt.want || math.Abs(within-tt.within) > 1e-12 {
				t.Errorf("gradeOf = %s within %g, want %s within %g", g, within, tt.want, tt.within)
			}
		})
	}
}

// rowsGraded are n tasks' rows of a 2-D point: each method's joint KL on task i.
func rowsGraded(n int, kl map[string]func(i int) float64, unstable map[string]int) []schemas.ResultRow {
	var out []schemas.ResultRow
	nan := math.NaN()
	for i := range n {
		for _, m := range methods.Sorted(func(yield func(string) bool) {
			for m := range kl {
				if !yield(m) {
					return
				}
			}
		}) {
			v := kl[m](i)
			px := 1.0
			if m == "baseline" {
				px = 0
			}
			out = append(out, schemas.ResultRow{RunID: schemas.RunID(0, int64(i), m), TableID: int64(i), Method: m, Task: "gmm:3,2",
				XValues: 256, Classes: 2, GridCells: 16, Model: "mlp:32,32", Samples: 2000, Steps: 1500, LR: 0.003, PxWeight: px,
				KLJoint: v, KLMarginal: v / 2, KLConditional: v / 2, Floor: nan, KLReferenceExpected: nan, KLReference: nan,
				SelectedStep: 1000 + int64(i), GradEvals: 64 * 1500, GradEvalsSelected: 64 * 1000, CPUSeconds: 2, HeldoutNLL: 3, HeldoutNLLFinal: 3.1,
				Unstable: i < unstable[m]})
		}
	}
	return out
}

// jitter is a deterministic spread around 0 of size s on task i.
func jitter(i int, s float64) float64 { return s * float64((i*7)%11-5) / 5 }

// TestHeadline: the verdict grades and names what failed. A recipe that ties with
// exact JEM is not a failure (and not red); sgld at 2.77 nats fails by name beside
// exact JEM holding; exact JEM failing itself says so; jem-converged is shown, never
// judged; unstable runs are counted, kept in the means and shown per recipe.
func TestHeadline(t *testing.T) {
	const n = 12
	jem := func(i int) float64 { return 0.0015 * (1 + float64(i%4)/10) }
	base := func(i int) float64 { return 0.125 + 0.01*float64(i%3) }
	tests := []struct {
		name     string
		kl       map[string]func(int) float64
		unstable map[string]int
		holds    bool
		level    string
		exact    string
		cause    string
		contains []string
		lacks    []string
	}{
		{"jem+ed tie: holds, not red", map[string]func(int) float64{"jem": jem, "ed": func(i int) float64 { return jem(i) + 0.003 + jitter(i, 0.01) }},
			nil, true, LevelHolds, "", "",
			[]string{"Exact JEM is 0.00172 nats from the truth", "not judged: no baseline ran", "ed matches (+0.00"}, []string{"fails"}},
		{"jem+ed 0.028 nats: short, not red", map[string]func(int) float64{"baseline": base, "jem": jem,
			"ed": func(i int) float64 { return jem(i) + 0.028 + jitter(i, 0.002) }},
			nil, false, LevelShort, ExactHolds, CauseSampler,
			[]string{"Exact JEM holds (0.00172 nats from the truth vs baseline 0.135)", "ed is within 0.1 nat (+0.02"}, []string{"fails"}},
		{"sgld 2.77: fails naming sgld", map[string]func(int) float64{"baseline": base, "jem": jem,
			"sgld": func(i int) float64 { return jem(i) + 2.77 + jitter(i, 1) },
			"ed":   func(i int) float64 { return jem(i) + 0.003 + jitter(i, 0.01) }},
			nil, false, LevelFails, ExactHolds, CauseSampler,
			[]string{"Exact JEM holds (0.00172 nats from the truth vs baseline 0.135). sgld fails: +2.", "over exact JEM (worse than 1 nat); ed matches (+0.00"},
			[]string{"×", "%"}},
		{"exact JEM itself fails", map[string]func(int) float64{"baseline": func(i int) float64 { return 0.05 + 0.001*float64(i%3) }, "jem": func(i int) float64 { return 0.3 + 0.01*float64(i%5) },
			"ed": func(i int) float64 { return 0.3 + 0.01*float64(i%5) + 0.001*float64(i%2) }},
			nil, false, LevelFails, ExactFails, CauseExact,
			[]string{"Exact JEM fails (not below the baseline's KL; 0.317 nats from the truth vs baseline 0.051)", "ed matches"}, nil},
		{"jem-converged beside, never judged", map[string]func(int) float64{"jem": jem, "ed": func(i int) float64 { return jem(i) + jitter(i, 0.001) },
			"jem-converged": func(i int) float64 { return jem(i) + 1.5 + jitter(i, 0.1) }},
			nil, true, LevelHolds, "", "",
			[]string{"ed matches", "jem-converged (reference, not judged): +1.4"}, []string{"fails"}},
		{"unstable runs counted per recipe", map[string]func(int) float64{"baseline": base, "jem": jem,
			"mala": func(i int) float64 {
				if i < 3 {
					return 14.7 - 2*float64(i) // three collapsed runs: in the means
				}
				return jem(i) + 0.002
			}}, map[string]int{"mala": 3}, false, LevelFails, ExactHolds, CauseSampler,
			[]string{"mala fails: +3.", "3 of 12 runs unstable"}, nil},
	}
	th := DefaultThresholds()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(rowsGraded(n, tt.kl, tt.unstable), 1, th, ruleOf)
			v := s.Verdict
			t.Logf("headline: %s", v.Headline)
			if !v.Decided || v.Holds != tt.holds || v.Level != tt.level || v.Exact != tt.exact || v.Cause != tt.cause {
				t.Errorf("verdict holds %v level %q exact %q cause %q (decided %v), want holds %v level %q exact %q cause %q\n%s",
					v.Holds, v.Level, v.Exact, v.Cause, v.Decided, tt.holds, tt.level, tt.exact, tt.cause, v.Reason)
			}
			for _, w := range tt.contains {
				if !strings.Contains(v.Headline, w) {
					t.Errorf("headline %q\nlacks %q", v.Headline, w)
				}
			}
			for _, w := range tt.lacks {
				if strings.Contains(v.Headline, w) {
					t.Errorf("headline %q\nhas %q", v.Headline, w)
				}
			}
			for _, c := range s.Points[0].Samplers {
				if c.Reference != (c.Method == "jem-converged") || c.Runs != n || c.Unstable != tt.unstable[c.Method] {
					t.Errorf("comparison %s: reference %v runs %d unstable %d", c.Method, c.Reference, c.Runs, c.Unstable)
				}
			}
			for _, ck := range v.Checks {
				if strings.HasSuffix(ck.Name, "jem-converged") {
					t.Errorf("jem-converged is judged: check %+v", ck)
				}
			}
			for _, m := range s.Points[0].Methods {
				if m.Unstable != tt.unstable[m.Method] || m.Runs != n || m.KLJoint.Count != n {
					t.Errorf("%s: unstable %d runs %d kl count %d: unstable runs are counted and kept", m.Method, m.Unstable, m.Runs, m.KLJoint.Count)
				}
				if m.SelectedStep.Count != n || math.Abs(m.SelectedStep.Mean-(1000+float64(n-1)/2)) > 1e-9 || m.CPUSeconds.Mean != 2 || m.GradEvals.Mean != 64*1500 {
					t.Errorf("%s: protocol means selected %+v cpu %+v grad evals %+v", m.Method, m.SelectedStep, m.CPUSeconds, m.GradEvals)
				}
			}
			var buf bytes.Buffer
			Print(&buf, s)
			for _, w := range []string{"headline: " + v.Headline, "\n  point 0 (gmm:3,2): ", "verdict: " + v.Reason} {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("terminal output lacks %q:\n%s", w, buf.String())
				}
			}
		})
	}
}

// TestHeadlineTable: on a table point exact JEM's own checks decide whether it holds;
// when they fail the headline says so with the cause, apart from any sampler.
func TestHeadlineTable(t *testing.T) {
	const floor = 0.0015
	s := Summarize(rows(100, floor, map[string]func(int) float64{
		"baseline": func(i int) float64 { return 0.1 },
		"jem":      func(i int) float64 { return 3 * floor * (1 + float64(i%10)/200) },
	}), 1, DefaultThresholds(), ruleOf)
	v := s.Verdict
	if v.Holds || v.Exact != ExactFails || v.Level != LevelFails || !strings.HasPrefix(v.Headline, "Exact JEM fails (too few steps; 0.00") {
		t.Errorf("verdict exact %q level %q headline %q", v.Exact, v.Level, v.Headline)
	}
	s = Summarize(healthyRows(100), 1, DefaultThresholds(), ruleOf)
	if v := s.Verdict; !v.Holds || v.Exact != ExactHolds || v.Level != LevelHolds || !strings.HasPrefix(v.Headline, "Exact JEM holds (0.0015") {
		t.Errorf("verdict exact %q level %q headline %q", v.Exact, v.Level, v.Headline)
	}
}

// TestHeadlineSweep: over several points the headline counts exact JEM's points and
// names each recipe's worst grade with its point.
func TestHeadlineSweep(t *testing.T) {
	jem := func(i int) float64 { return 0.01 }
	var all []schemas.ResultRow
	for p, excess := range []float64{0.0005, 2.77} {
		rs := rowsGraded(12, map[string]func(int) float64{"baseline": func(int) float64 { return 0.2 }, "jem": jem,
			"sgld": func(i int) float64 { return 0.01 + excess + jitter(i, excess/10) }}, nil)
		for i := range rs {
			rs[i].PointID, rs[i].TableID = int64(p), rs[i].TableID+int64(100*p)
			if p == 1 {
				rs[i].Task = "moons:0.1"
			}
		}
		all = append(all, rs...)
	}
	v := Summarize(all, 1, DefaultThresholds(), ruleOf).Verdict
	for _, w := range []string{"Exact JEM holds at 2 of 2 judged points.", "sgld fails: +2.7", "at worst on point 1 (moons:0.1); matches at 1 of 2 points"} {
		if !strings.Contains(v.Headline, w) {
			t.Errorf("headline %q lacks %q", v.Headline, w)
		}
	}
	if v.Level != LevelFails || v.Exact != ExactHolds {
		t.Errorf("level %q exact %q", v.Level, v.Exact)
	}
}

// TestAlignRows: a terminal table keeps its columns aligned when a method name or a cell
// is longer than the column's usual width (external:my-exact-jem), and keeps the usual
// widths otherwise.
func TestAlignRows(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
	}{
		{"short names", [][]string{{"method", "joint KL", "rank"}, {"jem", "0.001", "1"}, {"sgld", "1.5", "2"}}},
		{"a long name", [][]string{{"method", "joint KL", "rank"}, {"external:my-exact-jem", "0.001", "1"}, {"jem", "0.0032 [0.0005, 0.006]", "2"}}},
		{"multi-byte cells", [][]string{{"method", "joint KL ≥ (k of n)", "x"}, {"baseline", "≥ 1.5 (3 of 4)", "y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := alignRows(tt.rows, 14, 10)
			col := -1
			for i, l := range lines {
				r := []rune(l)
				want := []rune(tt.rows[i][1])
				at := -1
				for j := range r {
					if j+len(want) <= len(r) && string(r[j:j+len(want)]) == string(want) && j > 2 {
						at = j
						break
					}
				}
				if col >= 0 && at != col {
					t.Errorf("line %d: column 2 at rune %d, want %d:\n%s", i, at, col, strings.Join(lines, "\n"))
				}
				col = at
			}
			if tt.name == "short names" && lines[1] != fmt.Sprintf("  %-14s %-10s %s", "jem", "0.001", "1") {
				t.Errorf("short names: %q, want the usual widths", lines[1])
			}
		})
	}
}

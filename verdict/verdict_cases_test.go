package verdict

import (
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict/verdicttest"
)

// healthyRows are baseline/jem rows of n tables where the claim holds.
func healthyRows(n int) []schemas.ResultRow {
	const floor = 0.0015
	return rows(n, floor, map[string]func(int) float64{
		"baseline": func(i int) float64 { return 0.1 + 0.001*float64(i) },
		"jem":      func(i int) float64 { return floor * (1 + float64(i%10)/200) },
	})
}

// TestVerdictMinTables: a table point with fewer than MinTables tables is undecided,
// with the count, the minimum and the flag that lifts it; from MinTables on it is
// decided as before.
func TestVerdictMinTables(t *testing.T) {
	tests := []struct {
		name           string
		tables         int
		decided, holds bool
		contains       string
	}{
		{"one table", 1, false, false, "undecided: 1 table, fewer than the 10 a verdict needs"},
		{"two tables", 2, false, false, "undecided: 2 tables, fewer than the 10 a verdict needs"},
		{"one below the minimum", MinTables - 1, false, false, "use --tables=10 or more"},
		{"at the minimum", MinTables, true, true, "HOLDS"},
		{"many tables", 100, true, true, "HOLDS: JEM's optimisation gap"},
	}
	th := DefaultThresholds()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(healthyRows(tt.tables), 1, th, ruleOf)
			v := s.Verdict
			if v.Decided != tt.decided || v.Holds != tt.holds || !strings.Contains(v.Reason, tt.contains) {
				t.Errorf("verdict %+v\nwant decided %v holds %v, reason containing %q", v, tt.decided, tt.holds, tt.contains)
			}
			f, err := VerdictOf(s, th)
			if err != nil || f.Decided != tt.decided || f.Holds != tt.holds {
				t.Errorf("verdict.json decided %v holds %v (%v), want %v %v", f.Decided, f.Holds, err, tt.decided, tt.holds)
			}
		})
	}
}

// TestVerdictXValuesOne: --x_values=1 leaves q(x) nothing to learn: TablesRefusal
// names it, and a point that ran anyway is undecided with that reason (never a verdict
// whose text says "n/a").
func TestVerdictXValuesOne(t *testing.T) {
	refusals := []struct {
		name   string
		g      schemas.Grid
		refuse bool
	}{
		{"x_values=1", schemas.Grid{XValues: 1, Classes: 2}, true},
		{"x_values=1 table task", schemas.Grid{Task: schemas.TaskTable, XValues: 1, Classes: 3}, true},
		{"x_values=2", schemas.Grid{XValues: 2, Classes: 2}, false},
		{"2-D task", schemas.Grid{Task: "gmm:2,1", XValues: 256, Classes: 2}, false},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			err := TablesRefusal(tt.g)
			if (err != nil) != tt.refuse || err != nil && !strings.Contains(err.Error(), "x_values=1") {
				t.Errorf("TablesRefusal = %v, want refused %v", err, tt.refuse)
			}
		})
	}
	verdicts := []struct {
		name string
		rows []schemas.ResultRow
	}{
		{"x_values=1, healthy numbers", allRows(healthyRows(100), func(r *schemas.ResultRow) {
			r.XValues, r.KLMarginalGap, r.KLMarginalReferenceExpected = 1, 0, 0
		})},
		{"x_values=1, one table", allRows(healthyRows(1), func(r *schemas.ResultRow) { r.XValues = 1 })},
		{"x_values=1, jem far off", allRows(healthyRows(100), func(r *schemas.ResultRow) {
			r.XValues, r.KLMarginalGap, r.KLMarginalReferenceExpected = 1, 0, 0
			if r.Method == "jem" {
				r.KLJoint, r.KLOptimisationGap = 1, 1
			}
		})},
	}
	for _, tt := range verdicts {
		t.Run(tt.name, func(t *testing.T) {
			v := Summarize(tt.rows, 1, DefaultThresholds(), ruleOf).Verdict
			if v.Decided || v.Holds || !strings.HasPrefix(v.Reason, "undecided: x_values=1") || strings.Contains(v.Reason, "n/a") {
				t.Errorf("verdict %+v, want undecided naming x_values=1", v)
			}
		})
	}
}

// rows2D are jem and sgld rows of n tasks of a 2-D point, sgld within 0.1% of exact
// JEM; change edits the sgld row of task i.
func rows2D(n int, change func(i int, r *schemas.ResultRow)) []schemas.ResultRow {
	var out []schemas.ResultRow
	nan := math.NaN()
	for i := range n {
		kl := 0.1 + 0.01*float64(i%5)
		for _, m := range []string{"jem", "sgld"} {
			r := schemas.ResultRow{RunID: schemas.RunID(0, int64(i), m), TableID: int64(i), Method: m, Task: "gmm:2,1",
				XValues: 256, Classes: 2, GridCells: 16, Model: "mlp:32,32", Samples: 2000, Steps: 1500, LR: 0.003, PxWeight: 1,
				KLJoint: kl, KLMarginal: kl / 2, KLConditional: kl / 2, Floor: nan, KLReferenceExpected: nan, KLReference: nan}
			if m == "sgld" {
				r.KLJoint += 0.0001 * float64(i%3)
				if change != nil {
					change(i, &r)
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// TestVerdictSamplerNonfinite: a 2-D point decides on at least MinTables tasks; a
// sampler whose KL is infinite on some tasks (no guard fired) fails on them whatever its
// finite survivors show, and says why (not "more steps"); a guard-fired run is still
// diverged, with its step, and left out up to MaxDivergedShare.
func TestVerdictSamplerNonfinite(t *testing.T) {
	inf := func(tasks ...int) func(int, *schemas.ResultRow) {
		return func(i int, r *schemas.ResultRow) {
			for _, k := range tasks {
				if i == k {
					r.Nonfinite, r.KLJoint, r.KLMarginal = true, math.Inf(1), math.Inf(1)
				}
			}
		}
	}
	guard := func(tasks ...int) func(int, *schemas.ResultRow) {
		return func(i int, r *schemas.ResultRow) {
			for _, k := range tasks {
				if i == k {
					r.Diverged, r.DivergedStep, r.KLJoint = true, 1234, 5
				}
			}
		}
	}
	tests := []struct {
		name                   string
		rows                   []schemas.ResultRow
		decided, holds         bool
		cause                  string
		contains               []string
		nonfinite, excluded    int // the sampler comparison's
		methodNonfinite, infKL int // sgld's method summary: nonfinite runs, infinite joint KLs
	}{
		{"one task", rows2D(1, nil), false, false, "", []string{"undecided: 1 task, fewer than the 10", "--tables=10", "sgld's joint KL"}, 0, 0, 0, 0},
		{"two tasks", rows2D(2, nil), false, false, "", []string{"undecided: 2 tasks, fewer than the 10"}, 0, 0, 0, 0},
		{"enough tasks", rows2D(40, nil), true, true, "", []string{"HOLDS: on gmm:2,1: sgld's joint KL"}, 0, 0, 0, 0},
		{"some infinite KLs", rows2D(40, inf(3, 17, 30, 31)), true, false, CauseNonfinite,
			[]string{"FAILS (sampler: sgld's KL is infinite on 4 of 40 tasks with no divergence guard fired", "zero mass where the truth has mass",
				"more steps do not cure it", "on 4 more tasks its KL is infinite"}, 4, 0, 4, 4},
		{"every KL infinite", rows2D(20, func(i int, r *schemas.ResultRow) { inf(i)(i, r) }), true, false, CauseNonfinite,
			[]string{"infinite on 20 of 20 tasks"}, 20, 0, 20, 20},
		{"guard fired: diverged, left out", rows2D(40, guard(5, 9)), true, true, "", []string{"HOLDS", "2 tasks left out as diverged"}, 0, 2, 0, 0},
		{"guard fired and infinite KLs", rows2D(40, func(i int, r *schemas.ResultRow) { guard(5)(i, r); inf(7)(i, r) }), true, false, CauseNonfinite,
			[]string{"infinite on 1 of 39 tasks", "1 tasks left out as diverged"}, 1, 1, 1, 1},
	}
	th := DefaultThresholds()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.rows, 1, th, ruleOf)
			v := s.Verdict
			t.Logf("%s", v.Reason)
			if v.Decided != tt.decided || v.Holds != tt.holds || v.Cause != tt.cause {
				t.Errorf("verdict %+v\nwant decided %v holds %v cause %q", v, tt.decided, tt.holds, tt.cause)
			}
			for _, want := range tt.contains {
				if !strings.Contains(v.Reason, want) {
					t.Errorf("reason %q\nlacks %q", v.Reason, want)
				}
			}
			if strings.Contains(v.Reason, "try --steps") || strings.Contains(v.Reason, "n/a") {
				t.Errorf("reason gives advice that does not fit: %q", v.Reason)
			}
			ps := s.Points[0]
			if len(ps.Samplers) != 1 || ps.Samplers[0].Nonfinite != tt.nonfinite || ps.Samplers[0].Excluded != tt.excluded {
				t.Errorf("sampler comparison %+v, want nonfinite %d excluded %d", ps.Samplers, tt.nonfinite, tt.excluded)
			}
			for _, m := range ps.Methods {
				if m.Method == "sgld" && (m.Nonfinite != tt.methodNonfinite || m.KLJoint.Infinite != tt.infKL) {
					t.Errorf("sgld summary nonfinite %d, kl_joint infinite %d; want %d, %d", m.Nonfinite, m.KLJoint.Infinite, tt.methodNonfinite, tt.infKL)
				}
			}
			if tt.cause == CauseNonfinite {
				i := len(v.Checks) - 1
				for j, c := range v.Checks {
					if c.Name == CheckNonfinitePrefix+"sgld" {
						i = j
					}
				}
				c := v.Checks[i]
				if c.Name != CheckNonfinitePrefix+"sgld" || c.Pass || !c.Deciding {
					t.Errorf("checks %+v lack a failing %s", v.Checks, CheckNonfinitePrefix+"sgld")
				}
			}
			if _, err := VerdictOf(s, th); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestVerdictJEMNonfinite: on a table point, jem runs whose KL is infinite (no guard
// fired) make the claim fail, however few; diverged ones are still left out.
func TestVerdictJEMNonfinite(t *testing.T) {
	tests := []struct {
		name                string
		rows                []schemas.ResultRow
		decided, holds      bool
		cause, contains     string
		nonfinite, diverged int
	}{
		{"none", healthyRows(100), true, true, "", "HOLDS", 0, 0},
		{"one infinite", withRows(healthyRows(100), func(r *schemas.ResultRow) {
			if r.TableID == 42 {
				r.Nonfinite, r.KLJoint, r.KLOptimisationGap = true, math.Inf(1), math.Inf(1)
			}
		}), true, false, CauseNonfinite, "FAILS (jem's KL is infinite on 1 of 100 tables with no divergence guard fired", 1, 0},
		{"guard fired: left out", withRows(healthyRows(100), func(r *schemas.ResultRow) {
			if r.TableID < 3 {
				r.Diverged, r.KLJoint = true, math.Inf(1)
			}
		}), true, true, "", "3 of 100 jem runs left out as diverged", 0, 3},
		{"too few tables first", withRows(healthyRows(3), func(r *schemas.ResultRow) { r.Nonfinite, r.KLJoint = true, math.Inf(1) }),
			false, false, "", "undecided: 3 tables", 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.rows, 1, DefaultThresholds(), ruleOf)
			v := s.Verdict
			if v.Decided != tt.decided || v.Holds != tt.holds || v.Cause != tt.cause || !strings.Contains(v.Reason, tt.contains) {
				t.Errorf("verdict %+v\nwant decided %v holds %v cause %q, reason containing %q", v, tt.decided, tt.holds, tt.cause, tt.contains)
			}
			for _, m := range s.Points[0].Methods {
				if m.Method == "jem" && (m.Nonfinite != tt.nonfinite || m.Diverged != tt.diverged || m.KLJoint.Infinite != tt.nonfinite) {
					t.Errorf("jem summary nonfinite %d diverged %d infinite %d, want %d %d %d", m.Nonfinite, m.Diverged, m.KLJoint.Infinite,
						tt.nonfinite, tt.diverged, tt.nonfinite)
				}
			}
		})
	}
}

// TestPointAccFoldedNonfinite: the folded summary counts nonfinite runs and decides as
// the exact one does.
func TestPointAccFoldedNonfinite(t *testing.T) {
	rs := verdicttest.RandomRows(400, 11)
	n := 0
	for i := range rs {
		if rs[i].Method == "jem" && !rs[i].Diverged && n < 3 {
			rs[i].Nonfinite, rs[i].KLJoint = true, math.Inf(1)
			n++
		}
	}
	exact := Summarize(rs, 1, DefaultThresholds(), ruleOf).Points[0]
	folded := foldedSummary(t, rs, 37, 5)
	if exact.Verdict.Cause != CauseNonfinite || folded.Verdict.Cause != exact.Verdict.Cause || folded.Verdict.Reason != exact.Verdict.Reason {
		t.Errorf("verdicts:\nexact  %+v\nfolded %+v", exact.Verdict, folded.Verdict)
	}
	for i, em := range exact.Methods {
		fm := folded.Methods[i]
		if fm.Nonfinite != em.Nonfinite || fm.KLJoint.Infinite != em.KLJoint.Infinite || fm.KLJoint.Count != em.KLJoint.Count {
			t.Errorf("%s: nonfinite %d/%d infinite %d/%d count %d/%d", em.Method, fm.Nonfinite, em.Nonfinite,
				fm.KLJoint.Infinite, em.KLJoint.Infinite, fm.KLJoint.Count, em.KLJoint.Count)
		}
	}
}

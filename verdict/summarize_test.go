package verdict

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// rows makes result rows for n tables with the given per-method joint KLs.
func rows(n int, floor float64, kl map[string]func(i int) float64) []schemas.ResultRow {
	var out []schemas.ResultRow
	for i := range n {
		for _, m := range []string{"baseline", "jem", "oracle"} {
			if kl[m] == nil {
				continue
			}
			// The split of a synthetic row: the estimation error at its reference (the
			// floor), the rest optimisation gap, a third of it in q(x).
			v := kl[m](i)
			out = append(out, schemas.ResultRow{RunID: schemas.RunID(0, int64(i), m), TableID: int64(i), Method: m,
				XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Samples: 1000, Steps: 300, LR: 0.05,
				KLJoint: v, Floor: floor, PxWeight: 1, KLEstimation: floor, KLOptimisationGap: v - floor, KLMarginalGap: (v - floor) / 3,
				KLReference: floor, KLReferenceExpected: floor, KLMarginalReferenceExpected: floor / 3})
		}
	}
	return out
}

// allRows changes every row of rs.
func allRows(rs []schemas.ResultRow, f func(r *schemas.ResultRow)) []schemas.ResultRow {
	for i := range rs {
		f(&rs[i])
	}
	return rs
}

// withRows changes every jem row of rs.
func withRows(rs []schemas.ResultRow, f func(r *schemas.ResultRow)) []schemas.ResultRow {
	for i := range rs {
		if rs[i].Method == "jem" {
			f(&rs[i])
		}
	}
	return rs
}

func TestSummarizeVerdict(t *testing.T) {
	const floor = 0.0015
	th := DefaultThresholds()
	healthy := func(n int) []schemas.ResultRow {
		return rows(n, floor, map[string]func(int) float64{
			"baseline": func(i int) float64 { return 0.1 + 0.001*float64(i) },
			"jem":      func(i int) float64 { return floor * (1 + float64(i%10)/200) },
		})
	}
	tests := []struct {
		name            string
		rows            []schemas.ResultRow
		holds, decided  bool
		cause, contains string
	}{
		{"claim holds", healthy(100), true, true, "", "HOLDS: JEM's optimisation gap is 2.25% [1.96%, 2.52%]"},
		{"too few steps", rows(100, floor, map[string]func(int) float64{
			"baseline": func(i int) float64 { return 0.5 },
			"jem":      func(i int) float64 { return 10 * floor },
		}), false, true, CauseSteps, "FAILS (too few steps: after 300 steps"},
		{"minibatch noise", withRows(rows(100, floor, map[string]func(int) float64{
			"jem": func(i int) float64 { return 3 * floor },
		}), func(r *schemas.ResultRow) { r.BatchSize = 32 }), false, true, CauseMinibatch, "minibatch noise: Adam at a constant --lr=0.05 on minibatches of 32 of 1000 draws"},
		{"px weight slows q(x)", withRows(healthy(100), func(r *schemas.ResultRow) {
			r.PxWeight, r.KLMarginalGap, r.KLOptimisationGap = 0.1, floor/6, floor/6+floor/100
		}), false, true, CausePxWeight, "--jem_px_weight=0.1 slows the marginal"},
		{"px weight 0", withRows(healthy(100), func(r *schemas.ResultRow) { r.PxWeight, r.KLMarginalGap = 0, floor }), false, true, CausePxWeight,
			"--jem_px_weight=0 leaves q(x) untrained"},
		{"model family", withRows(allRows(healthy(100), func(r *schemas.ResultRow) { r.XValues, r.Classes = 4, 3 }), func(r *schemas.ResultRow) {
			r.KLApproximation = 0.1
			r.KLJoint += r.KLApproximation
			r.KLReferenceExpected += r.KLApproximation
		}), false, true, CauseModelFamily, "the linear model on scalar x (log q(x,y) linear in x: 5 of the 11 degrees of freedom of a 4×3 joint)"},
		{"too few tables", withRows(healthy(12), func(r *schemas.ResultRow) {
			if r.TableID == 0 {
				r.KLOptimisationGap = floor / 2
			}
		}), false, true, CauseTables, "too few tables"},
		{"no baseline: decided on jem", healthy(10)[1:][:0], true, true, "", "HOLDS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.rows) == 0 {
				tt.rows = withRows(healthy(10), func(*schemas.ResultRow) {})
				var jem []schemas.ResultRow
				for _, r := range tt.rows {
					if r.Method == "jem" {
						jem = append(jem, r)
					}
				}
				tt.rows = jem
			}
			s := Summarize(tt.rows, 1, th, ruleOf)
			v := s.Verdict
			if v.Holds != tt.holds || v.Decided != tt.decided || v.Cause != tt.cause || !strings.Contains(v.Reason, tt.contains) {
				t.Errorf("verdict = %+v\nwant holds=%v decided=%v cause %q, reason containing %q", v, tt.holds, tt.decided, tt.cause, tt.contains)
			}
			if again := Summarize(tt.rows, 1, th, ruleOf); again.Verdict.Reason != v.Reason {
				t.Errorf("not deterministic")
			}
		})
	}
}

func TestSummarizeStats(t *testing.T) {
	rs := rows(5, 0.01, map[string]func(int) float64{
		"baseline": func(i int) float64 { return float64(i + 1) },     // 1..5
		"jem":      func(i int) float64 { return float64(i+1) / 100 }, // 0.01..0.05
	})
	rs[0].Diverged = true // baseline of table 0
	s := Summarize(rs, 1, DefaultThresholds(), ruleOf)
	ps := s.Points[0]
	if ps.Tables != 5 || len(ps.Methods) != 2 {
		t.Fatalf("point summary = %+v", ps)
	}
	b := ps.Methods[0]
	if b.Method != "baseline" || b.Runs != 5 || b.Diverged != 1 || b.KLJoint.Count != 4 || b.KLJoint.Mean != 3.5 || b.KLJoint.Median != 3.5 {
		t.Errorf("baseline summary = %+v", b)
	}
	j := ps.Methods[1]
	if math.Abs(j.FloorRatio-3) > 1e-12 { // mean 0.03 / floor 0.01
		t.Errorf("jem floor ratio = %v, want 3", j.FloorRatio)
	}
	c := ps.Comparison
	if c.Pairs != 4 || c.JEMWinShare != 1 || c.DiffCILow > c.MeanDiff || c.DiffCIHigh < c.MeanDiff {
		t.Errorf("comparison = %+v", c)
	}
}

func TestVerdictOf(t *testing.T) {
	th := DefaultThresholds()
	one := Summarize(rows(30, 0.0015, map[string]func(int) float64{
		"baseline": func(i int) float64 { return 0.1 + 0.001*float64(i) },
		"jem":      func(i int) float64 { return 0.0015 },
	}), 9, th, ruleOf)
	tests := []struct {
		name    string
		sum     schemas.Summary
		wantErr bool
	}{
		{"single point", one, false},
		{"two points", schemas.Summary{Points: []schemas.PointSummary{{}, {}}}, true},
		{"no points", schemas.Summary{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := VerdictOf(tt.sum, th)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !v.Holds || v.Reason != tt.sum.Verdict.Reason || v.Tables != 30 || v.Seed != 9 ||
				math.Abs(float64(v.JEMMeanKL)-0.0015) > 1e-12 || float64(v.JEMMeanGap) != 0 || v.BaselineToJEM <= 2 || v.Margin != th.Margin || len(v.Checks) != 5 ||
				v.MaxP != th.MaxP || v.PxWeight != 1 {
				t.Errorf("verdict = %+v", v)
			}
		})
	}
}

// divergedRows makes baseline/jem rows for n tables where the claim holds, with the
// jem run of the first d tables diverged.
func divergedRows(n, d int) []schemas.ResultRow {
	const floor = 0.0015
	rs := rows(n, floor, map[string]func(int) float64{
		"baseline": func(i int) float64 { return 0.1 + 0.001*float64(i) },
		"jem":      func(i int) float64 { return floor * (0.5 + float64(i%10)/10) },
	})
	for i := range rs {
		if rs[i].Method == "jem" && rs[i].TableID < int64(d) {
			rs[i].Diverged, rs[i].KLJoint = true, math.Inf(1)
		}
	}
	return rs
}

func TestVerdictDivergedShare(t *testing.T) {
	tests := []struct {
		name            string
		rows            []schemas.ResultRow
		decided, holds  bool
		pairs, excluded int
		contains        string
	}{
		{"none diverged", divergedRows(100, 0), true, true, 100, 0, "over 100 tables"},
		{"5% diverged", divergedRows(100, 5), true, true, 95, 5, "; 5 of 100 jem runs left out as diverged"},
		{"10% diverged", divergedRows(100, 10), true, true, 90, 10, "HOLDS"},
		{"11% diverged", divergedRows(100, 11), false, false, 89, 11,
			"undecided: 11 of 100 jem runs (11.0%) diverged, more than the 10% a verdict allows"},
		{"all diverged", divergedRows(20, 20), false, false, 0, 20, "undecided: every jem run diverged (20 of 20 tables)"},
		{"no jem", divergedRows(20, 0)[:1], false, false, 0, 0, "undecided: the verdict needs jem runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Summarize(tt.rows, 1, DefaultThresholds(), ruleOf).Verdict
			if v.Decided != tt.decided || v.Holds != tt.holds || v.Pairs != tt.pairs || v.Excluded != tt.excluded ||
				!strings.Contains(v.Reason, tt.contains) {
				t.Errorf("verdict = %+v\nwant decided=%v holds=%v pairs=%d excluded=%d, reason containing %q",
					v, tt.decided, tt.holds, tt.pairs, tt.excluded, tt.contains)
			}
		})
	}
}

func TestSweepVerdictUndecided(t *testing.T) {
	ok, bad := divergedRows(50, 0), divergedRows(50, 50)
	for i := range bad {
		bad[i].PointID = 1
	}
	tests := []struct {
		name     string
		rows     []schemas.ResultRow
		decided  bool
		excluded int
		reason   string
	}{
		{"every point decided", append(divergedRows(50, 2), func() []schemas.ResultRow {
			r := divergedRows(50, 0)
			for i := range r {
				r[i].PointID = 1
			}
			return r
		}()...), true, 2, "the JEM claim holds at 2 of 2 grid points"},
		{"one point undecided", append(ok, bad...), false, 50, "the JEM claim holds at 1 of 2 grid points (1 undecided)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Summarize(tt.rows, 1, DefaultThresholds(), ruleOf).Verdict
			if v.Decided != tt.decided || v.Excluded != tt.excluded || v.Reason != tt.reason {
				t.Errorf("verdict = %+v, want decided=%v excluded=%d reason %q", v, tt.decided, tt.excluded, tt.reason)
			}
		})
	}
}

func TestVerdictFileNoFakeZeros(t *testing.T) {
	th := DefaultThresholds()
	tests := []struct {
		name    string
		rows    []schemas.ResultRow
		decided bool
		null    []string // keys that must be null
		numbers []string // keys that must be numbers
	}{
		{"decided", divergedRows(100, 0), true, nil,
			[]string{"jem_mean_kl_joint", "baseline_mean_kl_joint", "jem_mean_kl_optimisation_gap", "baseline_to_jem", "wilcoxon_p"}},
		{"every jem run diverged", divergedRows(30, 30), false,
			[]string{"jem_mean_kl_joint", "jem_mean_kl_optimisation_gap", "baseline_to_jem", "wilcoxon_p"}, []string{"baseline_mean_kl_joint"}},
		{"too many diverged", divergedRows(100, 50), false, nil,
			[]string{"jem_mean_kl_joint", "baseline_mean_kl_joint", "baseline_to_jem", "wilcoxon_p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := VerdictOf(Summarize(tt.rows, 1, th, ruleOf), th)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if m["decided"] != tt.decided {
				t.Errorf("decided = %v, want %v: %s", m["decided"], tt.decided, raw)
			}
			for _, k := range tt.null {
				if v, ok := m[k]; !ok || v != nil {
					t.Errorf("%s = %v (present %v), want null: %s", k, v, ok, raw)
				}
			}
			for _, k := range tt.numbers {
				if _, ok := m[k].(float64); !ok {
					t.Errorf("%s = %v, want a number: %s", k, m[k], raw)
				}
			}
			var back schemas.VerdictFile
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			same := func(a, b schemas.Number) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) }
			if back.Decided != v.Decided || back.Pairs != v.Pairs || back.Excluded != v.Excluded || back.Reason != v.Reason ||
				!same(back.JEMMeanKL, v.JEMMeanKL) || !same(back.BaseMeanKL, v.BaseMeanKL) || !same(back.JEMMeanGap, v.JEMMeanGap) || len(back.Checks) != len(v.Checks) ||
				!same(back.BaselineToJEM, v.BaselineToJEM) || !same(back.WilcoxonP, v.WilcoxonP) || back.Tables != v.Tables {
				t.Errorf("round trip:\n got %+v\nwant %+v", back, v)
			}
		})
	}
}

func TestPairSampler(t *testing.T) {
	row := func(id int64, m string, kl, km float64, div bool) schemas.ResultRow {
		return schemas.ResultRow{TableID: id, Method: m, KLJoint: kl, KLMarginal: km, Diverged: div}
	}
	jem := []schemas.ResultRow{row(2, "jem", 0.1, 0.05, false), row(1, "jem", 0.2, 0.1, false), row(3, "jem", 0.3, 0.1, true)}
	sgld := []schemas.ResultRow{row(3, "sgld", 1, 1, false), row(1, "sgld", 0.5, 0.3, false), row(2, "sgld", 0.05, 0.01, false),
		row(4, "sgld", 2, 2, false)}
	sp := pairSampler("sgld", jem, sgld)
	if want := []float64{0.3, -0.05}; len(sp.Diffs) != 2 || math.Abs(sp.Diffs[0]-want[0]) > 1e-12 || math.Abs(sp.Diffs[1]-want[1]) > 1e-12 {
		t.Errorf("diffs %v, want %v (table order, diverged and unpaired left out)", sp.Diffs, want)
	}
	if sp.Tables != 4 {
		t.Errorf("tables %d, want 4", sp.Tables)
	}
	c := sp.comparisonOf(1)
	if c.Pairs != 2 || c.Excluded != 2 || math.Abs(c.Excess-0.125) > 1e-12 || c.WorseShare != 0.5 || math.Abs(c.MeanExact-0.15) > 1e-12 {
		t.Errorf("comparison %+v", c)
	}
}

func TestDecide2D(t *testing.T) {
	th := DefaultThresholds()
	ps := schemas.PointSummary{Params: schemas.Grid{Task: "gmm:2,1"}}
	close := SamplerPairs{Method: "sgld", Tables: 40}
	far := SamplerPairs{Method: "sgld", Tables: 40}
	for i := range 40 {
		e := 0.1 + 0.01*float64(i%5)
		close.Diffs, close.Exact = append(close.Diffs, 0.001*float64(i%3-1)), append(close.Exact, e)
		far.Diffs, far.Exact = append(far.Diffs, 1+0.1*float64(i%4)), append(far.Exact, e)
	}
	close.MDiffs, close.ExactM = close.Diffs, close.Exact
	far.MDiffs, far.ExactM = far.Diffs, far.Exact
	tests := []struct {
		name          string
		pairs         []SamplerPairs
		th            Thresholds
		holds, decide bool
		want          string
	}{
		{"no sampler", nil, th, false, false, "undecided"},
		{"sampler as good as exact", []SamplerPairs{close}, th, true, true, "HOLDS"},
		{"sampler far worse", []SamplerPairs{far}, th, false, true, "FAILS"},
		{"nats gate", []SamplerPairs{far}, Thresholds{Margin: 100, MaxP: 0.01, MaxSamplerExcess: 0.5}, false, true, "fails"},
		{"all diverged", []SamplerPairs{{Method: "sgld", Tables: 40}}, th, false, false, "undecided: no task has both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ps
			for _, sp := range tt.pairs {
				p.Samplers = append(p.Samplers, sp.comparisonOf(1))
			}
			v := decide2D(p, tt.pairs, 1, tt.th)
			if v.Holds != tt.holds || v.Decided != tt.decide || !strings.Contains(v.Reason, tt.want) {
				t.Errorf("verdict %+v, want holds %v decided %v mentioning %q", v, tt.holds, tt.decide, tt.want)
			}
		})
	}
}

// TestVerdictOf2D: verdict.json of a 2-D point (no floor, no reference: NaN) encodes
// them as null and carries the sampler comparison.
func TestVerdictOf2D(t *testing.T) {
	nan := math.NaN()
	sum := schemas.Summary{Points: []schemas.PointSummary{{Params: schemas.Grid{Task: "gmm:2,1"}, Floor: nan, ReferenceExpected: nan,
		Reference: nan, Samplers: []schemas.SamplerComparison{{Method: "sgld", Pairs: 3, Excess: 1.5, ExcessRatio: nan}}}}}
	v, err := VerdictOf(sum, DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal verdict.json: %v", err)
	}
	for _, want := range []string{`"floor":null`, `"kl_reference_expected":null`, `"task":"gmm:2,1"`, `"excess":1.5`, `"excess_ratio":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("verdict.json %s lacks %s", b, want)
		}
	}
	if _, err := json.Marshal(sum); err != nil {
		t.Errorf("marshal summary.json: %v", err)
	}
}

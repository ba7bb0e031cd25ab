package stages

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func point() Point {
	return Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 300, PxWeight: 1}, Tables: 10, Methods: []string{MethodBaseline, MethodJEM, MethodOracle}}
}

func TestEvaluateRun(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	logits := func(q []float64) []float64 {
		out := make([]float64, len(q))
		for i, v := range q {
			out[i] = math.Log(v) + 3 // any shift: the joint is softmax over all cells
		}
		return out
	}
	tests := []struct {
		name         string
		q            []float64
		logits       []float64
		diverged     bool
		wantKL       float64
		wantDiverged bool
		// a KL that is not finite though the trainer did not flag the run is nonfinite,
		// not diverged (no guard fired)
		wantNonfinite bool
	}{
		{"exact", p, nil, false, 0, false, false},
		{"uniform", []float64{.25, .25, .25, .25}, nil, false, prob.KL(p, []float64{.25, .25, .25, .25}), false, false},
		{"trainer diverged", p, nil, true, 0, true, false},
		{"nan logits", nil, []float64{0, math.NaN(), 0, 0}, false, math.NaN(), false, true},
		{"underflow", nil, []float64{0, 0, 0, -1e4}, false, math.Inf(1), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.logits
			if l == nil {
				l = logits(tt.q)
			}
			d := Dataset{Table: Table{Point: point(), ID: 4, P: p}, Counts: []int64{100, 200, 300, 400}}
			row, learned := EvaluateRun(Trained{Job: Job{Dataset: d, Method: MethodJEM, RunID: "r"}, Logits: l, Diverged: tt.diverged})
			if row.Diverged != tt.wantDiverged || row.Nonfinite != tt.wantNonfinite {
				t.Errorf("diverged, nonfinite = %v, %v, want %v, %v", row.Diverged, row.Nonfinite, tt.wantDiverged, tt.wantNonfinite)
			}
			if !math.IsNaN(tt.wantKL) && math.Abs(row.KLJoint-tt.wantKL) > 1e-12 && !(math.IsInf(tt.wantKL, 1) && math.IsInf(row.KLJoint, 1)) {
				t.Errorf("kl_joint = %v, want %v", row.KLJoint, tt.wantKL)
			}
			if got, want := row.Floor, 3.0/2000; math.Abs(got-want) > 1e-15 {
				t.Errorf("floor = %v, want %v", got, want)
			}
			if row.KLEmpirical > 1e-12 {
				t.Errorf("kl_empirical = %v, want 0 (counts equal the truth)", row.KLEmpirical)
			}
			if math.Abs(row.BayesAccuracy-0.6) > 1e-12 { // max(.1,.2) + max(.3,.4)
				t.Errorf("bayes accuracy = %v, want 0.6", row.BayesAccuracy)
			}
			if len(learned.Q) != 4 || learned.TableID != 4 || learned.K != 2 {
				t.Errorf("learned = %+v", learned)
			}
		})
	}
}

func TestSamplesMatchCounts(t *testing.T) {
	tests := []struct {
		name   string
		counts []int64
	}{
		{"2x2", []int64{3, 0, 5, 2}},
		{"empty cells", []int64{0, 0, 7, 0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Dataset{Table: Table{Point: point(), ID: 1}, Counts: tt.counts}
			s := Samples(9, d)
			got := make([]int64, len(tt.counts))
			for _, c := range s {
				got[c]++
			}
			if !slices.Equal(got, tt.counts) {
				t.Errorf("histogram of samples = %v, want %v", got, tt.counts)
			}
			if !slices.Equal(s, Samples(9, d)) {
				t.Errorf("samples not deterministic")
			}
		})
	}
}

// TestBlockRefs: every point's tables 0..T-1 are cut into blocks of at most
// trainBatch/|methods| tables, so a block's runs are one training batch of at most
// trainBatch runs.
func TestBlockRefs(t *testing.T) {
	tests := []struct {
		name       string
		trainBatch int
		tables     []int // per point
		want       []int // blocks per point
	}{
		{"one block", 100, []int{10}, []int{1}},
		{"three runs per batch: a table per block", 3, []int{10}, []int{10}},
		{"a batch smaller than the methods", 2, []int{4}, []int{4}},
		{"partial last block", 9, []int{10}, []int{4}},
		{"points apart", 30, []int{25, 3, 10}, []int{3, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var points []Point
			for i, n := range tt.tables {
				p := point()
				p.ID, p.Tables = int64(i), n
				points = append(points, p)
			}
			refs := BlockRefs(points, tt.trainBatch)
			got := make([]int, len(points))
			for i, r := range refs {
				got[r.PointID]++
				if i > 0 && refs[i-1].PointID == r.PointID && refs[i-1].Index+1 != r.Index {
					t.Errorf("blocks %v are not consecutive", refs)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("blocks per point %v, want %v", got, tt.want)
			}
			for _, p := range points {
				if b := BlockTables(p, tt.trainBatch); b*int64(len(p.Methods)) > int64(max(tt.trainBatch, len(p.Methods))) {
					t.Errorf("%d tables per block × %d methods > batch %d", b, len(p.Methods), tt.trainBatch)
				}
			}
		})
	}
}

// rows makes result rows for n tables with the given per-method joint KLs.
func rows(n int, floor float64, kl map[string]func(i int) float64) []schemas.ResultRow {
	var out []schemas.ResultRow
	for i := range n {
		for _, m := range []string{MethodBaseline, MethodJEM, MethodOracle} {
			if kl[m] == nil {
				continue
			}
			// The split of a synthetic row: the estimation error at its reference (the
			// floor), the rest optimisation gap, a third of it in q(x).
			v := kl[m](i)
			out = append(out, schemas.ResultRow{RunID: RunID(0, int64(i), m), TableID: int64(i), Method: m,
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
		if rs[i].Method == MethodJEM {
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
			MethodBaseline: func(i int) float64 { return 0.1 + 0.001*float64(i) },
			MethodJEM:      func(i int) float64 { return floor * (1 + float64(i%10)/200) },
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
			MethodBaseline: func(i int) float64 { return 0.5 },
			MethodJEM:      func(i int) float64 { return 10 * floor },
		}), false, true, CauseSteps, "FAILS (too few steps: after 300 steps"},
		{"minibatch noise", withRows(rows(100, floor, map[string]func(int) float64{
			MethodJEM: func(i int) float64 { return 3 * floor },
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
					if r.Method == MethodJEM {
						jem = append(jem, r)
					}
				}
				tt.rows = jem
			}
			s := Summarize(tt.rows, 1, th)
			v := s.Verdict
			if v.Holds != tt.holds || v.Decided != tt.decided || v.Cause != tt.cause || !strings.Contains(v.Reason, tt.contains) {
				t.Errorf("verdict = %+v\nwant holds=%v decided=%v cause %q, reason containing %q", v, tt.holds, tt.decided, tt.cause, tt.contains)
			}
			if again := Summarize(tt.rows, 1, th); again.Verdict.Reason != v.Reason {
				t.Errorf("not deterministic")
			}
		})
	}
}

func TestSummarizeStats(t *testing.T) {
	rs := rows(5, 0.01, map[string]func(int) float64{
		MethodBaseline: func(i int) float64 { return float64(i + 1) },     // 1..5
		MethodJEM:      func(i int) float64 { return float64(i+1) / 100 }, // 0.01..0.05
	})
	rs[0].Diverged = true // baseline of table 0
	s := Summarize(rs, 1, DefaultThresholds())
	ps := s.Points[0]
	if ps.Tables != 5 || len(ps.Methods) != 2 {
		t.Fatalf("point summary = %+v", ps)
	}
	b := ps.Methods[0]
	if b.Method != MethodBaseline || b.Runs != 5 || b.Diverged != 1 || b.KLJoint.Count != 4 || b.KLJoint.Mean != 3.5 || b.KLJoint.Median != 3.5 {
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

func TestPointValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *Point)
		want   string
	}{
		{"ok", func(p *Point) {}, ""},
		{"mlp onehot", func(p *Point) { p.Model, p.Encoding = "mlp:8,8", "onehot" }, ""},
		{"negative px weight", func(p *Point) { p.PxWeight = -1 }, "jem_px_weight"},
		{"inf lr", func(p *Point) { p.LR = math.Inf(1) }, "lr"},
		{"no methods", func(p *Point) { p.Methods = nil }, "no methods"},
		{"huge table", func(p *Point) { p.XValues, p.Classes = 1000, 1000 }, "too many"},
		{"negative batch", func(p *Point) { p.BatchSize = -1 }, "batch_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := point()
			tt.mutate(&p)
			err := p.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestOwnedOutput(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"config.json", true},
		{"tables.parquet", true},
		{"results.parquet", true}, // written by versions before per-block results files
		{"learned.parquet", true}, // written by versions before per-block learned files
		{"learned/point-0000-part-00003.parquet", true},
		{"learned/notes.txt", false},
		{"results/point-0002-part-00000.parquet", true},
		{"summary.json", true},
		{"report.html", true},
		{"verdict.json", true},
		{SamplePath(0, 0), true},
		{SamplePath(12345, 3), true},
		{TablesPath(7, true), true},
		{"figures/kl_vs_samples.svg", true},
		{"figures/triple_p0_t2.svg", true},
		{"notes.txt", false},
		{"my/results.parquet", false},
		{"samples/mine.parquet", false},
		{"figures/photo.jpg", false},
		{"results.parquet.bak", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := OwnedOutput(tt.key); got != tt.want {
				t.Errorf("OwnedOutput(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func TestVerdictOf(t *testing.T) {
	th := DefaultThresholds()
	one := Summarize(rows(30, 0.0015, map[string]func(int) float64{
		MethodBaseline: func(i int) float64 { return 0.1 + 0.001*float64(i) },
		MethodJEM:      func(i int) float64 { return 0.0015 },
	}), 9, th)
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

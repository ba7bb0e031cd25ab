package table

import (
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestSplitError: the split sums to kl_joint, each part is what its definition says on
// cases where it is known in closed form, and the references are the exact ones.
func TestSplitError(t *testing.T) {
	p22 := []float64{0.1, 0.2, 0.3, 0.4}
	p43 := []float64{0.02, 0.1, 0.08, 0.15, 0.05, 0.1, 0.03, 0.2, 0.07, 0.1, 0.05, 0.05}
	c22 := []int64{9, 22, 31, 38}
	c43 := []int64{2, 10, 9, 14, 6, 9, 3, 20, 7, 11, 5, 4}
	scalar43 := prob.Family{X: 4, K: 3, ScalarLinear: true}
	tests := []struct {
		name   string
		fam    prob.Family
		p      []float64
		counts []int64
		q      []float64
		oracle bool
		check  func(t *testing.T, r schemas.ResultRow)
	}{
		{"complete, q = p̂: no optimisation gap", prob.Family{X: 2, K: 2}, p22, c22, prob.Empirical(c22), false, func(t *testing.T, r schemas.ResultRow) {
			near(t, "gap", r.KLOptimisationGap, 0)
			near(t, "approximation", r.KLApproximation, 0)
			near(t, "estimation = KL(p‖p̂)", r.KLEstimation, prob.KL(p22, prob.Empirical(c22)))
		}},
		{"complete, q = uniform: gap = KL(p̂‖q)", prob.Family{X: 2, K: 2}, p22, c22, []float64{0.25, 0.25, 0.25, 0.25}, false, func(t *testing.T, r schemas.ResultRow) {
			near(t, "gap", r.KLOptimisationGap, prob.KL(prob.Empirical(c22), []float64{0.25, 0.25, 0.25, 0.25}))
			near(t, "marginal gap", r.KLMarginalGap, prob.KL([]float64{0.31, 0.69}, []float64{0.5, 0.5}))
		}},
		{"complete, empty cell: finite reference", prob.Family{X: 2, K: 2}, p22, []int64{0, 20, 30, 50}, p22, false, func(t *testing.T, r schemas.ResultRow) {
			near(t, "reference", r.KLReference, prob.KL(p22, []float64{0.5 / 102, 20.5 / 102, 30.5 / 102, 50.5 / 102}))
			near(t, "expected reference", r.KLReferenceExpected, prob.ExpectedKLSmoothed(p22, 100, 0.5))
		}},
		{"restricted, q = the family's fit of p̂: no gap", scalar43, p43, c43, scalar43.Project(prob.Empirical(c43)).Q, false, func(t *testing.T, r schemas.ResultRow) {
			near(t, "gap", r.KLOptimisationGap, 0)
			near(t, "approximation", r.KLApproximation, scalar43.Project(p43).KL)
			if !(r.KLApproximation > 0.01) {
				t.Errorf("approximation %g, want the 4×3 scalar family to miss this table", r.KLApproximation)
			}
			best := scalar43.Project(p43)
			near(t, "expected reference", r.KLReferenceExpected, best.KL+scalar43.ExcessTrace(p43, best.Q)/200)
		}},
		{"restricted, q = the family's best on p: gap ≥ 0", scalar43, p43, c43, scalar43.Project(p43).Q, false, func(t *testing.T, r schemas.ResultRow) {
			if r.KLOptimisationGap < 0 {
				t.Errorf("gap %g < 0", r.KLOptimisationGap)
			}
			near(t, "estimation", r.KLEstimation, -r.KLOptimisationGap)
		}},
		{"oracle: no estimation error", scalar43, p43, c43, prob.Softmax(make([]float64, 12)), true, func(t *testing.T, r schemas.ResultRow) {
			near(t, "estimation", r.KLEstimation, 0)
			near(t, "gap", r.KLOptimisationGap, r.KLJoint-scalar43.Project(p43).KL)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n int64
			for _, c := range tt.counts {
				n += c
			}
			r := schemas.ResultRow{KLJoint: prob.KL(tt.p, tt.q)}
			tasks.SplitError(&r, tasks.NewRefs(tt.fam, tt.p, tt.counts, n), tt.p, tt.q, tt.oracle)
			if sum := r.KLApproximation + r.KLOptimisationGap + r.KLEstimation; math.Abs(sum-r.KLJoint) > 1e-15 {
				t.Errorf("split %g + %g + %g = %g, want kl_joint %g", r.KLApproximation, r.KLOptimisationGap, r.KLEstimation, sum, r.KLJoint)
			}
			near(t, "marginal expected reference", r.KLMarginalReferenceExpected,
				prob.ExpectedKLSmoothed(prob.Marginal(tt.p, tt.fam.X, tt.fam.K), n, 0.5))
			tt.check(t, r)
		})
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

// TestEvaluatePromises: a run that learned the truth reaches the OOD ceiling with its
// p(x) score and is perfectly calibrated; a uniform model is at chance.
func TestEvaluatePromises(t *testing.T) {
	p := []float64{0.05, 0.15, 0.5, 0.1, 0.12, 0.08}
	logits := func(q []float64) []float64 {
		out := make([]float64, len(q))
		for i, v := range q {
			out[i] = math.Log(v)
		}
		return out
	}
	pt := point()
	pt.XValues, pt.Classes = 3, 2
	d := tasks.Dataset{Table: tasks.Table{Point: pt, P: p}, Counts: []int64{50, 150, 500, 100, 120, 80}}
	tests := []struct {
		name                 string
		q                    []float64
		auroc, maxPy, calErr float64 // NaN: not checked
	}{
		{"truth", p, prob.AUROC(prob.Marginal(p, 3, 2), prob.Marginal(p, 3, 2), prob.Uniform(3)), math.NaN(), 0},
		{"uniform model", []float64{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6}, 0.5, 0.5, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := EvaluateRun(tasks.Trained{Job: tasks.Job{Dataset: d, Method: "jem", RunID: "r"}, Logits: logits(tt.q)}, nil)
			if math.Abs(r.AUROCPx-tt.auroc) > 1e-12 || math.Abs(r.AUROCTruePx-prob.AUROC(prob.Marginal(p, 3, 2), prob.Marginal(p, 3, 2), prob.Uniform(3))) > 1e-12 {
				t.Errorf("auroc_px %g (want %g), auroc_true_px %g", r.AUROCPx, tt.auroc, r.AUROCTruePx)
			}
			if !math.IsNaN(tt.maxPy) && math.Abs(r.AUROCPy-tt.maxPy) > 1e-12 {
				t.Errorf("auroc_py %g, want %g", r.AUROCPy, tt.maxPy)
			}
			if !math.IsNaN(tt.calErr) && math.Abs(r.CalibrationErrorTrue-tt.calErr) > 1e-12 {
				t.Errorf("calibration_error_true %g, want %g", r.CalibrationErrorTrue, tt.calErr)
			}
		})
	}
}

// TestRunStatus: a run is labelled for what it is: diverged (with the step its guard
// fired at) when the trainer flagged it, nonfinite when its KL is not finite though no
// guard fired, neither otherwise.
func TestRunStatus(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	tests := []struct {
		name                string
		logits              []float64
		trainer             bool
		step                int64
		diverged, nonfinite bool
	}{
		{"ok", []float64{0, 0.1, 0.2, 0.3}, false, 0, false, false},
		{"guard fired", []float64{0, 0.1, 0.2, 0.3}, true, 4321, true, false},
		{"guard fired, infinite KL", []float64{0, 0, 0, -1e4}, true, 17, true, false},
		{"infinite KL, no guard", []float64{0, 0, 0, -1e4}, false, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tasks.Dataset{Table: tasks.Table{Point: point(), ID: 3, P: p}, Counts: []int64{100, 200, 300, 400}}
			row, _ := EvaluateRun(tasks.Trained{Job: tasks.Job{Dataset: d, Method: "sgld", RunID: "r"}, Logits: tt.logits, Diverged: tt.trainer,
				Run: tasks.TrainedRun{DivergedStep: tt.step}}, nil)
			if row.Diverged != tt.diverged || row.Nonfinite != tt.nonfinite || row.DivergedStep != tt.step {
				t.Errorf("diverged %v (step %d), nonfinite %v; want %v (step %d), %v", row.Diverged, row.DivergedStep, row.Nonfinite,
					tt.diverged, tt.step, tt.nonfinite)
			}
		})
	}
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
			d := tasks.Dataset{Table: tasks.Table{Point: point(), ID: 4, P: p}, Counts: []int64{100, 200, 300, 400}}
			row, learned := EvaluateRun(tasks.Trained{Job: tasks.Job{Dataset: d, Method: "jem", RunID: "r"}, Logits: l, Diverged: tt.diverged}, nil)
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

// TestEvaluateRunTemperature: the temperature columns are prob.BestTemperature of the
// run's logits against the truth: β* = 1 and no KL left for q = p, β* = 2 for a model
// too hot (q ∝ p^½) and ½ for one too cold (q ∝ p²), both with nothing left; a flat model
// keeps β = 1 and its whole KL; a q that underflows where p > 0 (kl_joint = +Inf) is
// brought back at the bracket's lower end, finite; NaN or infinite logits give NaN.
func TestEvaluateRunTemperature(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	pow := func(a float64) []float64 { // logits of q ∝ p^a, shifted
		out := make([]float64, len(p))
		for i, v := range p {
			out[i] = a*math.Log(v) - 1.5
		}
		return out
	}
	flat := []float64{0.7, 0.7, 0.7, 0.7}
	under := []float64{0, 0, 0, -1e4}
	underBeta := prob.TemperatureMin
	tests := []struct {
		name     string
		logits   []float64
		beta, kl float64 // NaN: NaN wanted
	}{
		{"q = p", pow(1), 1, 0},
		{"too hot, q ∝ p^½", pow(0.5), 2, 0},
		{"too cold, q ∝ p²", pow(2), 0.5, 0},
		{"flat", flat, 1, prob.KL(p, prob.Softmax(flat))},
		{"q underflows where p > 0", under, underBeta, prob.KL(p, prob.Softmax([]float64{0, 0, 0, -1e4 * underBeta}))},
		{"nan logits", []float64{0, math.NaN(), 0, 0}, math.NaN(), math.NaN()},
		{"inf logits", []float64{0, math.Inf(1), 0, 0}, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tasks.Dataset{Table: tasks.Table{Point: point(), ID: 4, P: p}, Counts: []int64{100, 200, 300, 400}}
			row, _ := EvaluateRun(tasks.Trained{Job: tasks.Job{Dataset: d, Method: "sgld", RunID: "r"}, Logits: tt.logits}, nil)
			if math.IsNaN(tt.beta) {
				if !math.IsNaN(row.BestTemperature) || !math.IsNaN(row.KLJointBestTemperature) {
					t.Errorf("best_temperature %v, kl_joint_best_temperature %v, want NaN, NaN", row.BestTemperature, row.KLJointBestTemperature)
				}
				return
			}
			if math.Abs(row.BestTemperature-tt.beta) > 1e-9*tt.beta || math.Abs(row.KLJointBestTemperature-tt.kl) > 1e-12 {
				t.Errorf("best_temperature %.15g, kl_joint_best_temperature %.15g; want %.15g, %.15g",
					row.BestTemperature, row.KLJointBestTemperature, tt.beta, tt.kl)
			}
			if !(row.KLJointBestTemperature <= row.KLJoint+1e-12) {
				t.Errorf("kl_joint_best_temperature %v above kl_joint %v", row.KLJointBestTemperature, row.KLJoint)
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
			d := tasks.Dataset{Table: tasks.Table{Point: point(), ID: 1}, Counts: tt.counts}
			s := tasks.Samples(9, d)
			got := make([]int64, len(tt.counts))
			for _, c := range s {
				got[c]++
			}
			if !slices.Equal(got, tt.counts) {
				t.Errorf("histogram of samples = %v, want %v", got, tt.counts)
			}
			if !slices.Equal(s, tasks.Samples(9, d)) {
				t.Errorf("samples not deterministic")
			}
		})
	}
}

// point is a valid 2×2 table point.
func point() tasks.Point {
	return tasks.Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 300, PxWeight: 1}, Tables: 10, Methods: []string{"baseline", "jem", "oracle"}}
}

func TestSatMul(t *testing.T) {
	tests := []struct {
		name    string
		a, b    int64
		want    int64
		wantAdd int64
	}{
		{"small", 10, 1000, 10000, 1010},
		{"zero", 0, math.MaxInt64, 0, math.MaxInt64},
		{"max times one", 1, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"overflow", 10, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"just over", 1 << 32, 1 << 31, math.MaxInt64, 1<<32 + 1<<31},
		{"just under", 1 << 31, 1<<32 - 1, 1<<63 - 1<<31, 1<<32 + 1<<31 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tasks.SatMul(tt.a, tt.b); got != tt.want {
				t.Errorf("tasks.SatMul(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := tasks.SatAdd(tt.a, tt.b); got != tt.wantAdd {
				t.Errorf("tasks.SatAdd(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.wantAdd)
			}
		})
	}
}

// TestDivergedRow: the flags the results/ files get (EvaluateRun, which also feeds the
// console's counts): diverged when the trainer flagged the run; nonfinite when it did
// not but the run's logits or KL are not finite.
func TestDivergedRow(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	tests := []struct {
		name                string
		logits              []float64
		trainer             bool
		diverged, nonfinite bool
	}{
		{"fine", []float64{0, 0.1, 0.2, 0.3}, false, false, false},
		{"trainer flagged", []float64{0, 0.1, 0.2, 0.3}, true, true, false},
		{"trainer flagged, nan logits", []float64{0, math.NaN(), 0, 0}, true, true, false},
		{"nan logits", []float64{0, math.NaN(), 0, 0}, false, false, true},
		{"inf logits", []float64{0, math.Inf(1), 0, 0}, false, false, true},
		{"q underflows where p > 0", []float64{0, 0, 0, -1e4}, false, false, true},
		{"huge but finite", []float64{700, 700, 700, 700}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tasks.Dataset{Table: tasks.Table{Point: point(), ID: -7, Ordinal: 2, P: p}, Counts: []int64{100, 200, 300, 400}}
			tr := tasks.Trained{Job: tasks.Job{Dataset: d, Method: "baseline", RunID: schemas.RunID(0, 2, "baseline")}, Logits: tt.logits, Diverged: tt.trainer}
			row, l := EvaluateRun(tr, nil)
			if row.Diverged != tt.diverged || row.Nonfinite != tt.nonfinite {
				t.Errorf("row.diverged, nonfinite = %v, %v, want %v, %v", row.Diverged, row.Nonfinite, tt.diverged, tt.nonfinite)
			}
			if row.TableID != -7 || l.TableID != -7 || l.Ordinal != 2 {
				t.Errorf("row table_id %d, learned table_id %d ordinal %d", row.TableID, l.TableID, l.Ordinal)
			}
		})
	}
}

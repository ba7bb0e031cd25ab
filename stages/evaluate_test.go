package stages

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
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
			splitError(&r, newTableRefs(tt.fam, tt.p, tt.counts, n), tt.p, tt.q, tt.oracle)
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
	d := Dataset{Table: Table{Point: pt, P: p}, Counts: []int64{50, 150, 500, 100, 120, 80}}
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
			r, _ := EvaluateRun(Trained{Job: Job{Dataset: d, Method: MethodJEM, RunID: "r"}, Logits: logits(tt.q)})
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

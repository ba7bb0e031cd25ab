// Package verdicttest makes result rows for the tests of the verdict and of the stages that aggregate them.
package verdicttest

import (
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// RandomRows are n tables' rows of one point with every method, KLs spread over
// decades, some diverged runs, empty cells and infinite empirical KLs.
func RandomRows(n int, seed uint64) []schemas.ResultRow {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []schemas.ResultRow
	for i := range n {
		ref := math.Exp(r.NormFloat64()*0.3 - 5)
		empty := int64(0)
		emp := ref * 2
		if r.IntN(10) == 0 {
			empty, emp = 1, math.Inf(1)
		}
		for _, m := range methods.Names() {
			gap := ref * math.Exp(r.NormFloat64()-3)
			if m == methods.Baseline() {
				gap = ref * math.Exp(r.NormFloat64())
			}
			est := ref * math.Exp(r.NormFloat64()*0.5)
			out = append(out, schemas.ResultRow{RunID: schemas.RunID(0, int64(i), m), TableID: int64(1000 + 7*i), Method: m,
				XValues: 2, Classes: 2, Encoding: "onehot", Model: "linear", Samples: 1000, Steps: 300, LR: 0.05, PxWeight: 1,
				KLJoint: gap + est, KLMarginal: gap / 2, KLConditional: gap / 2, Accuracy: 0.5 + r.Float64()/2, BayesAccuracy: 0.9,
				KLEmpirical: emp, EmptyCells: empty, Floor: 0.0015, KLOptimisationGap: gap, KLEstimation: est, KLMarginalGap: gap / 3,
				KLReference: ref * (1 + r.NormFloat64()/10), KLReferenceExpected: ref, KLMarginalReferenceExpected: ref / 3,
				Diverged: r.IntN(200) == 0})
		}
	}
	return out
}

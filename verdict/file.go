package verdict

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// VerdictOf builds verdict.json's content from a single-point summary decided under th.
// A number that does not exist is NaN (null in the file): the means of a method with no
// converged run (or that did not run), and the comparison's ratio and p-value when no
// pair converged.
func VerdictOf(sum schemas.Summary, th Thresholds) (schemas.VerdictFile, error) {
	if len(sum.Points) != 1 {
		return schemas.VerdictFile{}, fmt.Errorf("verdict.json needs a single-point summary, got %d points", len(sum.Points))
	}
	ps := sum.Points[0]
	nan := schemas.Number(math.NaN())
	v := schemas.VerdictFile{Holds: sum.Verdict.Holds, Decided: sum.Verdict.Decided, Reason: sum.Verdict.Reason,
		Cause: sum.Verdict.Cause, Checks: sum.Verdict.Checks, Margin: th.Margin,
		Tables: ps.Tables, Pairs: sum.Verdict.Pairs, Excluded: sum.Verdict.Excluded, EmptyCellShare: ps.EmptyCellShare,
		ReferenceExpected: schemas.Number(ps.ReferenceExpected), Floor: schemas.Number(ps.Floor),
		JEMMeanKL: nan, JEMMeanGap: nan, BaseMeanKL: nan, BaselineToJEM: nan, WilcoxonP: nan,
		MaxP: th.MaxP, PxWeight: ps.Params.PxWeight, Seed: sum.Seed,
		Samplers: ps.Samplers, MaxSamplerExcess: th.MaxSamplerExcess, Task: ps.Params.Task}
	if v.Checks == nil {
		v.Checks = []schemas.Check{}
	}
	for _, m := range ps.Methods {
		if m.KLJoint.Count == 0 {
			continue
		}
		switch m.Method {
		case methods.Yardstick():
			v.JEMMeanKL, v.JEMMeanGap = schemas.Number(m.KLJoint.Mean), schemas.Number(m.KLOptimisationGap.Mean)
		case methods.Baseline():
			v.BaseMeanKL = schemas.Number(m.KLJoint.Mean)
		}
	}
	if c := ps.Comparison; c != nil && c.Pairs > 0 {
		v.BaselineToJEM, v.WilcoxonP = schemas.Number(c.BaselineToJEM), schemas.Number(c.WilcoxonP)
	}
	return v, nil
}

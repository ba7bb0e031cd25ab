// Package jarzynski is JEM with persistent walkers whose Jarzynski importance weights
// correct the log Z gradient's non-equilibrium bias, resampled when their effective
// sample size falls (Carbone et al., NeurIPS 2023).
package jarzynski

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "jarzynski"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 8, Sampler: true, KernelOnly: true,
		Source:   "Carbone et al., NeurIPS 2023",
		Doc:      "JEM with persistent walkers whose Jarzynski importance weights correct the log Z gradient's non-equilibrium bias, resampled at ESS < ½ (Carbone et al., NeurIPS 2023)",
		Options:  []string{"step_size", "sgld_steps", "ess_resample"},
		Validate: validate,
		Trainers: map[string]any{methods.KindPlane: func(g schemas.Grid, s *kernel.Spec2D) error {
			s.Method = kernel.Jarzynski2D
			s.Langevin = kernel.LangevinOptions{Steps: g.SGLDSteps, Step: float32(g.StepSize), Adapt: true, ESS: float32(g.ESSResample)}
			return nil
		},
			methods.KindPlane + ".sampler": func(g schemas.Grid) kernel.Chain2D { // fresh walkers from uniform, at the run's final adapted step
				return kernel.Chain2D{Steps: g.SGLDSteps, Step: float32(g.StepSize), Std: float32(math.Sqrt(2 * g.StepSize)), Adapted: true, Weighted: true}
			}}})
}

func validate(g schemas.Grid) error {
	switch {
	case !(g.StepSize > 0) || math.IsInf(g.StepSize, 0):
		return fmt.Errorf("step_size must be a finite number > 0, got %v", g.StepSize)
	case !(g.ESSResample >= 0 && g.ESSResample <= 1):
		return fmt.Errorf("ess_resample must be in [0, 1], got %v", g.ESSResample)
	case g.SGLDSteps < 0 || g.SGLDSteps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", g.SGLDSteps)
	}
	return nil
}

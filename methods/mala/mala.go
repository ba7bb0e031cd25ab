// Package mala is JEM with sgld's replay buffer refined by Metropolis-adjusted
// Langevin at temperature 1, its step adapted toward 0.574 acceptance (Roberts &
// Tweedie 1996).
package mala

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "mala"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 7, Sampler: true, KernelOnly: true, KeepsBuffer: true,
		Source:   "Roberts & Tweedie, Bernoulli 1996",
		Doc:      "JEM with sgld's replay buffer refined by Metropolis-adjusted Langevin at temperature 1, its step adapted toward 0.574 acceptance (Roberts & Tweedie 1996)",
		Options:  []string{"step_size", "sgld_steps", "buffer_size", "reinit_freq"},
		Validate: validate,
		Trainers: map[string]any{methods.KindPlane: func(g schemas.Grid, s *kernel.Spec2D) error {
			s.Method, s.KeepBuffer = kernel.MALA2D, true
			s.Langevin = kernel.LangevinOptions{Steps: g.SGLDSteps, Step: float32(g.StepSize), Adapt: true,
				Buffer: g.BufferSize, Reinit: float32(g.ReinitFreq)}
			return nil
		},
			methods.KindPlane + ".sampler": func(g schemas.Grid) kernel.Chain2D { // from uniform, at the run's final adapted step
				return kernel.Chain2D{Steps: g.SGLDSteps, Step: float32(g.StepSize), Std: float32(math.Sqrt(2 * g.StepSize)), MH: true, Adapted: true}
			}}})
}

func validate(g schemas.Grid) error {
	switch {
	case !(g.StepSize > 0) || math.IsInf(g.StepSize, 0):
		return fmt.Errorf("step_size must be a finite number > 0, got %v", g.StepSize)
	case g.SGLDSteps < 0 || g.SGLDSteps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", g.SGLDSteps)
	case g.BufferSize < 1 || g.BufferSize > 1<<20:
		return fmt.Errorf("buffer_size must be in [1, 1048576], got %d", g.BufferSize)
	case !(g.ReinitFreq >= 0 && g.ReinitFreq <= 1):
		return fmt.Errorf("reinit_freq must be in [0, 1], got %v", g.ReinitFreq)
	}
	return nil
}

// Package shortrun is JEM with short-run Langevin chains started from uniform noise
// every step and an L2 penalty on the energies (Nijkamp et al., NeurIPS 2019; Du &
// Mordatch, NeurIPS 2019; JEM++).
package shortrun

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "shortrun"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 10, Sampler: true, KernelOnly: true,
		Source:   "Nijkamp et al., NeurIPS 2019",
		Doc:      "JEM with short-run Langevin chains from uniform noise each step and an L2 penalty on energies (Nijkamp et al. 2019; Du & Mordatch 2019; JEM++)",
		Options:  []string{"shortrun_step", "sgld_steps", "shortrun_noise", "energy_l2"},
		Validate: validate,
		Trainers: map[string]any{methods.KindPlane: func(g schemas.Grid, s *kernel.Spec2D) error {
			s.Method = kernel.ShortRun2D
			s.Langevin = kernel.LangevinOptions{Steps: g.SGLDSteps, Step: float32(g.ShortRunStep), Noise: g.ShortRunNoise, L2: float32(g.EnergyL2)}
			return nil
		},
			methods.KindPlane + ".sampler": func(g schemas.Grid) kernel.Chain2D { // its chains from uniform, unclamped
				c := kernel.Chain2D{Steps: g.SGLDSteps, Step: float32(g.ShortRunStep)}
				if g.ShortRunNoise {
					c.Std = float32(math.Sqrt(2 * g.ShortRunStep))
				}
				return c
			}}})
}

func validate(g schemas.Grid) error {
	switch {
	case !(g.ShortRunStep > 0) || math.IsInf(g.ShortRunStep, 0):
		return fmt.Errorf("shortrun_step must be a finite number > 0, got %v", g.ShortRunStep)
	case g.SGLDSteps < 0 || g.SGLDSteps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", g.SGLDSteps)
	case !(g.EnergyL2 >= 0) || math.IsInf(g.EnergyL2, 0):
		return fmt.Errorf("energy_l2 must be a finite number >= 0, got %v", g.EnergyL2)
	}
	return nil
}

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

// Options are shortrun's settings, the grid axes shortrun_step, sgld_steps,
// shortrun_noise and energy_l2 (schemas.Grid's ShortRunStep, SGLDSteps, ShortRunNoise,
// EnergyL2).
type Options struct {
	Step  float64 `opt:"shortrun_step"`  // the Langevin step η
	Steps int     `opt:"sgld_steps"`     // Langevin moves per chain
	Noise bool    `opt:"shortrun_noise"` // Langevin noise √(2η)ξ (false: noise-free ascent)
	L2    float64 `opt:"energy_l2"`      // weight of the energies' L2 penalty
}

func init() {
	methods.Register(methods.Method{Name: Name, Order: 10, Sampler: true, KernelOnly: true,
		Source:   "Nijkamp et al., NeurIPS 2019",
		Doc:      "JEM with short-run Langevin chains from uniform noise each step and an L2 penalty on energies (Nijkamp et al. 2019; Du & Mordatch 2019; JEM++)",
		Options:  []string{"shortrun_step", "sgld_steps", "shortrun_noise", "energy_l2"},
		Validate: validate,
		Hooks:    []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.PlaneSampler.Hook(sampler2D)}})
}

// optionsOf are the point's options.
func optionsOf(g schemas.Grid) Options {
	var o Options
	methods.Decode(g, &o)
	return o
}

func validate(g schemas.Grid) error { return optionsOf(g).check() }

// check reports the first option out of its range.
func (o Options) check() error {
	switch {
	case !(o.Step > 0) || math.IsInf(o.Step, 0):
		return fmt.Errorf("shortrun_step must be a finite number > 0, got %v", o.Step)
	case o.Steps < 0 || o.Steps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", o.Steps)
	case !(o.L2 >= 0) || math.IsInf(o.L2, 0):
		return fmt.Errorf("energy_l2 must be a finite number >= 0, got %v", o.L2)
	}
	if err := methods.CheckFloat32("shortrun_step", o.Step); err != nil {
		return err
	}
	return methods.CheckFloat32("energy_l2", o.L2)
}

// spec2D is the hook of the plane and of block tasks (Train2D, TrainAdditive,
// TrainJoint): shortrun's objective.
var spec2D = methods.Objective(func(o Options) kernel.Objective { return New(o) }, Options.check)

// sampler2D is the sampler the 2-D evaluation reruns fresh (tasks/plane's short run):
// its chains from uniform, unclamped.
func sampler2D(g schemas.Grid) kernel.Chain2D {
	o := optionsOf(g)
	c := kernel.Chain2D{Steps: o.Steps, Step: float32(o.Step)}
	if o.Noise {
		c.Std = float32(math.Sqrt(2 * o.Step))
	}
	return c
}

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

// Options are jarzynski's settings, the grid axes step_size, sgld_steps and
// ess_resample (schemas.Grid's StepSize, SGLDSteps, ESSResample).
type Options struct {
	Step  float64 `opt:"step_size"`    // the initial Langevin step η (adapted)
	Steps int     `opt:"sgld_steps"`   // weighted Langevin moves per training step
	ESS   float64 `opt:"ess_resample"` // resample when the ESS falls under this share of the walkers
}

func init() {
	methods.Register(methods.Method{Name: Name, Order: 8, Sampler: true, KernelOnly: true,
		Source:   "Carbone et al., NeurIPS 2023",
		Doc:      "JEM with persistent walkers whose Jarzynski importance weights correct the log Z gradient's non-equilibrium bias, resampled at ESS < ½ (Carbone et al., NeurIPS 2023)",
		Options:  []string{"step_size", "sgld_steps", "ess_resample"},
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
		return fmt.Errorf("step_size must be a finite number > 0, got %v", o.Step)
	case !(o.ESS >= 0 && o.ESS <= 1):
		return fmt.Errorf("ess_resample must be in [0, 1], got %v", o.ESS)
	case o.Steps < 0 || o.Steps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", o.Steps)
	}
	return methods.CheckFloat32("step_size", o.Step)
}

// spec2D is the hook of the plane and of block tasks (Train2D, TrainAdditive,
// TrainJoint): jarzynski's objective.
var spec2D = methods.Objective(func(o Options) kernel.Objective { return New(o) }, Options.check)

// sampler2D is the sampler the 2-D evaluation reruns fresh (tasks/plane's short run):
// fresh walkers from uniform, sgld_steps weighted moves at the run's final adapted
// step, resampled by their weights.
func sampler2D(g schemas.Grid) kernel.Chain2D {
	o := optionsOf(g)
	return kernel.Chain2D{Steps: o.Steps, Step: float32(o.Step), Std: float32(math.Sqrt(2 * o.Step)), Adapted: true, Weighted: true}
}

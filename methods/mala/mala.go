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

// Options are mala's settings, the grid axes step_size, sgld_steps, buffer_size and
// reinit_freq (schemas.Grid's StepSize, SGLDSteps, BufferSize, ReinitFreq; the last
// three shared with sgld).
type Options struct {
	Step   float64 `opt:"step_size"`   // the initial Langevin step η (adapted)
	Steps  int     `opt:"sgld_steps"`  // MALA moves per training step
	Buffer int     `opt:"buffer_size"` // replay buffer per run, ≥ the batch
	Reinit float64 `opt:"reinit_freq"` // per-chain probability of a uniform restart
}

// MaxBuffer is the largest replay buffer per run.
const MaxBuffer = 1 << 20

func init() {
	methods.Register(methods.Method{Name: Name, Order: 7, Sampler: true, KernelOnly: true, KeepsBuffer: true,
		Source:   "Roberts & Tweedie, Bernoulli 1996",
		Doc:      "JEM with sgld's replay buffer refined by Metropolis-adjusted Langevin at temperature 1, its step adapted toward 0.574 acceptance (Roberts & Tweedie 1996)",
		Options:  []string{"step_size", "sgld_steps", "buffer_size", "reinit_freq"},
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
	case o.Steps < 0 || o.Steps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", o.Steps)
	case o.Buffer < 1 || o.Buffer > MaxBuffer:
		return fmt.Errorf("buffer_size must be in [1, %d], got %d", MaxBuffer, o.Buffer)
	case !(o.Reinit >= 0 && o.Reinit <= 1):
		return fmt.Errorf("reinit_freq must be in [0, 1], got %v", o.Reinit)
	}
	return methods.CheckFloat32("step_size", o.Step)
}

// objective is the hook's objective maker (methods.Objective), its buffer kept.
var objective = methods.Objective(func(o Options) kernel.Objective { return &Objective{o: o, KeepBuffer: true} }, Options.check)

// spec2D is the hook of the plane and of block tasks (Train2D, TrainAdditive,
// TrainJoint): mala's objective, its final buffer kept (Spec2D.KeepBuffer). The buffer
// must hold a batch.
func spec2D(g schemas.Grid, s *kernel.Spec2D) error {
	if err := objective(g, s); err != nil {
		return err
	}
	if o := optionsOf(g); o.Buffer < s.Batch {
		return fmt.Errorf("buffer_size %d is smaller than the batch %d: mala draws a batch of distinct chains from its buffer each step", o.Buffer, s.Batch)
	}
	s.KeepBuffer = true
	return nil
}

// sampler2D is the sampler the 2-D evaluation reruns fresh (tasks/plane's short run):
// sgld_steps MALA moves from uniform on the box, at the run's final adapted step.
func sampler2D(g schemas.Grid) kernel.Chain2D {
	o := optionsOf(g)
	return kernel.Chain2D{Steps: o.Steps, Step: float32(o.Step), Std: float32(math.Sqrt(2 * o.Step)), MH: true, Adapted: true}
}

package ed

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "ed"

// Options are ed's settings, the grid axes ed_m, ed_t and ed_w (schemas.Grid's
// EDNegatives, EDT, EDW).
type Options struct {
	M int     `opt:"ed_m"` // negatives per data point, in [1, 64]
	T float64 `opt:"ed_t"` // variance of each Gaussian perturbation; on binary tables the flip probability, in (0, ½]
	W float64 `opt:"ed_w"` // stabiliser w ≥ 0
}

// Defaults are the paper's defaults (M 4, t 1, w 1), the axes' defaults.
var Defaults = Options{M: 4, T: 1, W: 1}

func init() {
	methods.Register(methods.Method{Name: Name, Order: 9, Sampler: true, KernelOnly: true,
		Source:   "Schröder et al., NeurIPS 2023",
		Doc:      "Energy Discrepancy: sampler-free, compares the energy at a draw with M perturbed negatives, Gaussian (bit flips on binary tables) (Schröder et al., NeurIPS 2023)",
		Options:  []string{"ed_m", "ed_t", "ed_w"},
		Validate: validate,
		Hooks: []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.Bits.Hook(bits),
			methods.Images.Hook(images)}}) // images.go
}

// spec2D is the hook of the plane and of block tasks: it sets ed's objective on the
// 2-D kernel's spec (Train2D, TrainAdditive, TrainJoint).
var spec2D = methods.Objective(func(o Options) kernel.Objective { return New(o) }, Options.check)

// bits is the binary tables' hook: ed's objective on the binary spec, t a flip
// probability (the objective reads Step.Binary and flips bits).
func bits(g schemas.Grid, s *kernel.SpecBits) error {
	o := optionsOf(g)
	if err := o.checkBits(); err != nil {
		return err
	}
	s.Objective = func() kernel.Objective { return New(o) }
	return nil
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
	case o.M < 1 || o.M > 64:
		return fmt.Errorf("ed_m must be in [1, 64], got %d", o.M)
	case !(o.T > 0) || math.IsInf(o.T, 0):
		return fmt.Errorf("ed_t must be a finite number > 0, got %v", o.T)
	case !(o.W >= 0) || math.IsInf(o.W, 0):
		return fmt.Errorf("ed_w must be a finite number >= 0, got %v", o.W)
	}
	return nil
}

// checkBits is check plus the binary tables' bound on t, a flip probability.
func (o Options) checkBits() error {
	if err := o.check(); err != nil {
		return err
	}
	if o.T > 0.5 {
		return fmt.Errorf("ed_t must be a flip probability in (0, 0.5] on binary tables, got %v", o.T)
	}
	return nil
}

// Package ed is Energy Discrepancy (Schröder et al., NeurIPS 2023): sampler-free, it
// compares the energy at a draw with M Gaussian-perturbed negatives, on 2-D tasks,
// (with Bernoulli bit flips) on binary tables and on images (the CNN, images.go).
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

func init() {
	methods.Register(methods.Method{Name: Name, Order: 9, Sampler: true, KernelOnly: true,
		Source:   "Schröder et al., NeurIPS 2023",
		Doc:      "Energy Discrepancy: sampler-free, compares the energy at a draw with M Gaussian-perturbed negatives (Schröder et al., NeurIPS 2023)",
		Options:  []string{"ed_m", "ed_t", "ed_w"},
		Validate: validate,
		Trainers: map[string]any{
			methods.KindPlane: func(g schemas.Grid, s *kernel.Spec2D) error {
				s.Method, s.ED = kernel.ED2D, options(g)
				return nil
			},
			methods.KindBits: func(g schemas.Grid, s *kernel.SpecBits) error {
				s.Method, s.ED = kernel.EDBits, options(g)
				return nil
			},
			"images": images, // tasks/images (images.go)
		}})
}

func options(g schemas.Grid) kernel.EDOptions {
	return kernel.EDOptions{M: g.EDNegatives, T: float32(g.EDT), W: float32(g.EDW)}
}

func validate(g schemas.Grid) error {
	switch {
	case g.EDNegatives < 1 || g.EDNegatives > 64:
		return fmt.Errorf("ed_m must be in [1, 64], got %d", g.EDNegatives)
	case !(g.EDT > 0) || math.IsInf(g.EDT, 0):
		return fmt.Errorf("ed_t must be a finite number > 0, got %v", g.EDT)
	case !(g.EDW >= 0) || math.IsInf(g.EDW, 0):
		return fmt.Errorf("ed_w must be a finite number >= 0, got %v", g.EDW)
	}
	return nil
}

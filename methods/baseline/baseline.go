// Package baseline is the method that fits q(y|x) by cross-entropy alone and leaves
// q(x) to chance: the control every JEM recipe is measured against.
package baseline

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "baseline"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 0, NoPx: true,
		Doc: "cross-entropy only: fits q(y|x) and leaves q(x) to chance",
		Hooks: []methods.Hook{
			methods.Tables.Hook(func(_ schemas.Grid, r *models.Run) error { r.PxWeight = 0; return nil }),
			methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D),
			methods.Bits.Hook(func(_ schemas.Grid, s *kernel.SpecBits) error {
				s.Exact, s.Objective, s.PxWeight = false, nil, 0
				return nil
			}),
			methods.Images.Hook(func(_ schemas.Grid, o *cnn.TrainOptions) error { o.Objective = nil; return nil }),
		}})
}

// spec2D is the hook of the plane and block kinds: neither exact JEM nor an objective,
// the cross-entropy alone.
func spec2D(_ schemas.Grid, s *kernel.Spec2D) error {
	s.Exact, s.Objective, s.PxWeight = false, nil, 0
	return nil
}

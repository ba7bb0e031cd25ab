package methods

import (
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Objective is the 2-D hook (tasks/plane's type) of a method whose step is a
// kernel.Objective built from its options struct O: it reads the point's options
// (Decode), checks them with check (nil: the tags' ranges only) and sets the spec's
// objective, one per goroutine of the trainer.
func Objective[O any](build func(O) kernel.Objective, check func(O) error) func(schemas.Grid, *kernel.Spec2D) error {
	return func(g schemas.Grid, s *kernel.Spec2D) error {
		var o O
		Decode(g, &o)
		if check != nil {
			if err := check(o); err != nil {
				return err
			}
		}
		s.Objective = func() kernel.Objective { return build(o) }
		return nil
	}
}

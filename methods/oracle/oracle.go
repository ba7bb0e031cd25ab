// Package oracle is exact JEM trained on the truth itself: the true table, or fresh
// draws of a 2-D task every step. It is the model family's best.
package oracle

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/jem"
)

// Name is the method's name.
const Name = "oracle"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 3, Reference: true, Fresh: true, Options: []string{"train_grid"},
		Doc: "exact JEM trained on the true table (tables) or fresh draws from the truth every step (2-D): the family's best",
		Hooks: []methods.Hook{
			methods.Tables.Hook(jem.SpecTable),
			methods.Plane.Hook(jem.Spec2D),
		}})
}

// Package jemconverged is exact JEM trained to convergence: full batches of the
// training draws at a learning rate of at least the kind's floor, selected by the same
// truth-free rule as every method. It shows the best this model family does on these
// draws, beside the others, and is never the yardstick (jem, trained like the
// samplers, is).
package jemconverged

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/jem"
)

// Name is the method's name.
const Name = "jem-converged"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 2, Reference: true, FullBatch: true, Comparable: true, Options: []string{"train_grid"},
		Doc:      "exact JEM on full batches at lr >= 0.01 (2-D, block tasks), selected by the same truth-free rule: the best this model family does on these draws; a reference shown beside the others, never the yardstick",
		Trainers: map[string]any{methods.KindPlane: jem.Spec2D, methods.KindBlocks: jem.Spec2D}})
}

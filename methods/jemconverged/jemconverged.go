// Package jemconverged is exact JEM trained to convergence, the converged yardstick:
// full batches of the training draws at a learning rate of at least the kind's floor,
// trained until the protocol's truth-free convergence rule holds on its held-out NLL
// (tasks.Converged, up to tasks.YardstickCap steps) and selected by the same rule as
// every method. It shows the best this model family does on these draws: every
// recipe's excess is reported against it beside its excess over exact jem at the
// shared budget, which stays the verdict's yardstick.
package jemconverged

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/jem"
)

// Name is the method's name.
const Name = "jem-converged"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 2, Reference: true, FullBatch: true, Comparable: true, Options: []string{"train_grid"},
		Doc:   "exact JEM on full batches at lr >= 0.01 (2-D, block and binary tasks) until its held-out NLL converges (a truth-free rule, up to 10x the steps), selected by the same rule: the converged yardstick, the best this model family does on these draws; every recipe's excess is shown against it beside the verdict's (over jem)",
		Hooks: []methods.Hook{methods.Plane.Hook(jem.Spec2D), methods.Blocks.Hook(jem.Spec2D), methods.Bits.Hook(jem.SpecBits)}})
}

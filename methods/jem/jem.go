// Package jem is exact JEM: cross-entropy plus the exact log q(x), its normaliser by
// enumeration (tables, binary tables) or on a shifted training grid (2-D tasks and each
// block of a block task). Trained like every sampler (the protocol), it is the
// yardstick the verdict measures the samplers against.
package jem

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "jem"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 1, Reference: true, Yardstick: true, Options: []string{"train_grid"},
		Doc: "exact JEM: cross-entropy plus the exact log q(x), Z by enumeration (tables, binary tables) or on a shifted training grid (2-D, and each block of a block task)",
		Hooks: []methods.Hook{
			methods.Tables.Hook(SpecTable),
			methods.Plane.Hook(Spec2D), methods.Blocks.Hook(Spec2D),
			methods.Bits.Hook(SpecBits),
		}})
}

// SpecTable is exact JEM on a table: the exact log Z over every cell (no sampler), at
// the point's weight.
func SpecTable(schemas.Grid, *models.Run) error { return nil }

// SpecBits sets exact JEM on the binary kernel: log Z by enumeration of the 2^D·K
// cells (jem-converged trains the same way).
func SpecBits(_ schemas.Grid, s *kernel.SpecBits) error {
	s.Exact = true
	return nil
}

// Spec2D sets exact JEM on the 2-D kernel (Spec2D.Exact): log Z on the training grid, shifted by a
// uniform offset every step (jem-converged and oracle train the same way).
func Spec2D(g schemas.Grid, s *kernel.Spec2D) error {
	s.Exact, s.TrainGrid, s.ShiftGrid = true, g.TrainGrid, true
	return nil
}

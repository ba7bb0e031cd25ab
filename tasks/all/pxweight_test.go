package all

import (
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/jem"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// jemQuarter is a method written as a new package would be (the review's exercise):
// exact JEM at a quarter of the log q(x) weight, its hooks jem's with the weight
// divided by 4. Registered by this test binary only, it also runs in TestConformance.
const jemQuarter = "jem-quarter-test"

func init() {
	quarter := func(g schemas.Grid, s *kernel.Spec2D) error {
		if err := jem.Spec2D(g, s); err != nil {
			return err
		}
		s.PxWeight /= 4
		return nil
	}
	methods.Register(methods.Method{Name: jemQuarter, Order: 99, Doc: "exact JEM at a quarter of the log q(x) weight (a test method)",
		Hooks: []methods.Hook{methods.Plane.Hook(quarter), methods.Blocks.Hook(quarter),
			methods.Tables.Hook(func(g schemas.Grid, r *models.Run) error {
				if err := jem.SpecTable(g, r); err != nil {
					return err
				}
				r.PxWeight /= 4
				return nil
			}),
			methods.Bits.Hook(func(g schemas.Grid, s *kernel.SpecBits) error {
				if err := jem.SpecBits(g, s); err != nil {
					return err
				}
				s.PxWeight /= 4
				return nil
			})}})
}

// TestPxWeightRecorded: a method that changes the log q(x) weight on the trainer has
// it in its rows' px_weight (0.25 for jem-quarter-test, 1 for jem, 0 for the
// baseline), and it trains differently from jem, on every kind it claims (tables,
// 2-D, blocks, bits).
func TestPxWeightRecorded(t *testing.T) {
	for _, kind := range []string{methods.KindTable, methods.KindPlane, methods.KindBlocks, methods.KindBits} {
		t.Run(kind, func(t *testing.T) {
			rb := runKind(t, kind, "baseline", "jem", jemQuarter)
			want := map[string]float64{"baseline": 0, "jem": 1, jemQuarter: 0.25}
			kl := map[string]float64{}
			for _, r := range rb.Rows {
				if r.PxWeight != want[r.Method] {
					t.Errorf("%s: px_weight %v, want %v", r.Method, r.PxWeight, want[r.Method])
				}
				kl[r.Method] += r.KLJoint
			}
			if kl["jem"] == kl[jemQuarter] {
				t.Errorf("jem and %s trained alike (summed joint KL %v)", jemQuarter, kl["jem"])
			}
		})
	}
}

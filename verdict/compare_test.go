package verdict

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestCompare: the same tasks are paired (a constant shift has a zero-width CI at the
// shift); other seeds give the difference of the means with a normal CI around it; a
// method one run lacks has n 0 there and no difference.
func TestCompare(t *testing.T) {
	point := schemas.PointSummary{PointID: 0, Params: schemas.Grid{Task: "gmm:3,2"}}
	mk := func(seed uint64, shift float64, ms ...string) Run {
		r := Run{Name: "r", Seed: seed, Summary: schemas.Summary{Seed: seed, Points: []schemas.PointSummary{point}}}
		for _, m := range ms {
			for id := range 8 {
				r.Rows = append(r.Rows, schemas.ResultRow{TableID: int64(id), Method: m, KLJoint: float64(id%4) + shift})
			}
		}
		return r
	}
	cases := []struct {
		name           string
		b              Run
		paired         bool
		mean, lo, hi   float64 // of jem's difference; NaN lo: only check lo < mean < hi
		baselineInBoth bool
	}{
		{"same tasks", mk(1, 0.5, "jem", "baseline"), true, 0.5, 0.5, 0.5, true},
		{"other seed", mk(2, 0.5, "jem"), false, 0.5, math.NaN(), math.NaN(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare([]Run{mk(1, 0, "jem", "baseline"), tc.b})
			if len(c.Points) != 1 || len(c.Points[0].Methods) != 2 {
				t.Fatalf("comparison: %+v", c)
			}
			for _, m := range c.Points[0].Methods {
				d := m.Diffs[0]
				switch m.Method {
				case "jem":
					if d.Paired != tc.paired || math.Abs(d.Mean-tc.mean) > 1e-12 || d.N != 8 {
						t.Errorf("jem: %+v", d)
					}
					if math.IsNaN(tc.lo) {
						if !(d.Lo < d.Mean && d.Mean < d.Hi) {
							t.Errorf("jem: CI [%v, %v] around %v", d.Lo, d.Hi, d.Mean)
						}
					} else if math.Abs(d.Lo-tc.lo) > 1e-12 || math.Abs(d.Hi-tc.hi) > 1e-12 {
						t.Errorf("jem: CI [%v, %v], want [%v, %v]", d.Lo, d.Hi, tc.lo, tc.hi)
					}
					if r := m.Runs[0]; r.N != 8 || math.Abs(r.Mean-1.5) > 1e-12 || !(r.Lo <= 1.5 && 1.5 <= r.Hi) {
						t.Errorf("jem run 0: %+v", r)
					}
				case "baseline":
					if got := m.Runs[1].N > 0; got != tc.baselineInBoth || (!got && !math.IsNaN(d.Mean)) {
						t.Errorf("baseline: runs %+v, diff %+v", m.Runs, d)
					}
				}
			}
		})
	}
}

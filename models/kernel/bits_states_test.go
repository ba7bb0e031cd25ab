package kernel

import "testing"

// TestStatesLanes: statesLanes writes bit j of state lo+p into lane p of row j (state lo
// in the lanes past hi), for chunks that start and end anywhere, short and long runs.
func TestStatesLanes(t *testing.T) {
	for _, c := range []struct{ d, P, lo, hi int }{
		{5, 16, 0, 32}, {5, 32, 0, 32}, {6, 48, 5, 40}, {20, 64, 1 << 19, 1 << 20}, {20, 256, 12345, 12345 + 100},
		{7, 16, 100, 100}, {9, 80, 33, 200}, {12, 4096, 4096 * 3, 1 << 12 * 4}, {12, 4096, 7, 5000},
	} {
		x := make([]float32, c.d*c.P)
		for i := range x {
			x[i] = -1
		}
		statesLanes(x, c.d, c.P, c.lo, c.hi)
		for p := range c.P {
			s := c.lo + p
			if s >= c.hi {
				s = c.lo
			}
			for j := range c.d {
				if want := float32((s >> j) & 1); x[j*c.P+p] != want {
					t.Fatalf("%+v: lane %d bit %d: %v, want %v", c, p, j, x[j*c.P+p], want)
				}
			}
		}
	}
}

package schemas

import (
	"fmt"
	"math"
	"testing"
)

// TestFormatRunID: the same run ids as fmt's "p%04d-t%07d-%s".
func TestFormatRunID(t *testing.T) {
	for _, p := range []int64{0, 1, 42, 9999, 10000, 123456, -1, math.MaxInt64, math.MinInt64} {
		for _, o := range []int64{0, 3, 999999, 1000000, 9999999, 10000000, 123456789012, -7, math.MaxInt64, math.MinInt64} {
			for _, m := range []string{"jem", "baseline", "pcd-exact", ""} {
				if got, want := formatRunID(p, o, m), fmt.Sprintf("p%04d-t%07d-%s", p, o, m); got != want {
					t.Errorf("formatRunID(%d, %d, %q) = %q, want %q", p, o, m, got, want)
				}
			}
		}
	}
}

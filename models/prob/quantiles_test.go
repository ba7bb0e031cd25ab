package prob

import (
	"math"
	"testing"
)

// TestQuantiles: type-7 quantiles of a known sample (R's quantile(c(3,1,4,1,5,9,2,6)):
// 1, 1, 3.5, 6.9, 9 at 0, 0.1, 0.5, 0.9, 1), NaN for q outside [0, 1] or no data, and the
// input left unsorted.
func TestQuantiles(t *testing.T) {
	xs := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	got := Quantiles(xs, 0, 0.1, 0.5, 0.9, 1, -0.1, 1.5)
	want := []float64{1, 1, 3.5, 6.9, 9, math.NaN(), math.NaN()}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) < 1e-12 || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("q #%d: %v, want %v", i, got[i], want[i])
		}
	}
	if xs[0] != 3 || xs[7] != 6 {
		t.Error("Quantiles sorted its input")
	}
	if q := Quantiles(nil, 0.5); !math.IsNaN(q[0]) {
		t.Errorf("no data: %v, want NaN", q[0])
	}
	if Quantile(xs, 0.9) != got[3] {
		t.Error("Quantile differs from Quantiles")
	}
}

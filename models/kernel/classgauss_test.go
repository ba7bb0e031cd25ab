package kernel

import (
	"math"
	"slices"
	"testing"
)

// TestClassGaussTwoD: in two dimensions the D-dimensional fit's Cholesky factor is the
// 2-D closed form (l00 = √a00, l10 = a10/l00, l11 = √(a11 − l10²)), so the class-wise
// start draws as the 2-D fit did.
func TestClassGaussTwoD(t *testing.T) {
	a := []float64{2, 0, 0.6, 1.5}
	l := make([]float64, 4)
	cholesky(a, l, 2)
	l00 := math.Sqrt(2)
	l10 := 0.6 / l00
	want := []float64{l00, 0, l10, math.Sqrt(1.5 - l10*l10)}
	if !slices.Equal(l, want) {
		t.Errorf("cholesky %v, want %v", l, want)
	}
}

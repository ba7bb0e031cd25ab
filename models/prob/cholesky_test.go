package prob

import (
	"math"
	"testing"
)

// TestCholesky: L Lᵀ gives back a known positive-definite matrix, and an indefinite
// one is refused.
func TestCholesky(t *testing.T) {
	cases := []struct {
		name string
		a    []float64
		ok   bool
	}{
		{"2×2", []float64{4, 2, 2, 3}, true},
		{"3×3", []float64{25, 15, -5, 15, 18, 0, -5, 0, 11}, true},
		{"indefinite", []float64{1, 2, 2, 1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := int(math.Sqrt(float64(len(c.a))))
			l := append([]float64(nil), c.a...)
			err := Cholesky(l, n)
			if (err == nil) != c.ok {
				t.Fatalf("error %v, want ok %v", err, c.ok)
			}
			if !c.ok {
				return
			}
			for i := range n {
				for j := range n {
					var v float64
					for k := 0; k <= min(i, j); k++ {
						v += l[i*n+k] * l[j*n+k]
					}
					if math.Abs(v-c.a[i*n+j]) > 1e-12 {
						t.Errorf("(L Lᵀ)[%d][%d] = %v, want %v", i, j, v, c.a[i*n+j])
					}
				}
			}
		})
	}
}

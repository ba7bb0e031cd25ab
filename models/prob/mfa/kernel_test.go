package mfa

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The vector and scalar kernels give the same bits, and match a plain two-pass sum.
func TestKernelLanesBitIdentical(t *testing.T) {
	rng := prob.NewRand(5)
	for _, D := range []int{1, 7, 8, 9, 64, 100, 256, 787} {
		for _, d := range []int{0, 1, 3, 4, 5, 9} {
			x, mu, ip, a := make([]float64, D), make([]float64, D), make([]float64, D), make([]float64, D*d)
			for i := range D {
				x[i], mu[i], ip[i] = rng.NormFloat64(), rng.NormFloat64(), 1+rng.Float64()
			}
			for i := range a {
				a[i] = 0.1 * rng.NormFloat64()
			}
			r1, r2 := make([]float64, D), make([]float64, D)
			q1 := quadScalar(x, mu, ip, a, d, r1)
			q2 := quad(x, mu, ip, a, d, r2)
			if math.Float64bits(q1) != math.Float64bits(q2) {
				t.Errorf("D=%d d=%d: scalar %v, kernel %v (lanes %v)", D, d, q1, q2, lanesOK)
			}
			var want float64
			for i := range D {
				want += (x[i] - mu[i]) * (x[i] - mu[i]) * ip[i]
			}
			for j := range d {
				var u float64
				for i := range D {
					u += a[j*D+i] * (x[i] - mu[i])
				}
				want -= u * u
			}
			if math.Abs(q1-want) > 1e-11*math.Max(1, math.Abs(want)) {
				t.Errorf("D=%d d=%d: kernel %v, plain sum %v", D, d, q1, want)
			}
			for i := range D {
				if r1[i] != x[i]-mu[i] || r2[i] != r1[i] {
					t.Fatalf("D=%d: r[%d] wrong", D, i)
				}
			}
		}
	}
	t.Logf("vector lanes in use: %v", lanesOK)
}

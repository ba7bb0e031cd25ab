package prob

import (
	"fmt"
	"math"
)

// Cholesky factors the symmetric positive-definite n×n matrix a (row-major; its lower
// triangle is read) in place into its lower Cholesky factor L, a = L Lᵀ, written over
// the lower triangle; the strict upper triangle is left as it was.
func Cholesky(a []float64, n int) error {
	for j := range n {
		s := a[j*n+j]
		for k := range j {
			s -= a[j*n+k] * a[j*n+k]
		}
		if !(s > 0) {
			return fmt.Errorf("matrix not positive definite (pivot %d = %v)", j, s)
		}
		s = math.Sqrt(s)
		a[j*n+j] = s
		for i := j + 1; i < n; i++ {
			v := a[i*n+j]
			for k := range j {
				v -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = v / s
		}
	}
	return nil
}

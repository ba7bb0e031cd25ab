//go:build goexperiment.simd && amd64

package kernel

import (
	"math"
	"testing"
)

// BenchmarkScalarAfterVector: scalar math.Exp right after a vector primitive. The
// primitives clear the AVX upper state on return (ClearUpper); without that, SSE code
// after AVX-512 ran ~100× slower on this machine (2M math.Exp: 2.2 s against 16 ms).
// Compare with -bench 'ScalarAfter|ScalarClean'.
func BenchmarkScalarAfterVector(b *testing.B) {
	a := make([]float32, 64)
	x := 0.0
	for i := range b.N {
		if i%1024 == 0 {
			vAdd(a, a, a)
		}
		x += math.Exp(-float64(i%1000) * 0.01)
	}
	_ = x
}

func BenchmarkScalarClean(b *testing.B) {
	ClearUpper()
	x := 0.0
	for i := range b.N {
		x += math.Exp(-float64(i%1000) * 0.01)
	}
	_ = x
}

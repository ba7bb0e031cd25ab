//go:build goexperiment.simd && amd64

package avx

import "simd/archsimd"

var avx = archsimd.X86.AVX()

// ClearUpper clears this thread's AVX upper register state (VZEROUPPER).
func ClearUpper() {
	if avx {
		archsimd.ClearAVXUpperBits()
	}
}

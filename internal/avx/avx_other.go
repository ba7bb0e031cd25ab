//go:build !(goexperiment.simd && amd64)

package avx

// ClearUpper does nothing outside the amd64 simd build.
func ClearUpper() {}

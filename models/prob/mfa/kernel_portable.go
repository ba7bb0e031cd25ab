//go:build !(goexperiment.simd && amd64)

package mfa

// quad is the Mahalanobis kernel; the portable build has only the scalar lanes.
func quad(x, mu, ip, a []float64, d int, r []float64) float64 {
	return quadScalar(x, mu, ip, a, d, r)
}

// lanesOK reports whether the vector kernel runs (never, in the portable build).
const lanesOK = false

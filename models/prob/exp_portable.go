//go:build !(goexperiment.simd && amd64)

package prob

import "math"

// ExpTo sets dst[i] = math.Exp(x[i]) for i < len(x) (dst may be x): the portable build.
func ExpTo(dst, x []float64) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = math.Exp(v)
	}
}

// expToLanes is ExpTo (the portable build has no lanes).
func expToLanes(dst, x []float64) { ExpTo(dst, x) }

// expLanesOK: the portable build has no lanes.
const expLanesOK = false

// LogTo sets dst[i] = math.Log(x[i]) for i < len(x) (dst may be x): the portable build.
func LogTo(dst, x []float64) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = math.Log(v)
	}
}

// logToLanes is LogTo (the portable build has no lanes).
func logToLanes(dst, x []float64) { LogTo(dst, x) }

// logLanesOK: the portable build has no lanes.
const logLanesOK = false

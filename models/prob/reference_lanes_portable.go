//go:build !(goexperiment.simd && amd64)

package prob

// sumLogRatios writes each job's sumLogRatio into e (the portable build: one by one).
func sumLogRatios(jobs []ratioJob, n int64, a float64, e []float64) {
	sumLogRatiosScalar(jobs, n, a, e)
}

// clearUpper is a no-op in the portable build.
func clearUpper() {}

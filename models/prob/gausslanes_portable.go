//go:build !(goexperiment.simd && amd64)

package prob

// LogDensityLanes sets out[p] = add + log N(x_p) for p in [lo, hi) (the portable build:
// point by point).
func (g *GaussLanes) LogDensityLanes(X []float32, P, lo, hi int, add float64, out []float64) {
	var buf [gaussScratch]float64
	y := buf[:]
	if g.D > gaussScratch {
		y = make([]float64, g.D)
	}
	for p := lo; p < hi; p++ {
		out[p] = g.logDensityScalar(X, P, p, add, y)
	}
}

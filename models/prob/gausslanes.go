package prob

// GaussLanes is a Gaussian N(Mean, L·Lᵀ) in ℝ^D (L lower triangular, row-major [D][D])
// evaluated at many points held as lanes: X[c·P + p] is coordinate c of point p.
type GaussLanes struct {
	D       int
	Mean, L []float64
	LogNorm float64 // log((2π)^{D/2} |L|)
}

// gaussScratch is the most coordinates a point's whitening holds on the stack (the
// block kind's D ≤ 64 among them); beyond it LogDensityLanes allocates once a call.
const gaussScratch = 128

// Whiten is log N(x) at x [D], overwriting x by its whitened coordinates L⁻¹(x − Mean),
// row by row (y_i = (x_i − Mean_i − Σ_{k<i} L_ik·y_k) / L_ii): the one order of
// operations LogDensityLanes keeps in every build.
func (g *GaussLanes) Whiten(x []float64) float64 {
	D := g.D
	var q float64
	for i := range D {
		v := x[i] - g.Mean[i]
		for k := range i {
			v -= g.L[i*D+k] * x[k]
		}
		y := v / g.L[i*D+i]
		x[i] = y
		q += y * y
	}
	return -0.5*q - g.LogNorm
}

// logDensityScalar is add + log N(x_p) of point p of the lanes X, y [D] its scratch.
func (g *GaussLanes) logDensityScalar(X []float32, P, p int, add float64, y []float64) float64 {
	for i := range g.D {
		y[i] = float64(X[i*P+p])
	}
	return add + g.Whiten(y)
}

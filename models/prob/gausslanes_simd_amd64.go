//go:build goexperiment.simd && amd64

package prob

import "simd/archsimd"

// gaussLanesMaxD is the largest dimension LogDensityLanes whitens in vector lanes;
// beyond it the points go one by one.
const gaussLanesMaxD = 8

// LogDensityLanes sets out[p] = add + log N(x_p) for p in [lo, hi): eight points side by
// side in archsimd.Float64x8 lanes, each lane doing logDensityScalar's operations in
// its order (IEEE operations are correctly rounded: the same bits), the rest one by one.
func (g *GaussLanes) LogDensityLanes(X []float32, P, lo, hi int, add float64, out []float64) {
	D := g.D
	var y [gaussScratch]float64
	p := lo
	if lanesOK && D <= gaussLanesMaxD && hi-lo >= 8 {
		var mean [gaussLanesMaxD][8]float64
		var l [gaussLanesMaxD * gaussLanesMaxD][8]float64
		for i := range D {
			mean[i] = splat64(g.Mean[i])
			for k := range i + 1 {
				l[i*D+k] = splat64(g.L[i*D+k])
			}
		}
		half, norm, a := splat64(-0.5), splat64(g.LogNorm), splat64(add)
		var yv [gaussLanesMaxD]f64x8
		archsimd.ClearAVXUpperBits()
		for ; p+8 <= hi; p += 8 {
			q := ld64(&cZero)
			for i := range D {
				v := archsimd.LoadFloat32x8Slice(X[i*P+p:]).ConvertToFloat64().Sub(ld64(&mean[i]))
				for k := range i {
					v = v.Sub(ld64(&l[i*D+k]).Mul(yv[k]))
				}
				yi := v.Div(ld64(&l[i*D+i]))
				yv[i] = yi
				q = q.Add(yi.Mul(yi))
			}
			ld64(&a).Add(ld64(&half).Mul(q).Sub(ld64(&norm))).StoreSlice(out[p:])
		}
		archsimd.ClearAVXUpperBits() // scalar code follows
	}
	ys := y[:]
	if D > gaussScratch {
		ys = make([]float64, D)
	}
	for ; p < hi; p++ {
		out[p] = g.logDensityScalar(X, P, p, add, ys)
	}
}

package kernel

import (
	"math"
	"math/rand/v2"
)

// ClassGauss is a class-wise Gaussian in D dimensions fitted to a run's draws:
// JEM++'s informative start (Yang & Ji, ICCV 2021; sgld's jempp preset and the
// sampler-distribution measure's class-wise start). Each class's covariance gets 1e-3
// on its diagonal; a class with fewer than 2 draws gets the pooled fit.
type ClassGauss struct {
	d    int
	cum  []float64 // the classes' cumulative frequencies
	mean []float64 // [K][D]
	chol []float64 // [K][D][D]: lower Cholesky factors
	z    []float64 // scratch [D]
}

// FitClassGauss fits each of k classes' mean and covariance to the draws data
// [D][N] with classes y.
func FitClassGauss(data [][]float32, y []int32, k int) *ClassGauss {
	D := len(data)
	g := &ClassGauss{d: D, cum: make([]float64, k), mean: make([]float64, k*D), chol: make([]float64, k*D*D), z: make([]float64, D)}
	mean, cov := make([]float64, D), make([]float64, D*D)
	fit := func(keep func(i int) bool) float64 {
		clear(mean)
		clear(cov)
		n := 0.0
		for i := range y {
			if keep(i) {
				n++
				for c := range D {
					mean[c] += float64(data[c][i])
				}
			}
		}
		if n == 0 {
			for c := range D {
				cov[c*D+c] = 1
			}
			return 0
		}
		for c := range D {
			mean[c] /= n
		}
		for i := range y {
			if keep(i) {
				for a := range D {
					da := float64(data[a][i]) - mean[a]
					for b := 0; b <= a; b++ {
						cov[a*D+b] += da * (float64(data[b][i]) - mean[b])
					}
				}
			}
		}
		for a := range D {
			for b := 0; b <= a; b++ {
				cov[a*D+b] /= n
			}
		}
		return n
	}
	fit(func(int) bool { return true })
	pm, pc := append([]float64(nil), mean...), append([]float64(nil), cov...)
	var total float64
	for c := range k {
		n := fit(func(i int) bool { return int(y[i]) == c })
		if n < 2 {
			copy(mean, pm)
			copy(cov, pc)
		}
		for a := range D {
			cov[a*D+a] += 1e-3
		}
		copy(g.mean[c*D:(c+1)*D], mean)
		cholesky(cov, g.chol[c*D*D:(c+1)*D*D], D)
		total += n
		g.cum[c] = total
	}
	for c := range g.cum {
		g.cum[c] /= max(total, 1)
	}
	return g
}

// cholesky writes the lower factor L of the symmetric matrix a (its lower triangle
// read) into l, each pivot at least √1e-6 (in two dimensions, the kernel's 2-D
// factor: l00 = √a00, l10 = a10/l00, l11 = √max(a11 − l10², 1e-6)).
func cholesky(a, l []float64, D int) {
	clear(l)
	for i := range D {
		for j := 0; j <= i; j++ {
			s := a[i*D+j]
			for k := range j {
				s -= l[i*D+k] * l[j*D+k]
			}
			if i == j {
				if i == 0 {
					l[0] = math.Sqrt(s)
				} else {
					l[i*D+i] = math.Sqrt(max(s, 1e-6))
				}
			} else {
				l[i*D+j] = s / l[j*D+j]
			}
		}
	}
}

// class draws a class by its frequency.
func (g *ClassGauss) class(rng *rand.Rand) int {
	u := rng.Float64()
	c := 0
	for c < len(g.cum)-1 && u >= g.cum[c] {
		c++
	}
	return c
}

// point sets g.z to D standard normals and returns class c's point coordinate by
// coordinate through at.
func (g *ClassGauss) point(rng *rand.Rand, c int, at func(i int, v float32)) {
	D := g.d
	for i := range D {
		g.z[i] = rng.NormFloat64()
	}
	m, l := g.mean[c*D:(c+1)*D], g.chol[c*D*D:(c+1)*D*D]
	for i := range D {
		v := m[i]
		for j := 0; j <= i; j++ {
			v += l[i*D+j] * g.z[j]
		}
		at(i, float32(v))
	}
}

// Draw writes one draw into x [D].
func (g *ClassGauss) Draw(rng *rand.Rand, x []float32) {
	g.point(rng, g.class(rng), func(i int, v float32) { x[i] = v })
}

// DrawStrided writes one draw into column p of x [D][B].
func (g *ClassGauss) DrawStrided(rng *rand.Rand, x []float32, p, B int) {
	g.point(rng, g.class(rng), func(i int, v float32) { x[i*B+p] = v })
}

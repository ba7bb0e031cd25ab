//go:build goexperiment.simd && amd64

package mfa

import "simd/archsimd"

// lanesOK reports whether the CPU runs the vector kernel (AVX-512).
var lanesOK = archsimd.X86.AVX512()

type f64x8 = archsimd.Float64x8

// quad is the Mahalanobis kernel: vector lanes on AVX-512, else the scalar lanes; both
// give the same bits (see kernel.go).
func quad(x, mu, ip, a []float64, d int, r []float64) float64 {
	if !lanesOK || len(x) < 8 {
		return quadScalar(x, mu, ip, a, d, r)
	}
	q := quadVector(x, mu, ip, a, d, r)
	archsimd.ClearAVXUpperBits()
	return q
}

// ld loads s[i:i+8].
func ld(s []float64, i int) f64x8 { return archsimd.LoadFloat64x8((*[8]float64)(s[i : i+8])) }

func store8(v f64x8) (s [8]float64) {
	v.Store(&s)
	return s
}

func quadVector(x, mu, ip, a []float64, d int, r []float64) float64 {
	D := len(x)
	mu, ip, r = mu[:D], ip[:D], r[:D]
	n8 := D &^ 7
	var zero [8]float64
	acc := archsimd.LoadFloat64x8(&zero)
	for i := 0; i < n8; i += 8 {
		v := ld(x, i).Sub(ld(mu, i))
		v.Store((*[8]float64)(r[i : i+8]))
		acc = acc.Add(v.Mul(v).Mul(ld(ip, i)))
	}
	s := store8(acc)
	q := reduce8(&s)
	for i := n8; i < D; i++ {
		v := x[i] - mu[i]
		r[i] = v
		q += float64(float64(v*v) * ip[i])
	}
	j := 0
	for ; j+4 <= d; j += 4 {
		a0, a1, a2, a3 := a[j*D:(j+1)*D], a[(j+1)*D:(j+2)*D], a[(j+2)*D:(j+3)*D], a[(j+3)*D:(j+4)*D]
		s0 := archsimd.LoadFloat64x8(&zero)
		s1, s2, s3 := s0, s0, s0
		for i := 0; i < n8; i += 8 {
			rv := ld(r, i)
			s0 = s0.Add(ld(a0, i).Mul(rv))
			s1 = s1.Add(ld(a1, i).Mul(rv))
			s2 = s2.Add(ld(a2, i).Mul(rv))
			s3 = s3.Add(ld(a3, i).Mul(rv))
		}
		for k, sv := range [4]f64x8{s0, s1, s2, s3} {
			l := store8(sv)
			u := reduce8(&l)
			row := a[(j+k)*D : (j+k+1)*D]
			for i := n8; i < D; i++ {
				u += float64(row[i] * r[i])
			}
			q -= float64(u * u)
		}
	}
	for ; j < d; j++ {
		row := a[j*D : (j+1)*D]
		sv := archsimd.LoadFloat64x8(&zero)
		for i := 0; i < n8; i += 8 {
			sv = sv.Add(ld(row, i).Mul(ld(r, i)))
		}
		l := store8(sv)
		u := reduce8(&l)
		for i := n8; i < D; i++ {
			u += float64(row[i] * r[i])
		}
		q -= float64(u * u)
	}
	return q
}

//go:build goexperiment.simd && amd64

package prob

import (
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// TestLog1pLanes: log1pLanes is math.Log1p bit for bit on its paths, and flags every
// lane it leaves to math.Log1p.
func TestLog1pLanes(t *testing.T) {
	if !lanesOK {
		t.Skip("no AVX-512")
	}
	xs := []float64{-1, math.Nextafter(-1, 0), -0.99, -0.5, l1pSqrt2HalfM1, math.Nextafter(l1pSqrt2HalfM1, 0),
		math.Nextafter(l1pSqrt2HalfM1, -1), -0.1, -1e-9, -l1pSmall, -1e-300, 0, math.Copysign(0, -1), 1e-300, l1pSmall,
		math.Nextafter(l1pSmall, 0), 1e-9, 0.1, l1pSqrt2M1, math.Nextafter(l1pSqrt2M1, 0), math.Nextafter(l1pSqrt2M1, 1),
		0.5, 1, 2, 3, math.Sqrt2 - 1, 7, 1e10, l1pTwo53, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), -2,
		0.25, 0.75, 1.0 / 3, 1023, 1024, 1025}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		switch r.IntN(4) {
		case 0:
			xs = append(xs, -1+2*r.Float64())
		case 1:
			xs = append(xs, r.Float64()*10)
		case 2:
			xs = append(xs, math.Ldexp(r.Float64(), r.IntN(120)-60)*float64(1-2*r.IntN(2)))
		default: // the references' arguments: (k + a − m)/m
			m := r.Float64() * 1000
			xs = append(xs, (math.Floor(r.Float64()*2*m)+0.5-m)/m)
		}
	}
	for len(xs)%8 != 0 {
		xs = append(xs, 0.3)
	}
	for range 20000 { // whole vectors on the first path (log1pSmall), tiny ones among them
		for l := range 8 {
			x := -0.29 + 0.7*r.Float64()
			if l == 3 && r.IntN(10) == 0 {
				x = 1e-12
			}
			xs = append(xs, x)
		}
	}
	for i := 0; i < len(xs); i += 8 {
		var in, out [8]float64
		copy(in[:], xs[i:i+8])
		v, slow := log1pLanes(archsimd.LoadFloat64x8(&in))
		v.Store(&out)
		archsimd.ClearAVXUpperBits()
		for l := range 8 {
			if slow&(1<<l) != 0 {
				continue
			}
			if want := math.Log1p(in[l]); math.Float64bits(out[l]) != math.Float64bits(want) {
				t.Errorf("log1p(%v) = %v, math.Log1p %v", in[l], out[l], want)
			}
		}
	}
}

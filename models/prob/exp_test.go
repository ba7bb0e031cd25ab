package prob

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpToMatchesExp: ExpTo is math.Exp bit for bit, and so are its lanes alone (the
// vector build's, without the self-check's guard) on values across float64's range:
// random ones in the fast path's range, its edges (overflow, the subnormal results, the
// underflow to 0), ±0, ±Inf, NaN and huge magnitudes, at every offset in a vector.
func TestExpToMatchesExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 0, 1<<16)
	for range 40000 {
		x = append(x, -750+rng.Float64()*1460)
	}
	for range 8000 {
		x = append(x, rng.NormFloat64()*1e-3, rng.NormFloat64()*3)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 709.78, 709.782712893384, 709.79, 710, -708.39, -708.4, -709.09,
		-745.13, -745.14, -746, -1e5, 1e5, 1e300, -1e300, 1e-310, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64} {
		for k := range 9 { // each special value at every lane offset
			x = append(x, v+float64(k)*0)
		}
		x = append(x, v)
	}
	for k := -1030; k <= 1030; k++ { // the reduction's boundaries: k·ln2 and halfway between
		x = append(x, float64(k)*math.Ln2, (float64(k)+0.5)*math.Ln2)
	}
	x = x[:len(x)/8*8+5] // a tail past the last vector
	t.Logf("%d values; lanes on: %v", len(x), expLanesOK)
	for name, f := range map[string]func(dst, x []float64){"ExpTo": ExpTo, "lanes": expToLanes} {
		got := make([]float64, len(x))
		f(got, x[:len(x)/8*8])
		copy(got[len(x)/8*8:], x[len(x)/8*8:])
		ExpTo(got[len(x)/8*8:], x[len(x)/8*8:])
		bad := 0
		for i, v := range x {
			if want := math.Exp(v); math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got[i])) {
				if bad++; bad <= 5 {
					t.Errorf("%s: exp(%v) = %v (%#x), math.Exp %v (%#x)", name, v, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ from math.Exp", name, bad, len(x))
		}
	}
	in := []float64{0.5, -3, 2}
	ExpTo(in, in) // in place
	if in[0] != math.Exp(0.5) || in[1] != math.Exp(-3) || in[2] != math.Exp(2) {
		t.Errorf("in place: %v", in)
	}
}

// BenchmarkExpTo: ExpTo over 4,096 values against math.Exp one by one.
func BenchmarkExpTo(b *testing.B) {
	x := make([]float64, 4096)
	for i := range x {
		x[i] = -20 + 20*float64(i)/4096
	}
	dst := make([]float64, len(x))
	b.Run("ExpTo", func(b *testing.B) {
		for b.Loop() {
			ExpTo(dst, x)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				dst[i] = math.Exp(v)
			}
		}
	})
}

// TestGaussLanesMatchesScalar: LogDensityLanes is logDensityScalar bit for bit at every
// point, in lanes and in the tail, for D = 1, 2, 5, 8 and 9 (past the lanes' limit).
func TestGaussLanesMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, D := range []int{1, 2, 5, 8, 9} {
		g := GaussLanes{D: D, Mean: make([]float64, D), L: make([]float64, D*D), LogNorm: 1.2345}
		for i := range D {
			g.Mean[i] = rng.NormFloat64()
			for k := range i {
				g.L[i*D+k] = 0.3 * rng.NormFloat64()
			}
			g.L[i*D+i] = 0.5 + rng.Float64()
		}
		const P = 37
		X := make([]float32, D*P)
		for i := range X {
			X[i] = float32(3 * rng.NormFloat64())
		}
		out := make([]float64, P)
		g.LogDensityLanes(X, P, 2, P, -0.75, out)
		y := make([]float64, D)
		for p := 2; p < P; p++ {
			if want := g.logDensityScalar(X, P, p, -0.75, y); math.Float64bits(out[p]) != math.Float64bits(want) {
				t.Errorf("D %d point %d: %v, scalar %v", D, p, out[p], want)
			}
		}
		if out[0] != 0 || out[1] != 0 {
			t.Errorf("D %d: points before lo written: %v", D, out[:2])
		}
	}
}

// TestLogToMatchesLog: LogTo and its lanes alone are math.Log bit for bit on values
// across float64's range: random mantissas at every exponent, the √2/2 boundary, 1 and
// its neighbours, the subnormals, 0, negatives, ±Inf and NaN, and a tail past the last
// vector.
func TestLogToMatchesLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var x []float64
	for e := -1074; e <= 1023; e++ {
		x = append(x, math.Ldexp(0.5+0.5*rng.Float64(), e), math.Ldexp(1, e))
	}
	for range 20000 {
		x = append(x, rng.Float64()*4, math.Exp(rng.NormFloat64()*50))
	}
	for _, v := range []float64{1, math.Nextafter(1, 2), math.Nextafter(1, 0), 0.7071067811865476, 0.7071067811865475,
		math.Sqrt2 / 2, 0, math.Copysign(0, -1), -1, -1e-300, math.Inf(1), math.Inf(-1), math.NaN(),
		math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 2.225073858507201e-308, math.MaxFloat64} {
		for range 9 {
			x = append(x, v)
		}
	}
	x = x[:len(x)/8*8+3]
	t.Logf("%d values; lanes on: %v", len(x), logLanesOK)
	for name, f := range map[string]func(dst, x []float64){"LogTo": LogTo, "lanes": logToLanes} {
		got := make([]float64, len(x))
		n := len(x) / 8 * 8
		f(got[:n], x[:n])
		LogTo(got[n:], x[n:])
		bad := 0
		for i, v := range x {
			if want := math.Log(v); math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got[i])) {
				if bad++; bad <= 5 {
					t.Errorf("%s: log(%v) = %v, math.Log %v", name, v, got[i], want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ from math.Log", name, bad, len(x))
		}
	}
}

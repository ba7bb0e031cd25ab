package kernel

import "math"

// Scalar float32 exp, tanh and log. They are the reference of the vectorised versions
// (vec_simd_amd64.go computes the same operations in the same order on 16 lanes, so both
// give the same bits) and are used directly by the portable build. The error bounds,
// measured by TestMath32Accuracy against float64 math over the stated ranges, are in the
// package documentation.
//
// Every product that is followed by an addition is rounded explicitly (madd), so that
// the compiler may not fuse it into an FMA: the result is then the same on every
// GOAMD64 level and equal to the vector code, which uses separate multiplies and adds.

const (
	expLo      = -87.33654           // exp(expLo) ≈ 1.18e-38, the smallest normal float32
	expHi      = 88.0                // exp(88) ≈ 1.65e38; n = round(x·log2e) stays ≤ 127
	log2e      = 1.44269504088896341 // 1/ln 2
	ln2Hi      = 0.693359375         // ln 2 split into an exact high part...
	ln2Lo      = -2.12194440e-4      // ...and the rest (Cephes)
	roundMagic = 12582912            // 1.5·2^23: x + magic - magic rounds x to an integer (|x| < 2^22)

	exp5 = 1.9875691500e-4 // Cephes expf minimax coefficients on [-ln2/2, ln2/2]
	exp4 = 1.3981999507e-3
	exp3 = 8.3334519073e-3
	exp2 = 4.1665795894e-2
	exp1 = 1.6666665459e-1
	exp0 = 5.0000001201e-1

	tanhSmall = 0.625 // below: odd polynomial (Cephes tanhf); above: 1 - 2/(exp(2|x|)+1)
	tanhClamp = 10.0  // tanh(10) rounds to 1 in float32
	tanh4     = -5.70498872745e-3
	tanh3     = 2.06390887954e-2
	tanh2     = -5.37397155531e-2
	tanh1     = 1.33314422036e-1
	tanh0     = -3.33332819422e-1

	sqrtHalf = 0.707106781186547524
	log8     = 7.0376836292e-2 // Cephes logf coefficients
	log7     = -1.1514610310e-1
	log6     = 1.1676998740e-1
	log5     = -1.2420140846e-1
	log4     = 1.4249322787e-1
	log3     = -1.6668057665e-1
	log2     = 2.0000714765e-1
	log1     = -2.4999993993e-1
	log0     = 3.3333331174e-1
)

// madd is a*b + c with the product rounded to float32 first (never fused).
func madd(a, b, c float32) float32 { return float32(a*b) + c }

// Exp32 is exp(x) in float32. Inputs below expLo give exp(expLo) (the smallest normal
// float32, 1.18e-38) instead of a subnormal or 0, and inputs above 88 give exp(88); NaN
// gives NaN.
func Exp32(x float32) float32 {
	if x < expLo {
		x = expLo
	}
	if x > expHi {
		x = expHi
	}
	t := madd(x, log2e, roundMagic)
	n := t - roundMagic
	r := x - float32(n*ln2Hi)
	r = r - float32(n*ln2Lo)
	p := madd(exp5, r, exp4)
	p = madd(p, r, exp3)
	p = madd(p, r, exp2)
	p = madd(p, r, exp1)
	p = madd(p, r, exp0)
	r2 := r * r
	y := madd(p, r2, r) + 1
	// 2^n: n sits in the low mantissa bits of t.
	k := int32(math.Float32bits(t)) - int32(math.Float32bits(roundMagic))
	scale := math.Float32frombits(uint32((k + 127) << 23))
	return y * scale
}

// Tanh32 is tanh(x) in float32 (NaN gives ±1 or NaN; parameters are checked for
// non-finite values elsewhere).
func Tanh32(x float32) float32 {
	bits := math.Float32bits(x)
	ax := math.Float32frombits(bits &^ (1 << 31))
	// Small |x|: x + x^3 P(x^2).
	z := x * x
	p := madd(tanh4, z, tanh3)
	p = madd(p, z, tanh2)
	p = madd(p, z, tanh1)
	p = madd(p, z, tanh0)
	small := madd(float32(p*z), x, x)
	// Large |x|: 1 - 2/(exp(2|x|)+1), with the sign of x.
	a := ax
	if a > tanhClamp {
		a = tanhClamp
	}
	e := Exp32(a + a)
	big := 1 - 2/(e+1)
	big = math.Float32frombits(math.Float32bits(big) | bits&(1<<31))
	if ax < tanhSmall {
		return small
	}
	return big
}

// Log32 is the natural logarithm in float32 for positive normal x; 0 gives -Inf, a
// negative x or NaN gives NaN, +Inf gives +Inf, and a subnormal x is treated as 0.
func Log32(x float32) float32 {
	switch {
	case x > math.MaxFloat32:
		return x
	case !(x >= 0):
		return float32(math.NaN())
	case x < math.SmallestNonzeroFloat32*(1<<23): // 0 or subnormal
		return float32(math.Inf(-1))
	}
	bits := math.Float32bits(x)
	e := float32(int32(bits>>23) - 126)
	m := math.Float32frombits(bits&0x807fffff | 0x3f000000) // [0.5, 1)
	if m < sqrtHalf {
		e = e - 1
		m = m + m - 1
	} else {
		m = m - 1
	}
	return logPoly(m, e)
}

// logPoly is log(1+m) + e·ln2 for m in [sqrt(1/2)-1, sqrt(2)-1) (Cephes logf).
func logPoly(m, e float32) float32 {
	z := m * m
	y := madd(log8, m, log7)
	y = madd(y, m, log6)
	y = madd(y, m, log5)
	y = madd(y, m, log4)
	y = madd(y, m, log3)
	y = madd(y, m, log2)
	y = madd(y, m, log1)
	y = madd(y, m, log0)
	y = float32(y*m) * z
	y = madd(e, ln2Lo, y)
	y = madd(-0.5, z, y)
	r := m + y
	return madd(e, ln2Hi, r)
}

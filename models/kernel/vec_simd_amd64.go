//go:build goexperiment.simd && amd64

package kernel

import (
	"math"
	"simd/archsimd"
)

// The vector build (GOEXPERIMENT=simd on amd64): the primitives on archsimd.Float32x16
// (AVX-512), 16 lanes per instruction, with the same operations in the same order per
// lane as vec_generic.go, so the results are bit-identical to the portable build. On a
// CPU without AVX-512 every primitive falls back to the portable loop.

// SIMD reports whether the primitives run on vector instructions (the vector build,
// GOEXPERIMENT=simd on amd64, on a CPU with AVX-512).
var SIMD = archsimd.X86.AVX512()

// Build names the kernels' build: "avx512" here, "portable" in the portable build.
const Build = "avx512"

type f16 = archsimd.Float32x16

// ClearUpper clears the AVX upper register state (VZEROUPPER) on this thread. Scalar
// float64 code (math.Exp, math.Erfc, the compiler's SSE) runs ~100× slower while AVX-512
// upper state is dirty (measured: 2M math.Exp in 2.2 s against 16 ms); every vector
// primitive here clears it on return, and a caller about to run scalar-heavy code after
// other libraries' AVX-512 assembly (parquet-go's) calls this first.
func ClearUpper() {
	if SIMD {
		archsimd.ClearAVXUpperBits()
	}
}

func ld(s []float32) f16     { return archsimd.LoadFloat32x16Slice(s) }
func st(x f16, s []float32)  { x.StoreSlice(s) }
func ldc(c *[VW]float32) f16 { return archsimd.LoadFloat32x16(c) }
func bc(x float32) f16       { return archsimd.BroadcastFloat32x16(x) }
func splat(x float32) (a [VW]float32) {
	for i := range a {
		a[i] = x
	}
	return a
}

var (
	cExpLo, cExpHi          = splat(expLo), splat(expHi)
	cLog2e, cMagic          = splat(log2e), splat(roundMagic)
	cLn2Hi, cLn2Lo          = splat(ln2Hi), splat(ln2Lo)
	cE5, cE4, cE3, cE2, cE1 = splat(exp5), splat(exp4), splat(exp3), splat(exp2), splat(exp1)
	cE0, cOne, cTwo         = splat(exp0), splat(1), splat(2)
	cT4, cT3, cT2, cT1, cT0 = splat(tanh4), splat(tanh3), splat(tanh2), splat(tanh1), splat(tanh0)
	cTSmall, cTClamp        = splat(tanhSmall), splat(tanhClamp)
	cBeta1, cBeta2          = splat(beta1), splat(beta2)
	cAbsMask                = splatBits(0x7fffffff)
	cSignMask               = splatBits(0x80000000)
	cMagicBits              = splatBits(math.Float32bits(roundMagic))
	c127                    = splatBits(127)
)

func splatBits(b uint32) [VW]float32 { return splat(math.Float32frombits(b)) }

func exp16(x f16) f16 {
	lo, hi := ldc(&cExpLo), ldc(&cExpHi)
	x = lo.Merge(x, x.Less(lo))
	x = hi.Merge(x, x.Greater(hi))
	return exp16In(x)
}

// exp16In is exp16 for x already in [expLo, expHi] (or NaN), where its clamps do nothing.
func exp16In(x f16) f16 {
	magic := ldc(&cMagic)
	t := x.Mul(ldc(&cLog2e)).Add(magic)
	n := t.Sub(magic)
	r := x.Sub(n.Mul(ldc(&cLn2Hi)))
	r = r.Sub(n.Mul(ldc(&cLn2Lo)))
	p := ldc(&cE5).Mul(r).Add(ldc(&cE4))
	p = p.Mul(r).Add(ldc(&cE3))
	p = p.Mul(r).Add(ldc(&cE2))
	p = p.Mul(r).Add(ldc(&cE1))
	p = p.Mul(r).Add(ldc(&cE0))
	r2 := r.Mul(r)
	y := p.Mul(r2).Add(r).Add(ldc(&cOne))
	k := t.AsInt32x16().Sub(ldc(&cMagicBits).AsInt32x16())
	scale := k.Add(ldc(&c127).AsInt32x16()).ShiftAllLeft(23).AsFloat32x16()
	return y.Mul(scale)
}

func tanh16(x f16) f16 {
	sign := x.AsInt32x16().And(ldc(&cSignMask).AsInt32x16())
	ax := x.AsInt32x16().And(ldc(&cAbsMask).AsInt32x16()).AsFloat32x16()
	isSmall := ax.Less(ldc(&cTSmall))
	z := x.Mul(x)
	p := ldc(&cT4).Mul(z).Add(ldc(&cT3))
	p = p.Mul(z).Add(ldc(&cT2))
	p = p.Mul(z).Add(ldc(&cT1))
	p = p.Mul(z).Add(ldc(&cT0))
	small := p.Mul(z).Mul(x).Add(x)
	if isSmall.ToBits() == 0xffff { // every lane takes the polynomial: skip the exp
		return small
	}
	clamp := ldc(&cTClamp)
	a := clamp.Merge(ax, ax.Greater(clamp))
	e := exp16In(a.Add(a)) // 2|x| clamped to [0, 20] (or NaN): exp16's clamps do nothing
	one := ldc(&cOne)
	big := one.Sub(ldc(&cTwo).Div(e.Add(one)))
	big = big.AsInt32x16().Or(sign).AsFloat32x16()
	return small.Merge(big, isSmall)
}

func vAdd(dst, a, b []float32) {
	if !SIMD {
		gAdd(dst, a, b)
		return
	}
	for i := 0; i < len(dst); i += VW {
		st(ld(a[i:]).Add(ld(b[i:])), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vSub(dst, a, b []float32) {
	if !SIMD {
		gSub(dst, a, b)
		return
	}
	for i := 0; i < len(dst); i += VW {
		st(ld(a[i:]).Sub(ld(b[i:])), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vMul(dst, a, b []float32) {
	if !SIMD {
		gMul(dst, a, b)
		return
	}
	for i := 0; i < len(dst); i += VW {
		st(ld(a[i:]).Mul(ld(b[i:])), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vScaleAdd(dst, a []float32, s float32, b []float32) {
	if !SIMD {
		gScaleAdd(dst, a, s, b)
		return
	}
	sv := bc(s)
	for i := 0; i < len(dst); i += VW {
		st(ld(a[i:]).Mul(sv).Add(ld(b[i:])), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vDot(a, b []float32) float32 {
	if !SIMD {
		return gDot(a, b)
	}
	acc := bc(0)
	for i := 0; i < len(a); i += VW {
		acc = ld(a[i:]).Mul(ld(b[i:])).Add(acc)
	}
	var out [VW]float32
	acc.Store(&out)
	archsimd.ClearAVXUpperBits()
	return sumLanes(&out)
}

func vDot2(w, a []float32) (float32, float32) {
	if !SIMD {
		return gDot2(w, a)
	}
	s1, s2 := bc(0), bc(0)
	for i := 0; i < len(w); i += VW {
		x := ld(a[i:])
		p := ld(w[i:]).Mul(x)
		s1 = s1.Add(p)
		s2 = p.Mul(x).Add(s2)
	}
	var o1, o2 [VW]float32
	s1.Store(&o1)
	s2.Store(&o2)
	archsimd.ClearAVXUpperBits()
	return sumLanes(&o1), sumLanes(&o2)
}

func vMulSub(dst, a, w []float32) {
	if !SIMD {
		gMulSub(dst, a, w)
		return
	}
	for i := 0; i < len(dst); i += VW {
		st(ld(dst[i:]).Sub(ld(a[i:]).Mul(ld(w[i:]))), dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

func vExp(dst, a []float32) {
	if !SIMD {
		gExp(dst, a)
		return
	}
	for i := 0; i < len(dst); i += VW {
		st(exp16(ld(a[i:])), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vTanh(dst, a []float32) {
	if !SIMD {
		gTanh(dst, a)
		return
	}
	for i := 0; i < len(dst); i += VW {
		st(tanh16(ld(a[i:])), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vSoftmax(dst, src []float32, G, L int) {
	if !SIMD {
		gSoftmax(dst, src, G, L)
		return
	}
	for c := 0; c < L; c += VW {
		mx := ld(src[c:])
		for g := 1; g < G; g++ {
			v := ld(src[g*L+c:])
			mx = v.Merge(mx, v.Greater(mx))
		}
		sum := exp16(ld(src[c:]).Sub(mx))
		st(sum, dst[c:])
		for g := 1; g < G; g++ {
			e := exp16(ld(src[g*L+c:]).Sub(mx))
			st(e, dst[g*L+c:])
			sum = sum.Add(e)
		}
		r := ldc(&cOne).Div(sum)
		for g := range G {
			st(ld(dst[g*L+c:]).Mul(r), dst[g*L+c:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vRowSum(dst, src []float32, G, L int) {
	if !SIMD {
		gRowSum(dst, src, G, L)
		return
	}
	for c := 0; c < L; c += VW {
		s := ld(src[c:])
		for g := 1; g < G; g++ {
			s = s.Add(ld(src[g*L+c:]))
		}
		st(s, dst[c:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vGradCE(dst, s, c, rw []float32, K, L int) {
	if !SIMD {
		gGradCE(dst, s, c, rw, K, L)
		return
	}
	for y := range K {
		for k := 0; k < L; k += VW {
			i := y*L + k
			st(ld(rw[k:]).Mul(ld(s[i:])).Sub(ld(c[i:])), dst[i:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vGradMix(dst, s, q, c, rw, w []float32, K, L int) {
	if !SIMD {
		gGradMix(dst, s, q, c, rw, w, K, L)
		return
	}
	for y := range K {
		for k := 0; k < L; k += VW {
			i := y*L + k
			wq := ld(w[k:]).Mul(ld(q[i:]))
			st(ld(rw[k:]).Mul(ld(s[i:])).Add(wq).Sub(ld(c[i:])), dst[i:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vMMForward(z, h, W, b []float32, X, in, out, L int) {
	if !SIMD {
		gMMForward(z, h, W, b, X, in, out, L)
		return
	}
	for x := range X {
		hx := h[x*in*L : (x+1)*in*L]
		for o := range out {
			for c := 0; c < L; c += VW {
				acc := ld(hx[c:]).Mul(ld(W[o*L+c:]))
				for i := 1; i < in; i++ {
					acc = ld(hx[i*L+c:]).Mul(ld(W[(i*out+o)*L+c:])).Add(acc)
				}
				st(acc.Add(ld(b[o*L+c:])), z[(x*out+o)*L+c:])
			}
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vMMGradW(dW, h, d []float32, X, in, out, L int) {
	if !SIMD {
		gMMGradW(dW, h, d, X, in, out, L)
		return
	}
	for i := range in {
		for o := range out {
			for c := 0; c < L; c += VW {
				acc := ld(h[i*L+c:]).Mul(ld(d[o*L+c:]))
				for x := 1; x < X; x++ {
					acc = ld(h[(x*in+i)*L+c:]).Mul(ld(d[(x*out+o)*L+c:])).Add(acc)
				}
				st(acc, dW[(i*out+o)*L+c:])
			}
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vMMBackTanh(dst, d, W, h []float32, X, in, out, L int) {
	if !SIMD {
		gMMBackTanh(dst, d, W, h, X, in, out, L)
		return
	}
	one := ldc(&cOne)
	for x := range X {
		dx := d[x*out*L : (x+1)*out*L]
		for i := range in {
			Wi := W[i*out*L : (i+1)*out*L]
			for c := 0; c < L; c += VW {
				acc := ld(dx[c:]).Mul(ld(Wi[c:]))
				for o := 1; o < out; o++ {
					acc = ld(dx[o*L+c:]).Mul(ld(Wi[o*L+c:])).Add(acc)
				}
				hv := ld(h[(x*in+i)*L+c:])
				st(acc.Mul(one.Sub(hv.Mul(hv))), dst[(x*in+i)*L+c:])
			}
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vSumX(dst, d []float32, X, out, L int, weighted bool) {
	if !SIMD {
		gSumX(dst, d, X, out, L, weighted)
		return
	}
	for o := range out {
		for c := 0; c < L; c += VW {
			var acc f16
			for x := range X {
				v := ld(d[(x*out+o)*L+c:])
				if weighted {
					if x == 0 {
						continue
					}
					v = v.Mul(bc(float32(x)))
				}
				acc = acc.Add(v)
			}
			st(acc, dst[o*L+c:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vAdam(theta, m, v, g, lrT []float32, epsT float32, L int) {
	if !SIMD {
		gAdam(theta, m, v, g, lrT, epsT, L)
		return
	}
	b1, b2, eps := ldc(&cBeta1), ldc(&cBeta2), bc(epsT)
	for j := 0; j < len(theta); j += L {
		for c := 0; c < L; c += VW {
			i := j + c
			gi := ld(g[i:])
			mi := ld(m[i:]).Mul(b1).Add(gi)
			vi := ld(v[i:]).Mul(b2).Add(gi.Mul(gi))
			st(mi, m[i:])
			st(vi, v[i:])
			step := ld(lrT[c:]).Mul(mi).Div(vi.Sqrt().Add(eps))
			st(ld(theta[i:]).Sub(step), theta[i:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vMulOneMinusSq(dst, a, h []float32) {
	if !SIMD {
		gMulOneMinusSq(dst, a, h)
		return
	}
	one := ldc(&cOne)
	for i := 0; i < len(dst); i += VW {
		hv := ld(h[i:])
		st(ld(a[i:]).Mul(one.Sub(hv.Mul(hv))), dst[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vAdamFlat(theta, m, v, g []float32, lrT, epsT float32) {
	if !SIMD {
		gAdamFlat(theta, m, v, g, lrT, epsT)
		return
	}
	b1, b2, eps, lr := ldc(&cBeta1), ldc(&cBeta2), bc(epsT), bc(lrT)
	for i := 0; i < len(theta); i += VW {
		gi := ld(g[i:])
		mi := ld(m[i:]).Mul(b1).Add(gi)
		vi := ld(v[i:]).Mul(b2).Add(gi.Mul(gi))
		st(mi, m[i:])
		st(vi, v[i:])
		st(ld(theta[i:]).Sub(lr.Mul(mi).Div(vi.Sqrt().Add(eps))), theta[i:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

var (
	cL8, cL7, cL6, cL5, cL4 = splat(log8), splat(log7), splat(log6), splat(log5), splat(log4)
	cL3, cL2, cL1, cL0      = splat(log3), splat(log2), splat(log1), splat(log0)
	cSqrtHalf, cMinusHalf   = splat(sqrtHalf), splat(-0.5)
	cMinNormal, cMaxFloat   = splat(0x1p-126), splat(math.MaxFloat32)
	cMantMask, cHalfBits    = splatBits(0x007fffff), splatBits(0x3f000000)
	c126                    = splatBits(126)
)

// log16 is Log32 lane by lane for positive normal finite x (the caller checks).
func log16(x f16) f16 {
	bits := x.AsInt32x16()
	e := bits.ShiftAllRight(23).Sub(ldc(&c126).AsInt32x16()).ConvertToFloat32()
	// bits&0x807fffff | 0x3f000000 for positive x, as an add (And then Or with memory
	// operands compiles to an invalid VPTERNLOGD).
	m := bits.And(ldc(&cMantMask).AsInt32x16()).Add(ldc(&cHalfBits).AsInt32x16()).AsFloat32x16()
	one := ldc(&cOne)
	lo := m.Less(ldc(&cSqrtHalf))
	e = e.Sub(one).Merge(e, lo)
	m = m.Add(m).Sub(one).Merge(m.Sub(one), lo)
	// logPoly
	z := m.Mul(m)
	y := ldc(&cL8).Mul(m).Add(ldc(&cL7))
	y = y.Mul(m).Add(ldc(&cL6))
	y = y.Mul(m).Add(ldc(&cL5))
	y = y.Mul(m).Add(ldc(&cL4))
	y = y.Mul(m).Add(ldc(&cL3))
	y = y.Mul(m).Add(ldc(&cL2))
	y = y.Mul(m).Add(ldc(&cL1))
	y = y.Mul(m).Add(ldc(&cL0))
	y = y.Mul(m).Mul(z)
	y = e.Mul(ldc(&cLn2Lo)).Add(y)
	y = ldc(&cMinusHalf).Mul(z).Add(y)
	r := m.Add(y)
	return e.Mul(ldc(&cLn2Hi)).Add(r)
}

func vSoftmaxLSE(dst, lse, src []float32, G, L int) {
	if !SIMD || L%VW != 0 || G < 1 {
		gSoftmaxLSE(dst, lse, src, G, L)
		return
	}
	_ = src[G*L-1]
	_ = lse[L-1]
	if dst != nil {
		_ = dst[G*L-1]
	}
	bad := false
	for c := 0; c < L; c += VW {
		mx := ld(src[c:])
		for g := 1; g < G; g++ {
			v := ld(src[g*L+c:])
			mx = v.Merge(mx, v.Greater(mx))
		}
		sum := exp16(ld(src[c:]).Sub(mx))
		if dst != nil {
			st(sum, dst[c:])
		}
		for g := 1; g < G; g++ {
			e := exp16(ld(src[g*L+c:]).Sub(mx))
			if dst != nil {
				st(e, dst[g*L+c:])
			}
			sum = sum.Add(e)
		}
		if dst != nil {
			r := ldc(&cOne).Div(sum)
			for g := range G {
				st(ld(dst[g*L+c:]).Mul(r), dst[g*L+c:])
			}
		}
		// sum is in [1, G] unless a logit is NaN: then lse32 (below) gives the NaN.
		if sum.GreaterEqual(ldc(&cMinNormal)).And(sum.LessEqual(ldc(&cMaxFloat))).ToBits() != 0xffff {
			bad = true
		}
		st(mx.Add(log16(sum)), lse[c:])
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
	if bad {
		for l := range L {
			lse[l] = lse32(src, l, G, L)
		}
	}
}

func vAllFinite(a []float32) bool {
	if !SIMD || len(a) < VW {
		return gAllFinite(a)
	}
	// x - x is 0 for a finite x and NaN otherwise; a sum of them is NaN iff one is.
	var acc f16
	n := len(a) / VW * VW
	for i := 0; i < n; i += VW {
		v := ld(a[i:])
		acc = acc.Add(v.Sub(v))
	}
	ok := acc.IsNaN().ToBits() == 0
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
	return ok && gAllFinite(a[n:])
}

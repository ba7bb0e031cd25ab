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
	z := x.Mul(x)
	p := ldc(&cT4).Mul(z).Add(ldc(&cT3))
	p = p.Mul(z).Add(ldc(&cT2))
	p = p.Mul(z).Add(ldc(&cT1))
	p = p.Mul(z).Add(ldc(&cT0))
	small := p.Mul(z).Mul(x).Add(x)
	clamp := ldc(&cTClamp)
	a := clamp.Merge(ax, ax.Greater(clamp))
	e := exp16(a.Add(a))
	one := ldc(&cOne)
	big := one.Sub(ldc(&cTwo).Div(e.Add(one)))
	big = big.AsInt32x16().Or(sign).AsFloat32x16()
	return small.Merge(big, ax.Less(ldc(&cTSmall)))
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

func vGemmFwd(z, W, b, h []float32, in, out, P int) {
	if !SIMD {
		gGemmFwd(z, W, b, h, in, out, P)
		return
	}
	for o := range out {
		bo := bc(b[o])
		p := 0
		for ; p+4*VW <= P; p += 4 * VW {
			w := bc(W[o])
			a0 := w.Mul(ld(h[p:]))
			a1 := w.Mul(ld(h[p+VW:]))
			a2 := w.Mul(ld(h[p+2*VW:]))
			a3 := w.Mul(ld(h[p+3*VW:]))
			for i := 1; i < in; i++ {
				w := bc(W[i*out+o])
				hi := h[i*P+p : i*P+p+4*VW]
				a0 = w.Mul(ld(hi)).Add(a0)
				a1 = w.Mul(ld(hi[VW:])).Add(a1)
				a2 = w.Mul(ld(hi[2*VW:])).Add(a2)
				a3 = w.Mul(ld(hi[3*VW:])).Add(a3)
			}
			zo := z[o*P+p : o*P+p+4*VW]
			st(a0.Add(bo), zo)
			st(a1.Add(bo), zo[VW:])
			st(a2.Add(bo), zo[2*VW:])
			st(a3.Add(bo), zo[3*VW:])
		}
		for ; p < P; p += VW {
			a := bc(W[o]).Mul(ld(h[p:]))
			for i := 1; i < in; i++ {
				a = bc(W[i*out+o]).Mul(ld(h[i*P+p:])).Add(a)
			}
			st(a.Add(bo), z[o*P+p:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vGemmBackIn(dh, W, d []float32, in, out, P int) {
	if !SIMD {
		gGemmBackIn(dh, W, d, in, out, P)
		return
	}
	for i := range in {
		Wi := W[i*out : (i+1)*out]
		p := 0
		for ; p+4*VW <= P; p += 4 * VW {
			w := bc(Wi[0])
			a0 := w.Mul(ld(d[p:]))
			a1 := w.Mul(ld(d[p+VW:]))
			a2 := w.Mul(ld(d[p+2*VW:]))
			a3 := w.Mul(ld(d[p+3*VW:]))
			for o := 1; o < out; o++ {
				w := bc(Wi[o])
				do := d[o*P+p : o*P+p+4*VW]
				a0 = w.Mul(ld(do)).Add(a0)
				a1 = w.Mul(ld(do[VW:])).Add(a1)
				a2 = w.Mul(ld(do[2*VW:])).Add(a2)
				a3 = w.Mul(ld(do[3*VW:])).Add(a3)
			}
			di := dh[i*P+p : i*P+p+4*VW]
			st(a0, di)
			st(a1, di[VW:])
			st(a2, di[2*VW:])
			st(a3, di[3*VW:])
		}
		for ; p < P; p += VW {
			a := bc(Wi[0]).Mul(ld(d[p:]))
			for o := 1; o < out; o++ {
				a = bc(Wi[o]).Mul(ld(d[o*P+p:])).Add(a)
			}
			st(a, dh[i*P+p:])
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

func vGemmGradW(dW, h, d []float32, in, out, P int) {
	if !SIMD {
		gGemmGradW(dW, h, d, in, out, P)
		return
	}
	// The lanes' partial sums are stored, and summed in scalar code after the upper
	// state is cleared: scalar float32 adds between AVX-512 instructions (hsum's) ran
	// ~100× slower and made this half of an ED step's time.
	var buf [VW * 256]float32
	for i := range in {
		hi := h[i*P : (i+1)*P]
		o := 0
		for ; o+4 <= out; o += 4 { // four outputs share each load of h (the same sums, lane by lane)
			d0, d1, d2, d3 := d[o*P:(o+1)*P], d[(o+1)*P:(o+2)*P], d[(o+2)*P:(o+3)*P], d[(o+3)*P:(o+4)*P]
			hv := ld(hi)
			a0, a1, a2, a3 := hv.Mul(ld(d0)), hv.Mul(ld(d1)), hv.Mul(ld(d2)), hv.Mul(ld(d3))
			for c := VW; c < P; c += VW {
				hv = ld(hi[c:])
				a0 = hv.Mul(ld(d0[c:])).Add(a0)
				a1 = hv.Mul(ld(d1[c:])).Add(a1)
				a2 = hv.Mul(ld(d2[c:])).Add(a2)
				a3 = hv.Mul(ld(d3[c:])).Add(a3)
			}
			st(a0, buf[o*VW:])
			st(a1, buf[(o+1)*VW:])
			st(a2, buf[(o+2)*VW:])
			st(a3, buf[(o+3)*VW:])
		}
		for ; o < out; o++ {
			do := d[o*P : (o+1)*P]
			acc := ld(hi).Mul(ld(do))
			for c := VW; c < P; c += VW {
				acc = ld(hi[c:]).Mul(ld(do[c:])).Add(acc)
			}
			st(acc, buf[o*VW:])
		}
		archsimd.ClearAVXUpperBits()
		for o := range out {
			dW[i*out+o] += hsumScalar(buf[o*VW : (o+1)*VW])
		}
	}
}

// hsumScalar sums the 16 lanes of a as reduce16 does: (lo8 + hi8), then (lo4 + hi4),
// then (c0+c2) + (c1+c3) (the same bits as the vector reduction it replaced).
func hsumScalar(a []float32) float32 {
	var b [8]float32
	for j := range 8 {
		b[j] = a[j] + a[j+8]
	}
	c0, c1, c2, c3 := b[0]+b[4], b[1]+b[5], b[2]+b[6], b[3]+b[7]
	return (c0 + c2) + (c1 + c3)
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

func vSumP(dst, d []float32, out, P int) {
	if !SIMD {
		gSumP(dst, d, out, P)
		return
	}
	var buf [VW * 256]float32 // as vGemmGradW: the lanes summed after the upper state is cleared
	for o := range out {
		do := d[o*P : (o+1)*P]
		acc := ld(do)
		for c := VW; c < P; c += VW {
			acc = acc.Add(ld(do[c:]))
		}
		st(acc, buf[o*VW:])
	}
	archsimd.ClearAVXUpperBits()
	for o := range out {
		dst[o] += hsumScalar(buf[o*VW : (o+1)*VW])
	}
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

//go:build goexperiment.simd && amd64

package kernel

import (
	"simd/archsimd"
	"unsafe"
)

// The dense layers' GEMMs of the points-innermost MLP (mlp2d, SGLD): arrays [rows][P],
// P a multiple of VW. They are register-blocked (4 rows × 4 vectors of points, or 4 × 4
// (input, output) pairs of the weight gradient, per tile) and address their operands
// through pointers after checking every slice's length once, so that the inner loops
// are loads, multiplies and adds only. Every output is still computed with the same
// operations in the same order as the portable loops of vec_generic.go (the products
// rounded, never fused; the sums over the reduction index ascending; the weight
// gradient's 16 lane partial sums reduced in reduce16's order, by a transposing
// reduction of 16 tiles' accumulators at once), so both builds give the same bits.

func ptrOf(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// ldp loads the 16 floats at element i of p; stp stores them; bcp broadcasts element i.
func ldp(p unsafe.Pointer, i int) f16 {
	return archsimd.LoadFloat32x16((*[VW]float32)(unsafe.Add(p, 4*i)))
}
func stp(x f16, p unsafe.Pointer, i int) { x.Store((*[VW]float32)(unsafe.Add(p, 4*i))) }
func bcp(p unsafe.Pointer, i int) f16    { return bc(*(*float32)(unsafe.Add(p, 4*i))) }

// The epilogues of gemmRows.
const (
	epiNone  = iota // y = acc
	epiBias         // y = acc + e[r]
	epiDTanh        // y = acc * (1 - e[r,p]²) (the derivative of the tanh whose output is e)
)

// gemmRows computes, for every row r < nr and point p < P, acc = Σ_k W[r·sr+k·sk]·x[k,p]
// (k ascending from W[r·sr]·x[0,p], each product rounded before its add) and writes its
// epilogue to y[r,p]. Tiles of 2 rows × 2 vectors: the compiler allocates 15 vector
// registers and schedules a tile's multiplies before its adds, so 4 accumulators, 4
// products, 2 inputs and 2 weights fit with no spill (2 × 4 tiles spilled two
// accumulators to the stack on every step of k, a store-to-load round trip on their
// dependency chains: 4.4 cycles a vector multiply-add on a Zen 4 core, now ~1).
func gemmRows(y, W, x, e []float32, nr, nk, sr, sk, P, epi int) {
	if nr <= 0 || nk <= 0 || P <= 0 {
		return
	}
	if P%VW != 0 {
		panic("kernel: gemm: P not a multiple of VW")
	}
	_ = y[nr*P-1]
	_ = x[nk*P-1]
	_ = W[(nr-1)*sr+(nk-1)*sk]
	switch epi {
	case epiBias:
		_ = e[nr-1]
	case epiDTanh:
		_ = e[nr*P-1]
	}
	yp, wp, xp, ep := ptrOf(y), ptrOf(W), ptrOf(x), ptrOf(e)
	for r := 0; r < nr; r += 2 {
		r1 := min(r+1, nr-1) // a row past nr repeats the last (computed, not stored)
		w0, w1 := unsafe.Add(wp, 4*r*sr), unsafe.Add(wp, 4*r1*sr)
		p := 0
		for ; p+2*VW <= P; p += 2 * VW {
			xk := unsafe.Add(xp, 4*p)
			x0, x1 := ldp(xk, 0), ldp(xk, VW)
			b0, b1 := bcp(w0, 0), bcp(w1, 0)
			a00, a01 := b0.Mul(x0), b0.Mul(x1)
			a10, a11 := b1.Mul(x0), b1.Mul(x1)
			for k := 1; k < nk; k++ {
				xk = unsafe.Add(xk, 4*P)
				x0, x1 = ldp(xk, 0), ldp(xk, VW)
				kk := k * sk
				b0, b1 = bcp(w0, kk), bcp(w1, kk)
				a00 = b0.Mul(x0).Add(a00)
				a01 = b0.Mul(x1).Add(a01)
				a10 = b1.Mul(x0).Add(a10)
				a11 = b1.Mul(x1).Add(a11)
			}
			o := r*P + p
			stp(epilogue(a00, epi, ep, r, o), yp, o)
			stp(epilogue(a01, epi, ep, r, o+VW), yp, o+VW)
			if r+1 < nr {
				o += P
				stp(epilogue(a10, epi, ep, r+1, o), yp, o)
				stp(epilogue(a11, epi, ep, r+1, o+VW), yp, o+VW)
			}
		}
		for ; p < P; p += VW {
			xk := unsafe.Add(xp, 4*p)
			x0 := ldp(xk, 0)
			a0, a1 := bcp(w0, 0).Mul(x0), bcp(w1, 0).Mul(x0)
			for k := 1; k < nk; k++ {
				xk = unsafe.Add(xk, 4*P)
				x0 = ldp(xk, 0)
				kk := k * sk
				a0 = bcp(w0, kk).Mul(x0).Add(a0)
				a1 = bcp(w1, kk).Mul(x0).Add(a1)
			}
			o := r*P + p
			stp(epilogue(a0, epi, ep, r, o), yp, o)
			if r+1 < nr {
				stp(epilogue(a1, epi, ep, r+1, o+P), yp, o+P)
			}
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

// epilogue applies gemmRows' epilogue to the accumulator a of row r at element i of y.
func epilogue(a f16, epi int, ep unsafe.Pointer, r, i int) f16 {
	switch epi {
	case epiBias:
		return a.Add(bcp(ep, r))
	case epiDTanh:
		h := ldp(ep, i) // a·(1 - h²), gMulOneMinusSq's order
		return a.Mul(ldc(&cOne).Sub(h.Mul(h)))
	}
	return a
}

func vGemmFwd(z, W, b, h []float32, in, out, P int) {
	if !SIMD {
		gGemmFwd(z, W, b, h, in, out, P)
		return
	}
	gemmRows(z, W, h, b, out, in, 1, out, P, epiBias)
}

func vGemmBackIn(dh, W, d []float32, in, out, P int) {
	if !SIMD {
		gGemmBackIn(dh, W, d, in, out, P)
		return
	}
	gemmRows(dh, W, d, nil, in, out, out, 1, P, epiNone)
}

// vGemmBackInTanh is vGemmBackIn then vMulOneMinusSq(dh, dh, h) in one pass.
func vGemmBackInTanh(dh, W, d, h []float32, in, out, P int) {
	if !SIMD {
		gGemmBackInTanh(dh, W, d, h, in, out, P)
		return
	}
	gemmRows(dh, W, d, h, in, out, out, 1, P, epiDTanh)
}

// The index vectors of the transposing reduction (reduceTiles): level 1 pairs the
// halves of 8 lanes, level 2 the quarters, levels 3 and 4 the pairs and single lanes
// within each group of 4.
var (
	rIdx1Lo = [VW]uint32{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}
	rIdx1Hi = [VW]uint32{8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}
	rIdx2Lo = [VW]uint32{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}
	rIdx2Hi = [VW]uint32{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31}
	rIdx3Lo = [VW]uint32{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29}
	rIdx3Hi = [VW]uint32{2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}
	rIdx4Lo = [VW]uint32{0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30}
	rIdx4Hi = [VW]uint32{1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31}
)

// pairSum is x.Permute(lo) + x.Permute(hi) over the 32 lanes of x and y.
func pairSum(x, y f16, lo, hi *[VW]uint32) f16 {
	return x.ConcatPermute(y, archsimd.LoadUint32x16(lo)).Add(x.ConcatPermute(y, archsimd.LoadUint32x16(hi)))
}

// reduceTiles returns R with R[4q+r] = reduce16(A_{q+4r}) for the 16 vectors A_0 … A_15
// (the arguments in that order): the same additions as reduce16, lane by lane (a[i] +
// a[i+8], then + 4 apart, then (c0+c2) + (c1+c3)).
func reduceTiles(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 f16) f16 {
	s0, s1 := pairSum(a0, a1, &rIdx1Lo, &rIdx1Hi), pairSum(a2, a3, &rIdx1Lo, &rIdx1Hi)
	s2, s3 := pairSum(a4, a5, &rIdx1Lo, &rIdx1Hi), pairSum(a6, a7, &rIdx1Lo, &rIdx1Hi)
	s4, s5 := pairSum(a8, a9, &rIdx1Lo, &rIdx1Hi), pairSum(a10, a11, &rIdx1Lo, &rIdx1Hi)
	s6, s7 := pairSum(a12, a13, &rIdx1Lo, &rIdx1Hi), pairSum(a14, a15, &rIdx1Lo, &rIdx1Hi)
	t0, t1 := pairSum(s0, s1, &rIdx2Lo, &rIdx2Hi), pairSum(s2, s3, &rIdx2Lo, &rIdx2Hi)
	t2, t3 := pairSum(s4, s5, &rIdx2Lo, &rIdx2Hi), pairSum(s6, s7, &rIdx2Lo, &rIdx2Hi)
	u0, u1 := pairSum(t0, t1, &rIdx3Lo, &rIdx3Hi), pairSum(t2, t3, &rIdx3Lo, &rIdx3Hi)
	return pairSum(u0, u1, &rIdx4Lo, &rIdx4Hi)
}

// addRow4 adds the 4 lanes v to the first n (≤ 4) floats at element i of p.
func addRow4(p unsafe.Pointer, i int, v archsimd.Float32x4, n int) {
	q := (*[4]float32)(unsafe.Add(p, 4*i))
	if n >= 4 {
		archsimd.LoadFloat32x4(q).Add(v).Store(q)
		return
	}
	m := archsimd.Mask32x4FromBits(uint8(1)<<n - 1)
	archsimd.LoadMaskedFloat32x4(q, m).Add(v).StoreMasked(q, m)
}

func vGemmGradW(dW, h, d []float32, in, out, P int) {
	if !SIMD {
		gGemmGradW(dW, h, d, in, out, P)
		return
	}
	if in <= 0 || out <= 0 || P <= 0 {
		return
	}
	if P%VW != 0 {
		panic("kernel: gemm: P not a multiple of VW")
	}
	_ = dW[in*out-1]
	_ = h[in*P-1]
	_ = d[out*P-1]
	hp, dp, wp := ptrOf(h), ptrOf(d), ptrOf(dW)
	for i := 0; i < in; i += 4 {
		// Inputs and outputs past in and out repeat the last (computed, not added).
		h0, h1 := unsafe.Add(hp, 4*i*P), unsafe.Add(hp, 4*min(i+1, in-1)*P)
		h2, h3 := unsafe.Add(hp, 4*min(i+2, in-1)*P), unsafe.Add(hp, 4*min(i+3, in-1)*P)
		for o := 0; o < out; o += 4 {
			d0, d1 := unsafe.Add(dp, 4*o*P), unsafe.Add(dp, 4*min(o+1, out-1)*P)
			d2, d3 := unsafe.Add(dp, 4*min(o+2, out-1)*P), unsafe.Add(dp, 4*min(o+3, out-1)*P)
			// aIO: input i+I, output o+O; outputs o, o+1, then o+2, o+3 (8 accumulators
			// at a time: the compiler allocates 15 vector registers).
			a00, a10, a20, a30, a01, a11, a21, a31 := gradTile(h0, h1, h2, h3, d0, d1, P)
			a02, a12, a22, a32, a03, a13, a23, a33 := gradTile(h0, h1, h2, h3, d2, d3, P)
			// A_{I+4O} = aIO, so R[4I+O] is the sum of input i+I, output o+O.
			R := reduceTiles(a00, a10, a20, a30, a01, a11, a21, a31, a02, a12, a22, a32, a03, a13, a23, a33)
			n := min(4, out-o)
			lo, hi := R.GetLo(), R.GetHi()
			addRow4(wp, i*out+o, lo.GetLo(), n)
			if i+1 < in {
				addRow4(wp, (i+1)*out+o, lo.GetHi(), n)
			}
			if i+2 < in {
				addRow4(wp, (i+2)*out+o, hi.GetLo(), n)
			}
			if i+3 < in {
				addRow4(wp, (i+3)*out+o, hi.GetHi(), n)
			}
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

// gradTile is the 16 lane partial sums over the P points of h0…h3 times d0 and d1
// (gGemmGradW's order), in the order (h0,d0), (h1,d0), (h2,d0), (h3,d0), (h0,d1), ….
// It runs as two passes of 2 × 2 pairs: 8 accumulators with their products and inputs
// do not fit the 15 vector registers the compiler allocates, and the spills cost more
// than loading d0 and d1 twice.
func gradTile(h0, h1, h2, h3, d0, d1 unsafe.Pointer, P int) (a00, a10, a20, a30, a01, a11, a21, a31 f16) {
	a00, a10, a01, a11 = gradTile22(h0, h1, d0, d1, P)
	a20, a30, a21, a31 = gradTile22(h2, h3, d0, d1, P)
	return
}

// gradTile22 is gradTile's (h0,d0), (h1,d0), (h0,d1), (h1,d1).
func gradTile22(h0, h1, d0, d1 unsafe.Pointer, P int) (a00, a10, a01, a11 f16) {
	g0, g1 := ldp(h0, 0), ldp(h1, 0)
	e0, e1 := ldp(d0, 0), ldp(d1, 0)
	a00, a10 = g0.Mul(e0), g1.Mul(e0)
	a01, a11 = g0.Mul(e1), g1.Mul(e1)
	for c := VW; c < P; c += VW {
		g0, g1 = ldp(h0, c), ldp(h1, c)
		e0, e1 = ldp(d0, c), ldp(d1, c)
		a00 = g0.Mul(e0).Add(a00)
		a10 = g1.Mul(e0).Add(a10)
		a01 = g0.Mul(e1).Add(a01)
		a11 = g1.Mul(e1).Add(a11)
	}
	return
}

// rowSum is the 16 lane partial sums of the P floats at p (gSumP's order).
func rowSum(p unsafe.Pointer, P int) f16 {
	acc := ldp(p, 0)
	for c := VW; c < P; c += VW {
		acc = acc.Add(ldp(p, c))
	}
	return acc
}

func vSumP(dst, d []float32, out, P int) {
	if !SIMD {
		gSumP(dst, d, out, P)
		return
	}
	if out <= 0 || P <= 0 {
		return
	}
	if P%VW != 0 {
		panic("kernel: gemm: P not a multiple of VW")
	}
	_ = dst[out-1]
	_ = d[out*P-1]
	dp, sp := ptrOf(d), ptrOf(dst)
	for o := 0; o < out; o += VW {
		// A_k is the sum of output o + 4(k%4) + k/4 (outputs past out repeat the last), so
		// that reduceTiles puts output o+j in lane j.
		row := func(k int) unsafe.Pointer { return unsafe.Add(dp, 4*min(o+4*(k%4)+k/4, out-1)*P) }
		R := reduceTiles(rowSum(row(0), P), rowSum(row(1), P), rowSum(row(2), P), rowSum(row(3), P),
			rowSum(row(4), P), rowSum(row(5), P), rowSum(row(6), P), rowSum(row(7), P),
			rowSum(row(8), P), rowSum(row(9), P), rowSum(row(10), P), rowSum(row(11), P),
			rowSum(row(12), P), rowSum(row(13), P), rowSum(row(14), P), rowSum(row(15), P))
		q := (*[VW]float32)(unsafe.Add(sp, 4*o))
		if out-o >= VW {
			archsimd.LoadFloat32x16(q).Add(R).Store(q)
		} else {
			m := archsimd.Mask32x16FromBits(uint16(1)<<(out-o) - 1)
			archsimd.LoadMaskedFloat32x16(q, m).Add(R).StoreMasked(q, m)
		}
	}
	archsimd.ClearAVXUpperBits() // leave no dirty upper state: SSE code after AVX-512 runs ~100× slower
}

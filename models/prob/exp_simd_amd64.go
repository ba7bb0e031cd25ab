//go:build goexperiment.simd && amd64

package prob

import (
	"math"
	"simd/archsimd"
)

// ExpTo's vector build: eight math.Exp's side by side in archsimd.Float64x8. On amd64
// math.Exp is its assembly (math/exp_amd64.s: Shibata's reduction x = k·ln2 + r, r/16,
// a degree-8 Taylor polynomial, four squarings, ·2^k), which takes its fused
// multiply-add path on every CPU with FMA, as every AVX-512 one has. expLanes does
// exactly those operations in that order lane by lane (IEEE operations are correctly
// rounded, a fused one included, so each lane's value is bit for bit the scalar one's)
// for the lanes whose result is a normal number; a vector with any other lane (NaN,
// ±Inf, an overflow, a subnormal or zero result) goes to math.Exp lane by lane. A
// self-check at start compares the lanes with math.Exp and turns them off on any
// difference, so ExpTo is math.Exp's bits whatever the CPU.

// The constants of math/exp_amd64.s.
const (
	expLog2e    = 1.4426950408889634073599246810018920
	expLn2U     = 0.69314718055966295651160180568695068359375
	expLn2L     = 0.28235290563031577122588448175013436025525412068e-12
	expOverflow = 7.09782712893384e+02
)

var (
	cExpLog2e, cExpLn2U, cExpLn2L = splat64(expLog2e), splat64(expLn2U), splat64(expLn2L)
	cExpOverflow, cExpSixteenth   = splat64(expOverflow), splat64(0.0625)
	cExpMinK, cExpMaxK            = splat64(-1022), splat64(1023) // 2^k·fr normal for fr in [1/√2, √2]·…: k+1023 in [1, 2046]
	cExpC                         = [9][8]float64{
		splat64(0.5), splat64(1.0), splat64(2.0),
		splat64(1.6666666666666666667e-1), splat64(4.1666666666666666667e-2),
		splat64(8.3333333333333333333e-3), splat64(1.3888888888888888889e-3),
		splat64(1.9841269841269841270e-4), splat64(2.4801587301587301587e-5),
	}
)

// expLanesOK: the lanes run (AVX-512) and agree with math.Exp on the self-check.
var expLanesOK = lanesOK && expSelfCheck()

// expLanes is math.Exp of the eight lanes of x, and the lanes (a bit each) it did not
// compute: those the caller must take from math.Exp.
func expLanes(x f64x8) (f64x8, uint8) {
	t := x.Mul(ld64(&cExpLog2e))
	kf := t.RoundToEvenScaled(0) // CVTSD2SL's rounding (to nearest, even), back to float64
	nk := kf.Mul(ld64(&cMinusOne))
	r := nk.MulAdd(ld64(&cExpLn2U), x) // VFNMADD231SD: x − k·ln2U, fused
	r = nk.MulAdd(ld64(&cExpLn2L), r)
	r = r.Mul(ld64(&cExpSixteenth))
	p := ld64(&cExpC[8]).MulAdd(r, ld64(&cExpC[7])) // VFMADD213SD: p·r + c
	p = p.MulAdd(r, ld64(&cExpC[6]))
	p = p.MulAdd(r, ld64(&cExpC[5]))
	p = p.MulAdd(r, ld64(&cExpC[4]))
	p = p.MulAdd(r, ld64(&cExpC[3]))
	p = p.MulAdd(r, ld64(&cExpC[0]))
	p = p.MulAdd(r, ld64(&cExpC[1]))
	two := ld64(&cExpC[2])
	y := r.Mul(p)
	y = y.Mul(y.Add(two))
	y = y.Mul(y.Add(two))
	y = y.Mul(y.Add(two))
	y = y.MulAdd(y.Add(two), ld64(&cExpC[1]))
	scale := kf.ConvertToInt64().Add(ldi64(&cBias)).AsUint64x8().ShiftLeft(ldu64(&c52)).AsFloat64x8()
	ok := x.LessEqual(ld64(&cExpOverflow)).And(kf.GreaterEqual(ld64(&cExpMinK))).And(kf.LessEqual(ld64(&cExpMaxK)))
	return y.Mul(scale), ^ok.ToBits()
}

// ExpTo sets dst[i] = math.Exp(x[i]) for i < len(x), bit for bit (dst may be x).
func ExpTo(dst, x []float64) {
	dst = dst[:len(x)]
	i := 0
	if expLanesOK && len(x) >= 8 {
		archsimd.ClearAVXUpperBits()
		for ; i+8 <= len(x); i += 8 {
			e, miss := expLanes(archsimd.LoadFloat64x8Slice(x[i:]))
			if miss == 0 {
				e.StoreSlice(dst[i:])
				continue
			}
			var tmp [8]float64
			e.Store(&tmp)
			archsimd.ClearAVXUpperBits()
			for l := range 8 {
				if miss&(1<<l) != 0 {
					tmp[l] = math.Exp(x[i+l])
				}
			}
			copy(dst[i:i+8], tmp[:])
		}
		archsimd.ClearAVXUpperBits() // scalar code follows
	}
	for ; i < len(x); i++ {
		dst[i] = math.Exp(x[i])
	}
}

// expSelfCheck compares the lanes with math.Exp on values across the fast path's range
// and its edges.
func expSelfCheck() bool {
	var x [64]float64
	for i := range x {
		x[i] = -744 + float64(i)*(744+709.7)/63 + float64(i%7)*1e-3
	}
	x[0], x[1], x[2], x[3] = 0, -0.5, 1e-300, -708.39
	var e [64]float64
	expToLanes(e[:], x[:])
	for i, v := range x {
		if math.Float64bits(e[i]) != math.Float64bits(math.Exp(v)) {
			return false
		}
	}
	return true
}

// expToLanes is ExpTo with the lanes on regardless of the self-check (the check
// itself and its tests); x's length a multiple of 8.
func expToLanes(dst, x []float64) {
	if !lanesOK {
		for i, v := range x {
			dst[i] = math.Exp(v)
		}
		return
	}
	archsimd.ClearAVXUpperBits()
	for i := 0; i+8 <= len(x); i += 8 {
		e, miss := expLanes(archsimd.LoadFloat64x8Slice(x[i:]))
		var tmp [8]float64
		e.Store(&tmp)
		archsimd.ClearAVXUpperBits()
		for l := range 8 {
			if miss&(1<<l) != 0 {
				tmp[l] = math.Exp(x[i+l])
			}
		}
		copy(dst[i:i+8], tmp[:])
	}
	archsimd.ClearAVXUpperBits()
}

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
func ExpTo(dst, x []float64) { mapLanes(dst, x, expLanesOK, expLanes, math.Exp) }

// mapLanes sets dst[i] = scalar(x[i]) for i < len(x): eight at a time through lanes
// where on (each lane's value scalar's bits; the lanes it reports missed from scalar),
// the rest one by one.
func mapLanes(dst, x []float64, on bool, lanes func(f64x8) (f64x8, uint8), scalar func(float64) float64) {
	dst = dst[:len(x)]
	i := 0
	if on && len(x) >= 8 {
		archsimd.ClearAVXUpperBits()
		for ; i+8 <= len(x); i += 8 {
			v, miss := lanes(archsimd.LoadFloat64x8Slice(x[i:]))
			if miss == 0 {
				v.StoreSlice(dst[i:])
				continue
			}
			var tmp [8]float64
			v.Store(&tmp)
			archsimd.ClearAVXUpperBits()
			for l := range 8 {
				if miss&(1<<l) != 0 {
					tmp[l] = scalar(x[i+l])
				}
			}
			copy(dst[i:i+8], tmp[:])
		}
		archsimd.ClearAVXUpperBits() // scalar code follows
	}
	for ; i < len(x); i++ {
		dst[i] = scalar(x[i])
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

// expToLanes is ExpTo with the lanes on regardless of the self-check (the check itself
// and its tests).
func expToLanes(dst, x []float64) { mapLanes(dst, x, lanesOK, expLanes, math.Exp) }

// LogTo's vector build: math.Log is amd64 assembly too (math/log_amd64.s: x = 2^k·f1
// by its bits, f1 ≤ √2/2 doubled, s = f/(2+f), FreeBSD's polynomial in s², no fused
// operations); logLanes does its operations in its order lane by lane for positive
// normal x, the other lanes (0, negatives, subnormals, ±Inf, NaN) go to math.Log.

// The constants of math/log_amd64.s.
var (
	cLogHSqrt2, cLogLn2Hi, cLogLn2Lo = splat64(7.07106781186547524401e-01), splat64(6.93147180369123816490e-01), splat64(1.90821492927058770002e-10)
	cLogL                            = [8][8]float64{{}, splat64(6.666666666666735130e-01), splat64(3.999999999940941908e-01),
		splat64(2.857142874366239149e-01), splat64(2.222219843214978396e-01), splat64(1.818357216161805012e-01),
		splat64(1.531383769920937332e-01), splat64(1.479819860511658591e-01)}
	cLogMinNormal, cLogInf = splatU64(0x0010000000000000), splatU64(0x7FF0000000000000)
	cLogExpMask, cLog3FE   = splatU64(0x7FF), splatU64(0x3FE)
)

// logLanes is math.Log of the eight lanes of x, and the lanes it did not compute.
func logLanes(x f64x8) (f64x8, uint8) {
	bits := x.AsUint64x8()
	f1 := bits.And(ldu64(&cMant)).Or(ldu64(&cExp3fe)).AsFloat64x8()
	k := bits.ShiftRight(ldu64(&c52)).And(ldu64(&cLogExpMask)).AsInt64x8().Sub(ldi64(&cLog3FE)).ConvertToFloat64()
	low := f1.LessEqual(ld64(&cLogHSqrt2)) // CMPSD not-less-than: √2/2 ≥ f1
	one := ld64(&cOne)
	k = k.Sub(one).Merge(k, low)
	f1 = f1.Mul(ld64(&cTwo)).Merge(f1, low) // f1·1 is f1
	f := f1.Sub(one)
	s := f.Div(ld64(&cTwo).Add(f))
	s2 := s.Mul(s)
	s4 := s2.Mul(s2)
	t1 := ld64(&cLogL[7]).Mul(s4).Add(ld64(&cLogL[5])).Mul(s4).Add(ld64(&cLogL[3])).Mul(s4).Add(ld64(&cLogL[1]))
	t1 = s2.Mul(t1)
	t2 := ld64(&cLogL[6]).Mul(s4).Add(ld64(&cLogL[4])).Mul(s4).Add(ld64(&cLogL[2]))
	t2 = s4.Mul(t2)
	r := t1.Add(t2)
	hfsq := ld64(&cHalf).Mul(f).Mul(f)
	a := s.Mul(r.Add(hfsq)).Add(ld64(&cLogLn2Lo).Mul(k))
	b := hfsq.Sub(a).Sub(f)
	res := k.Mul(ld64(&cLogLn2Hi)).Sub(b)
	ok := bits.GreaterEqual(ldu64(&cLogMinNormal)).And(bits.Less(ldu64(&cLogInf))) // positive, normal, finite
	return res, ^ok.ToBits()
}

// logLanesOK: the lanes run and agree with math.Log on the self-check.
var logLanesOK = lanesOK && logSelfCheck()

// logSelfCheck compares the lanes with math.Log across the normal range and around
// the √2/2 boundary.
func logSelfCheck() bool {
	var x [64]float64
	for i := range x {
		x[i] = math.Ldexp(0.5+float64(i)/64, 4*i-128)
	}
	x[0], x[1], x[2], x[3] = 1, 0.7071067811865476, 0.7071067811865475, 2.2250738585072014e-308
	var l [64]float64
	logToLanes(l[:], x[:])
	for i, v := range x {
		if math.Float64bits(l[i]) != math.Float64bits(math.Log(v)) {
			return false
		}
	}
	return true
}

// LogTo sets dst[i] = math.Log(x[i]) for i < len(x), bit for bit (dst may be x).
func LogTo(dst, x []float64) { mapLanes(dst, x, logLanesOK, logLanes, math.Log) }

// logToLanes is LogTo with the lanes on regardless of the self-check (its tests).
func logToLanes(dst, x []float64) { mapLanes(dst, x, lanesOK, logLanes, math.Log) }

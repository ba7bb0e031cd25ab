//go:build goexperiment.simd && amd64

package prob

import (
	"math"
	"simd/archsimd"
)

// The vector build of ExpectedKLSmoothedMany's sums over counts: eight cells' sums
// (sumLogRatio) side by side in the lanes of archsimd.Float64x8 (AVX-512). Every lane
// does exactly the scalar sum's operations in its order (IEEE operations are correctly
// rounded, so a lane's values are bit for bit the scalar ones), including math.Log1p's:
// log1pLanes is math.log1p's main paths lane by lane, and hands its rare special cases
// (tiny or huge arguments, exact powers of two) to math.Log1p itself. A lane that ends
// its sum takes the next cell, so the lanes stay busy however the sums' lengths differ.

// lanesOK reports whether the CPU runs the lanes (AVX-512); otherwise the scalar sums run.
var lanesOK = archsimd.X86.AVX512()

type f64x8 = archsimd.Float64x8

// Constants are loaded from memory, never broadcast from a scalar register: a scalar
// (SSE) instruction between AVX-512 ones costs a state transition on every use.
func splat64(x float64) (a [8]float64) {
	for i := range a {
		a[i] = x
	}
	return a
}

func splatU64(x uint64) (a [8]uint64) {
	for i := range a {
		a[i] = x
	}
	return a
}

func ld64(c *[8]float64) f64x8             { return archsimd.LoadFloat64x8(c) }
func ldu64(c *[8]uint64) archsimd.Uint64x8 { return archsimd.LoadUint64x8(c) }
func ldi64(c *[8]uint64) archsimd.Int64x8  { return archsimd.LoadUint64x8(c).AsInt64x8() }

var (
	cZero, cOne, cTwo, cHalf, cMinusOne = splat64(0), splat64(1), splat64(2), splat64(0.5), splat64(-1)
	cTiny                               = splat64(1e-18) // as sumLogRatio
	cSqrt2M1, cSqrt2HalfM1              = splat64(l1pSqrt2M1), splat64(l1pSqrt2HalfM1)
	cSmall, cTwo53                      = splat64(l1pSmall), splat64(l1pTwo53)
	cLn2Hi, cLn2Lo                      = splat64(l1pLn2Hi), splat64(l1pLn2Lo)
	cLp1, cLp2, cLp3, cLp4              = splat64(l1pLp1), splat64(l1pLp2), splat64(l1pLp3), splat64(l1pLp4)
	cLp5, cLp6, cLp7                    = splat64(l1pLp5), splat64(l1pLp6), splat64(l1pLp7)
	cAbs, cMant, cSqrt2Mant             = splatU64(0x7fffffffffffffff), splatU64(0x000fffffffffffff), splatU64(0x0006a09e667f3bcd)
	cExp3fe, cExp3ff, cTwo52            = splatU64(0x3fe0000000000000), splatU64(0x3ff0000000000000), splatU64(0x0010000000000000)
	cBias, cI1, cU0                     = splatU64(1023), splatU64(1), splatU64(0)
	c52, c2                             = splatU64(52), splatU64(2) // shift counts (vector: no scalar-to-xmm move)
)

// laneState is the eight lanes' sums between vector runs (see sumLogRatio: the
// variables of the same names), and the run's constants.
type laneState struct {
	ratio, m, mu, k, w, sumW, sumWL, mode [8]float64
	nf, a                                 [8]float64
	ls                                    [8]float64 // log1pScalar's values
	xbuf, wbuf                            [runSteps][8]float64
	up, busy                              uint8 // lanes in their upward sum; lanes with a cell
	job                                   [8]int32
}

// clearUpper clears the AVX upper state of this thread (VZEROUPPER) where the lanes
// run: scalar float64 code runs many times slower while it is dirty, as it can be after
// another goroutine's AVX-512 code on the same thread (see kernel.ClearUpper).
func clearUpper() {
	if lanesOK {
		archsimd.ClearAVXUpperBits()
	}
}

// sumLogRatios writes each job's sumLogRatio into e.
func sumLogRatios(jobs []ratioJob, n int64, a float64, e []float64) {
	if !lanesOK || len(jobs) < 8 {
		sumLogRatiosScalar(jobs, n, a, e)
		return
	}
	archsimd.ClearAVXUpperBits()
	nf := float64(n)
	st := &laneState{nf: splat64(nf), a: splat64(a)}
	next := 0
	for l := range 8 {
		next = st.take(l, jobs, next, nf, a, e)
	}
	for st.busy != 0 {
		ended := st.steps()
		next = st.end(ended, jobs, next, nf, a, e)
	}
	archsimd.ClearAVXUpperBits()
}

// runSteps is the most steps steps takes before it sums their log terms.
const runSteps = 32

// steps runs the lanes until one of them ends its upward or downward sum, and returns
// those that did. It takes the steps in two passes: the weights (a short chain from one
// step to the next) for up to runSteps steps, then the steps' log terms, which do not
// depend on one another, so their latencies overlap, summed in step order. It holds no
// scalar float64 (whose SSE instructions would pay for the AVX-512 state every time).
//
//go:noinline
func (st *laneState) steps() uint8 {
	one, nfv, av, tinyv, zero := ld64(&cOne), ld64(&st.nf), ld64(&st.a), ld64(&cTiny), ld64(&cZero)
	ratio, m, mu := ld64(&st.ratio), ld64(&st.m), ld64(&st.mu)
	k, w := ld64(&st.k), ld64(&st.w)
	sumW, sumWL := ld64(&st.sumW), ld64(&st.sumWL)
	upBits, busy := st.up, st.busy
	up := archsimd.Mask64x8FromBits(upBits)
	var ended uint8
	for ended == 0 {
		n := 0
		for ; n < runSteps && ended == 0; n++ {
			// Upward from k: w *= (nf − k)/(k + 1) · ratio, the term at k + 1.
			// Downward from k: w *= k / ((nf − k + 1) · ratio), the term at k − 1.
			kp1 := k.Add(one)
			nmk := nfv.Sub(k)
			kk := kp1.Merge(k.Sub(one), up)
			num := nmk.Merge(k, up)
			den := kp1.Merge(nmk.Add(one).Mul(ratio), up)
			d := num.Div(den)
			w = w.Mul(d.Mul(ratio).Merge(d, up))
			sumW = sumW.Add(w)
			kk.Add(av).Sub(m).Div(m).Store(&st.xbuf[n]) // logTerm(kk) = log1p((kk + a − m)/m)
			w.Store(&st.wbuf[n])
			// break when w < tiny·sumW beyond the mean; the loops end at k = n and k = 0.
			small := w.Less(tinyv.Mul(sumW)).ToBits()
			past := kk.Greater(mu).ToBits()&upBits | kk.Less(mu).ToBits()&^upBits
			edge := kk.GreaterEqual(nfv).ToBits()&upBits | kk.LessEqual(zero).ToBits()&^upBits
			k = kk
			ended = (small&past | edge) & busy
		}
		for i := range n {
			lt, slow := log1pLanes(ld64(&st.xbuf[i]))
			if slow != 0 {
				lt.Store(&st.ls)
				log1pScalar(st, i, slow)
				lt = ld64(&st.ls)
			}
			sumWL = sumWL.Add(ld64(&st.wbuf[i]).Mul(lt))
		}
	}
	k.Store(&st.k)
	w.Store(&st.w)
	sumW.Store(&st.sumW)
	sumWL.Store(&st.sumWL)
	return ended
}

// end moves the lanes in ended on: from the upward sum to the downward one, or, with
// both done, to the next cell.
//
//go:noinline
func (st *laneState) end(ended uint8, jobs []ratioJob, next int, nf, a float64, e []float64) int {
	archsimd.ClearAVXUpperBits() // scalar code follows
	for l := range 8 {
		bit := uint8(1) << l
		if ended&bit == 0 {
			continue
		}
		if st.up&bit != 0 && st.mode[l] > 0 { // downwards from the mode
			st.up &^= bit
			st.k[l], st.w[l] = st.mode[l], 1
			continue
		}
		e[st.job[l]] = st.sumWL[l] / st.sumW[l]
		next = st.take(l, jobs, next, nf, a, e)
	}
	return next
}

// take gives lane l the next job that has terms to sum (finishing those that have
// none, as sumLogRatio does), or leaves it idle when none is left.
func (st *laneState) take(l int, jobs []ratioJob, next int, nf, a float64, e []float64) int {
	bit := uint8(1) << l
	for ; next < len(jobs); next++ {
		j := jobs[next]
		p, m := j.p, j.m
		mu, q := nf*p, 1-p
		mode := math.Floor((nf + 1) * p)
		if mode > nf {
			mode = nf
		}
		st.ratio[l], st.m[l], st.mu[l], st.mode[l] = p/q, m, mu, mode
		st.k[l], st.w[l], st.sumW[l] = mode, 1, 1
		st.sumWL[l] = math.Log1p((mode + a - m) / m)
		st.job[l] = j.out
		switch {
		case mode < nf:
			st.up |= bit
		case mode > 0:
			st.up &^= bit
		default: // n = 0 terms either way (not reached for n ≥ 1)
			e[j.out] = st.sumWL[l] / st.sumW[l]
			continue
		}
		st.busy |= bit
		return next + 1
	}
	// Idle: harmless values (w stays 0, no events are read from it).
	st.busy &^= bit
	st.up |= bit
	st.ratio[l], st.m[l], st.mu[l], st.k[l], st.w[l], st.sumW[l], st.sumWL[l] = 0, 1, 0, 0, 0, 1, 0
	return next
}

// log1pScalar fixes the lanes in slow of st.ls with math.Log1p of step i's arguments.
//
//go:noinline
func log1pScalar(st *laneState, i int, slow uint8) {
	archsimd.ClearAVXUpperBits()
	for l := range 8 {
		if slow&(1<<l) != 0 {
			st.ls[l] = math.Log1p(st.xbuf[i][l])
		}
	}
}

// math.log1p's constants (FreeBSD's s_log1p.c).
const (
	l1pSqrt2M1     = 4.142135623730950488017e-01  // Sqrt(2)-1
	l1pSqrt2HalfM1 = -2.928932188134524755992e-01 // Sqrt(2)/2-1
	l1pSmall       = 1.0 / (1 << 29)              // 2**-29
	l1pTwo53       = 1 << 53                      // 2**53
	l1pLn2Hi       = 6.93147180369123816490e-01
	l1pLn2Lo       = 1.90821492927058770002e-10
	l1pLp1         = 6.666666666666735130e-01
	l1pLp2         = 3.999999999940941908e-01
	l1pLp3         = 2.857142874366239149e-01
	l1pLp4         = 2.222219843214978396e-01
	l1pLp5         = 1.818357216161805012e-01
	l1pLp6         = 1.531383769920937332e-01
	l1pLp7         = 1.479819860511658591e-01
)

// log1pLanes is math.log1p of each lane, bit for bit, on its two main paths:
// √2/2−1 < x < √2−1 (f = x, k = 0) and the reduction of 1 + x to u·2^k with its
// correction term. Lanes off those paths (|x| < 2^−29, x ≤ −1, x ≥ 2^53, NaN, ±Inf, and
// reductions to an exact power of two) are flagged in slow, their values undefined.
func log1pLanes(x f64x8) (f64x8, uint8) {
	one, zero := ld64(&cOne), ld64(&cZero)
	absx := x.AsUint64x8().And(ldu64(&cAbs)).AsFloat64x8()
	inA := absx.Less(ld64(&cSqrt2M1)).And(x.Greater(ld64(&cSqrt2HalfM1)))
	inABits := inA.ToBits()
	if inABits == 0xff { // every lane on the first path: no reduction
		return log1pSmall(x), ^absx.GreaterEqual(ld64(&cSmall)).ToBits()
	}

	// The reduction: u = 1 + x = 2^k·(1+f) with √2/2 < 1+f < √2, c the rounding of u.
	u := one.Add(x)
	iu := u.AsUint64x8()
	k := iu.ShiftRight(ldu64(&c52)).AsInt64x8().Sub(ldi64(&cBias))
	c := one.Sub(u.Sub(x)).Merge(x.Sub(u.Sub(one)), k.Greater(ldi64(&cU0)))
	c = c.Div(u)
	iu = iu.And(ldu64(&cMant))
	big := iu.GreaterEqual(ldu64(&cSqrt2Mant))
	un := iu.Or(ldu64(&cExp3fe)).Merge(iu.Or(ldu64(&cExp3ff)), big)
	k = k.Add(ldi64(&cI1)).Merge(k, big)
	iu = ldu64(&cTwo52).Sub(iu).ShiftRight(ldu64(&c2)).Merge(iu, big)
	zeroIU := iu.Equal(ldu64(&cU0)).ToBits()

	f := x.Merge(un.AsFloat64x8().Sub(one), inA)
	kf := zero.Merge(k.ConvertToFloat64(), inA)
	c = zero.Merge(c, inA)

	hfsq := ld64(&cHalf).Mul(f).Mul(f)
	s := f.Div(ld64(&cTwo).Add(f))
	z := s.Mul(s)
	r := z.Mul(ld64(&cLp7))
	r = z.Mul(ld64(&cLp6).Add(r))
	r = z.Mul(ld64(&cLp5).Add(r))
	r = z.Mul(ld64(&cLp4).Add(r))
	r = z.Mul(ld64(&cLp3).Add(r))
	r = z.Mul(ld64(&cLp2).Add(r))
	r = z.Mul(ld64(&cLp1).Add(r))
	sh := s.Mul(hfsq.Add(r))
	resA := f.Sub(hfsq.Sub(sh))                                                              // k = 0
	resB := kf.Mul(ld64(&cLn2Hi)).Sub(hfsq.Sub(sh.Add(kf.Mul(ld64(&cLn2Lo)).Add(c))).Sub(f)) // k ≠ 0
	res := resA.Merge(resB, kf.Equal(zero))

	fastA := inABits & absx.GreaterEqual(ld64(&cSmall)).ToBits()
	fastB := ^inABits & x.Greater(ld64(&cMinusOne)).ToBits() & x.Less(ld64(&cTwo53)).ToBits() &^ zeroIU
	return res, ^(fastA | fastB)
}

// log1pSmall is math.log1p of lanes with √2/2−1 < x < √2−1 and |x| ≥ 2^−29 (f = x, k = 0).
func log1pSmall(f f64x8) f64x8 {
	hfsq := ld64(&cHalf).Mul(f).Mul(f)
	s := f.Div(ld64(&cTwo).Add(f))
	z := s.Mul(s)
	r := z.Mul(ld64(&cLp7))
	r = z.Mul(ld64(&cLp6).Add(r))
	r = z.Mul(ld64(&cLp5).Add(r))
	r = z.Mul(ld64(&cLp4).Add(r))
	r = z.Mul(ld64(&cLp3).Add(r))
	r = z.Mul(ld64(&cLp2).Add(r))
	r = z.Mul(ld64(&cLp1).Add(r))
	return f.Sub(hfsq.Sub(s.Mul(hfsq.Add(r))))
}

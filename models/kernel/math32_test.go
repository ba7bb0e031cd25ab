package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The documented error bounds (package doc), in relative error against float64 math
// on float32 inputs.
const (
	expBound    = 1.5e-7 // relative, on [-87.3, 88]
	tanhBound   = 2.5e-7 // relative, on [-12, 12]
	logBound    = 1.5e-7 // relative, on normal positive floats with |log x| > 0.5
	logAbsBound = 5e-8   // absolute, where |log x| <= 0.5
)

// sweep calls fn on n points spread evenly over [lo, hi] plus n random ones.
func sweep(lo, hi float64, n int, fn func(x float32)) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		fn(float32(lo + (hi-lo)*float64(i)/float64(n-1)))
		fn(float32(lo + (hi-lo)*rng.Float64()))
	}
}

func relErr(got float32, want float64) float64 {
	return math.Abs(float64(got)-want) / math.Max(math.Abs(want), 1e-30)
}

// TestMath32Accuracy measures the maximum relative error of Exp32, Tanh32 and Log32
// against float64 math over their ranges and checks the documented bounds.
func TestMath32Accuracy(t *testing.T) {
	const n = 200000
	var worst float64
	sweep(-87.3, 88, n, func(x float32) { worst = max(worst, relErr(Exp32(x), math.Exp(float64(x)))) })
	t.Logf("Exp32 max relative error on [-87.3, 88]: %.3g", worst)
	if worst > expBound {
		t.Errorf("Exp32 max relative error %.3g > %.3g", worst, expBound)
	}
	worst = 0
	sweep(-12, 12, n, func(x float32) { worst = max(worst, relErr(Tanh32(x), math.Tanh(float64(x)))) })
	sweep(-1e-3, 1e-3, n/10, func(x float32) { worst = max(worst, relErr(Tanh32(x), math.Tanh(float64(x)))) })
	t.Logf("Tanh32 max relative error on [-12, 12]: %.3g", worst)
	if worst > tanhBound {
		t.Errorf("Tanh32 max relative error %.3g > %.3g", worst, tanhBound)
	}
	// Log: relative error away from x = 1, absolute error near it (log x -> 0).
	var worstRel, worstAbs float64
	check := func(x float32) {
		want := math.Log(float64(x))
		d := math.Abs(float64(Log32(x)) - want)
		if math.Abs(want) > 0.5 {
			worstRel = max(worstRel, d/math.Abs(want))
		} else {
			worstAbs = max(worstAbs, d)
		}
	}
	sweep(1e-37, 1e-30, n/10, check)
	sweep(0.5, 2, n, check)
	sweep(2, 1e30, n, check)
	for e := -126; e < 128; e++ {
		check(float32(math.Ldexp(1.2345, e)))
	}
	t.Logf("Log32 max relative error (|log x| > 0.5): %.3g, max absolute error (|log x| <= 0.5): %.3g", worstRel, worstAbs)
	if worstRel > logBound || worstAbs > logAbsBound {
		t.Errorf("Log32 errors %.3g (relative), %.3g (absolute) above %.3g, %.3g", worstRel, worstAbs, logBound, logAbsBound)
	}
}

func TestMath32Special(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	if v := Exp32(nan); v == v {
		t.Errorf("Exp32(NaN) = %v", v)
	}
	if v := Exp32(-1000); v != math.SmallestNonzeroFloat32*(1<<23) && !(v > 0 && v < 1.2e-38) {
		t.Errorf("Exp32(-1000) = %v, want the smallest normal", v)
	}
	if v := Exp32(1000); math.IsInf(float64(v), 0) || v < 1e38 {
		t.Errorf("Exp32(1000) = %v, want exp(88)", v)
	}
	if v := Tanh32(50); v != 1 {
		t.Errorf("Tanh32(50) = %v", v)
	}
	if v := Tanh32(-50); v != -1 {
		t.Errorf("Tanh32(-50) = %v", v)
	}
	if v := Tanh32(0); v != 0 {
		t.Errorf("Tanh32(0) = %v", v)
	}
	if v := Log32(0); !math.IsInf(float64(v), -1) {
		t.Errorf("Log32(0) = %v", v)
	}
	if v := Log32(-1); v == v {
		t.Errorf("Log32(-1) = %v", v)
	}
	if v := Log32(inf); v != inf {
		t.Errorf("Log32(+Inf) = %v", v)
	}
	if v := Log32(1); v != 0 {
		t.Errorf("Log32(1) = %v", v)
	}
}

// TestVecMatchesGeneric: the primitives (vector ones in the vector build) give the
// same bits as the portable loops on random data, including the transcendental
// functions over their whole range.
func TestVecMatchesGeneric(t *testing.T) {
	t.Logf("SIMD = %v", SIMD)
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(n int, scale float32) []float32 {
		a := make([]float32, n)
		for i := range a {
			a[i] = (rng.Float32()*2 - 1) * scale
		}
		return a
	}
	same := func(name string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Errorf("%s: element %d: vector %v, portable %v", name, i, a[i], b[i])
				return
			}
		}
	}
	const L, X, in, out = 32, 3, 5, 7
	n := 16 * 64
	for _, scale := range []float32{0.3, 3, 30, 100} {
		a, b := rnd(n, scale), rnd(n, scale)
		got, want := make([]float32, n), make([]float32, n)
		vExp(got, a)
		gExp(want, a)
		same("exp", got, want)
		vTanh(got, a)
		gTanh(want, a)
		same("tanh", got, want)
		vScaleAdd(got, a, 1.7, b)
		gScaleAdd(want, a, 1.7, b)
		same("scaleadd", got, want)
		vMulOneMinusSq(got, a, b)
		gMulOneMinusSq(want, a, b)
		same("mul1msq", got, want)
		vSoftmax(got[:5*L], a[:5*L], 5, L)
		gSoftmax(want[:5*L], a[:5*L], 5, L)
		same("softmax", got[:5*L], want[:5*L])
	}
	h, W, bb, d := rnd(X*in*L, 1), rnd(in*out*L, 1), rnd(out*L, 1), rnd(X*out*L, 1)
	z1, z2 := make([]float32, X*out*L), make([]float32, X*out*L)
	vMMForward(z1, h, W, bb, X, in, out, L)
	gMMForward(z2, h, W, bb, X, in, out, L)
	same("mmforward", z1, z2)
	g1, g2 := make([]float32, in*out*L), make([]float32, in*out*L)
	vMMGradW(g1, h, d, X, in, out, L)
	gMMGradW(g2, h, d, X, in, out, L)
	same("mmgradw", g1, g2)
	b1, b2 := make([]float32, X*in*L), make([]float32, X*in*L)
	vMMBackTanh(b1, d, W, h, X, in, out, L)
	gMMBackTanh(b2, d, W, h, X, in, out, L)
	same("mmbacktanh", b1, b2)
	s1, s2 := make([]float32, out*L), make([]float32, out*L)
	vSumX(s1, d, X, out, L, true)
	gSumX(s2, d, X, out, L, true)
	same("sumx", s1, s2)
	th1, m1, v1 := rnd(in*L, 1), rnd(in*L, 1), rnd(in*L, 1)
	for i := range v1 {
		v1[i] *= v1[i]
	}
	th2, m2, v2 := append([]float32(nil), th1...), append([]float32(nil), m1...), append([]float32(nil), v1...)
	lr := rnd(L, 0.1)
	gr := rnd(in*L, 1)
	vAdam(th1, m1, v1, gr, lr, 1e-7, L)
	gAdam(th2, m2, v2, gr, lr, 1e-7, L)
	same("adam", th1, th2)
	const P = 80 // 4 vectors + 1
	hp, wp, bp := rnd(in*P, 1), rnd(in*out, 1), rnd(out, 1)
	dp := rnd(out*P, 1)
	f1, f2 := make([]float32, out*P), make([]float32, out*P)
	vGemmFwd(f1, wp, bp, hp, in, out, P)
	gGemmFwd(f2, wp, bp, hp, in, out, P)
	same("gemmfwd", f1, f2)
	i1, i2 := make([]float32, in*P), make([]float32, in*P)
	vGemmBackIn(i1, wp, dp, in, out, P)
	gGemmBackIn(i2, wp, dp, in, out, P)
	same("gemmbackin", i1, i2)
	w1, w2 := make([]float32, in*out), make([]float32, in*out)
	vGemmGradW(w1, hp, dp, in, out, P)
	gGemmGradW(w2, hp, dp, in, out, P)
	same("gemmgradw", w1, w2)
	p1, p2 := make([]float32, out), make([]float32, out)
	vSumP(p1, dp, out, P)
	gSumP(p2, dp, out, P)
	same("sump", p1, p2)
}

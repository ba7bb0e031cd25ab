package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A float64 reference of the 2-H-H-K tanh MLP and the SGLD-JEM loss.
func refLogits(th []float64, H, K int, x0, x1 float64) []float64 {
	W1, b1 := th[:2*H], th[2*H:3*H]
	W2, b2 := th[3*H:3*H+H*H], th[3*H+H*H:4*H+H*H]
	W3, b3 := th[4*H+H*H:4*H+H*H+H*K], th[4*H+H*H+H*K:]
	h1 := make([]float64, H)
	for o := range H {
		h1[o] = math.Tanh(x0*W1[o] + x1*W1[H+o] + b1[o])
	}
	h2 := make([]float64, H)
	for o := range H {
		s := b2[o]
		for i := range H {
			s += h1[i] * W2[i*H+o]
		}
		h2[o] = math.Tanh(s)
	}
	f := make([]float64, K)
	for o := range K {
		s := b3[o]
		for i := range H {
			s += h2[i] * W3[i*K+o]
		}
		f[o] = s
	}
	return f
}

// checkFD checks got(j) against the central finite difference (step 1e-5) of f in
// x[j] for every j, within abs + 1e-4·|fd|, and returns the worst |got − fd|.
func checkFD(t *testing.T, what string, x []float64, f func() float64, got func(j int) float64, abs float64) float64 {
	t.Helper()
	const h = 1e-5
	worst := 0.0
	for j := range x {
		old := x[j]
		x[j] = old + h
		lp := f()
		x[j] = old - h
		lm := f()
		x[j] = old
		fd := (lp - lm) / (2 * h)
		g := got(j)
		d := math.Abs(g - fd)
		worst = max(worst, d)
		if d > abs+1e-4*math.Abs(fd) {
			t.Errorf("%s[%d] = %v, finite difference %v", what, j, g, fd)
		}
	}
	return worst
}

func refLSE(f []float64) float64 {
	mx := slices.Max(f)
	s := 0.0
	for _, v := range f {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

func refLoss(th []float64, spec SGLDSpec, xd []float32, yd []int32, xn []float32) float64 {
	B := spec.B
	w := float64(spec.PxWeight)
	loss := 0.0
	for p := range B {
		f := refLogits(th, spec.H, spec.K, float64(xd[p]), float64(xd[B+p]))
		l := refLSE(f)
		loss += (l - f[yd[p]] - w*l) / float64(B)
		fn := refLogits(th, spec.H, spec.K, float64(xn[p]), float64(xn[B+p]))
		loss += w * refLSE(fn) / float64(B)
	}
	return loss
}

func sgldFixture(spec SGLDSpec, seed uint64) (theta []float32, xd []float32, yd []int32, xn []float32) {
	rng := rand.New(rand.NewPCG(seed, 9))
	H, K, B := spec.H, spec.K, spec.B
	for _, l := range []struct{ in, out int }{{2, H}, {H, H}, {H, K}} {
		a := math.Sqrt(6 / float64(l.in+l.out))
		for range l.in * l.out {
			theta = append(theta, float32((rng.Float64()*2-1)*a))
		}
		for range l.out {
			theta = append(theta, float32(rng.Float64()-0.5)*0.2)
		}
	}
	xd, xn = make([]float32, 2*B), make([]float32, 2*B)
	for i := range xd {
		xd[i] = float32(rng.Float64()*4 - 2)
		xn[i] = float32(rng.Float64()*8 - 4)
	}
	yd = make([]int32, B)
	for i := range yd {
		yd[i] = int32(rng.IntN(K))
	}
	return
}

// TestSGLDGradients: the kernel's parameter gradient, loss and input gradient agree
// with central finite differences of a float64 reference of the same model and loss.
func TestSGLDGradients(t *testing.T) {
	spec := SGLDSpec{H: 8, K: 3, B: 16, T: 1, StepSize: 1, Noise: 0.01, PxWeight: 0.7}
	k, err := NewSGLD(spec)
	if err != nil {
		t.Fatal(err)
	}
	theta32, xd, yd, xn := sgldFixture(spec, 1)
	th := make([]float32, (len(theta32)+VW-1)/VW*VW)
	copy(th, theta32)
	loss := k.gradient(th, xd, yd, xn)
	th64 := make([]float64, len(theta32))
	for i, v := range theta32 {
		th64[i] = float64(v)
	}
	want := refLoss(th64, spec, xd, yd, xn)
	if math.Abs(float64(loss)-want) > 1e-5*math.Max(1, math.Abs(want)) {
		t.Errorf("loss %v, reference %v", loss, want)
	}
	const h = 1e-5
	worst := checkFD(t, "dL/dtheta", th64, func() float64 { return refLoss(th64, spec, xd, yd, xn) }, func(j int) float64 { return float64(k.g[j]) }, 1e-5)
	t.Logf("parameter gradient: max |kernel - finite difference| = %.3g", worst)

	// Input gradient of LSE_y f(x) on the negatives.
	dx := make([]float32, 2*spec.B)
	k.inputGrad(th, xn, dx, spec.B)
	worst = 0
	for p := range spec.B {
		for i := range 2 {
			x := []float64{float64(xn[p]), float64(xn[spec.B+p])}
			x[i] += h
			lp := refLSE(refLogits(th64, spec.H, spec.K, x[0], x[1]))
			x[i] -= 2 * h
			lm := refLSE(refLogits(th64, spec.H, spec.K, x[0], x[1]))
			fd := (lp - lm) / (2 * h)
			d := math.Abs(float64(dx[i*spec.B+p]) - fd)
			worst = max(worst, d)
			if d > 1e-5+1e-4*math.Abs(fd) {
				t.Errorf("dLSE/dx[%d] of point %d = %v, finite difference %v", i, p, dx[i*spec.B+p], fd)
			}
		}
	}
	t.Logf("input gradient: max |kernel - finite difference| = %.3g", worst)
}

// TestSGLDStep: the chains move by StepSize·∇x LSE + Noise·ε with the run's own noise,
// the same seed gives the same bits, and an overflowing learning rate is caught.
func TestSGLDStep(t *testing.T) {
	spec := SGLDSpec{H: 8, K: 3, B: 16, T: 2, StepSize: 0.5, Noise: 0.1, PxWeight: 1}
	theta, xd, yd, xn0 := sgldFixture(spec, 2)
	k, err := NewSGLD(spec)
	if err != nil {
		t.Fatal(err)
	}
	run := func(lr float32) (*SGLDRun, []float32, float32) {
		r := spec.NewSGLDRun(theta, lr, rand.New(rand.NewPCG(5, 6)))
		xn := slices.Clone(xn0)
		loss := k.Step(r, xd, yd, xn)
		return r, xn, loss
	}
	r1, x1, l1 := run(0.01)
	r2, x2, l2 := run(0.01)
	if !slices.Equal(r1.Theta, r2.Theta) || !slices.Equal(x1, x2) || l1 != l2 {
		t.Error("same seed, different results")
	}
	if r1.Diverged || r1.Step != 1 {
		t.Errorf("step %d diverged %v", r1.Step, r1.Diverged)
	}
	// Replay the chains by hand.
	rng := rand.New(rand.NewPCG(5, 6))
	noise := make([]float32, spec.T*2*spec.B)
	for i := range noise {
		noise[i] = float32(rng.NormFloat64())
	}
	th := make([]float32, len(r1.Theta))
	copy(th, theta)
	x := slices.Clone(xn0)
	dx := make([]float32, 2*spec.B)
	for s := range spec.T {
		k.inputGrad(th, x, dx, spec.B)
		for i := range x {
			x[i] = madd(noise[s*2*spec.B+i], spec.Noise, madd(dx[i], spec.StepSize, x[i]))
		}
	}
	if !slices.Equal(x, x1) {
		t.Errorf("chains %v, by hand %v", x1[:4], x[:4])
	}
	// Adam's first step moves every parameter with a non-zero gradient by about lr.
	moved := 0
	for i := range theta {
		if d := math.Abs(float64(r1.Theta[i] - theta[i])); d > 0.005 && d < 0.0101 {
			moved++
		}
	}
	if moved < len(theta)/2 {
		t.Errorf("only %d of %d parameters moved by about lr", moved, len(theta))
	}
	rb, _, _ := run(float32(math.Inf(1)))
	if !rb.Diverged || !slices.Equal(rb.Theta[:len(theta)], theta) {
		t.Errorf("infinite lr: diverged %v, parameters restored %v", rb.Diverged, slices.Equal(rb.Theta[:len(theta)], theta))
	}
}

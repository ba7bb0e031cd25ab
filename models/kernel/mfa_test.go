package kernel

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// randMFA is a random MFA model's parameters with entries of a plausible scale.
func randMFA(sp MFASpec, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	th := make([]float32, sp.NumParams())
	_, oB, oMu, oLam, oRho := sp.off()
	for i := range th {
		switch {
		case i < oMu:
			th[i] = float32(0.5 * rng.NormFloat64())
		case i < oLam:
			th[i] = float32(0.5 * rng.NormFloat64())
		case i < oRho:
			th[i] = float32(0.4 * rng.NormFloat64())
		default:
			th[i] = float32(-1 + 0.3*rng.NormFloat64())
		}
	}
	_ = oB
	return th
}

// TestMFALogZBruteForce: at D = 2 the exact log Z (log Σ_y exp a_y) equals the
// log of a fine Riemann sum of Σ_y exp f(x)[y] over a box holding the mass.
func TestMFALogZBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   MFASpec
	}{
		{"one factor", MFASpec{K: 2, C: 2, Factors: 1, Dim: 2}},
		{"two factors, three classes", MFASpec{K: 3, C: 3, Factors: 2, Dim: 2}},
		{"no factors", MFASpec{K: 2, C: 1, Factors: 0, Dim: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := randMFA(tc.sp, 7)
			m, err := NewMFAModel(tc.sp, th)
			if err != nil {
				t.Fatal(err)
			}
			const G, box = 300, 8.0
			h := 2 * box / G
			x := make([]float64, 0, 2*G*G)
			for i := range G {
				for j := range G {
					x = append(x, -box+(float64(i)+0.5)*h, -box+(float64(j)+0.5)*h)
				}
			}
			f := m.Logits(x, G*G, nil)
			var z float64
			for _, v := range f {
				z += math.Exp(v)
			}
			brute := math.Log(z * h * h)
			if d := math.Abs(brute - m.LogZ()); d > 1e-4 {
				t.Fatalf("log Z exact %.6f, grid %.6f (|Δ| = %.2g)", m.LogZ(), brute, d)
			}
		})
	}
}

// TestMFAGradients: the lane model's float32 forward agrees with the float64 MFAModel,
// and its backward (parameters and x) with central differences of the float64 model.
func TestMFAGradients(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   MFASpec
	}{
		{"D=4 C=2 d=2", MFASpec{K: 2, C: 2, Factors: 2, Dim: 4}},
		{"D=6 C=3 d=1 K=3", MFASpec{K: 3, C: 3, Factors: 1, Dim: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.sp
			D, K := sp.Dim, sp.K
			th := randMFA(sp, 3)
			const P = VW
			rng := rand.New(rand.NewPCG(5, 5))
			x := make([]float32, D*P)
			xr := make([]float64, P*D)
			for i := range D {
				for p := range P {
					v := float32(rng.NormFloat64())
					x[i*P+p] = v
					xr[p*D+i] = float64(v)
				}
			}
			delta := make([]float32, K*P)
			for i := range delta {
				delta[i] = float32(rng.NormFloat64())
			}
			net := newMFANet(sp, P)
			net.forward(th, x, P)
			m, err := NewMFAModel(sp, th)
			if err != nil {
				t.Fatal(err)
			}
			f64 := m.Logits(xr, P, nil)
			for p := range P {
				for y := range K {
					if d := math.Abs(float64(net.f[y*P+p]) - f64[p*K+y]); d > 2e-4*max(1, math.Abs(f64[p*K+y])) {
						t.Fatalf("lane %d class %d: float32 %g, float64 %g", p, y, net.f[y*P+p], f64[p*K+y])
					}
				}
			}
			dx := make([]float32, D*P)
			net.backward(th, delta, P, true, dx)
			loss := func(th []float32, xr []float64) float64 {
				m, err := NewMFAModel(sp, th)
				if err != nil {
					t.Fatal(err)
				}
				f := m.Logits(xr, P, nil)
				var s float64
				for p := range P {
					for y := range K {
						s += float64(delta[y*P+p]) * f[p*K+y]
					}
				}
				return s
			}
			const h = 1e-3
			worst := 0.0
			for i := range th {
				tp := append([]float32(nil), th...)
				tm := append([]float32(nil), th...)
				tp[i] += h
				tm[i] -= h
				fd := (loss(tp, xr) - loss(tm, xr)) / float64(tp[i]-tm[i])
				if d := math.Abs(fd-float64(net.g[i])) / max(1, math.Abs(fd)); d > worst {
					worst = d
				}
				if worst > 2e-3 {
					t.Fatalf("parameter %d: backward %g, central difference %g", i, net.g[i], fd)
				}
			}
			for i := range D {
				for p := range P {
					xp := append([]float64(nil), xr...)
					xm := append([]float64(nil), xr...)
					xp[p*D+i] += h
					xm[p*D+i] -= h
					fd := (loss(th, xp) - loss(th, xm)) / (2 * h)
					if d := math.Abs(fd-float64(dx[i*P+p])) / max(1, math.Abs(fd)); d > 2e-3 {
						t.Fatalf("x[%d] of lane %d: backward %g, central difference %g", i, p, dx[i*P+p], fd)
					}
				}
			}
			t.Logf("worst relative parameter-gradient error %.2g", worst)
			// ∇x LSE of the float64 model against the lanes' backward of the softmax
			g64 := make([]float64, P*D)
			m.Logits(xr, P, g64)
			s := make([]float32, K*P)
			vSoftmax(s, net.f[:K*P], K, P)
			net.backward(th, s, P, false, dx)
			for i := range D {
				for p := range P {
					if d := math.Abs(g64[p*D+i] - float64(dx[i*P+p])); d > 1e-3*max(1, math.Abs(g64[p*D+i])) {
						t.Fatalf("∇x LSE at lane %d coordinate %d: float64 %g, lanes %g", p, i, g64[p*D+i], dx[i*P+p])
					}
				}
			}
		})
	}
}

// TestTrainMFAExactJEM: exact JEM (maximum likelihood with the exact log Z) on draws of
// a known MFA model ends with a smaller joint KL to it than the shared start and than
// the cross-entropy baseline, measured exactly (Monte Carlo over fresh exact draws).
func TestTrainMFAExactJEM(t *testing.T) {
	sp := MFASpec{K: 2, C: 2, Factors: 1, Dim: 4}
	truth := randMFA(sp, 11)
	// sharpen the truth's components so the classes are distinguishable
	tm, err := NewMFAModel(sp, truth)
	if err != nil {
		t.Fatal(err)
	}
	draw := func(seed uint64, n int) ([]float32, []int32, []float64) {
		x, y := sampleMFA(sp, truth, seed, n)
		x64 := make([]float64, len(x))
		for i, v := range x {
			x64[i] = float64(v)
		}
		return x, y, x64
	}
	x, y, _ := draw(1, 2000)
	_, ey, ex := draw(2, 4000)
	lp := tm.Logits(ex, len(ey), nil)
	lzT := tm.LogZ()
	kl := func(th []float32) float64 {
		m, err := NewMFAModel(sp, th)
		if err != nil {
			t.Fatal(err)
		}
		lq := m.Logits(ex, len(ey), nil)
		lz := m.LogZ()
		var s float64
		for i, c := range ey {
			s += (lp[i*sp.K+int(c)] - lzT) - (lq[i*sp.K+int(c)] - lz)
		}
		return s / float64(len(ey))
	}
	init := InitMFA(sp, 3, x, y)
	base := Spec2D{K: 2, Steps: 1500, Batch: 64, PxWeight: 1, Box: 6}
	res := map[bool]float64{}
	for _, exact := range []bool{false, true} {
		spec := base
		spec.Exact = exact
		out, err := TrainMFA(context.Background(), SpecMFA{Spec2D: spec, MFA: sp}, []RunAdditive{{Seed: 9, Theta: init, LR: 0.01, X: x, Y: y}})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Diverged {
			t.Fatalf("exact=%v diverged at step %d", exact, out[0].DivergedStep)
		}
		res[exact] = kl(out[0].Theta)
	}
	k0 := kl(init)
	t.Logf("joint KL: start %.4f, baseline %.4f, exact jem %.4f", k0, res[false], res[true])
	if !(res[true] < 0.05 && res[true] < res[false] && res[true] < k0) {
		t.Fatalf("exact jem's joint KL %.4f: want < 0.05 and below the baseline's %.4f and the start's %.4f", res[true], res[false], k0)
	}
}

// sampleMFA draws n exact draws (x [n][D] row-major, y) of an MFA model.
func sampleMFA(sp MFASpec, th []float32, seed uint64, n int) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(seed, 2))
	D, d, C, K := sp.Dim, sp.Factors, sp.C, sp.K
	_, oB, oMu, oLam, oRho := sp.off()
	pick := func(logits []float32) int {
		w := make([]float64, len(logits))
		s := 0.0
		for i, v := range logits {
			w[i] = math.Exp(float64(v))
			s += w[i]
		}
		u := rng.Float64() * s
		for i, v := range w {
			if u < v {
				return i
			}
			u -= v
		}
		return len(w) - 1
	}
	x := make([]float32, n*D)
	y := make([]int32, n)
	z := make([]float64, d)
	for i := range n {
		k := pick(th[:K])
		c := pick(th[oB+k*C : oB+(k+1)*C])
		j := k*C + c
		for a := range z {
			z[a] = rng.NormFloat64()
		}
		for c := range D {
			v := float64(th[oMu+j*D+c]) + math.Exp(0.5*float64(th[oRho+j*D+c]))*rng.NormFloat64()
			for a := range d {
				v += float64(th[oLam+(j*D+c)*d+a]) * z[a]
			}
			x[i*D+c] = float32(v)
		}
		y[i] = int32(k)
	}
	return x, y
}

// TestMFAEvaluator: the lanes' held-out NLL (float32, SIMD) equals the float64 model's
// mean log Z − f(x)[y] over 1,000 points (a last partial chunk included).
func TestMFAEvaluator(t *testing.T) {
	sp := MFASpec{K: 3, C: 2, Factors: 2, Dim: 8}
	th := randMFA(sp, 4)
	x32, y := sampleMFA(sp, th, 6, 1000)
	x := make([]float64, len(x32))
	for i, v := range x32 {
		x[i] = float64(v)
	}
	m, err := NewMFAModel(sp, th)
	if err != nil {
		t.Fatal(err)
	}
	f := m.Logits(x, len(y), nil)
	var want float64
	for i, c := range y {
		want += m.LogZ() - f[i*sp.K+int(c)]
	}
	want /= float64(len(y))
	got := NewMFAEvaluator(sp, x, y).NLL(th)
	if math.Abs(got-want) > 1e-4*max(1, math.Abs(want)) {
		t.Fatalf("lanes NLL %.6f, float64 %.6f", got, want)
	}
}

// TestDotPrimitives: the vector dot products and vMulSub give the scalar loops' bits.
func TestDotPrimitives(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{VW, 3 * VW, 40 * VW} {
		a, b, d1, d2 := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			d1[i] = float32(rng.NormFloat64())
		}
		copy(d2, d1)
		if v, g := vDot(a, b), gDot(a, b); v != g {
			t.Errorf("n=%d: vDot %v, gDot %v", n, v, g)
		}
		v1, v2 := vDot2(a, b)
		g1, g2 := gDot2(a, b)
		if v1 != g1 || v2 != g2 {
			t.Errorf("n=%d: vDot2 %v %v, gDot2 %v %v", n, v1, v2, g1, g2)
		}
		vMulSub(d1, a, b)
		gMulSub(d2, a, b)
		for i := range d1 {
			if d1[i] != d2[i] {
				t.Fatalf("n=%d: vMulSub[%d] %v, gMulSub %v", n, i, d1[i], d2[i])
			}
		}
	}
}

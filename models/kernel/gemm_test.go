package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmMatchesGeneric: the points-innermost GEMMs (vector ones in the vector build,
// register-blocked with partial tiles) give the same bits as the portable loops over
// shapes that exercise every partial tile, with the weight gradient and bias sums
// accumulated into non-zero (and signed-zero) destinations.
func TestGemmMatchesGeneric(t *testing.T) {
	t.Logf("SIMD = %v", SIMD)
	rng := rand.New(rand.NewPCG(5, 6))
	rnd := func(n int, scale float32) []float32 {
		a := make([]float32, n)
		for i := range a {
			a[i] = (rng.Float32()*2 - 1) * scale
		}
		return a
	}
	same := func(name string, in, out, P int, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s in=%d out=%d P=%d: element %d: vector %v, portable %v", name, in, out, P, i, a[i], b[i])
			}
		}
	}
	dims := []int{1, 2, 3, 4, 5, 7, 8, 9, 32, 33}
	for _, P := range []int{16, 32, 48, 64, 80, 128, 144, 320} {
		for _, in := range dims {
			for _, out := range dims {
				h, W, b, d := rnd(in*P, 3), rnd(in*out, 1), rnd(out, 1), rnd(out*P, 1)
				th := make([]float32, in*P)
				gTanh(th, h)
				f1, f2 := make([]float32, out*P), make([]float32, out*P)
				vGemmFwd(f1, W, b, h, in, out, P)
				gGemmFwd(f2, W, b, h, in, out, P)
				same("gemmfwd", in, out, P, f1, f2)
				i1, i2 := make([]float32, in*P), make([]float32, in*P)
				vGemmBackIn(i1, W, d, in, out, P)
				gGemmBackIn(i2, W, d, in, out, P)
				same("gemmbackin", in, out, P, i1, i2)
				vGemmBackInTanh(i1, W, d, th, in, out, P)
				gGemmBackInTanh(i2, W, d, th, in, out, P)
				same("gemmbackintanh", in, out, P, i1, i2)
				gGemmBackIn(i1, W, d, in, out, P)
				gMulOneMinusSq(i1, i1, th)
				same("gemmbackintanh=backin+mul1msq", in, out, P, i1, i2)
				w1, w2 := rnd(in*out, 1), make([]float32, in*out)
				if in*out > 1 {
					w1[0], w1[1] = float32(math.Copysign(0, -1)), 0
				}
				copy(w2, w1)
				vGemmGradW(w1, h, d, in, out, P)
				gGemmGradW(w2, h, d, in, out, P)
				same("gemmgradw", in, out, P, w1, w2)
				p1, p2 := rnd(out, 1), make([]float32, out)
				copy(p2, p1)
				vSumP(p1, d, out, P)
				gSumP(p2, d, out, P)
				same("sump", in, out, P, p1, p2)
			}
		}
	}
}

// BenchmarkGemm is the MLP's 32×32 layer on P points: forward, backward to the input
// through the tanh, and the weight gradient.
func BenchmarkGemm(b *testing.B) {
	for _, P := range []int{64, 320} {
		const in, out = 32, 32
		rng := rand.New(rand.NewPCG(1, 2))
		rnd := func(n int) []float32 {
			a := make([]float32, n)
			for i := range a {
				a[i] = rng.Float32()*2 - 1
			}
			return a
		}
		h, W, bb, d := rnd(in*P), rnd(in*out), rnd(out), rnd(out*P)
		z, dh, gW := make([]float32, out*P), make([]float32, in*P), make([]float32, in*out)
		b.Run(fmt.Sprintf("fwd/P=%d", P), func(b *testing.B) {
			for range b.N {
				vGemmFwd(z, W, bb, h, in, out, P)
			}
		})
		b.Run(fmt.Sprintf("backtanh/P=%d", P), func(b *testing.B) {
			for range b.N {
				vGemmBackInTanh(dh, W, d, h, in, out, P)
			}
		})
		b.Run(fmt.Sprintf("gradw/P=%d", P), func(b *testing.B) {
			for range b.N {
				vGemmGradW(gW, h, d, in, out, P)
			}
		})
		b.Run(fmt.Sprintf("tanh/P=%d", P), func(b *testing.B) {
			for range b.N {
				vTanh(z, h[:out*P])
			}
		})
	}
}

// TestSoftmaxLSEMatchesGeneric: the fused softmax and log-sum-exp gives lse32's bits
// (NaN where lse32 gives NaN) and gSoftmax's, on logits with ties, signed zeros, large
// and non-finite values.
func TestSoftmaxLSEMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, G := range []int{1, 2, 3, 5, 10} {
		for _, L := range []int{16, 64, 80} {
			for _, scale := range []float32{0.01, 1, 30, 300} {
				src := make([]float32, G*L)
				for i := range src {
					src[i] = (rng.Float32()*2 - 1) * scale
					switch rng.IntN(40) {
					case 0:
						src[i] = 0
					case 1:
						src[i] = float32(math.Copysign(0, -1))
					case 2:
						src[i] = src[i%L] // a tie with g = 0
					case 3:
						if scale == 300 {
							src[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
						}
					case 4:
						if scale == 300 {
							src[i] = float32(math.NaN())
						}
					}
				}
				s1, s2 := make([]float32, G*L), make([]float32, G*L)
				l1, l2, l3 := make([]float32, L), make([]float32, L), make([]float32, L)
				vSoftmaxLSE(s1, l1, src, G, L)
				gSoftmaxLSE(s2, l2, src, G, L)
				vSoftmaxLSE(nil, l3, src, G, L)
				for i := range s1 {
					if math.Float32bits(s1[i]) != math.Float32bits(s2[i]) && !(s1[i] != s1[i] && s2[i] != s2[i]) {
						t.Fatalf("G=%d L=%d: softmax %d: %v, want %v", G, L, i, s1[i], s2[i])
					}
				}
				for i := range l1 {
					want := lse32(src, i, G, L)
					for _, got := range []float32{l1[i], l2[i], l3[i]} {
						if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
							t.Fatalf("G=%d L=%d scale %v: lse %d: %v, want %v", G, L, scale, i, got, want)
						}
					}
				}
			}
		}
	}
}

// TestAllFinite: vAllFinite agrees with gAllFinite with a non-finite value anywhere.
func TestAllFinite(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 33, 64, 100} {
		a := make([]float32, n)
		for i := range a {
			a[i] = float32(i) - 7.5
		}
		if !vAllFinite(a) || !gAllFinite(a) {
			t.Fatalf("n=%d: finite values reported non-finite", n)
		}
		for i := range n {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				b := append([]float32(nil), a...)
				b[i] = float32(bad)
				if vAllFinite(b) || gAllFinite(b) {
					t.Fatalf("n=%d: %v at %d reported finite", n, bad, i)
				}
			}
		}
	}
}

package cnn

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randImages(n, D int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n*D)
	for i := range x {
		x[i] = float32(2*r.Float64() - 1)
	}
	return x
}

// TestInputGradient checks the hand backward input gradient of LSE_y f(x) against GoMLX
// autodiff and central finite differences (float64 arithmetic is not available on the
// evaluation graph, so finite differences use h=1e-2 in float32).
func TestInputGradient(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		S           int
	}{
		{"swish-2conv-S8", "cnn:4,6", 8},
		{"tanh-dense-S8", "cnn:3,5,dense:7,tanh", 8},
		{"swish-1conv-S16", "cnn:4", 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := Parse(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Init(sp, tc.S, 3, 7)
			if err != nil {
				t.Fatal(err)
			}
			// Make the energy less flat than at init, so the check is not trivially small.
			for _, w := range p.Tensors {
				for i := range w {
					w[i] *= 3
				}
			}
			n, D := 3, tc.S*tc.S
			x := randImages(n, D, 11)
			lse, dx, err := Energy(p, x, n, true)
			if err != nil {
				t.Fatal(err)
			}
			_, dxA, err := energyAutodiff(p, x, n)
			if err != nil {
				t.Fatal(err)
			}
			var maxAD, scale float64
			for i := range dx {
				maxAD = max(maxAD, math.Abs(float64(dx[i]-dxA[i])))
				scale = max(scale, math.Abs(float64(dxA[i])))
			}
			// Finite differences on a few coordinates of every image.
			const h = 1e-2
			var maxFD float64
			r := rand.New(rand.NewPCG(3, 3))
			for range 6 {
				j := r.IntN(n * D)
				xp, xm := append([]float32(nil), x...), append([]float32(nil), x...)
				xp[j] += h
				xm[j] -= h
				lp, _, err1 := Energy(p, xp, n, false)
				lm, _, err2 := Energy(p, xm, n, false)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				fd := (float64(lp[j/D]) - float64(lm[j/D])) / (2 * h)
				maxFD = max(maxFD, math.Abs(fd-float64(dx[j])))
			}
			t.Logf("%s: |LSE| %.3g, max|grad| %.3g, max|hand-autodiff| %.2g, max|hand-finite diff| %.2g", tc.model, lse[0], scale, maxAD, maxFD)
			if maxAD > 1e-5*max(1, scale) {
				t.Errorf("hand vs autodiff input gradient differ by %g (scale %g)", maxAD, scale)
			}
			if maxFD > 2e-3*max(1, scale) {
				t.Errorf("hand vs finite-difference input gradient differ by %g (scale %g)", maxFD, scale)
			}
		})
	}
}

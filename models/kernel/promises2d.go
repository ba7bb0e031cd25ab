package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The model-side functions behind JEM's promises beyond the joint on the continuous 2-D
// tasks: logits and the energy's input gradient at arbitrary points (OOD scores, the
// paper's gradient-norm score −‖∇x log q(x)‖ among them), the L∞ PGD attack on the
// cross-entropy (robustness), the deterministic energy descent of JEM's "purification"
// defence, and long SGLD chains from given starting points (the "samples" promise).
//
// Every function takes a model as GridLogits does (the tanh MLP 2-hidden…-K with the
// canonical parameters theta, see InitMLP2D), works on any number of points by chunks of
// promiseChunk vector lanes, and reuses the training kernel's passes (mlp2d), so its
// results are the same bits in the portable and the vector build. A point's result
// depends on that point (and, for Chains2D, on its index and the seed) only, never on
// the other points of the call or their number. The functions keep no state between
// calls and may run concurrently.

// promiseChunk is the number of points (lanes) evaluated at once: pointChunk.
const promiseChunk = pointChunk

// pointChunk is the number of lanes of the functions that evaluate a model at many
// independent points (the promises, PointLogits, CellLogits). A layer's activations
// are rows of P lanes, so a chunk of 1,024 float32 lanes put every row of a layer 4 KiB
// apart: the same L1 sets, and conflict misses in the GEMM's walk down the rows. 256
// lanes (1 KiB rows, a 32-wide layer in 32 KiB) ran BenchmarkPGD2D 1.19× faster; a
// point's result does not depend on the chunk (TestPromises2DGolden, TestCellLogits*).
const pointChunk = 256

// tagChains is the seed tag of the Chains2D noise streams ("chai").
const tagChains = 0x63686169

// eval2D is a model ready to be evaluated on chunks of points: the network's scratch,
// the parameters padded to the network's length, and the lanes of one chunk.
type eval2D struct {
	net   *mlp2d
	th    []float32
	k     int
	x, dx []float32 // [2][P] points and their input gradient
	noise []float32 // [2][P] Chains2D's normals
}

// newEval2D checks the model and the points' lengths (x0 and x1 of equal length) and
// prepares the evaluator; name prefixes the error.
func newEval2D(name string, hidden []int, k int, theta []float32, x0, x1 []float32) (*eval2D, error) {
	if k < 2 {
		return nil, fmt.Errorf("kernel: %s: K must be >= 2, got %d", name, k)
	}
	for _, h := range hidden {
		if h < 1 {
			return nil, fmt.Errorf("kernel: %s: hidden width %d < 1", name, h)
		}
	}
	if np := NumParams2D(hidden, k); len(theta) != np {
		return nil, fmt.Errorf("kernel: %s: len(theta)=%d, want %d for hidden %v and K=%d", name, len(theta), np, hidden, k)
	}
	if len(x0) != len(x1) {
		return nil, fmt.Errorf("kernel: %s: len(x0)=%d != len(x1)=%d", name, len(x0), len(x1))
	}
	e := &eval2D{net: newMLP2D(hidden, k, promiseChunk), k: k}
	e.th = make([]float32, e.net.np)
	copy(e.th, theta)
	e.x, e.dx = make([]float32, 2*promiseChunk), make([]float32, 2*promiseChunk)
	return e, nil
}

// load copies the points lo..lo+m−1 into the lanes (x0 in x[:P], x1 in x[P:2P]), the
// padding lanes zero, and returns P, m rounded up to a multiple of VW.
func (e *eval2D) load(x0, x1 []float32, lo, m int) int {
	P := (m + VW - 1) / VW * VW
	clear(e.x[:2*P])
	copy(e.x[:m], x0[lo:lo+m])
	copy(e.x[P:P+m], x1[lo:lo+m])
	return P
}

// store copies the first m lanes back to the points lo..lo+m−1 of out0, out1.
func (e *eval2D) store(out0, out1 []float32, lo, m, P int) {
	copy(out0[lo:lo+m], e.x[:m])
	copy(out1[lo:lo+m], e.x[P:P+m])
}

// clampBox clamps the lanes e.x[:2P] to [−box, box].
func (e *eval2D) clampBox(P int, box float32) {
	for i, v := range e.x[:2*P] {
		e.x[i] = min(box, max(-box, v))
	}
}

// ceGrad computes e.dx [2][P] = ∇x CE(x) for the lanes e.x, CE(x) = −log softmax(f(x))[y]
// with y[p] the class of lane p < len(y) (the padding lanes: no class, gradient of LSE):
// dCE/df = softmax(f) − onehot(y), back-propagated to the input by mlp2d.backward (the
// training kernel's pass, which takes any dL/df).
func (e *eval2D) ceGrad(y []int32, P int) {
	n, K := e.net, e.k
	n.forward(e.th, e.x[:2*P], P)
	s := n.s[:K*P]
	vSoftmax(s, n.f[:K*P], K, P)
	for p, c := range y {
		s[int(c)*P+p] -= 1
	}
	n.backward(e.th, s, P, false, e.dx)
}

// checkBox reports whether box is a valid clamp: > 0 (+Inf: no clamp).
func checkBox(name string, box float32) error {
	if !(box > 0) {
		return fmt.Errorf("kernel: %s: box must be > 0 (+Inf: no clamp), got %g", name, box)
	}
	return nil
}

func finiteNonNeg(v float32) bool { return v >= 0 && !math.IsInf(float64(v), 0) }

// Logits2D evaluates the MLP 2-hidden…-K with parameters theta (canonical layout, as
// GridLogits) at the points (x0[i], x1[i]) and returns the logits f(x) row-major [n][K].
// At the centres of a grid it gives GridLogits's values (in float32).
func Logits2D(hidden []int, k int, theta []float32, x0, x1 []float32) ([]float32, error) {
	e, err := newEval2D("Logits2D", hidden, k, theta, x0, x1)
	if err != nil {
		return nil, err
	}
	n := len(x0)
	out := make([]float32, n*k)
	for lo := 0; lo < n; lo += promiseChunk {
		m := min(promiseChunk, n-lo)
		P := e.load(x0, x1, lo, m)
		e.net.forward(e.th, e.x[:2*P], P)
		for p := range m {
			for y := range k {
				out[(lo+p)*k+y] = e.net.f[y*P+p]
			}
		}
	}
	return out, nil
}

// EnergyGrad2D returns, at each point, lse = LSE_y f(x)[y] = log q(x) + log Z (minus the
// energy) and its input gradient (g0, g1) = ∇x LSE_y f(x) = Σ_y softmax(f(x))[y]·∇x f(x)[y],
// the gradient the SGLD sampler follows (mlp2d.inputGrad, the training kernel's pass);
// ‖(g0, g1)‖ is the paper's gradient-norm OOD score (negated there).
func EnergyGrad2D(hidden []int, k int, theta []float32, x0, x1 []float32) (lse, g0, g1 []float32, err error) {
	e, err := newEval2D("EnergyGrad2D", hidden, k, theta, x0, x1)
	if err != nil {
		return nil, nil, nil, err
	}
	n := len(x0)
	lse, g0, g1 = make([]float32, n), make([]float32, n), make([]float32, n)
	for lo := 0; lo < n; lo += promiseChunk {
		m := min(promiseChunk, n-lo)
		P := e.load(x0, x1, lo, m)
		e.net.inputGrad(e.th, e.x[:2*P], e.dx, P, k)
		for p := range m {
			lse[lo+p] = lse32(e.net.f, p, k, P)
		}
		copy(g0[lo:lo+m], e.dx[:m])
		copy(g1[lo:lo+m], e.dx[P:P+m])
	}
	return lse, g0, g1, nil
}

// LogitGrad2D returns, at each point, its class's logit f(x)[y] and the logit's input
// gradient (g0, g1) = ∇x f(x)[y] = ∇x log q(x | y), the model's class-conditional score
// (log q(x | y) = f(x)[y] − log Z_y, and Z_y does not depend on x): the training kernel's
// backward pass from a one-hot output weight. y[i] is point i's class, in [0, K).
func LogitGrad2D(hidden []int, k int, theta []float32, x0, x1 []float32, y []int32) (f, g0, g1 []float32, err error) {
	e, err := newEval2D("LogitGrad2D", hidden, k, theta, x0, x1)
	if err != nil {
		return nil, nil, nil, err
	}
	n := len(x0)
	if len(y) != n {
		return nil, nil, nil, fmt.Errorf("kernel: LogitGrad2D: len(y)=%d != %d points", len(y), n)
	}
	for i, c := range y {
		if c < 0 || int(c) >= k {
			return nil, nil, nil, fmt.Errorf("kernel: LogitGrad2D: class %d of point %d outside [0, %d)", c, i, k)
		}
	}
	f, g0, g1 = make([]float32, n), make([]float32, n), make([]float32, n)
	for lo := 0; lo < n; lo += promiseChunk {
		m := min(promiseChunk, n-lo)
		P := e.load(x0, x1, lo, m)
		e.net.forward(e.th, e.x[:2*P], P)
		s := e.net.s[:k*P]
		clear(s)
		for p := range m {
			c := int(y[lo+p])
			s[c*P+p] = 1
			f[lo+p] = e.net.f[c*P+p]
		}
		e.net.backward(e.th, s, P, false, e.dx)
		copy(g0[lo:lo+m], e.dx[:m])
		copy(g1[lo:lo+m], e.dx[P:P+m])
	}
	return f, g0, g1, nil
}

// PGD2D is the L∞ projected-gradient-descent attack of radius eps on the cross-entropy
// CE(x) = −log softmax(f(x))[y] (Madry et al. 2018, without the random start): from
// x⁰ = x, steps steps of
//
//	x ← clamp_box(proj_eps(x + α·sign(∇x CE(x)))),  α = 2.5·eps/steps (float32),
//
// where proj_eps clamps each coordinate to [x⁰ − eps, x⁰ + eps] (computed in float32, so
// a coordinate may lie up to half an ulp of x⁰ beyond eps) and clamp_box to [−box, box]
// (box = +Inf: no clamp; applied last, so a starting point outside the box is moved into
// it); sign(0) = 0. eps = 0 or steps = 0 returns copies of the points unchanged. y[i] is
// the class of point i, in [0, K).
func PGD2D(hidden []int, k int, theta []float32, x0, x1 []float32, y []int32, eps float32, steps int, box float32) (ax0, ax1 []float32, err error) {
	e, err := newEval2D("PGD2D", hidden, k, theta, x0, x1)
	if err != nil {
		return nil, nil, err
	}
	if len(y) != len(x0) {
		return nil, nil, fmt.Errorf("kernel: PGD2D: len(y)=%d, want len(x0)=%d", len(y), len(x0))
	}
	for i, c := range y {
		if c < 0 || int(c) >= k {
			return nil, nil, fmt.Errorf("kernel: PGD2D: point %d has class %d, want [0, %d)", i, c, k)
		}
	}
	if !finiteNonNeg(eps) || steps < 0 {
		return nil, nil, fmt.Errorf("kernel: PGD2D: need a finite eps >= 0 and steps >= 0, got %g, %d", eps, steps)
	}
	if err := checkBox("PGD2D", box); err != nil {
		return nil, nil, err
	}
	n := len(x0)
	ax0, ax1 = append([]float32(nil), x0...), append([]float32(nil), x1...)
	if eps == 0 || steps == 0 {
		return ax0, ax1, nil
	}
	alpha := 2.5 * eps / float32(steps)
	for lo := 0; lo < n; lo += promiseChunk {
		m := min(promiseChunk, n-lo)
		P := e.load(x0, x1, lo, m)
		for range steps {
			e.ceGrad(y[lo:lo+m], P)
			for c, orig := range [2][]float32{x0[lo : lo+m], x1[lo : lo+m]} {
				xs, gs := e.x[c*P:c*P+m], e.dx[c*P:c*P+m]
				for p, g := range gs {
					v := xs[p]
					switch {
					case g > 0:
						v += alpha
					case g < 0:
						v -= alpha
					}
					v = min(orig[p]+eps, max(orig[p]-eps, v))
					xs[p] = min(box, max(-box, v))
				}
			}
		}
		e.store(ax0, ax1, lo, m, P)
	}
	return ax0, ax1, nil
}

// Purify2D is the deterministic energy descent of JEM's purification defence (no
// noise): steps steps of
//
//	x ← clamp_box(x + lr·∇x LSE_y f(x))
//
// (ascent of log q(x), the SGLD step of the training kernel without its noise, same
// float32 operations), box = +Inf: no clamp. Under a flat energy (theta all zero) the
// gradient is exactly zero and the points come back unchanged (for points in the box).
func Purify2D(hidden []int, k int, theta []float32, x0, x1 []float32, steps int, lr float32, box float32) (px0, px1 []float32, err error) {
	e, err := newEval2D("Purify2D", hidden, k, theta, x0, x1)
	if err != nil {
		return nil, nil, err
	}
	if steps < 0 || !finiteNonNeg(lr) {
		return nil, nil, fmt.Errorf("kernel: Purify2D: need steps >= 0 and a finite lr >= 0, got %d, %g", steps, lr)
	}
	if err := checkBox("Purify2D", box); err != nil {
		return nil, nil, err
	}
	n := len(x0)
	px0, px1 = append([]float32(nil), x0...), append([]float32(nil), x1...)
	if steps == 0 {
		return px0, px1, nil
	}
	for lo := 0; lo < n; lo += promiseChunk {
		m := min(promiseChunk, n-lo)
		P := e.load(x0, x1, lo, m)
		x, dx := e.x[:2*P], e.dx[:2*P]
		for range steps {
			e.net.inputGrad(e.th, x, dx, P, k)
			vScaleAdd(x, dx, lr, x)
			e.clampBox(P, box)
		}
		e.store(px0, px1, lo, m, P)
	}
	return px0, px1, nil
}

// Chains2D runs one SGLD chain from each starting point (x0[i], x1[i]): steps steps of
//
//	x ← clamp_box(x + lr·∇x LSE_y f(x) + std·ε),  ε ~ N(0, I₂),
//
// with the training kernel's float32 operations in its order (the gradient step, then
// the noise, then the clamp; box = +Inf: no clamp). Chain i's normals come from its own
// PCG stream, prob.NewRand(prob.Seed(seed, tagChains, i)), drawn in float64 (ε0 then ε1
// each step) and rounded to float32, so chain i's result depends on the seed, its index
// i and its start only: not on the number or the order of the chains, and not on the build.
func Chains2D(hidden []int, k int, theta []float32, x0, x1 []float32, steps int, lr, std float32, seed uint64, box float32) (cx0, cx1 []float32, err error) {
	e, err := newEval2D("Chains2D", hidden, k, theta, x0, x1)
	if err != nil {
		return nil, nil, err
	}
	if steps < 0 || !finiteNonNeg(lr) || !finiteNonNeg(std) {
		return nil, nil, fmt.Errorf("kernel: Chains2D: need steps >= 0 and finite lr, std >= 0, got %d, %g, %g", steps, lr, std)
	}
	if err := checkBox("Chains2D", box); err != nil {
		return nil, nil, err
	}
	n := len(x0)
	cx0, cx1 = append([]float32(nil), x0...), append([]float32(nil), x1...)
	if steps == 0 {
		return cx0, cx1, nil
	}
	e.noise = make([]float32, 2*promiseChunk)
	rngs := make([]*rand.Rand, promiseChunk)
	for lo := 0; lo < n; lo += promiseChunk {
		m := min(promiseChunk, n-lo)
		P := e.load(x0, x1, lo, m)
		for p := range m {
			rngs[p] = prob.NewRand(prob.Seed(seed, tagChains, uint64(lo+p)))
		}
		x, dx, noise := e.x[:2*P], e.dx[:2*P], e.noise[:2*P]
		clear(noise)
		for range steps {
			e.net.inputGrad(e.th, x, dx, P, k)
			for p, r := range rngs[:m] {
				noise[p] = float32(r.NormFloat64())
				noise[P+p] = float32(r.NormFloat64())
			}
			vScaleAdd(x, dx, lr, x)
			vScaleAdd(x, noise, std, x)
			e.clampBox(P, box)
		}
		e.store(cx0, cx1, lo, m, P)
	}
	return cx0, cx1, nil
}

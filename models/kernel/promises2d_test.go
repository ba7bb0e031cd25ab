package kernel

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/models/prob"
)

// randTheta2D is a random model with non-zero biases: Glorot weights (InitMLP2D) plus
// uniform(−0.5, 0.5) on every parameter, so no symmetry hides a wrong gradient.
func randTheta2D(seed uint64, hidden []int, k int) []float32 {
	th := InitMLP2D(seed, hidden, k)
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := range th {
		th[i] += float32(rng.Float64() - 0.5)
	}
	return th
}

// randPoints2D are n points uniform on [−r, r]².
func randPoints2D(seed uint64, n int, r float64) (x0, x1 []float32) {
	rng := rand.New(rand.NewPCG(seed, 12))
	x0, x1 = make([]float32, n), make([]float32, n)
	for i := range n {
		x0[i] = float32((2*rng.Float64() - 1) * r)
		x1[i] = float32((2*rng.Float64() - 1) * r)
	}
	return x0, x1
}

// trainedGMM2D is a baseline (cross-entropy) model trained briefly on a gmm:3,2 task, and
// that task's draws: a "trained-ish" classifier for the attack tests.
func trainedGMM2D(t testing.TB, hidden []int) (theta, x0, x1 []float32, y []int32) {
	t.Helper()
	runs, _ := gmmRuns(1, 512, hidden, 0.01)
	spec := Spec2D{Hidden: hidden, K: 3, Steps: 300, Batch: 64, Box: 4}
	res, err := Train2D(context.Background(), spec, runs)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Diverged {
		t.Fatal("the baseline diverged")
	}
	return res[0].Theta, runs[0].X0, runs[0].X1, runs[0].Y
}

// ce64 is the float64 cross-entropy LSE f − f[y] of one row of float32 logits.
func ce64(f []float32, y int32) float64 { return lse64(f) - float64(f[y]) }

// fdGrad2D is the central finite-difference gradient, in float64, of fn(row of logits,
// i) at each point, the logits from Logits2D at x ± h (the actual float32 steps).
func fdGrad2D(t *testing.T, hidden []int, k int, theta, x0, x1 []float32, h float32, fn func(f []float32, i int) float64) (g0, g1 []float64) {
	t.Helper()
	n := len(x0)
	// 4 shifted copies of the points: x0+h, x0−h, x1+h, x1−h.
	s0, s1 := make([]float32, 4*n), make([]float32, 4*n)
	for i := range n {
		s0[i], s1[i] = x0[i]+h, x1[i]
		s0[n+i], s1[n+i] = x0[i]-h, x1[i]
		s0[2*n+i], s1[2*n+i] = x0[i], x1[i]+h
		s0[3*n+i], s1[3*n+i] = x0[i], x1[i]-h
	}
	f, err := Logits2D(hidden, k, theta, s0, s1)
	if err != nil {
		t.Fatal(err)
	}
	row := func(j int) []float32 { return f[j*k : (j+1)*k] }
	g0, g1 = make([]float64, n), make([]float64, n)
	for i := range n {
		d0 := float64(s0[i]) - float64(s0[n+i])
		d1 := float64(s1[2*n+i]) - float64(s1[3*n+i])
		g0[i] = (fn(row(i), i) - fn(row(n+i), i)) / d0
		g1[i] = (fn(row(2*n+i), i) - fn(row(3*n+i), i)) / d1
	}
	return g0, g1
}

// promiseModels are the architectures of the gradient tests.
var promiseModels = []struct {
	name   string
	hidden []int
	k      int
}{
	{"linear K=3", nil, 3},
	{"2-8-2", []int{8}, 2},
	{"2-6-5-3", []int{6, 5}, 3},
	{"2-16-16-16-4", []int{16, 16, 16}, 4},
}

// fdTol is the finite-difference tolerance for float32 logits and h = 1e-2: the
// rounding of the logits (~1e-7 relative, over 2h) and the O(h²) truncation.
func fdTol(g float64) float64 { return 1e-3 * (1 + math.Abs(g)) }

// TestEnergyGrad2DFiniteDifferences: the LSE is the float64 LSE of Logits2D's logits, and
// its input gradient matches central finite differences of it.
func TestEnergyGrad2DFiniteDifferences(t *testing.T) {
	for mi, m := range promiseModels {
		t.Run(m.name, func(t *testing.T) {
			theta := randTheta2D(uint64(mi)+1, m.hidden, m.k)
			x0, x1 := randPoints2D(uint64(mi)+100, 200, 3)
			lse, g0, g1, err := EnergyGrad2D(m.hidden, m.k, theta, x0, x1)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Logits2D(m.hidden, m.k, theta, x0, x1)
			if err != nil {
				t.Fatal(err)
			}
			fd0, fd1 := fdGrad2D(t, m.hidden, m.k, theta, x0, x1, 1e-2, func(f []float32, _ int) float64 { return lse64(f) })
			worst := 0.0 // largest error as a share of the tolerance
			defer func() { t.Logf("largest error %.3f of the tolerance", worst) }()
			for i := range x0 {
				if want := lse64(f[i*m.k : (i+1)*m.k]); math.Abs(float64(lse[i])-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("point %d: lse %v, want %v", i, lse[i], want)
				}
				worst = max(worst, math.Abs(float64(g0[i])-fd0[i])/fdTol(fd0[i]), math.Abs(float64(g1[i])-fd1[i])/fdTol(fd1[i]))
				if math.Abs(float64(g0[i])-fd0[i]) > fdTol(fd0[i]) || math.Abs(float64(g1[i])-fd1[i]) > fdTol(fd1[i]) {
					t.Fatalf("point %d: gradient (%v, %v), finite differences (%v, %v)", i, g0[i], g1[i], fd0[i], fd1[i])
				}
			}
		})
	}
}

// TestPGD2DCEGradFiniteDifferences: the cross-entropy input gradient PGD2D follows
// (eval2D.ceGrad) matches central finite differences of the float64 CE of Logits2D's
// logits, over more than one chunk of points.
func TestPGD2DCEGradFiniteDifferences(t *testing.T) {
	for mi, m := range promiseModels {
		t.Run(m.name, func(t *testing.T) {
			theta := randTheta2D(uint64(mi)+1, m.hidden, m.k)
			n := promiseChunk + 77
			x0, x1 := randPoints2D(uint64(mi)+200, n, 3)
			rng := rand.New(rand.NewPCG(uint64(mi), 13))
			y := make([]int32, n)
			for i := range y {
				y[i] = int32(rng.IntN(m.k))
			}
			e, err := newEval2D("test", m.hidden, m.k, theta, x0, x1)
			if err != nil {
				t.Fatal(err)
			}
			g0, g1 := make([]float32, n), make([]float32, n)
			for lo := 0; lo < n; lo += promiseChunk {
				mm := min(promiseChunk, n-lo)
				P := e.load(x0, x1, lo, mm)
				e.ceGrad(y[lo:lo+mm], P)
				copy(g0[lo:], e.dx[:mm])
				copy(g1[lo:], e.dx[P:P+mm])
			}
			fd0, fd1 := fdGrad2D(t, m.hidden, m.k, theta, x0, x1, 1e-2, func(f []float32, i int) float64 { return ce64(f, y[i]) })
			worst := 0.0 // largest error as a share of the tolerance
			defer func() { t.Logf("largest error %.3f of the tolerance", worst) }()
			for i := range n {
				worst = max(worst, math.Abs(float64(g0[i])-fd0[i])/fdTol(fd0[i]), math.Abs(float64(g1[i])-fd1[i])/fdTol(fd1[i]))
				if math.Abs(float64(g0[i])-fd0[i]) > fdTol(fd0[i]) || math.Abs(float64(g1[i])-fd1[i]) > fdTol(fd1[i]) {
					t.Fatalf("point %d (class %d): gradient (%v, %v), finite differences (%v, %v)", i, y[i], g0[i], g1[i], fd0[i], fd1[i])
				}
			}
		})
	}
}

// TestLogits2DMatchesGridLogits: at the centres of a grid (more cells than a chunk)
// Logits2D gives GridLogits's values exactly, and the float64 reference's closely.
func TestLogits2DMatchesGridLogits(t *testing.T) {
	for _, m := range promiseModels {
		t.Run(m.name, func(t *testing.T) {
			theta := randTheta2D(5, m.hidden, m.k)
			g := prob.Grid{G: 37, Box: 3}
			want, err := GridLogits(m.hidden, m.k, theta, g.G, g.Box)
			if err != nil {
				t.Fatal(err)
			}
			c0, c1 := g.Centres()
			x0, x1 := make([]float32, len(c0)), make([]float32, len(c1))
			for i := range c0 {
				x0[i], x1[i] = float32(c0[i]), float32(c1[i])
			}
			got, err := Logits2D(m.hidden, m.k, theta, x0, x1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d logits, want %d", len(got), len(want))
			}
			th := make([]float64, len(theta))
			for i, v := range theta {
				th[i] = float64(v)
			}
			for i := range got {
				if float64(got[i]) != want[i] {
					t.Fatalf("logit %d: %v, GridLogits %v", i, got[i], want[i])
				}
			}
			for c := 0; c < len(x0); c += 17 {
				ref := refLogits2D(th, m.hidden, m.k, float64(x0[c]), float64(x1[c]))
				for y := range m.k {
					if math.Abs(float64(got[c*m.k+y])-ref[y]) > 1e-5*(1+math.Abs(ref[y])) {
						t.Fatalf("cell %d class %d: %v, reference %v", c, y, got[c*m.k+y], ref[y])
					}
				}
			}
		})
	}
}

// TestPromises2DPointwise: a point's result does not depend on the other points of the
// call (a subset at other lane positions gives the same bits), for every function but
// Chains2D (whose noise follows the index; see TestChains2DIndependence).
func TestPromises2DPointwise(t *testing.T) {
	hidden, k := []int{8, 8}, 3
	theta := randTheta2D(9, hidden, k)
	n := promiseChunk + 300
	x0, x1 := randPoints2D(21, n, 3)
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(i % k)
	}
	sub := []int{3, promiseChunk/2 + 7, promiseChunk - 1, promiseChunk, n - 1}
	s0, s1, sy := make([]float32, len(sub)), make([]float32, len(sub)), make([]int32, len(sub))
	for j, i := range sub {
		s0[j], s1[j], sy[j] = x0[i], x1[i], y[i]
	}
	type outFn func(x0, x1 []float32, y []int32) [][]float32
	fns := []struct {
		name string
		per  int // outputs per point in each returned slice
		f    outFn
	}{
		{"Logits2D", k, func(x0, x1 []float32, _ []int32) [][]float32 {
			f, err := Logits2D(hidden, k, theta, x0, x1)
			if err != nil {
				t.Fatal(err)
			}
			return [][]float32{f}
		}},
		{"EnergyGrad2D", 1, func(x0, x1 []float32, _ []int32) [][]float32 {
			l, g0, g1, err := EnergyGrad2D(hidden, k, theta, x0, x1)
			if err != nil {
				t.Fatal(err)
			}
			return [][]float32{l, g0, g1}
		}},
		{"PGD2D", 1, func(x0, x1 []float32, y []int32) [][]float32 {
			a0, a1, err := PGD2D(hidden, k, theta, x0, x1, y, 0.3, 7, 3)
			if err != nil {
				t.Fatal(err)
			}
			return [][]float32{a0, a1}
		}},
		{"Purify2D", 1, func(x0, x1 []float32, _ []int32) [][]float32 {
			p0, p1, err := Purify2D(hidden, k, theta, x0, x1, 7, 0.05, 3)
			if err != nil {
				t.Fatal(err)
			}
			return [][]float32{p0, p1}
		}},
	}
	for _, fn := range fns {
		t.Run(fn.name, func(t *testing.T) {
			all, part := fn.f(x0, x1, y), fn.f(s0, s1, sy)
			for o := range all {
				for j, i := range sub {
					for c := range fn.per {
						a, b := all[o][i*fn.per+c], part[o][j*fn.per+c]
						if math.Float32bits(a) != math.Float32bits(b) {
							t.Fatalf("output %d point %d: %v among %d points, %v among %d", o, i, a, n, b, len(sub))
						}
					}
				}
			}
		})
	}
}

// meanCE is the mean float64 cross-entropy of the model at the points.
func meanCE(t *testing.T, hidden []int, k int, theta, x0, x1 []float32, y []int32) float64 {
	t.Helper()
	f, err := Logits2D(hidden, k, theta, x0, x1)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for i := range y {
		s += ce64(f[i*k:(i+1)*k], y[i])
	}
	return s / float64(len(y))
}

// TestPGD2D: eps = 0 and steps = 0 are the identity; the attacked points stay within eps
// (L∞) of the originals and inside the box; the attack raises the mean cross-entropy
// of a trained classifier, more for a larger radius; it is deterministic.
func TestPGD2D(t *testing.T) {
	hidden := []int{16, 16}
	theta, x0, x1, y := trainedGMM2D(t, hidden)
	// The draws clamped into the box (PGD2D clamps last: a start outside the box may end
	// farther than eps from it), a few moved near and onto its edge so the clamp has work
	// to do.
	const box = 3
	x0, x1 = append([]float32(nil), x0...), append([]float32(nil), x1...)
	for i := range x0 {
		x0[i], x1[i] = min(box, max(-box, x0[i])), min(box, max(-box, x1[i]))
	}
	x0[0], x1[0], x0[1], x1[1], x0[2] = box, -box, 2.95, -2.99, -box
	before := meanCE(t, hidden, 3, theta, x0, x1, y)
	prev := before
	cases := []struct {
		name  string
		eps   float32
		steps int
	}{
		{"eps 0", 0, 10},
		{"steps 0", 0.5, 0},
		{"eps 0.05, 1 step (FGSM-like)", 0.05, 1},
		{"eps 0.1, 10 steps", 0.1, 10},
		{"eps 0.3, 20 steps", 0.3, 20},
		{"eps 1, 20 steps", 1, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a0, a1, err := PGD2D(hidden, 3, theta, x0, x1, y, c.eps, c.steps, box)
			if err != nil {
				t.Fatal(err)
			}
			b0, b1, _ := PGD2D(hidden, 3, theta, x0, x1, y, c.eps, c.steps, box)
			for i := range x0 {
				if math.Float32bits(a0[i]) != math.Float32bits(b0[i]) || math.Float32bits(a1[i]) != math.Float32bits(b1[i]) {
					t.Fatalf("point %d differs between two calls", i)
				}
				if c.eps == 0 || c.steps == 0 {
					if a0[i] != x0[i] || a1[i] != x1[i] {
						t.Fatalf("point %d moved: (%v, %v) → (%v, %v)", i, x0[i], x1[i], a0[i], a1[i])
					}
					continue
				}
				// proj_eps in float32: up to half an ulp of the original beyond eps.
				tol := float64(c.eps) + 1e-6
				if math.Abs(float64(a0[i])-float64(x0[i])) > tol || math.Abs(float64(a1[i])-float64(x1[i])) > tol {
					t.Fatalf("point %d: (%v, %v) → (%v, %v) leaves the eps=%v ball", i, x0[i], x1[i], a0[i], a1[i], c.eps)
				}
				if math.Abs(float64(a0[i])) > box || math.Abs(float64(a1[i])) > box {
					t.Fatalf("point %d: (%v, %v) outside the box", i, a0[i], a1[i])
				}
			}
			after := meanCE(t, hidden, 3, theta, a0, a1, y)
			t.Logf("mean CE %.4f → %.4f", before, after)
			if c.eps == 0 || c.steps == 0 {
				return
			}
			if !(after > before) {
				t.Errorf("mean CE %v after the attack, %v before: want an increase", after, before)
			}
			if !(after >= prev) {
				t.Errorf("mean CE %v at eps=%v below %v at the previous, smaller radius", after, c.eps, prev)
			}
			prev = after
		})
	}
}

// TestPurify2D: with all-zero parameters (a flat energy) the descent is a no-op; on a
// random model a small step raises the mean LSE (log q up to log Z); more steps raise
// it further; the box is respected.
func TestPurify2D(t *testing.T) {
	hidden := []int{8, 8}
	x0, x1 := randPoints2D(31, 300, 2)
	t.Run("flat energy", func(t *testing.T) {
		zero := make([]float32, NumParams2D(hidden, 3))
		p0, p1, err := Purify2D(hidden, 3, zero, x0, x1, 20, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x0 {
			if p0[i] != x0[i] || p1[i] != x1[i] {
				t.Fatalf("point %d moved under a flat energy", i)
			}
		}
	})
	theta := randTheta2D(32, hidden, 3)
	meanLSE := func(a0, a1 []float32) float64 {
		l, _, _, err := EnergyGrad2D(hidden, 3, theta, a0, a1)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for _, v := range l {
			s += float64(v)
		}
		return s / float64(len(l))
	}
	prev := meanLSE(x0, x1)
	for _, steps := range []int{1, 5, 20} {
		t.Run(fmt.Sprintf("%d steps", steps), func(t *testing.T) {
			p0, p1, err := Purify2D(hidden, 3, theta, x0, x1, steps, 0.01, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i := range p0 {
				if math.Abs(float64(p0[i])) > 2 || math.Abs(float64(p1[i])) > 2 {
					t.Fatalf("point %d (%v, %v) outside the box", i, p0[i], p1[i])
				}
			}
			l := meanLSE(p0, p1)
			t.Logf("mean LSE %.5f", l)
			if !(l > prev) {
				t.Errorf("mean LSE %v after %d steps, want above %v", l, steps, prev)
			}
			prev = l
		})
	}
}

// TestChains2DIndependence: chain i's result depends on the seed, i and its start only:
// the same among i+1, 100 and more than a chunk of chains, and on a second call;
// another seed differs; without noise a chain is Purify2D's descent, bit for bit.
func TestChains2DIndependence(t *testing.T) {
	hidden := []int{8, 8}
	theta := randTheta2D(41, hidden, 3)
	n := promiseChunk + 100
	x0, x1 := randPoints2D(42, n, 3)
	run := func(m int, seed uint64, std float32) ([]float32, []float32) {
		c0, c1, err := Chains2D(hidden, 3, theta, x0[:m], x1[:m], 15, 0.05, std, seed, 3)
		if err != nil {
			t.Fatal(err)
		}
		return c0, c1
	}
	all0, all1 := run(n, 7, 0.1)
	again0, again1 := run(n, 7, 0.1)
	hund0, hund1 := run(100, 7, 0.1)
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	for _, i := range []int{0, 1, 37, 99} {
		alone0, alone1 := run(i+1, 7, 0.1)
		if !same(alone0[i], hund0[i]) || !same(alone1[i], hund1[i]) || !same(all0[i], hund0[i]) || !same(all1[i], hund1[i]) {
			t.Errorf("chain %d: (%v, %v) among %d, (%v, %v) among 100, (%v, %v) among %d",
				i, alone0[i], alone1[i], i+1, hund0[i], hund1[i], all0[i], all1[i], n)
		}
	}
	for i := range n {
		if !same(all0[i], again0[i]) || !same(all1[i], again1[i]) {
			t.Fatalf("chain %d differs between two calls", i)
		}
	}
	other0, _ := run(n, 8, 0.1)
	diff := 0
	for i := range n {
		if other0[i] != all0[i] {
			diff++
		}
	}
	if diff < n*9/10 {
		t.Errorf("another seed changed only %d of %d chains", diff, n)
	}
	q0, q1 := run(n, 7, 0)
	p0, p1, err := Purify2D(hidden, 3, theta, x0, x1, 15, 0.05, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if q0[i] != p0[i] || q1[i] != p1[i] {
			t.Fatalf("chain %d without noise (%v, %v), Purify2D (%v, %v)", i, q0[i], q1[i], p0[i], p1[i])
		}
	}
}

// TestChains2DRandomWalk: under a flat energy (theta = 0) and no clamp, a chain is a
// Gaussian random walk: after t steps from 0 its coordinates have mean 0 and variance
// t·std², checked on 4000 chains (8000 coordinates: the variance's relative standard
// error is √(2/8000) ≈ 1.6%; tolerance 8%).
func TestChains2DRandomWalk(t *testing.T) {
	hidden := []int{4}
	zero := make([]float32, NumParams2D(hidden, 2))
	n := 4000
	cases := []struct {
		name  string
		steps int
		std   float32
		box   float32
	}{
		{"50 steps std 0.1 no box", 50, 0.1, float32(math.Inf(1))},
		{"10 steps std 0.5 far box", 10, 0.5, 100},
		{"1 step std 1", 1, 1, float32(math.Inf(1))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c0, c1, err := Chains2D(hidden, 2, zero, make([]float32, n), make([]float32, n), c.steps, 1, c.std, 99, c.box)
			if err != nil {
				t.Fatal(err)
			}
			var s, ss float64
			for _, x := range [][]float32{c0, c1} {
				for _, v := range x {
					s += float64(v)
					ss += float64(v) * float64(v)
				}
			}
			m := float64(2 * n)
			mean := s / m
			v := ss/m - mean*mean
			want := float64(c.steps) * float64(c.std) * float64(c.std)
			t.Logf("mean %.4f variance %.4f, want %.4f", mean, v, want)
			if math.Abs(mean) > 5*math.Sqrt(want/m) {
				t.Errorf("mean %v, want 0 (sd of the mean %v)", mean, math.Sqrt(want/m))
			}
			if math.Abs(v/want-1) > 0.08 {
				t.Errorf("variance %v, want %v", v, want)
			}
		})
	}
}

// TestPromises2DValidation: bad sizes and settings are refused with an error.
func TestPromises2DValidation(t *testing.T) {
	hidden, k := []int{4}, 3
	th := InitMLP2D(1, hidden, k)
	x := []float32{0, 1}
	y := []int32{0, 2}
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	cases := []struct {
		name string
		f    func() error
	}{
		{"Logits2D short theta", func() error { _, err := Logits2D(hidden, k, th[1:], x, x); return err }},
		{"Logits2D K=1", func() error { _, err := Logits2D(hidden, 1, th, x, x); return err }},
		{"Logits2D width 0", func() error { _, err := Logits2D([]int{0}, k, th, x, x); return err }},
		{"Logits2D x lengths", func() error { _, err := Logits2D(hidden, k, th, x, x[:1]); return err }},
		{"EnergyGrad2D x lengths", func() error { _, _, _, err := EnergyGrad2D(hidden, k, th, x[:1], x); return err }},
		{"EnergyGrad2D long theta", func() error {
			_, _, _, err := EnergyGrad2D(hidden, k, append(th, 0), x, x)
			return err
		}},
		{"PGD2D y length", func() error { _, _, err := PGD2D(hidden, k, th, x, x, y[:1], 0.1, 1, 1); return err }},
		{"PGD2D class", func() error { _, _, err := PGD2D(hidden, k, th, x, x, []int32{0, 3}, 0.1, 1, 1); return err }},
		{"PGD2D negative eps", func() error { _, _, err := PGD2D(hidden, k, th, x, x, y, -0.1, 1, 1); return err }},
		{"PGD2D infinite eps", func() error { _, _, err := PGD2D(hidden, k, th, x, x, y, inf, 1, 1); return err }},
		{"PGD2D negative steps", func() error { _, _, err := PGD2D(hidden, k, th, x, x, y, 0.1, -1, 1); return err }},
		{"PGD2D box 0", func() error { _, _, err := PGD2D(hidden, k, th, x, x, y, 0.1, 1, 0); return err }},
		{"PGD2D NaN box", func() error { _, _, err := PGD2D(hidden, k, th, x, x, y, 0.1, 1, nan); return err }},
		{"Purify2D negative lr", func() error { _, _, err := Purify2D(hidden, k, th, x, x, 1, -1, 1); return err }},
		{"Purify2D negative steps", func() error { _, _, err := Purify2D(hidden, k, th, x, x, -1, 1, 1); return err }},
		{"Purify2D negative box", func() error { _, _, err := Purify2D(hidden, k, th, x, x, 1, 1, -1); return err }},
		{"Chains2D NaN std", func() error { _, _, err := Chains2D(hidden, k, th, x, x, 1, 1, nan, 1, 1); return err }},
		{"Chains2D infinite lr", func() error { _, _, err := Chains2D(hidden, k, th, x, x, 1, inf, 1, 1, 1); return err }},
		{"Chains2D box 0", func() error { _, _, err := Chains2D(hidden, k, th, x, x, 1, 1, 1, 1, 0); return err }},
		{"Chains2D theta", func() error { _, _, err := Chains2D(hidden, k, nil, x, x, 1, 1, 1, 1, 1); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.f() == nil {
				t.Error("accepted")
			}
		})
	}
	// No points is fine everywhere.
	if f, err := Logits2D(hidden, k, th, nil, nil); err != nil || len(f) != 0 {
		t.Errorf("Logits2D of no points: %v, %v", f, err)
	}
	if a, _, err := PGD2D(hidden, k, th, nil, nil, nil, 0.1, 3, 1); err != nil || len(a) != 0 {
		t.Errorf("PGD2D of no points: %v, %v", a, err)
	}
	if a, _, err := Chains2D(hidden, k, th, nil, nil, 3, 1, 1, 1, inf); err != nil || len(a) != 0 {
		t.Errorf("Chains2D of no points: %v, %v", a, err)
	}
}

// promisesGolden is hashPromises2D's value, computed once; both builds must give it.
const promisesGolden = 0x2f07186f2e15e220

// hashPromises2D runs every function on a fixture (over more than one chunk) and hashes
// the bits of every output.
func hashPromises2D(t *testing.T) uint64 {
	hidden, k := []int{12, 10}, 3
	theta := randTheta2D(51, hidden, k)
	n := 1024 + 45 // more than one chunk (the fixture predates pointChunk = 256: it stays the same points)
	x0, x1 := randPoints2D(52, n, 3)
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(i % k)
	}
	h := fnv.New64a()
	put := func(a ...[]float32) {
		for _, s := range a {
			for _, v := range s {
				b := math.Float32bits(v)
				h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
			}
		}
	}
	f, err := Logits2D(hidden, k, theta, x0, x1)
	if err != nil {
		t.Fatal(err)
	}
	put(f)
	l, g0, g1, _ := EnergyGrad2D(hidden, k, theta, x0, x1)
	put(l, g0, g1)
	a0, a1, _ := PGD2D(hidden, k, theta, x0, x1, y, 0.25, 10, 3)
	put(a0, a1)
	p0, p1, _ := Purify2D(hidden, k, theta, x0, x1, 10, 0.1, 3)
	put(p0, p1)
	c0, c1, _ := Chains2D(hidden, k, theta, x0, x1, 10, 0.1, 0.05, 3, 3)
	put(c0, c1)
	return h.Sum64()
}

// TestPromises2DGolden: every function's outputs are bit-identical to the golden hash, in
// the portable and in the vector build.
func TestPromises2DGolden(t *testing.T) {
	got := hashPromises2D(t)
	t.Logf("SIMD=%v hash %#x", SIMD, got)
	if got != promisesGolden {
		t.Errorf("hash %#x, want %#x (SIMD=%v)", got, uint64(promisesGolden), SIMD)
	}
}

// BenchmarkPGD2D is the L∞ PGD attack (eps 0.3, 20 steps) on an MLP 2-32-32-3, 4096
// points per iteration, one goroutine: points per second of wall time.
func BenchmarkPGD2D(b *testing.B) {
	hidden, k := []int{32, 32}, 3
	theta := randTheta2D(61, hidden, k)
	n := 4096
	x0, x1 := randPoints2D(62, n, 3)
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(i % k)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, _, err := PGD2D(hidden, k, theta, x0, x1, y, 0.3, 20, 4); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "points/s")
}

package cnn

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Spec
		canon    string
		params   int // at S=8, K=2
		err      string
	}{
		{name: "two-conv", in: "cnn:16,32", want: Spec{Convs: []int{16, 32}, Act: ActSwish}, canon: "cnn:16,32",
			params: (9*16 + 16) + (9*16*32 + 32) + (4*32*2 + 2)},
		{name: "dense", in: "cnn:8,dense:64", want: Spec{Convs: []int{8}, Dense: 64, Act: ActSwish}, canon: "cnn:8,dense:64",
			params: (9*8 + 8) + (16*8*64 + 64) + (64*2 + 2)},
		{name: "tanh", in: "cnn:4,tanh", want: Spec{Convs: []int{4}, Act: ActTanh}, canon: "cnn:4,tanh",
			params: (9*4 + 4) + (16*4*2 + 2)},
		{name: "wrong-family", in: "mlp:16", err: "does not start with"},
		{name: "empty", in: "cnn:", err: "no conv layers"},
		{name: "only-dense", in: "cnn:dense:8", err: "no conv layers"},
		{name: "zero-channels", in: "cnn:0,4", err: "neither a positive"},
		{name: "junk", in: "cnn:4,relu", err: "neither a positive"},
		{name: "empty-field", in: "cnn:4,,8", err: "empty field"},
		{name: "bad-dense", in: "cnn:4,dense:x", err: "dense width"},
		{name: "conv-after-dense", in: "cnn:4,dense:8,16", err: "conv channels come first"},
		{name: "two-acts", in: "cnn:4,tanh,swish", err: "activation given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) error %v, want one containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Convs, tc.want.Convs) || got.Dense != tc.want.Dense || got.Act != tc.want.Act {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if got.String() != tc.canon {
				t.Errorf("String() = %q, want %q", got.String(), tc.canon)
			}
			if n := got.NumParams(8, 2); n != tc.params {
				t.Errorf("NumParams(8, 2) = %d, want %d", n, tc.params)
			}
		})
	}
	sp, _ := Parse("cnn:4,4")
	for _, S := range []int{8, 16, 28} { // 28 → 14 → 7: two poolings fit
		if err := sp.Check(S, 2); err != nil {
			t.Errorf("cnn:4,4 on %d×%d: %v", S, S, err)
		}
	}
	if sp3, _ := Parse("cnn:4,4,4"); sp3.Check(28, 2) == nil {
		t.Error("cnn:4,4,4 on 28×28 must fail (the third pooling meets side 7)")
	}
}

// barRing draws n noisy S×S images: class 0 a horizontal or vertical bar, class 1 a
// square ring, at random places; pixels -1 background, +1 ink, plus N(0, noise²).
func barRing(n, S int, noise float64, seed uint64) Data {
	r := rand.New(rand.NewPCG(seed, 99))
	d := Data{X: make([]float32, n*S*S), Y: make([]int, n), S: S, K: 2}
	for i := range n {
		img := d.X[i*S*S : (i+1)*S*S]
		for k := range img {
			img[k] = -1
		}
		y := r.IntN(2)
		d.Y[i] = y
		if y == 0 {
			at, vertical := r.IntN(S), r.IntN(2) == 1
			for k := range S {
				if vertical {
					img[k*S+at] = 1
				} else {
					img[at*S+k] = 1
				}
			}
		} else {
			size := 3 + r.IntN(S/2-1) // side of the ring
			i0, j0 := r.IntN(S-size+1), r.IntN(S-size+1)
			for k := range size {
				img[(i0)*S+j0+k], img[(i0+size-1)*S+j0+k] = 1, 1
				img[(i0+k)*S+j0], img[(i0+k)*S+j0+size-1] = 1, 1
			}
		}
		for k := range img {
			img[k] += float32(noise * r.NormFloat64())
		}
	}
	return d
}

func accuracy(t *testing.T, p Params, d Data) float64 {
	t.Helper()
	logits, err := Logits(p, d.X, len(d.Y))
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, y := range d.Y {
		row := logits[i*d.K : (i+1)*d.K]
		if slices.Index(row, slices.Max(row)) == y {
			ok++
		}
	}
	return float64(ok) / float64(len(d.Y))
}

func TestUntrainedCE(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		S, K        int
	}{
		{"S8-K2", "cnn:8,16", 8, 2},
		{"S16-K10", "cnn:16,32", 16, 10},
		{"S28-K10-dense", "cnn:8,16,dense:64", 28, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, _ := Parse(tc.model)
			p, err := Init(sp, tc.S, tc.K, 1)
			if err != nil {
				t.Fatal(err)
			}
			n := 64
			d := barRing(n, tc.S, 0.3, 5)
			logits, err := Logits(p, d.X, n)
			if err != nil {
				t.Fatal(err)
			}
			var ce float64
			for i := range n {
				row := logits[i*tc.K : (i+1)*tc.K]
				m := float64(slices.Max(row))
				var s float64
				for _, l := range row {
					s += math.Exp(float64(l) - m)
				}
				ce += m + math.Log(s) - float64(row[i%tc.K])
			}
			ce /= float64(n)
			t.Logf("%s: untrained CE %.4f, log K %.4f", tc.model, ce, math.Log(float64(tc.K)))
			if math.Abs(ce-math.Log(float64(tc.K))) > 0.1 {
				t.Errorf("untrained CE %.4f, want ≈ log K = %.4f", ce, math.Log(float64(tc.K)))
			}
		})
	}
}

// TestTrainBarRing trains on the bar-vs-ring task at S=8 and checks held-out accuracy.
func TestTrainBarRing(t *testing.T) {
	testenv.Slow(t, "trains six CNNs to convergence, 5 s")
	train, test := barRing(512, 8, 0.5, 1), barRing(512, 8, 0.5, 2)
	sp, _ := Parse("cnn:4,8")
	for _, tc := range []struct {
		name   string
		opts   TrainOptions
		minAcc float64
	}{
		{"baseline", TrainOptions{Steps: 300, Batch: 32, LR: 3e-3, Seed: 1}, 0.85},
		{"jem-sgld", TrainOptions{Objective: SGLD{Steps: 5, BufferSize: 1000, L2: 0.1}, Steps: 300, Batch: 32, LR: 3e-3, Seed: 1}, 0.75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, st, err := Train(context.Background(), sp, train, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if st.Diverged {
				t.Fatalf("diverged at step %d", st.DivergedStep)
			}
			acc := accuracy(t, p, test)
			t.Logf("%s: %d steps in %.2fs, final loss %.3f CE %.3f, held-out accuracy %.3f", tc.name, st.Steps, st.Seconds,
				st.Loss[len(st.Loss)-1], st.CE[len(st.CE)-1], acc)
			if acc < tc.minAcc {
				t.Errorf("held-out accuracy %.3f, want >= %.2f (chance 0.5)", acc, tc.minAcc)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	d := barRing(128, 8, 0.5, 3)
	sp, _ := Parse("cnn:3,4")
	for _, tc := range []struct {
		name string
		opts TrainOptions
	}{
		{"baseline", TrainOptions{Steps: 10, Batch: 16, LR: 1e-2}},
		{"jem-sgld", TrainOptions{Objective: SGLD{Steps: 3, BufferSize: 50}, Steps: 5, Batch: 16, LR: 1e-2, DataNoise: 0.03}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(seed uint64) Params {
				o := tc.opts
				o.Seed = seed
				p, st, err := Train(context.Background(), sp, d, o)
				if err != nil || st.Diverged {
					t.Fatal(err, st.Diverged)
				}
				return p
			}
			a, b, c := run(4), run(4), run(5)
			same := func(x, y Params) bool {
				for i := range x.Tensors {
					if !slices.Equal(x.Tensors[i], y.Tensors[i]) {
						return false
					}
				}
				return true
			}
			if !same(a, b) {
				t.Error("two runs with seed 4 differ")
			}
			if same(a, c) {
				t.Error("seeds 4 and 5 gave identical parameters")
			}
		})
	}
}

// TestHandMatchesAutodiff trains a few steps with the hand backward pass and with GoMLX
// autodiff (parameters and SGLD input gradients) and compares the parameters.
func TestHandMatchesAutodiff(t *testing.T) {
	d := barRing(64, 8, 0.5, 4)
	for _, tc := range []struct {
		name, model string
		opts        TrainOptions
	}{
		{"baseline", "cnn:3,4", TrainOptions{Steps: 3, Batch: 16, LR: 1e-2, Seed: 2}},
		{"baseline-dense-tanh", "cnn:3,dense:5,tanh", TrainOptions{Steps: 3, Batch: 16, LR: 1e-2, Seed: 2}},
		{"jem-sgld-l2", "cnn:3,4", TrainOptions{Objective: SGLD{Steps: 4, BufferSize: 40, L2: 0.1}, Steps: 3, Batch: 16, LR: 1e-2, Seed: 2}},
		{"ed", "cnn:3,4", TrainOptions{Objective: ED{M: 3, T: 0.05}, Steps: 3, Batch: 16, LR: 1e-2, Seed: 2, PxWeight: 2}},
		{"nce", "cnn:3,4", TrainOptions{Objective: NCE{Nu: 3}, Steps: 3, Batch: 16, LR: 1e-2, Seed: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, _ := Parse(tc.model)
			hand, _, err := Train(context.Background(), sp, d, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.opts
			o.Autodiff = true
			auto, _, err := Train(context.Background(), sp, d, o)
			if err != nil {
				t.Fatal(err)
			}
			maxD := maxParamDiff(hand, auto)
			t.Logf("max |hand - autodiff| parameter after %d steps: %.2g", tc.opts.Steps, maxD)
			if maxD > 1e-4 {
				t.Errorf("hand and autodiff training differ by %g", maxD)
			}
		})
	}
}

// maxParamDiff is the largest |a − b| over two parameter sets of one spec.
func maxParamDiff(a, b Params) float64 {
	var d float64
	for i := range a.Tensors {
		for j := range a.Tensors[i] {
			d = max(d, math.Abs(float64(a.Tensors[i][j]-b.Tensors[i][j])))
		}
	}
	return d
}

func TestDivergenceReported(t *testing.T) {
	d := barRing(64, 8, 0.5, 6)
	sp, _ := Parse("cnn:3,4")
	p, st, err := Train(context.Background(), sp, d, TrainOptions{Objective: SGLD{Steps: 3, LR: 1e4, BufferSize: 40}, Steps: 40, Batch: 16, LR: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diverged=%v at step %d after %d good steps", st.Diverged, st.DivergedStep, st.Steps)
	if !st.Diverged {
		t.Fatal("absurd learning rates did not diverge")
	}
	for _, w := range p.Tensors {
		for _, v := range w {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatal("returned parameters are not finite")
			}
		}
	}
}

func TestTrainErrors(t *testing.T) {
	d := barRing(8, 8, 0.5, 6)
	sp, _ := Parse("cnn:3")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		sp   Spec
		d    Data
		opts TrainOptions
		err  string
	}{
		{"no-steps", sp, d, TrainOptions{}, "Steps"},
		{"bad-sgld", sp, d, TrainOptions{Steps: 1, Objective: SGLD{BufferSize: -1}}, "SGLD options"},
		{"bad-backend", sp, d, TrainOptions{Steps: 1, Backend: "tpu"}, "unknown backend"},
		{"bad-label", sp, Data{X: d.X[:64], Y: []int{5}, S: 8, K: 2}, TrainOptions{Steps: 1}, "label"},
		{"bad-size", sp, Data{X: d.X[:10], Y: []int{1}, S: 8, K: 2}, TrainOptions{Steps: 1}, "values"},
		{"odd-side", Spec{Convs: []int{2, 2, 2, 2}}, d, TrainOptions{Steps: 1}, "odd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Train(ctx, tc.sp, tc.d, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := Train(cctx, sp, d, TrainOptions{Steps: 5}); err == nil {
		t.Error("cancelled context: no error")
	}
}

package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func newTestTrainer(t testing.TB) *Trainer {
	t.Helper()
	tr, err := NewTrainer("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	if len(a) != len(b) {
		return math.Inf(1)
	}
	return d
}

func TestShapeValidate(t *testing.T) {
	good := Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 10}
	cases := []struct {
		name    string
		mod     func(*Shape)
		wantErr string
	}{
		{"ok linear", func(*Shape) {}, ""},
		{"ok mlp onehot minibatch", func(s *Shape) { s.Model = "mlp:8,4"; s.Encoding = "onehot"; s.BatchSize = 16 }, ""},
		{"zero X", func(s *Shape) { s.XValues = 0 }, "XValues"},
		{"one class", func(s *Shape) { s.Classes = 1 }, "Classes"},
		{"unknown encoding", func(s *Shape) { s.Encoding = "binary" }, "unknown encoding"},
		{"unknown model", func(s *Shape) { s.Model = "cnn" }, "unknown model"},
		{"empty mlp", func(s *Shape) { s.Model = "mlp:" }, "hidden size"},
		{"bad mlp size", func(s *Shape) { s.Model = "mlp:8,0" }, "hidden size"},
		{"zero steps", func(s *Shape) { s.Steps = 0 }, "Steps"},
		{"negative batch", func(s *Shape) { s.BatchSize = -1 }, "BatchSize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := good
			c.mod(&s)
			err := s.Validate()
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%v) = %v, want nil", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Validate(%v) = %v, want error containing %q", s, err, c.wantErr)
			}
		})
	}
}

func TestParseModel(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		err  bool
	}{
		{"linear", nil, false},
		{"mlp:16", []int{16}, false},
		{"mlp:32,16", []int{32, 16}, false},
		{"mlp", nil, true},
		{"mlp:a", nil, true},
		{"mlp:-3", nil, true},
		{"Linear", nil, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseModel(c.in)
			if (err != nil) != c.err {
				t.Fatalf("ParseModel(%q) error = %v, want error %v", c.in, err, c.err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("ParseModel(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestBackendErrors(t *testing.T) {
	if !strings.Contains(strings.Join(Backends(), ","), "go") {
		t.Fatalf("Backends() = %v, want it to contain go", Backends())
	}
	cases := []struct {
		name, config, wantErr string
	}{
		{"unknown", "tpu9000", "unknown backend"},
		{"bad simplego option", "go:warp_speed", "unavailable"},
		{"empty name", ":x", "empty backend name"},
	}
	if !xlaCompiledIn {
		cases = append(cases, struct{ name, config, wantErr string }{
			"xla not compiled in", "xla:cuda", "backend xla not compiled in; build with -tags xla"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewTrainer(c.config)
			if err == nil {
				tr.Close()
				t.Fatalf("NewTrainer(%q) succeeded, want error containing %q", c.config, c.wantErr)
			}
			if tr != nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("NewTrainer(%q) = %v, %v; want nil, error containing %q", c.config, tr, err, c.wantErr)
			}
		})
	}
	tr, err := NewTrainer("go")
	if err != nil {
		t.Fatalf("NewTrainer(go): %v", err)
	}
	tr.Close()
	if _, err := tr.Train(context.Background(), Shape{}, nil); err == nil {
		t.Fatal("Train on a closed Trainer succeeded")
	}
}

func TestTrainBadInput(t *testing.T) {
	tr := newTestTrainer(t)
	shape := Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 3}
	mb := shape
	mb.BatchSize = 2
	ok := Run{Counts: []float64{1, 2, 3, 4}, Samples: []int32{0, 1, 3}, LR: 0.1, Seed: 1}
	cases := []struct {
		name    string
		shape   Shape
		run     Run
		wantErr string
	}{
		{"bad shape", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "rnn", Steps: 3}, ok, "unknown model"},
		{"short counts", shape, Run{Counts: []float64{1, 2, 3}, LR: 0.1}, "len(Counts)"},
		{"negative count", shape, Run{Counts: []float64{1, -2, 3, 4}, LR: 0.1}, "Counts[1]"},
		{"zero counts", shape, Run{Counts: []float64{0, 0, 0, 0}, LR: 0.1}, "sum"},
		{"zero lr", shape, Run{Counts: ok.Counts}, "LR"},
		{"nan px weight", shape, Run{Counts: ok.Counts, LR: 0.1, PxWeight: math.NaN()}, "PxWeight"},
		{"minibatch with neither samples nor counts", mb, Run{LR: 0.1}, "needs Samples"},
		{"sample out of range", mb, Run{Samples: []int32{0, 4}, LR: 0.1}, "out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tr.Train(context.Background(), c.shape, []Run{ok, c.run})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Train error = %v, want error containing %q", err, c.wantErr)
			}
		})
	}
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := tr.Train(ctx, shape, []Run{ok})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Train with cancelled context = %v, want context.Canceled", err)
		}
	})
}

// mixedRuns returns runs over random tables with several learning rates and px weights.
func mixedRuns(shape Shape, n int, seed uint64) []Run {
	rng := rand.New(rand.NewPCG(seed, 99))
	XK := shape.XValues * shape.Classes
	lrs := []float64{0.01, 0.05, 0.2, 0.03, 0.1}
	ws := []float64{0, 1, 0.5, 1, 0, 2}
	runs := make([]Run, n)
	for i := range runs {
		p := randomTable(rng, XK)
		s := drawSamples(rng, p, 60+7*i)
		runs[i] = Run{Counts: countsOf(s, XK), Samples: s, LR: lrs[i%len(lrs)], PxWeight: ws[i%len(ws)], Seed: rng.Uint64()}
	}
	return runs
}

// TestMatchesReference checks the trained logits against a float64 scalar-loop
// implementation of the same maths (the gofused peer, generalised).
func TestMatchesReference(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []struct {
		name   string
		shape  Shape
		noFast bool
	}{
		{"2x2 scalar fast", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 300}, false},
		{"3x3 scalar fast", Shape{XValues: 3, Classes: 3, Encoding: "scalar", Model: "linear", Steps: 120}, false},
		{"3x4 onehot fast", Shape{XValues: 3, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 120}, false},
		{"2x2 scalar autodiff", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 120}, true},
		{"3x4 onehot autodiff", Shape{XValues: 3, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 60}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr.noFast = c.noFast
			defer func() { tr.noFast = false }()
			runs := mixedRuns(c.shape, 6, 3)
			out, err := tr.Train(context.Background(), c.shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range runs {
				want := refLinear(c.shape.XValues, c.shape.Classes, c.shape.Encoding == "onehot", r.Counts,
					c.shape.Steps, r.LR, r.PxWeight, r.Seed)
				if d := maxAbsDiff(out[i].Logits, want); d > 2e-3 || out[i].Diverged {
					t.Errorf("run %d (lr %v, w %v): max |logit - reference| = %.3g (diverged %v)\n got %v\nwant %v",
						i, r.LR, r.PxWeight, d, out[i].Diverged, out[i].Logits, want)
				}
			}
		})
	}
}

// TestBatchedEqualsAlone: a run's result does not depend on its batch-mates.
func TestBatchedEqualsAlone(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []struct {
		name  string
		shape Shape
		n     int
	}{
		{"linear scalar full", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 60}, 6},
		{"linear onehot full", Shape{XValues: 4, Classes: 3, Encoding: "onehot", Model: "linear", Steps: 40}, 5},
		{"linear scalar minibatch", Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 40, BatchSize: 16}, 5},
		{"mlp scalar full", Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "mlp:8,4", Steps: 20}, 5},
		{"mlp onehot minibatch", Shape{XValues: 4, Classes: 3, Encoding: "onehot", Model: "mlp:6", Steps: 20, BatchSize: 10}, 4},
		{"linear 20x4 onehot", Shape{XValues: 20, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 15}, 4},
		{"linear 70x4 onehot (tensor path)", Shape{XValues: 70, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 10}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := mixedRuns(c.shape, c.n, 11)
			batched, err := tr.Train(context.Background(), c.shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range runs {
				alone, err := tr.Train(context.Background(), c.shape, []Run{r})
				if err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(batched[i].Logits, alone[0].Logits); d > 1e-5 {
					t.Errorf("run %d (lr %v, w %v): batched vs alone max |diff| = %.3g", i, r.LR, r.PxWeight, d)
				}
				if math.Abs(batched[i].Loss-alone[0].Loss) > 1e-5 || batched[i].Diverged != alone[0].Diverged {
					t.Errorf("run %d: loss/diverged batched %v/%v alone %v/%v", i,
						batched[i].Loss, batched[i].Diverged, alone[0].Loss, alone[0].Diverged)
				}
			}
		})
	}
}

// TestPathsAgree: the hand-derived split-form fast path and the hand backprop of the
// tensor path train the same as GoMLX autodiff all the way to the parameters.
func TestPathsAgree(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []struct {
		name  string
		shape Shape
		w     float64 // -1: mixed px weights
	}{
		{"2x2 scalar jem", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 50}, 1},
		{"2x2 scalar ce", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 50}, 0},
		{"3x3 scalar mixed", Shape{XValues: 3, Classes: 3, Encoding: "scalar", Model: "linear", Steps: 50}, -1},
		{"3x4 onehot mixed", Shape{XValues: 3, Classes: 4, Encoding: "onehot", Model: "linear", Steps: 50}, -1},
		{"3x2 scalar minibatch mixed", Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 30, BatchSize: 8}, -1},
		{"12x8 onehot mixed", Shape{XValues: 12, Classes: 8, Encoding: "onehot", Model: "linear", Steps: 30}, -1},
		{"mlp scalar mixed", Shape{XValues: 4, Classes: 2, Encoding: "scalar", Model: "mlp:6,5", Steps: 30}, -1},
		{"mlp onehot minibatch", Shape{XValues: 3, Classes: 3, Encoding: "onehot", Model: "mlp:7", Steps: 30, BatchSize: 8}, -1},
	}
	type variant struct {
		name                 string
		noFast, fullAutodiff bool
	}
	variants := []variant{{"default", false, false}, {"tensor hand backprop", true, false}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := mixedRuns(c.shape, 6, 5)
			if c.w >= 0 {
				for i := range runs {
					runs[i].PxWeight = c.w
				}
			}
			train := func(v variant) []Outcome {
				tr.noFast, tr.fullAutodiff = v.noFast, v.fullAutodiff
				defer func() { tr.noFast, tr.fullAutodiff = false, false }()
				out, err := tr.Train(context.Background(), c.shape, runs)
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				return out
			}
			ref := train(variant{"full autodiff", true, true})
			for _, v := range variants {
				got := train(v)
				for i := range runs {
					if d := maxAbsDiff(got[i].Logits, ref[i].Logits); d > 1e-4 {
						t.Errorf("%s run %d: max |logit diff| vs full autodiff = %.3g", v.name, i, d)
					}
					if math.Abs(got[i].Loss-ref[i].Loss) > 1e-5 {
						t.Errorf("%s run %d: loss %v, full autodiff %v", v.name, i, got[i].Loss, ref[i].Loss)
					}
				}
			}
		})
	}
}

// TestStepsNotDivisibleByUnroll: chunking the steps into graph calls does not change
// the result.
func TestStepsNotDivisibleByUnroll(t *testing.T) {
	tr := newTestTrainer(t)
	for _, model := range []string{"linear", "mlp:5"} {
		t.Run(model, func(t *testing.T) {
			shape := Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: model, Steps: 23}
			runs := mixedRuns(shape, 3, 8)
			tr.unrollFast, tr.unrollGeneral = 23, 23
			whole, err := tr.Train(context.Background(), shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			tr.unrollFast, tr.unrollGeneral = 5, 4
			chunked, err := tr.Train(context.Background(), shape, runs)
			tr.unrollFast, tr.unrollGeneral = defaultUnrollFast, defaultUnrollGeneral
			if err != nil {
				t.Fatal(err)
			}
			for i := range runs {
				if d := maxAbsDiff(whole[i].Logits, chunked[i].Logits); d > 1e-6 {
					t.Errorf("run %d: one call vs chunked max |diff| = %.3g", i, d)
				}
			}
		})
	}
}

// TestDivergenceMasking: a run with an absurd learning rate goes non-finite; it is
// flagged and frozen at finite values, and the other runs equal those trained alone.
func TestDivergenceMasking(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []struct {
		name   string
		shape  Shape
		noFast bool
	}{
		{"linear fast", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 60}, false},
		{"linear autodiff", Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 20}, true},
		{"mlp", Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "mlp:4", Steps: 20}, false},
		{"linear minibatch", Shape{XValues: 2, Classes: 3, Encoding: "onehot", Model: "linear", Steps: 40, BatchSize: 8}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr.noFast = c.noFast
			defer func() { tr.noFast = false }()
			runs := mixedRuns(c.shape, 4, 21)
			const bad = 2
			// Adam's step is bounded by about lr, so only an overflow makes it non-finite:
			// 1e300 is +Inf in float32, so the first update is non-finite.
			runs[bad].LR = 1e300
			out, err := tr.Train(context.Background(), c.shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			if !out[bad].Diverged {
				t.Errorf("run with lr 1e38 not flagged as diverged: %+v", out[bad])
			}
			for _, v := range append(out[bad].Logits, out[bad].Loss) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("diverged run not frozen at finite values: %+v", out[bad])
					break
				}
			}
			for i, r := range runs {
				if i == bad {
					continue
				}
				alone, err := tr.Train(context.Background(), c.shape, []Run{r})
				if err != nil {
					t.Fatal(err)
				}
				if out[i].Diverged || maxAbsDiff(out[i].Logits, alone[0].Logits) > 1e-6 {
					t.Errorf("run %d spoiled by the diverged batch-mate: diverged %v, max |diff| %.3g",
						i, out[i].Diverged, maxAbsDiff(out[i].Logits, alone[0].Logits))
				}
			}
		})
	}
}

// TestJEMReachesFloor is the project's control on known truth: on fixed 2x2 tables
// with N=1000 samples, JEM's learned joint is within 2x the sampling floor
// (X*K-1)/(2N) of the truth, and the baseline's is not. The tables have a skewed
// marginal p(x) (0.8/0.2 to 0.9/0.1): cross-entropy never trains log p(x), so the
// baseline's joint keeps the arbitrary marginal of its initialisation and its KL is
// far above the floor; JEM's linear scalar model can represent every 2x2 joint, so it
// converges to the empirical table (checked separately: KL(empirical||q) << floor),
// whose KL to the truth is about floor on average. The samples use a fixed seed.
func TestJEMReachesFloor(t *testing.T) {
	tr := newTestTrainer(t)
	tables := [][]float64{
		{0.40, 0.40, 0.10, 0.10},
		{0.05, 0.15, 0.60, 0.20},
		{0.70, 0.20, 0.05, 0.05},
		{0.10, 0.02, 0.30, 0.58},
	}
	const N = 1000
	floor := float64(4-1) / (2 * N)
	shape := Shape{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 300}
	rng := rand.New(rand.NewPCG(2024, 1))
	var jemRuns, ceRuns []Run
	var emp [][]float64
	for i, p := range tables {
		c := countsOf(drawSamples(rng, p, N), 4)
		e := make([]float64, 4)
		for j := range c {
			e[j] = c[j] / N
		}
		emp = append(emp, e)
		jemRuns = append(jemRuns, Run{Counts: c, LR: 0.05, PxWeight: 1, Seed: uint64(100 + i)})
		ceRuns = append(ceRuns, Run{Counts: c, LR: 0.05, PxWeight: 0, Seed: uint64(100 + i)})
	}
	jem, err := tr.Train(context.Background(), shape, jemRuns)
	if err != nil {
		t.Fatal(err)
	}
	ce, err := tr.Train(context.Background(), shape, ceRuns)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range tables {
		t.Run(fmt.Sprintf("table%d", i), func(t *testing.T) {
			klJEM, klCE, klEmp := klJoint(p, jem[i].Logits), klJoint(p, ce[i].Logits), klJoint(emp[i], jem[i].Logits)
			t.Logf("p=%v floor=%.5f KL jem=%.5f baseline=%.5f KL(emp||jem)=%.2g", p, floor, klJEM, klCE, klEmp)
			if klEmp > 0.2*floor {
				t.Errorf("JEM did not converge to the empirical joint: KL(emp||q) = %.3g > %.3g", klEmp, 0.2*floor)
			}
			if klJEM > 2*floor {
				t.Errorf("JEM KL(p||q) = %.5f > 2*floor = %.5f", klJEM, 2*floor)
			}
			if klCE <= 2*floor {
				t.Errorf("baseline KL(p||q) = %.5f <= 2*floor = %.5f; expected the baseline to miss", klCE, 2*floor)
			}
		})
	}
}

// TestSampler: minibatches are consecutive B-chunks of a per-epoch shuffle seeded by the
// run's seed; every sample appears exactly once per epoch; the last chunk of an epoch
// holds the remainder.
func TestSampler(t *testing.T) {
	samples := make([]int32, 10)
	for i := range samples {
		samples[i] = int32(i)
	}
	cases := []struct {
		name  string
		B     int
		sizes []int // chunk sizes over two epochs
	}{
		{"divisible", 5, []int{5, 5, 5, 5}},
		{"remainder", 4, []int{4, 4, 2, 4, 4, 2}},
		{"batch larger than N", 32, []int{10, 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSampler(samples, 42)
			var epochs [][]int32
			var cur []int32
			total := 0
			for _, want := range c.sizes {
				chunk := s.next(c.B)
				if len(chunk) != want {
					t.Fatalf("chunk size %d, want %d", len(chunk), want)
				}
				cur = append(cur, chunk...)
				total += want
				if total%len(samples) == 0 {
					epochs = append(epochs, cur)
					cur = nil
				}
			}
			for e, ep := range epochs {
				seen := make(map[int32]int)
				for _, v := range ep {
					seen[v]++
				}
				if len(seen) != len(samples) {
					t.Errorf("epoch %d is not a permutation of the samples: %v", e, ep)
				}
			}
			if len(epochs) == 2 && fmt.Sprint(epochs[0]) == fmt.Sprint(epochs[1]) {
				t.Errorf("epochs not reshuffled: %v", epochs[0])
			}
			again := newSampler(samples, 42).next(c.B)
			if fmt.Sprint(again) != fmt.Sprint(epochs[0][:len(again)]) {
				t.Errorf("same seed gave a different order: %v vs %v", again, epochs[0][:len(again)])
			}
			other := newSampler(samples, 43).next(len(samples))
			if fmt.Sprint(other) == fmt.Sprint(epochs[0]) {
				t.Errorf("different seeds gave the same order")
			}
		})
	}
}

// TestConcurrentTrainers: Trainers in separate goroutines (how a caller uses several
// cores) do not interfere and give the same results as one Trainer.
func TestConcurrentTrainers(t *testing.T) {
	shapes := []Shape{
		{XValues: 2, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 40},
		{XValues: 3, Classes: 2, Encoding: "onehot", Model: "mlp:4", Steps: 10},
	}
	want := make([][]Outcome, len(shapes))
	tr := newTestTrainer(t)
	for i, s := range shapes {
		var err error
		if want[i], err = tr.Train(context.Background(), s, mixedRuns(s, 5, 1)); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 3
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			tr, err := NewTrainer("")
			if err != nil {
				errs <- err
				return
			}
			defer tr.Close()
			for k := range len(shapes) * 2 {
				i := (k + w) % len(shapes)
				got, err := tr.Train(context.Background(), shapes[i], mixedRuns(shapes[i], 5, 1))
				if err != nil {
					errs <- err
					return
				}
				for r := range got {
					if d := maxAbsDiff(got[r].Logits, want[i][r].Logits); d != 0 {
						errs <- fmt.Errorf("worker %d shape %d run %d: differs by %.3g", w, i, r, d)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMinibatchRunWithoutSamples: in a minibatch batch, a run without Samples (the
// pipeline's oracle) trains full-batch on its Counts, exactly as in a full-batch shape.
func TestMinibatchRunWithoutSamples(t *testing.T) {
	tr := newTestTrainer(t)
	for _, model := range []string{"linear", "mlp:5"} {
		t.Run(model, func(t *testing.T) {
			full := Shape{XValues: 3, Classes: 2, Encoding: "onehot", Model: model, Steps: 30}
			mb := full
			mb.BatchSize = 8
			runs := mixedRuns(mb, 4, 17)
			oracle := Run{Counts: []float64{0.1, 0.2, 0.05, 0.25, 0.3, 0.1}, LR: 0.05, PxWeight: 1, Seed: 5}
			got, err := tr.Train(context.Background(), mb, append(runs, oracle))
			if err != nil {
				t.Fatal(err)
			}
			want, err := tr.Train(context.Background(), full, []Run{oracle})
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(got[len(runs)].Logits, want[0].Logits); d > 1e-6 {
				t.Errorf("sample-less run in a minibatch batch differs from full batch by %.3g", d)
			}
			if math.Abs(got[len(runs)].Loss-want[0].Loss) > 1e-6 {
				t.Errorf("loss %v, full batch %v", got[len(runs)].Loss, want[0].Loss)
			}
		})
	}
}

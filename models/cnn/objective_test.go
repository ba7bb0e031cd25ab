package cnn

import (
	"context"
	"math"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// contrast is a term written against the contract alone, as a new method would be:
// contrastive divergence with negatives fed from the host (uniform on [-1, 1], drawn
// from the run's host stream) plus graph noise, an own scalar b pulled to 1 by
// (b − 1)², an output (the negatives' mean ℓ) read back after every step, and a
// statistic at the end.
type contrast struct{ noise float64 }

func (contrast) Name() string               { return "contrast" }
func (contrast) GradEvals() int64           { return 1 }
func (contrast) Check(o TrainOptions) error { return nil }
func (c contrast) Begin(r *Run) (Term, error) {
	return &contrastTerm{c: c, r: r, D: r.Data.S * r.Data.S, N: r.Batch}, nil
}

type contrastTerm struct {
	c      contrast
	r      *Run
	N, D   int
	means  []float32
	fed    int
	ownEnd float32
}

func (t *contrastTerm) Own() []float32 { return []float32{0} }

func (t *contrastTerm) Lanes(s *StepGraph) *Node {
	x0 := s.Input(t.N, t.D)
	return Add(x0, MulScalar(s.Normal(t.N, t.D), t.c.noise))
}

func (t *contrastTerm) Loss(s *StepGraph, ld, ln *Node) *Node {
	s.Output(ReduceAllMean(ln))
	b := s.Own[0]
	return Add(Sub(ReduceAllMean(ln), ReduceAllMean(ld)), Square(AddScalar(b, -1)))
}

func (t *contrastTerm) Feed() []*tensors.Tensor {
	t.fed++
	x := make([]float32, t.N*t.D)
	for i := range x {
		x[i] = float32(2*t.r.Host.Float64() - 1)
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, t.N, t.D)}
}

func (t *contrastTerm) After(outs []*tensors.Tensor) {
	t.means = append(t.means, tensors.MustCopyFlatData[float32](outs[0])[0])
}

func (t *contrastTerm) End(own []float32, st *Stats) {
	t.ownEnd = own[0]
	st.MethodStats = map[string]float64{"b": float64(own[0]), "fed": float64(t.fed), "outputs": float64(len(t.means))}
}

// TestObjectiveContract trains a term written against the contract alone (contrast):
// host inputs fed every step, graph draws, an own scalar trained by Adam (b moves
// from 0 toward 1 by about the learning rate a step), outputs read back every step,
// the end's statistic, the term recorded per step, the hand backward pass equal to
// GoMLX autodiff, and equal seeds giving equal parameters.
func TestObjectiveContract(t *testing.T) {
	d := barRing(64, 8, 0.5, 4)
	sp, _ := Parse("cnn:3,4")
	o := TrainOptions{Objective: contrast{noise: 0.1}, Steps: 5, Batch: 16, LR: 1e-2, Seed: 3, PxWeight: 0.5}
	if g := o.GradEvalsPerStep(); g != 2 {
		t.Errorf("GradEvalsPerStep %d, want 2", g)
	}
	hand, st, err := Train(context.Background(), sp, d, o)
	if err != nil {
		t.Fatal(err)
	}
	if st.Steps != 5 || len(st.Term) != 5 || st.MethodStats["fed"] != 5 || st.MethodStats["outputs"] != 5 {
		t.Fatalf("steps %d, terms %d, stats %v", st.Steps, len(st.Term), st.MethodStats)
	}
	// Adam moves b by about lr a step, toward 1.
	if b := st.MethodStats["b"]; !(b > 0.03 && b < 0.07) {
		t.Errorf("own scalar after 5 steps at lr 0.01: %v, want about 0.05", b)
	}
	for i, l := range st.Loss {
		if want := st.CE[i] + 0.5*st.Term[i]; math.Abs(float64(l-want)) > 1e-5 {
			t.Errorf("step %d: loss %v, want ce + w·term = %v", i+1, l, want)
		}
	}
	o.Autodiff = true
	auto, _, err := Train(context.Background(), sp, d, o)
	if err != nil {
		t.Fatal(err)
	}
	if maxD := maxParamDiff(hand, auto); maxD > 1e-4 {
		t.Errorf("hand and autodiff training differ by %g", maxD)
	}
	o.Autodiff = false
	again, _, err := Train(context.Background(), sp, d, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range hand.Tensors {
		if !slices.Equal(hand.Tensors[i], again.Tensors[i]) {
			t.Fatal("equal seeds gave different parameters")
		}
	}
}

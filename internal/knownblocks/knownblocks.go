// Package knownblocks is the block tasks' known-answer setting the recipes' tests share
// (the pattern of kernel's TestAdditiveExactJEMFits): a block task of a seed, its exact
// draws, the additive model of 8-unit blocks, its exact joint KL on a 16×16 grid per
// block, and training it (or the joint MLP) with a method's objective.
package knownblocks

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// Hidden are the additive model's per-block widths.
var Hidden = []int{8}

// Task is a block task, its grid and its draws X (n×2B row-major) with classes Y.
type Task struct {
	Spec  prob.BlocksSpec
	Task  prob.BlocksTask
	Grid  prob.Grid
	truth prob.BlocksTruth
	X     []float32
	Y     []int32
}

// New draws the task spec (e.g. blocks:2,gmm:2,1) of seed taskSeed and n draws of
// seed drawSeed.
func New(t testing.TB, spec string, taskSeed, drawSeed uint64, n int) *Task {
	t.Helper()
	s, err := prob.ParseBlocksSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	b := &Task{Spec: s, Task: s.Draw(taskSeed), Grid: prob.Grid{G: 16, Box: 5}}
	xs, ys := b.Task.Sample(drawSeed, n)
	b.X, b.Y = make([]float32, len(xs)), ys
	for i, v := range xs {
		b.X[i] = float32(v)
	}
	return b
}

// KL is the exact joint KL(truth ‖ model) of the additive model theta.
func (b *Task) KL(t testing.TB, theta []float32) float64 {
	kl, _ := b.KLZ(t, theta)
	return kl
}

// KLZ is the exact joint KL(truth ‖ model) of the additive model theta and the model's
// log Z on the box (its cells' Riemann sum: BlocksLogZ plus B·log of a cell's area).
func (b *Task) KLZ(t testing.TB, theta []float32) (kl, logZ float64) {
	t.Helper()
	if b.truth.Cond == nil {
		b.truth = b.Task.Truth(b.Grid)
	}
	l, err := kernel.AdditiveCellLogits(Hidden, b.Spec.Inner.K, b.Spec.B, theta, b.Grid.G, b.Grid.Box)
	if err != nil {
		t.Fatal(err)
	}
	lz, _ := prob.BlocksLogZ(l, b.Spec.Inner.K)
	h := 2 * b.Grid.Box / float64(b.Grid.G)
	return prob.BlocksJointKL(b.truth, l), lz + float64(b.Spec.B)*math.Log(h*h)
}

// TrainAdditive trains the additive model steps steps from theta with s's objective, or
// exact JEM (s.Exact), or the cross-entropy alone (batch 512, Adam at 0.03, PxWeight 1,
// seed 2); a divergence fails the test.
func (b *Task) TrainAdditive(t testing.TB, s kernel.Spec2D, theta []float32, steps int) kernel.Result2D {
	t.Helper()
	s.Hidden, s.K, s.Steps, s.Batch, s.Box, s.PxWeight = Hidden, b.Spec.Inner.K, steps, 512, 5, 1
	out, err := kernel.TrainAdditive(context.Background(), kernel.SpecAdditive{Spec2D: s, Blocks: b.Spec.B},
		[]kernel.RunAdditive{{Seed: 2, Theta: theta, LR: 0.03, X: b.X, Y: b.Y}})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Diverged {
		t.Fatalf("diverged at step %d", out[0].DivergedStep)
	}
	return out[0]
}

// TrainJoint trains the joint MLP 32-32 on all D coordinates of the draws steps steps
// with the objective obj (batch 256, Adam at 0.01, PxWeight 1, seed 2).
func (b *Task) TrainJoint(t testing.TB, obj func() kernel.Objective, steps int) kernel.Result2D {
	t.Helper()
	hidden, D := []int{32, 32}, 2*b.Spec.B
	s := kernel.SpecJoint{Spec2D: kernel.Spec2D{Hidden: hidden, K: b.Spec.Inner.K, Steps: steps, Batch: 256, Box: 5, PxWeight: 1, Objective: obj}, Dim: D}
	out, err := kernel.TrainJoint(context.Background(), s,
		[]kernel.RunAdditive{{Seed: 2, Theta: kernel.InitJoint(1, hidden, b.Spec.Inner.K, D), LR: 0.01, X: b.X, Y: b.Y}})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

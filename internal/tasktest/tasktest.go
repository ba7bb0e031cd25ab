// Package tasktest runs a point's tasks through its kind's source in one block, as the
// stages do but in-process, for the kinds' tests.
package tasktest

import (
	"context"
	"testing"

	"github.com/jemcheck/jemcheck/tasks"
)

// Run checks the point, opens its kind's source (closed when the test ends), and draws,
// trains and evaluates every task of the point in one block; any error fails the test.
func Run(t testing.TB, p tasks.Point, o tasks.Options) (tasks.Block, tasks.TrainedBlock, tasks.ResultBlock, tasks.LearnedBlock) {
	t.Helper()
	ctx := context.Background()
	b, tb, src := train(t, p, o)
	rb, lb, err := src.Evaluate(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	return b, tb, rb, lb
}

// Train is Run without the evaluation: the block and its trained runs.
func Train(t testing.TB, p tasks.Point, o tasks.Options) (tasks.Block, tasks.TrainedBlock) {
	t.Helper()
	b, tb, _ := train(t, p, o)
	return b, tb
}

func train(t testing.TB, p tasks.Point, o tasks.Options) (tasks.Block, tasks.TrainedBlock, tasks.Source) {
	t.Helper()
	ctx := context.Background()
	k := tasks.MustOf(p.Task)
	if err := k.Check(ctx, o, p); err != nil {
		t.Fatal(err)
	}
	src, err := k.Open(ctx, tasks.Env{Options: o}, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	b := tasks.Block{PointID: p.ID}
	for i := range p.Tables {
		id, truth, err := src.Truth(int64(i))
		if err != nil {
			t.Fatal(err)
		}
		b.IDs, b.P = append(b.IDs, id), append(b.P, truth...)
	}
	if err := src.Sample(ctx, &b, nil, ""); err != nil {
		t.Fatal(err)
	}
	tb, err := src.Train(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	return b, tb, src
}

package plane

import (
	"context"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// runPoint draws, trains and evaluates every task of a 2-D point in one block with
// its kind's source, as the stages do, and returns the block's result rows.
func runPoint(t *testing.T, p tasks.Point, o tasks.Options) []schemas.ResultRow {
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
	defer src.Close()
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
	rb, _, err := src.Evaluate(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	return rb.Rows
}

package bits

import (
	"context"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/tasks"
)

// A task's truth rides with its first method's run only (the writer does not read it,
// the report takes it from that run): each element carried on would copy it, 2^21
// cells at D = 20.
func TestEvaluateTruthOnce(t *testing.T) {
	p := point("bits:5,2")
	ctx := context.Background()
	o := tasks.Options{Seed: 3, TrainBatch: 64, ReportTables: 3}
	src, err := Kind{}.Open(ctx, tasks.Env{Options: o}, p)
	if err != nil {
		t.Fatal(err)
	}
	b := tasks.Block{PointID: p.ID, IDs: []int64{0, 1}}
	for i := range 2 {
		_, truth, _ := src.Truth(int64(i))
		b.P = append(b.P, truth...)
	}
	tb, err := src.Train(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	_, lb, err := src.Evaluate(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	m := len(p.Methods)
	for r, l := range lb.Runs {
		if len(l.Logits) != p.XValues*p.Classes || len(l.Q) != len(l.Logits) {
			t.Errorf("run %d: %d logits, %d q", r, len(l.Logits), len(l.Q))
		}
		_, truth, _ := src.Truth(int64(r / m))
		switch {
		case r%m == 0 && !slices.Equal(l.P, truth):
			t.Errorf("run %d (%s), the task's first: truth not carried", r, l.Method)
		case r%m != 0 && l.P != nil:
			t.Errorf("run %d (%s): carries the truth again", r, l.Method)
		}
	}
}

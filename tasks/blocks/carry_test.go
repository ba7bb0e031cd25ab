package blocks

import (
	"context"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"testing"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestBlockWithoutTruth: above tasks.MaxCells cells a task a block carries no truth;
// Train, Evaluate and WriteTruth draw it again from the task's seed and give the rows
// a carried block gives, bit for bit.
func TestBlockWithoutTruth(t *testing.T) {
	testenv.Slow(t, "two block runs of 2^16 cells a block, 6 s")
	p := point(t, "blocks:8,gmm:3,2", "baseline", "jem")
	p.GridCells, p.Steps, p.Tables = 64, 10, 1
	p.Resolve()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if (Kind{}).CarriesTruth(p) {
		t.Fatalf("a %d-cell point carries its truth", p.XValues*p.Classes)
	}
	ctx := context.Background()
	o := tasks.Options{Seed: 5, TrainBatch: 64, ReportTables: 1}
	src, err := Kind{}.Open(ctx, tasks.Env{Options: o}, p)
	if err != nil {
		t.Fatal(err)
	}
	_, truth, err := src.Truth(0)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[bool][]float64{}
	for _, carry := range []bool{true, false} {
		b := tasks.Block{PointID: p.ID, IDs: []int64{0}}
		if carry {
			b.P = truth
		}
		tb, err := src.Train(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		rb, lb, err := src.Evaluate(ctx, tb)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rb.Rows {
			rows[carry] = append(rows[carry], r.KLJoint, r.KLMarginal, r.KLConditional, r.Accuracy, r.LogZIS)
			if len(lb.Runs[i].P) != len(truth) {
				t.Errorf("carry=%v: the report's task's learned joint has %d truth cells, want %d", carry, len(lb.Runs[i].P), len(truth))
			}
		}
	}
	for i := range rows[true] {
		if rows[true][i] != rows[false][i] {
			t.Fatalf("value %d: %v with the truth carried, %v drawn again", i, rows[true][i], rows[false][i])
		}
	}
}

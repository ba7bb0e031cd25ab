package bits

import (
	"context"
	"testing"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestBlockWithoutTruth: above tasks.MaxCells cells a block carries no truth and its
// runs no logits; Evaluate draws both again and gives the rows a carried block gives.
func TestBlockWithoutTruth(t *testing.T) {
	p := point("bits:16,2")
	p.Methods = []string{"baseline", "pcd"}
	p.Steps, p.Tables = 20, 1
	if (Kind{}).CarriesTruth(p) {
		t.Fatal("a 2^16·2-cell point carries its truth")
	}
	ctx := context.Background()
	o := tasks.Options{Seed: 5, TrainBatch: 64}
	src, _ := Kind{}.Open(ctx, tasks.Env{Options: o}, p)
	_, truth, _ := src.Truth(0)
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
		if tb.Runs[0].Logits != nil {
			t.Fatalf("carry=%v: the trained run carries its logits", carry)
		}
		rb, _, err := src.Evaluate(ctx, tb)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rb.Rows {
			rows[carry] = append(rows[carry], r.KLJoint, r.KLMarginal, r.Accuracy, r.AUROCPx)
		}
	}
	for i := range rows[true] {
		if rows[true][i] != rows[false][i] {
			t.Fatalf("value %d: %v with the truth carried, %v drawn again", i, rows[true][i], rows[false][i])
		}
	}
}

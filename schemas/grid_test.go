package schemas

import (
	"reflect"
	"testing"
)

// TestGridColumns: a grid written into a result row reads back the same, but for the
// baseline's px weight, which the row carries as 0.
func TestGridColumns(t *testing.T) {
	g := Grid{XValues: 8, Classes: 4, Encoding: "onehot", Generator: "dirichlet:0.5", Samples: 300, Model: "mlp:16,16",
		LR: 0.01, Steps: 500, BatchSize: 64, Replicate: 3, PxWeight: 0.5,
		Task: "gmm:3,2", GridCells: 32, Box: 3.5, TrainGrid: 16, SGLDPreset: "langevin", SGLDLR: 0.01, SGLDStd: 0.2,
		SGLDSteps: 60, SGLDClamp: true, BufferSize: 500, ReinitFreq: 0.1, ChainSteps: 3, Proposal: "neighbour"}
	tests := []struct {
		name string
		px   float64
		want Grid
	}{
		{"jem run", g.PxWeight, g},
		{"baseline run", 0, func() Grid { b := g; b.PxWeight = 0; return b }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r ResultRow
			g.SetColumns(&r, tt.px)
			if got := GridOf(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("GridOf(SetColumns) = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestGridAxes: every axis has a distinct key and a label, and tells two points apart
// that differ only in its field (size: in x_values; the others: in their AxisDef's
// field).
func TestGridAxes(t *testing.T) {
	base := DefaultGrid()
	other := map[string]func(g *Grid){"size": func(g *Grid) { g.XValues = 8 }}
	for _, a := range AxisDefs {
		if a.Label != "" {
			other[a.ReportKey()] = func(g *Grid) { a.Field.Set(g, otherValue(a.Field.Default())) }
		}
	}
	seen := map[string]bool{}
	for _, ax := range GridAxes() {
		if seen[ax.Key] {
			t.Errorf("axis %q repeated", ax.Key)
		}
		seen[ax.Key] = true
		t.Run(ax.Key, func(t *testing.T) {
			change, ok := other[ax.Key]
			switch {
			case ax.Label == "":
				t.Fatalf("axis %q: unlabelled", ax.Key)
			case !ok:
				t.Fatalf("axis %q: no case in this test", ax.Key)
			}
			g := base
			change(&g)
			if a, b := ax.Value(&base), ax.Value(&g); a == b {
				t.Errorf("axis %q: the same value %+v for different points", ax.Key, a)
			}
		})
	}
	if len(seen) != len(other) {
		t.Errorf("%d axes, %d cases", len(seen), len(other))
	}
}

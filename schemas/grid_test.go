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
// that differ only in its field.
func TestGridAxes(t *testing.T) {
	base := Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear",
		LR: 0.05, Steps: 300, PxWeight: 1, Task: "table", GridCells: 64, Box: 4, TrainGrid: 32, SGLDPreset: "official",
		SGLDLR: 1, SGLDSteps: 20, BufferSize: 10000, ReinitFreq: 0.05, ChainSteps: 5, Proposal: "uniform"}
	other := map[string]func(g *Grid){
		"size":        func(g *Grid) { g.XValues = 8 },
		"samples":     func(g *Grid) { g.Samples = 30 },
		"lr":          func(g *Grid) { g.LR = 0.5 },
		"steps":       func(g *Grid) { g.Steps = 30 },
		"batch_size":  func(g *Grid) { g.BatchSize = 10 },
		"model":       func(g *Grid) { g.Model = "mlp:8" },
		"encoding":    func(g *Grid) { g.Encoding = "onehot" },
		"generator":   func(g *Grid) { g.Generator = "dirichlet:1" },
		"px_weight":   func(g *Grid) { g.PxWeight = 0.5 },
		"task":        func(g *Grid) { g.Task = "moons:0.1" },
		"grid":        func(g *Grid) { g.GridCells = 32 },
		"box":         func(g *Grid) { g.Box = 3 },
		"train_grid":  func(g *Grid) { g.TrainGrid = 16 },
		"sgld_preset": func(g *Grid) { g.SGLDPreset = "langevin" },
		"sgld_lr":     func(g *Grid) { g.SGLDLR = 0.1 },
		"sgld_std":    func(g *Grid) { g.SGLDStd = 0.1 },
		"sgld_steps":  func(g *Grid) { g.SGLDSteps = 5 },
		"sgld_clamp":  func(g *Grid) { g.SGLDClamp = true },
		"buffer_size": func(g *Grid) { g.BufferSize = 100 },
		"reinit_freq": func(g *Grid) { g.ReinitFreq = 0.5 },
		"chain_steps": func(g *Grid) { g.ChainSteps = 1 },
		"proposal":    func(g *Grid) { g.Proposal = "neighbour" },
	}
	seen := map[string]bool{}
	for _, ax := range GridAxes() {
		if seen[ax.Key] || ax.Label == "" {
			t.Errorf("axis %q: repeated or unlabelled", ax.Key)
		}
		seen[ax.Key] = true
		change, ok := other[ax.Key]
		if !ok {
			t.Errorf("axis %q: no case in this test", ax.Key)
			continue
		}
		g := base
		change(&g)
		if a, b := ax.Value(&base), ax.Value(&g); a == b {
			t.Errorf("axis %q: the same value %+v for different points", ax.Key, a)
		}
	}
	if len(seen) != len(other) {
		t.Errorf("%d axes, %d cases", len(seen), len(other))
	}
}

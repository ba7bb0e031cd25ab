package all

import (
	"context"
	"testing"

	"github.com/jemcheck/jemcheck/internal/allocs"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// perRunCeilings are the allocation ceilings of one kind's per-run paths: the marginal
// allocations per task of generating its truth (Source.Truth) and drawing its data
// (Sample), and per run of training (Train) and evaluating (Evaluate) it, measured by
// allocs.PerUnit over two block sizes, so what a block allocates once cancels out.
type perRunCeilings struct{ generate, sample, train, evaluate float64 }

// TestAllocsPerRun guards every kind's per-run paths by allocation counts, not by
// time: each ceiling is the count the code measured when it was set (issue 41, after
// the per-run method-options reflection was taken out; the same in the AVX-512 and the
// portable build), times 1.25, plus 2. With that reflection put back (AxisDef.Key
// deriving its key from reflect.VisibleFields on every look-up, the options encoded
// per run) evaluate measured 960, 918, 3,501 and 811 allocations a run on the four
// cases: every kind fails. The test logs what it measures (go test -v), to set a
// ceiling after a deliberate change: the Z-free divergences (a model's scores and logits
// at 2,000 draws a run) raised 2-D evaluate to 253 and blocks evaluate to 135.5, whose
// ceilings were set again by the same rule, as was bits train when binary tables took
// the held-out selection (each check's exact held-out NLL and joint KL by enumeration:
// 225.3 a run), and table evaluate when a run's row was written in place and its Trained
// no longer escaped to the heap through the grid's field getters (19.3 → 18.3 a run). Train and evaluate are measured over one
// call a block size (after testing.AllocsPerRun's warm-up call): the counts are the
// code's, not the machine's, and one call gives what two and three gave (277 and 258 for 2-D
// train and evaluate, 515.8 and 122.2–122.6 for blocks) at 40% of the time. The measures
// beyond the exact KL run on a point's first Options.MeasureTasks tasks (a constant a
// point, as a block's own allocations are): here on task 0 alone, which both block sizes
// hold, so they cancel and the ceilings guard the per-run path (the adapted
// importance-sampling estimate on a block task's measured runs allocates about 7,000
// times a run: the chains' and the proposal's working arrays, every call's logits).
func TestAllocsPerRun(t *testing.T) {
	tests := []struct {
		name   string
		p      tasks.Point
		lo, hi int // block sizes (tasks) measured
		max    perRunCeilings
		// dataOnly: only generate and sample are measured (images: a run's training and
		// evaluation are GoMLX graph executions and AIS, whose allocations are the
		// executor's, and cost seconds a run).
		dataOnly bool
	}{
		{"table 2x2", tasks.Point{Grid: schemas.Grid{Task: "table", XValues: 2, Classes: 2, Encoding: "scalar",
			Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 20, PxWeight: 1},
			Methods: []string{"baseline", "jem", "oracle"}}, 64, 256, perRunCeilings{generate: 5, sample: 6, train: 12, evaluate: 25}, false},
		{"gmm 2-D", tasks.Point{Grid: schemas.Grid{Task: "gmm:2,2", Samples: 200, Model: "mlp:8", LR: 0.01,
			Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 16, Box: 5, TrainGrid: 16},
			Methods: []string{"baseline", "jem"}}, 2, 6, perRunCeilings{generate: 17, sample: 2, train: 370, evaluate: 318}, false},
		{"bits 5-D", tasks.Point{Grid: schemas.Grid{Task: "bits:5,3", Components: 2, Samples: 200, Model: "mlp:8",
			LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1, BufferSize: 100, ReinitFreq: 0.05, ChainSteps: 2, Proposal: "gwg"},
			Methods: []string{"baseline", "jem", "pcd"}}, 2, 6, perRunCeilings{generate: 15, sample: 2, train: 284, evaluate: 27}, false},
		{"blocks 4-D", tasks.Point{Grid: schemas.Grid{Task: "blocks:2,gmm:2,2", Samples: 200, Model: "additive:8", LR: 0.01,
			Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 16, Box: 5, TrainGrid: 16},
			Methods: []string{"baseline", "jem"}}, 2, 6, perRunCeilings{generate: 44, sample: 2, train: 646, evaluate: 171}, false},
		{"images 8x8", tasks.Point{Grid: schemas.Grid{Task: "images:8,2", Samples: 200, Model: "cnn:8,16", LR: 0.001, Steps: 10, BatchSize: 32, PxWeight: 1},
			Methods: []string{"baseline"}},
			2, 6, perRunCeilings{generate: 158, sample: 2}, true},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.Tables = tt.hi
			p.Resolve()
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			o := tasks.Options{Seed: 7, Out: "mem://", TrainBatch: 4096, MeasureTasks: 1}
			o.Resolve([]tasks.Point{p})
			src, err := tasks.MustOf(p.Task).Open(ctx, tasks.Env{Options: o}, p)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer src.Close()
			blocks := map[int]tasks.Block{tt.lo: drawBlock(t, src, p, tt.lo), tt.hi: drawBlock(t, src, p, tt.hi)}
			trained := map[int]tasks.TrainedBlock{}
			for n, b := range blocks {
				if tt.dataOnly {
					break
				}
				tb, err := src.Train(ctx, b)
				if err != nil {
					t.Fatalf("Train: %v", err)
				}
				trained[n] = tb
			}
			m := float64(len(p.Methods))
			got := perRunCeilings{
				generate: allocs.PerUnit(3, tt.lo, tt.hi, func(n int) {
					for i := range n {
						_, _, _ = src.Truth(int64(i))
					}
				}),
				sample: allocs.PerUnit(3, tt.lo, tt.hi, func(n int) {
					b := blocks[n]
					b.Counts = nil
					_ = src.Sample(ctx, &b, nil, "")
				}),
			}
			if !tt.dataOnly {
				got.train = allocs.PerUnit(1, tt.lo, tt.hi, func(n int) { _, _ = src.Train(ctx, blocks[n]) }) / m
				got.evaluate = allocs.PerUnit(1, tt.lo, tt.hi, func(n int) { _, _, _ = src.Evaluate(ctx, trained[n]) }) / m
			}
			t.Logf("allocations: per task generate %.1f, sample %.1f; per run train %.1f, evaluate %.1f",
				got.generate, got.sample, got.train, got.evaluate)
			for _, c := range []struct {
				what      string
				got, ceil float64
			}{{"generate (per task)", got.generate, tt.max.generate}, {"sample (per task)", got.sample, tt.max.sample},
				{"train (per run)", got.train, tt.max.train}, {"evaluate (per run)", got.evaluate, tt.max.evaluate}} {
				if tt.dataOnly && (c.what == "train (per run)" || c.what == "evaluate (per run)") {
					continue
				}
				if c.got > c.ceil {
					t.Errorf("%s allocates %.1f times, over its ceiling %.0f: a per-run path allocates what it does not write (reflection, a map, an encoder per run?); see issue 41", c.what, c.got, c.ceil)
				}
			}
		})
	}
}

package all

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestKnownAnswer is every kind's known-answer test through the Kind and Source
// interfaces alone: a valid point of the kind resolves and validates; its tasks' truth
// is a distribution on the evaluation support; a model whose logits are the truth's
// log-probabilities gets joint, marginal and conditional KL 0 and the Bayes accuracy,
// and the uniform model gets KL(p‖uniform) = log C − H(p) exactly; the seeds are
// stable and do not depend on the axes a sweep varies around a task (N, steps).
func TestKnownAnswer(t *testing.T) {
	tests := []struct {
		name string
		kind string
		p    tasks.Point
	}{
		{"2x3 table", methods.KindTable, tasks.Point{Grid: schemas.Grid{Task: "table", XValues: 2, Classes: 3, Encoding: "onehot",
			Generator: "dirichlet:0.5", Samples: 100, Model: "linear", LR: 0.05, Steps: 10, PxWeight: 1}, Tables: 5,
			Methods: []string{"baseline", "jem", "oracle"}}},
		{"gmm 2-D task", methods.KindPlane, tasks.Point{Grid: schemas.Grid{Task: "gmm:2,2", Samples: 200, Model: "mlp:8", LR: 0.01,
			Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 16, Box: 5, TrainGrid: 16}, Tables: 3,
			Methods: []string{"baseline", "jem"}}},
		{"moons 2-D task", methods.KindPlane, tasks.Point{Grid: schemas.Grid{Task: "moons:0.2", Samples: 200, Model: "mlp:8", LR: 0.01,
			Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 32, Box: 5, TrainGrid: 32}, Tables: 2,
			Methods: []string{"jem"}}},
		{"binary 5-D task", methods.KindBits, tasks.Point{Grid: schemas.Grid{Task: "bits:5,3", Components: 2, Samples: 200, Model: "mlp:8",
			LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1, BufferSize: 100, ReinitFreq: 0.05, ChainSteps: 2, Proposal: "gwg",
			Recipe: schemas.Recipe{EDNegatives: 4, EDT: 0.1, EDW: 1}}, Tables: 3,
			Methods: []string{"baseline", "jem", "pcd", "ed"}}},
		{"one-block task", methods.KindBlocks, tasks.Point{Grid: schemas.Grid{Task: "blocks:1,gmm:2,2", Samples: 200, Model: "additive:8", LR: 0.01,
			Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 16, Box: 5, TrainGrid: 16}, Tables: 2,
			Methods: []string{"baseline", "jem"}}},
		{"three-block task", methods.KindBlocks, tasks.Point{Grid: schemas.Grid{Task: "blocks:3,moons:0.2", Samples: 200, Model: "mlp:8", LR: 0.01,
			Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 24, Box: 6, TrainGrid: 24}, Tables: 2,
			Methods: []string{"jem"}}},
	}
	// Cases whose support is a product (block tasks of B ≥ 2: the model's logits add over
	// the blocks), so that the all-zero model is uniform on the product, not on the X·K
	// cells, and its KL is not log C − H(p).
	product := map[string]bool{"three-block task": true}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.Resolve()
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			k := tasks.MustOf(p.Task)
			if k.Name() != tt.kind {
				t.Fatalf("kind %s, want %s", k.Name(), tt.kind)
			}
			o := tasks.Options{Seed: 7, Out: "mem://", TrainBatch: 64, ReportTables: 0}
			if err := k.Check(ctx, o, p); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if s := k.Seed(7, p, 1); s != k.Seed(7, p, 1) || s == k.Seed(7, p, 2) {
				t.Errorf("Seed is not a stable function of the ordinal")
			}
			q := p
			q.Samples, q.Steps = 3*p.Samples, 2*p.Steps
			if k.Seed(7, p, 1) != k.Seed(7, q, 1) {
				t.Errorf("Seed depends on N or the steps: a sweep over them would not be paired")
			}
			src, err := k.Open(ctx, tasks.Env{Options: o}, p)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer src.Close()
			c := p.XValues * p.Classes
			b := tasks.Block{PointID: p.ID, IDs: make([]int64, p.Tables)}
			for i := range p.Tables {
				id, truth, err := src.Truth(int64(i))
				if err != nil {
					t.Fatalf("Truth(%d): %v", i, err)
				}
				if len(truth) != c {
					t.Fatalf("Truth(%d) has %d cells, want X·K = %d", i, len(truth), c)
				}
				if s := sum(truth); math.Abs(s-1) > 1e-9 || slices.Min(truth) < 0 {
					t.Fatalf("Truth(%d) sums to %v (min %v), want a distribution", i, s, slices.Min(truth))
				}
				b.IDs[i] = id
				b.P = append(b.P, truth...)
			}
			if err := src.Sample(ctx, &b, nil, ""); err != nil {
				t.Fatalf("Sample: %v", err)
			}
			m := len(p.Methods)
			models := []string{"truth", "uniform"}
			if product[tt.name] {
				models = models[:1]
			}
			for _, model := range models {
				tb := tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
				for r := range tb.Runs {
					truth := b.P[(r/m)*c : (r/m+1)*c]
					logits := make([]float64, c)
					for i, v := range truth {
						if model == "truth" {
							logits[i] = math.Log(v)
						}
					}
					tb.Runs[r] = tasks.TrainedRun{Logits: logits, BufferInBox: math.NaN(), BufferTVTruth: math.NaN(),
						BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN()}
				}
				rb, lb, err := src.Evaluate(ctx, tb)
				if err != nil {
					t.Fatalf("Evaluate: %v", err)
				}
				if len(rb.Rows) != len(tb.Runs) || len(lb.Runs) != len(tb.Runs) {
					t.Fatalf("Evaluate gave %d rows and %d learned joints for %d runs", len(rb.Rows), len(lb.Runs), len(tb.Runs))
				}
				for r, row := range rb.Rows {
					truth := b.P[(r/m)*c : (r/m+1)*c]
					want := 0.0
					if model == "uniform" {
						want = math.Log(float64(c)) - entropy(truth)
					}
					if math.Abs(row.KLJoint-want) > 1e-9 || (model == "truth" && (math.Abs(row.KLMarginal) > 1e-9 || math.Abs(row.KLConditional) > 1e-9)) {
						t.Errorf("%s model, run %s: KL joint %v (want %v), marginal %v, conditional %v", model, row.RunID, row.KLJoint, want, row.KLMarginal, row.KLConditional)
					}
					if model == "truth" && math.Abs(row.Accuracy-row.BayesAccuracy) > 1e-12 {
						t.Errorf("run %s: accuracy %v, want the Bayes accuracy %v", row.RunID, row.Accuracy, row.BayesAccuracy)
					}
					if row.Diverged || row.Nonfinite {
						t.Errorf("run %s flagged diverged %v nonfinite %v", row.RunID, row.Diverged, row.Nonfinite)
					}
				}
			}
		})
	}
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, v := range xs {
		s += v
	}
	return s
}

func entropy(p []float64) float64 {
	h := 0.0
	for _, v := range p {
		if v > 0 {
			h -= v * math.Log(v)
		}
	}
	return h
}

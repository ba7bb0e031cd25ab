package all

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// conformanceTask is a small task of each kind the conformance test trains every
// method on: the kind's defaults, then these.
var conformanceTask = map[string]func(g *schemas.Grid){
	methods.KindTable: func(g *schemas.Grid) {
		g.Task, g.XValues, g.Classes, g.Encoding, g.Generator, g.Model = "table", 4, 3, "onehot", "dirichlet:0.5", "linear"
	},
	methods.KindPlane: func(g *schemas.Grid) {
		g.Task, g.Model, g.GridCells, g.Box, g.TrainGrid = "gmm:2,2", "mlp:8", 16, 5, 16
	},
	methods.KindBits: func(g *schemas.Grid) { g.Task, g.Components, g.Model = "bits:5,3", 2, "mlp:8" },
	methods.KindBlocks: func(g *schemas.Grid) {
		g.Task, g.Model, g.GridCells, g.Box, g.TrainGrid = "blocks:3,gmm:2,2", "additive:8", 16, 5, 16
	},
	"images": func(g *schemas.Grid) { g.Task, g.Model = "images:8,2", "cnn:4,8" },
	// The images kind's MFA model trains every method of the block tasks (their
	// objectives in D = 64 coordinates); sgld clamps its chains to the box (at its
	// defaults, unclamped steps of size 1 on the MFA's gradients, of order r/ψ ~ 10²,
	// diverge at the first step: a finding of the board, not a conformance failure).
	imagesMFA: func(g *schemas.Grid) { g.Task, g.Model, g.SGLDClamp = "images:8,2", "mfa:2,1", true },
}

// imagesMFA is the conformance key of the images kind's MFA model, claimed by every
// method that claims the block tasks.
const imagesMFA = "images-mfa"

// TestConformance runs every registered method on every kind it claims (Method.Kinds),
// through the Kind and Source interfaces alone, at each method's default options: the
// point validates, every run trains, and every run's row names the method and has a
// finite joint KL where the kind measures one exactly, or a finite conditional KL
// (images: slow, behind testenv.Slow). A method is one package plus its import in methods/all: registering it
// puts it here. A kind without a task here fails the test (add one).
func TestConformance(t *testing.T) {
	for _, m := range methods.Table {
		if m.External {
			continue
		}
		claims := m.Kinds
		if slices.Contains(claims, methods.KindBlocks) {
			claims = append(slices.Clone(claims), imagesMFA)
		}
		for _, kind := range claims {
			t.Run(m.Name+"/"+kind, func(t *testing.T) {
				switch kind {
				case "images":
					testenv.Slow(t, "images: the CNN trains for ~25 s a method on the pure-Go backend")
				case imagesMFA: // the default suite trains the MFA model in tasks/images (TestMFATrainEvaluate)
					testenv.Slow(t, "images-mfa: every block-task method on the MFA model, ~5 s in all")
				}
				rb := runKind(t, kind, m.Name)
				for _, r := range rb.Rows {
					measured := r.KLJoint
					if kind == "images" { // no exact joint: the conditional KL over exact draws
						measured = r.KLConditional
					}
					if r.Method != m.Name || math.IsNaN(measured) || math.IsInf(measured, 0) {
						t.Errorf("run %s: method %q, kl_joint %v, kl_conditional %v (diverged %v)", r.RunID, r.Method, r.KLJoint, r.KLConditional, r.Diverged)
					}
				}
			})
		}
	}
}

// runKind trains and evaluates the named methods on the small task of kind (the kind's
// defaults, then conformanceTask's: 2 tasks, 20 steps) through the Kind and Source
// interfaces alone, and returns the result rows; any error fails the test.
func runKind(t *testing.T, kind string, ms ...string) schemas.ResultBlock {
	t.Helper()
	ctx := context.Background()
	set, ok := conformanceTask[kind]
	if !ok {
		t.Fatalf("no conformance task of kind %s", kind)
	}
	p := tasks.Point{Grid: schemas.DefaultGrid()}
	set(&p.Grid)
	p.Defaults(func(string) bool { return false }) // the kind's defaults, then the small task's
	set(&p.Grid)
	p.Samples, p.Steps, p.BatchSize, p.Tables, p.Methods = 200, 20, 32, 2, ms
	p.Resolve()
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// MeasureTasks 1: the first task's runs get the measures beyond the exact KL
	// (2-D: the sampler's distribution, 2,000 chains of 500 moves a run), the
	// second's do not: both kinds of row, at half the measuring.
	o := tasks.Options{Seed: 11, Out: "mem://", TrainBatch: 4096, MeasureTasks: 1}
	o.Resolve([]tasks.Point{p})
	src, err := tasks.MustOf(p.Task).Open(ctx, tasks.Env{Options: o}, p)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer src.Close()
	tb, err := src.Train(ctx, drawBlock(t, src, p, p.Tables))
	if err != nil {
		t.Fatalf("Train: %v", err)
	}
	rb, _, err := src.Evaluate(ctx, tb)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if len(rb.Rows) != p.Tables*len(ms) {
		t.Fatalf("%d rows, want %d", len(rb.Rows), p.Tables*len(ms))
	}
	return rb
}

// drawBlock is a block of point p's first n tasks from src: their truths and datasets.
func drawBlock(t *testing.T, src tasks.Source, p tasks.Point, n int) tasks.Block {
	t.Helper()
	b := tasks.Block{PointID: p.ID, IDs: make([]int64, n)}
	for i := range n {
		id, truth, err := src.Truth(int64(i))
		if err != nil {
			t.Fatalf("Truth(%d): %v", i, err)
		}
		b.IDs[i] = id
		b.P = append(b.P, truth...)
	}
	if err := src.Sample(context.Background(), &b, nil, ""); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	return b
}

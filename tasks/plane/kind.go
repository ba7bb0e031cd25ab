package plane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() { tasks.Register(Kind{}) }

// Kind is the kind of continuous 2-D tasks (see the package's doc).
type Kind struct{}

// Name is methods.KindPlane.
func (Kind) Name() string { return methods.KindPlane }

// Owns the 2-D tasks: "gmm:K,C", "moons:SIGMA", "circles:SIGMA" (any arguments:
// Validate reports bad ones) and "file".
func (Kind) Owns(task string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(task), ":")
	return task == tasks.TaskFile || slices.Contains(prob.TaskKinds2D, name)
}

// Noun names tasks.
func (Kind) Noun() string { return "tasks" }

// About is the report's sentence on the kind.
func (Kind) About() string {
	return "Continuous 2-D densities (Gaussian mixtures, moons, circles) with classes; every model is evaluated by its exact mass on each cell of a grid over the box, where the truth's cell masses are exact too, so every KL is exact on the grid."
}

// Axes only 2-D tasks read: the grid's and the promises' (run-wide options).
func (Kind) Axes() []string {
	return []string{"grid", "box", "train_grid", "eval_every", "select", "holdout", "ood", "attack_eps", "purify_steps", "purify_lr", "measure_tasks", "sampler_chains"}
}

// Defaults sets the 2-D defaults (taskDefaults2D) of the axes the user did not set.
func (Kind) Defaults(p *tasks.Point, given func(string) bool) {
	for _, d := range taskDefaults2D {
		if !given(d.Axis) {
			d.set(p)
		}
	}
	if !given("tables") {
		p.Tables = DefaultTasks
	}
	if !given("methods") { // the registry's defaults for 2-D tasks (the paper's sampler)
		for _, m := range methods.DefaultFor(methods.KindPlane) {
			if !slices.Contains(p.Methods, m) {
				p.Methods = append(p.Methods, m)
			}
		}
	}
}

// DefaultTasks is the number of tasks of a 2-D point when the user did not say.
const DefaultTasks = 100

// Resolve sets XValues = Grid² and Classes = the task's K (for "file" the launcher
// sets Classes from the file); no encoding or generator.
func (Kind) Resolve(p *tasks.Point) {
	p.Encoding, p.Generator, p.Components = "", "", 0
	if p.Task != tasks.TaskFile {
		if spec, err := prob.ParseTaskSpec(p.Task); err == nil {
			p.Task, p.Classes = spec.String(), spec.K
		}
	}
	if p.GridCells > 0 && p.GridCells <= MaxGrid {
		p.XValues = p.GridCells * p.GridCells
	}
}

// Rule: the samplers are judged against exact jem.
func (Kind) Rule(tasks.Point) verdict.Rule { return verdict.Samplers }

// Dimension: a 2-D task's x is a point of the plane.
func (Kind) Dimension(tasks.Point) int { return 2 }

// Family is the task itself: a 2-D task has its one dimension.
func (Kind) Family(p tasks.Point) string { return p.Task }

// Seed identifies a task by its spec, replicate and ordinal, not the grid, box or N.
func (Kind) Seed(runSeed uint64, p tasks.Point, o int64) uint64 {
	return prob.Seed(runSeed, tagTask, prob.SeedString(p.Task), uint64(p.Replicate), uint64(o))
}

// MaxBlockTasks caps a 2-D block: a 2-D run costs seconds, not microseconds, and a
// block carries each task's grid joint, so small blocks keep the workers busy and the
// elements light.
const MaxBlockTasks = 16

// BlockSize is at most MaxBlockTasks tasks.
func (Kind) BlockSize(p tasks.Point, trainBatch int) int64 {
	return int64(max(1, min(MaxBlockTasks, trainBatch/max(1, len(p.Methods)))))
}

// Check refuses, before anything runs, a point with a task its box does not hold or
// its grids do not resolve (checkTasks), reading the user's tasks if any.
func (Kind) Check(ctx context.Context, o tasks.Options, p tasks.Point) error {
	var ts []prob.Task2D
	var ids []int64
	if p.Task == tasks.TaskFile {
		var err error
		if ts, ids, err = schemas.ReadTasks(ctx, o.TasksFrom); err != nil {
			return fmt.Errorf("tasks_from: %w", err)
		}
	}
	return checkTasks(p, o.Seed, ts, ids)
}

// Limits checks the backend (the fused kernels only) and the limits of a 2-D point (see Limits): its draws per task and per
// block, held in memory whatever the options, its curve points, the float32 range of
// its sampler's options and the promises' options at this point.
func (Kind) Limits(o tasks.Options, p tasks.Point, local bool) error {
	if err := o.CheckBackend(p, true); err != nil {
		return err
	}
	n := int64(p.Samples)
	if lim := tasks.Pick(local, tasks.MaxHeldSamplesLocal, tasks.MaxHeldSamples); n > lim {
		return fmt.Errorf("samples: %d draws per task is over %s of %d (a 2-D task's draws are held in memory, about 85 bytes a draw; %s)",
			p.Samples, tasks.LimitName(local), lim, tasks.Lift(local, "use fewer --samples"))
	}
	nt := min(Kind{}.BlockSize(p, o.TrainBatch), int64(max(p.Tables, 1)))
	if lim := tasks.Pick(local, tasks.MaxBlockDraws2DLocal, tasks.MaxBlockDraws2D); tasks.SatMul(n, nt) > lim {
		return fmt.Errorf("samples: a 2-D block trains %d tasks together and holds their %s draws (%d per task) in memory, over %s of %s "+
			"(pass --train_batch=%d or less: a block has train_batch/methods tasks)",
			nt, tasks.Count(tasks.SatMul(n, nt)), p.Samples, tasks.LimitName(local), tasks.Count(lim), max(lim/n, 1)*int64(max(len(p.Methods), 1)))
	}
	if e := int64(o.EvalEvery); e > 0 && int64(p.Steps)/e > tasks.MaxCurvePoints {
		return fmt.Errorf("eval_every: %d steps with the exact KL every %d is %d curve points per run, over the limit of %d (pass --eval_every=%d or more, or 0 for no curves)",
			p.Steps, e, int64(p.Steps)/e, tasks.MaxCurvePoints, (int64(p.Steps)+tasks.MaxCurvePoints-1)/tasks.MaxCurvePoints)
	}

	return checkPromisePoint(o, p)
}

// source is one 2-D point's tasks.
type source struct {
	env   tasks.Env
	p     tasks.Point
	tasks *taskSource
}

// evalCache is the held-out and OOD draws of the task being evaluated (a block's runs
// come task by task), one per worker of Evaluate.
type evalCache struct {
	eval *taskEval
	of   int64
}

// Open opens a 2-D point's source.
func (Kind) Open(ctx context.Context, env tasks.Env, p tasks.Point) (tasks.Source, error) {
	ts, err := newTaskSource(ctx, p, env.Options.TasksFrom)
	if err != nil {
		return nil, err
	}
	return &source{env: env, p: p, tasks: ts}, nil
}

// Truth is the task's joint on the evaluation grid.
func (s *source) Truth(o int64) (int64, []float64, error) {
	task, id, err := s.tasks.task(s.env.Options.Seed, s.p, o)
	if err != nil {
		return 0, nil, err
	}
	truth, err := truth2D(s.p, task, id)
	return id, truth, err
}

// Sample writes the block's draws (task_id, x0, x1, y, heldout), task by task in ordinal
// order, each task's N draws in draw order (as training sees them; heldout 1 on the
// draws the protocol holds out, tasks.Options.HeldOut); the draws are a function of the
// task's seed, drawn again where used.
func (s *source) Sample(ctx context.Context, b *tasks.Block, bucket *blob.Bucket, key string) error {
	if bucket == nil {
		return nil
	}
	p := s.p
	return schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.SampleRow2D) error) error {
		for i := range b.Len() {
			t := b.Table(p, i)
			task, _, err := s.tasks.task(s.env.Options.Seed, p, t.Ordinal)
			if err != nil {
				return err
			}
			x0, x1, y := draws2D(s.env.Options.Seed, t, task)
			rows := make([]schemas.SampleRow2D, len(y))
			for j := range y {
				rows[j] = schemas.SampleRow2D{TaskID: t.ID, X0: float64(x0[j]), X1: float64(x1[j]), Y: int64(y[j]),
					Heldout: s.env.Options.HeldOut(j, len(y))}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
}

// TruthPath is where a 2-D point's truth on the grid goes: truth.parquet for
// single-point runs, truth/point-NNNN.parquet when a sweep has several points.
func TruthPath(pointID int64, multiPoint bool) string {
	return tasks.PointFile("truth", pointID, multiPoint)
}

// WriteTruth writes the point's truth on its grid (task_id, cell, x0, x1, y, p), task by
// task in ordinal order.
func (s *source) WriteTruth(ctx context.Context, bucket *blob.Bucket, blocks []tasks.Block, multiPoint bool) (string, error) {
	p := s.p
	key := TruthPath(p.ID, multiPoint)
	g, k := evalGrid(p), p.Classes
	err := schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.TruthRow) error) error {
		rows := make([]schemas.TruthRow, 0, p.XValues*k)
		for _, b := range blocks {
			for i := range b.Len() {
				t := b.Table(p, i)
				rows = rows[:0]
				for c := range g.Cells() {
					x0, x1 := g.Centre(c/g.G), g.Centre(c%g.G)
					for y := range k {
						rows = append(rows, schemas.TruthRow{TaskID: t.ID, Cell: int64(c), X0: x0, X1: x1, Y: int64(y), P: t.P[c*k+y]})
					}
				}
				if err := write(rows); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return key, err
}

// Evaluate measures every run (tasks.EvaluateRun) on the grid joint, with no error
// split (NoSplit), and the promises on the task's held-out draws.
func (s *source) Evaluate(_ context.Context, tb tasks.TrainedBlock) (tasks.ResultBlock, tasks.LearnedBlock, error) {
	p := s.p
	rb := tasks.ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := tasks.LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]tasks.Learned, len(tb.Runs))}
	// The block's tasks are spread over the cores: a task's runs share its references
	// and draws, and depend on no other task, so the rows do not depend on how.
	m := len(p.Methods)
	err := tasks.SpreadTasks(tb.Block.Len(), 1, func(lo, hi int) error { return s.evaluateRuns(tb, lo*m, hi*m, &rb, &lb) })
	return rb, lb, err
}

// evaluateRuns measures runs lo..hi-1 of a block (whole tasks) into rb and lb.
func (s *source) evaluateRuns(tb tasks.TrainedBlock, lo, hi int, rb *tasks.ResultBlock, lb *tasks.LearnedBlock) error {
	p := s.p
	var refs *tasks.Refs
	cache := evalCache{of: -1}
	for r := lo; r < hi; r++ {
		t := tb.Trained(p, r)
		sd := takeSamplerDist(&t.Run) // before EvaluateRun writes the rest of Stats to method_stats
		if r%len(p.Methods) == 0 {
			refs = tasks.GridRefs(t.Job.Dataset.Table.P, p.XValues, p.Classes)
		}
		row, l := tasks.EvaluateRun(t, refs)
		tasks.NoSplit(&row)
		sd.set(&row)
		l.G, l.Box, l.Task = p.GridCells, p.Box, p.Task
		if err := s.promises(&cache, &row, &l, t); err != nil {
			return err
		}
		rb.Rows[r], lb.Runs[r] = row, l
	}
	return nil
}

// promises fills a run's promise columns (the task's held-out and OOD draws are drawn
// once per task, for its first method) and keeps the sampler's buffer for the report's
// runs only.
func (s *source) promises(c *evalCache, row *schemas.ResultRow, l *tasks.Learned, t tasks.Trained) error {
	d, p, o := t.Job.Dataset, s.p, s.env.Options
	if c.eval == nil || c.of != d.Table.Ordinal {
		task, _, err := s.tasks.task(o.Seed, p, d.Table.Ordinal)
		if err != nil {
			return err
		}
		c.eval, c.of = newTaskEval(o.Seed, o, p, d.Table, task, s.tasks.other(o.Seed, p, d.Table.Ordinal)), d.Table.Ordinal
	}
	report := d.Table.Ordinal < int64(o.ReportTables)
	if !report {
		l.Buffer = nil
	}
	if t.Run.Theta == nil || row.Diverged || row.Nonfinite {
		return nil
	}
	frames, err := promises2D(row, o, p, c.eval, t.Run.Theta, d.Table.P, t.Run.Buffer, o.Measures(d.Table.Ordinal), report, tasks.TrainSeed(o.Seed, d.Table, t.Job.Method))
	l.Frames = frames
	if len(frames) > 0 {
		l.FrameSteps = FrameSteps
	}
	return err
}

// Close: a 2-D source holds nothing to release.
func (s *source) Close() error { return nil }

package blocks

import (
	"context"
	"fmt"
	"math"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// MCDraws is the number of exact draws of a task's grid truth its Monte Carlo measures
// average over (the same draws for every method of the task).
const MCDraws = 20000

// source is one block point's tasks.
type source struct {
	env  tasks.Env
	p    tasks.Point
	spec prob.BlocksSpec
}

// Open opens a block point's source.
func (Kind) Open(_ context.Context, env tasks.Env, p tasks.Point) (tasks.Source, error) {
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return nil, err
	}
	return &source{env: env, p: p, spec: spec}, nil
}

// Close: a block source holds nothing to release.
func (s *source) Close() error { return nil }

// task is the task of ordinal o.
func (s *source) task(o int64) prob.BlocksTask {
	return s.spec.Draw(tasks.TableSeed(s.env.Options.Seed, tasks.Table{Point: s.p, Ordinal: o}))
}

// Truth is the task's truth on the grid in the kind's table layout
// (prob.BlocksTruth.Table), or an error when the box holds none of a block's mass.
func (s *source) Truth(o int64) (int64, []float64, error) {
	kernel.ClearUpper()
	t, g := s.task(o), evalGrid(s.p)
	for b, bt := range t.Blocks {
		if m := bt.BoxMass(g); !(m > 0) {
			return 0, nil, fmt.Errorf("task %d block %d (%s): the box [−%g, %g]² holds %.3g of its mass; use a larger --box", o, b, bt, s.p.Box, s.p.Box, m)
		}
	}
	return o, t.Truth(g).Table(), nil
}

// table is task t's truth table (Truth): the block's, or, for a point whose blocks
// carry none (CarriesTruth), drawn again from the task's seed.
func (s *source) table(t tasks.Table) []float64 {
	if len(t.P) > 0 {
		return t.P
	}
	kernel.ClearUpper()
	return s.task(t.Ordinal).Truth(evalGrid(s.p)).Table()
}

// CarriesTruth: a block carries its tasks' truth tables up to tasks.MaxCells cells a
// task; above (a D = 64 task's is 393,216 cells, 3 MB), the truth is drawn again from
// the task's seed where used (Train, Evaluate, WriteTruth), so a run's memory does not
// grow with its tasks (as binary tables).
func (Kind) CarriesTruth(p tasks.Point) bool { return p.XValues*p.Classes <= tasks.MaxCells }

// draws are a task's N draws (the dataset of table t) in float32, N×2B, and classes.
func (s *source) draws(t tasks.Table, task prob.BlocksTask) ([]float32, []int32) {
	x, y := task.Sample(tasks.SampleSeed(s.env.Options.Seed, t), s.p.Samples)
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out, y
}

// SampleRow is one block of one draw of a block task: the rows of a block point's
// samples/*.parquet (draw i of the task has B rows, one per block, with its class and
// its held-out marker: 1 on the draws the protocol holds out, tasks.Options.HeldOut).
type SampleRow struct {
	TaskID  int64   `parquet:"task_id" json:"task_id"`
	Draw    int64   `parquet:"draw" json:"draw"`
	Block   int64   `parquet:"block" json:"block"`
	X0      float64 `parquet:"x0" json:"x0"`
	X1      float64 `parquet:"x1" json:"x1"`
	Y       int64   `parquet:"y" json:"y"`
	Heldout int64   `parquet:"heldout" json:"heldout"`
}

// LaterColumns: samples written before the held-out marker existed read as all 0.
func (*SampleRow) LaterColumns() []string { return []string{"heldout"} }

// Sample writes the block's draws (task_id, draw, block, x0, x1, y), task by task in
// ordinal order, each task's draws in draw order (as training sees them); the draws are
// a function of the task's seed, drawn again where used.
func (s *source) Sample(ctx context.Context, b *tasks.Block, bucket *blob.Bucket, key string) error {
	if bucket == nil {
		return nil
	}
	p, B := s.p, s.spec.B
	return schemas.WriteParquetStream(ctx, bucket, key, func(write func([]SampleRow) error) error {
		for i := range b.Len() {
			t := b.Table(p, i)
			x, y := s.task(t.Ordinal).Sample(tasks.SampleSeed(s.env.Options.Seed, t), p.Samples)
			rows := make([]SampleRow, 0, len(y)*B)
			for j := range y {
				for bb := range B {
					rows = append(rows, SampleRow{TaskID: t.ID, Draw: int64(j), Block: int64(bb),
						X0: x[(j*B+bb)*2], X1: x[(j*B+bb)*2+1], Y: int64(y[j]), Heldout: s.env.Options.HeldOut(j, len(y))})
				}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteTruth writes the point's truth (task_id, cell, x0, x1, y, p) in the kind's table
// layout: cell = b·G² + c is block b's grid cell c (centred at (x0, x1) in the block's
// plane), p its entry of prob.BlocksTruth.Table: π(y)^{1/B}·P_b(c|y)/(B·S).
func (s *source) WriteTruth(ctx context.Context, bucket *blob.Bucket, blocks []tasks.Block, multiPoint bool) (string, error) {
	p := s.p
	key := tasks.PointFile("truth", p.ID, multiPoint)
	g, k := evalGrid(p), p.Classes
	n := g.Cells()
	err := schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.TruthRow) error) error {
		rows := make([]schemas.TruthRow, 0, p.XValues*k)
		for _, b := range blocks {
			for i := range b.Len() {
				t := b.Table(p, i)
				t.P = s.table(t)
				rows = rows[:0]
				for x := range p.XValues {
					c := x % n
					x0, x1 := g.Centre(c/g.G), g.Centre(c%g.G)
					for y := range k {
						rows = append(rows, schemas.TruthRow{TaskID: t.ID, Cell: int64(x), X0: x0, X1: x1, Y: int64(y), P: t.P[x*k+y]})
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

// Train trains every run of a block of tasks: one kernel.TrainAdditive call per method,
// the block's tasks its runs (on a joint point, kernel.TrainJoint for every method but
// jem, whose runs train the additive reference). Every method of a task that trains the
// same model starts from the same parameters (seeded by the task, block 0's as the
// plane kind's), so the methods are paired. A joint run's logits are those at the
// task's evaluation points (EvalPoints).
func (s *source) Train(ctx context.Context, b tasks.Block) (tasks.TrainedBlock, error) {
	p, seed, o := s.p, s.env.Options.Seed, s.env.Options
	start := time.Now()
	m := len(p.Methods)
	out := tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
	model, _ := parseModel(p.Model)
	hidden := model.hidden
	g := evalGrid(p)
	B, K := s.spec.B, p.Classes
	type data struct {
		x         []float32
		y         []int32
		hx        []float32 // the held-out draws
		hy        []int32
		truth     prob.BlocksTruth
		tableSeed uint64
		t         tasks.Table
	}
	ds := make([]data, b.Len())
	for i := range b.Len() {
		t := b.Table(p, i)
		x, y := s.draws(t, s.task(t.Ordinal))
		n := len(y)
		if o.Select != "" { // the last draws are held out, the same for every method (tasks/protocol.go)
			n = o.HoldoutSplit(len(y))
		}
		ds[i] = data{x: x[:n*2*B], y: y[:n], hx: x[n*2*B:], hy: y[n:],
			truth: prob.BlocksTruthFromTable(s.table(t), g, B, K), tableSeed: tasks.TableSeed(seed, t), t: t}
	}
	logits := func(theta []float32) ([][]float64, error) {
		return kernel.AdditiveCellLogits(hidden, K, B, theta, g.G, g.Box)
	}
	for j, meth := range p.Methods {
		if model.joint && meth != methods.Yardstick() {
			runs := make([]kernel.RunAdditive, len(ds))
			for i := range ds {
				d := &ds[i]
				runs[i] = kernel.RunAdditive{Seed: tasks.TrainSeed(seed, d.t, meth), Theta: kernel.InitJoint(prob.Seed(d.tableSeed, tagInit), hidden, K, 2*B),
					LR: float32(p.LR), X: d.x, Y: d.y}
			}
			start := time.Now()
			spec, err := specJoint(p, meth)
			if err != nil {
				return out, err
			}
			res, err := kernel.TrainJoint(ctx, spec, runs)
			if err != nil {
				return out, fmt.Errorf("train point %d block %d (%s, joint model, %d runs): %w", p.ID, b.Index, meth, len(runs), err)
			}
			elapsed := time.Since(start)
			for i, r := range res {
				ev := evalSet(ds[i].truth, ds[i].tableSeed) // drawn again per run: a task's points are 20 MB at D = 64
				lg, err := kernel.JointPointLogits(hidden, K, 2*B, r.Theta, ev.X, ev.M+ev.N)
				if err != nil {
					return out, fmt.Errorf("train point %d block %d (%s): %w", p.ID, b.Index, meth, err)
				}
				tr := tasks.TrainedRun{Logits: lg, Loss: float64(r.Loss), Diverged: r.Diverged, DivergedStep: int64(r.DivergedStep), Theta: r.Theta,
					TrainMS:     runMS(o.Timings, elapsed, len(res), r.CPUSeconds),
					BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN(),
					CPUSeconds: cpuSeconds(o.Timings, r.CPUSeconds), TrainBatch: int64(spec.Batch), TrainLR: p.LR, PxWeight: tasks.RunPxWeight(p.PxWeight, spec.PxWeight), Stats: r.Stats}
				// The joint model has no normaliser to hold draws out against: its last
				// iterate (the rule "last"), its evaluations counted as the 2-D kernel's.
				last := tasks.LastStep(p.Steps, r.Diverged, r.DivergedStep)
				sel := tasks.Selector{Rule: tasks.SelectLast}
				sel.Apply(&tr, math.NaN(), last, int64(last)*spec.Spec2D.GradEvalsPerStep(spec.Dim))
				if spec.KeepBuffer {
					tr.BufferInBox = r.InBox
					tr.BufferTVTruth, _ = bufferTV(g, ds[i].truth, nil, r.Buffer)
				}
				out.Runs[i*m+j] = tr
			}
			continue
		}
		spec, err := specAdditive(p, meth, o.CheckEvery(p.Steps))
		if err != nil {
			return out, err
		}
		if len(ds) > 0 { // the converged yardstick: full batches of the training draws
			spec.Batch = tasks.RunBatch(meth, spec.Batch, len(ds[0].y))
		}
		perStep := spec.Spec2D.GradEvalsPerStep(2*B) * int64(B) // every block's network, one pass each
		lr := tasks.RunLR(meth, p.LR)
		loop := tasks.MethodLoop{Method: meth, Steps: spec.Steps, Select: o.Select, PerStep: perStep,
			Check: func(i int, theta []float32) (tasks.CurvePoint, []float64) {
				c := tasks.CurvePoint{KLJoint: math.NaN(), KLMarginal: math.NaN(), KLConditional: math.NaN(), HeldoutNLL: math.NaN()}
				lg, err := logits(theta)
				if err != nil {
					return c, nil
				}
				c.HeldoutNLL, c.KLJoint = heldoutNLL(g, K, lg, ds[i].hx, ds[i].hy), prob.BlocksJointKL(ds[i].truth, lg)
				return c, flatten(lg)
			}}
		runs := make([]kernel.RunAdditive, len(ds))
		for i := range ds {
			d := &ds[i]
			runs[i] = kernel.RunAdditive{Seed: tasks.TrainSeed(seed, d.t, meth), Theta: kernel.InitAdditive(prob.Seed(d.tableSeed, tagInit), hidden, K, B),
				LR: float32(lr), X: d.x, Y: d.y}
		}
		start := time.Now()
		res, err := loop.Train(len(runs), func(i int, fn func(int, []float32)) { runs[i].Observe = fn }, func(h int, idx []int) ([]kernel.Result2D, error) {
			spec := spec
			spec.Steps = h
			return kernel.TrainAdditive(ctx, spec, tasks.Subset(runs, idx))
		})
		elapsed := time.Since(start)
		if err != nil {
			return out, fmt.Errorf("train point %d block %d (%s, %d runs): %w", p.ID, b.Index, meth, len(runs), err)
		}
		for i, r := range res {
			lg, err := logits(r.Theta)
			if err != nil {
				return out, fmt.Errorf("train point %d block %d (%s): %w", p.ID, b.Index, meth, err)
			}
			tr := tasks.TrainedRun{Logits: flatten(lg), Loss: float64(r.Loss), Diverged: r.Diverged, DivergedStep: int64(r.DivergedStep), Theta: r.Theta,
				TrainMS:     runMS(o.Timings, elapsed, len(res), r.CPUSeconds),
				BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN(),
				CPUSeconds: cpuSeconds(o.Timings, r.CPUSeconds), TrainBatch: int64(spec.Batch), TrainLR: lr, PxWeight: tasks.RunPxWeight(p.PxWeight, spec.PxWeight), Stats: r.Stats}
			loop.Finish(i, &tr)
			if spec.KeepBuffer {
				sel := split(tr.Logits, B)
				tr.BufferInBox = r.InBox
				tr.BufferTVTruth, tr.BufferTVModel = bufferTV(g, ds[i].truth, sel, r.Buffer)
			}
			out.Runs[i*m+j] = tr
		}
	}
	if o.Select != "" {
		tasks.FlagBlockAgainstBaseline(out.Runs, p.Methods)
	}
	s.env.Progressf(ctx, "train: point %d block %d (%s): %d runs in %v", p.ID, b.Index, p.Task, len(out.Runs), time.Since(start).Round(time.Millisecond))
	return out, nil
}

// runMS is a run's training time in ms with timings on: its own CPU time where the OS
// tells, else the call's wall time per run (0 with timings off).
func runMS(timings bool, elapsed time.Duration, runs int, cpuSeconds float64) float64 {
	switch {
	case !timings:
		return 0
	case !math.IsNaN(cpuSeconds):
		return 1000 * cpuSeconds
	}
	return float64(elapsed.Microseconds()) / 1000 / float64(runs)
}

// flatten concatenates the blocks' cell logits: the kind's table layout.
func flatten(l [][]float64) []float64 {
	n := 0
	for _, v := range l {
		n += len(v)
	}
	out := make([]float64, 0, n)
	for _, v := range l {
		out = append(out, v...)
	}
	return out
}

// split is flatten's inverse for B blocks (nil when the length does not fit).
func split(l []float64, B int) [][]float64 {
	if B < 1 || len(l) == 0 || len(l)%B != 0 {
		return nil
	}
	n := len(l) / B
	out := make([][]float64, B)
	for b := range B {
		out[b] = l[b*n : (b+1)*n]
	}
	return out
}

// cpuSeconds is a run's CPU time with timings on (NaN otherwise or unknown).
func cpuSeconds(timings bool, s float64) float64 {
	if !timings {
		return math.NaN()
	}
	return s
}

// heldoutNLL is the mean −log q(x, y) of the held-out draws (x N×2B row-major) under
// the additive model of block cell logits l[b] ([G²][K]), normalised on the grid per
// unit volume: log Z − Σ_b l_b(cell_b(x), y) + B·log h² (a coordinate outside the box
// counts at its nearest cell). NaN with no draws.
func heldoutNLL(g prob.Grid, k int, l [][]float64, x []float32, y []int32) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	nb := len(l)
	logZ, _ := prob.BlocksLogZ(l, k)
	h := g.Step()
	clamp := func(v float32) float64 { return min(max(float64(v), -g.Box+h/2), g.Box-h/2) }
	var s float64
	for i := range y {
		row := x[i*2*nb : (i+1)*2*nb]
		for b := range nb {
			c := g.Cell(clamp(row[2*b]), clamp(row[2*b+1]))
			s -= l[b][c*k+int(y[i])]
		}
	}
	return logZ + s/float64(len(y)) + float64(nb)*math.Log(h*h)
}

// Evaluate measures every run: the exact joint KL on the grid, the Monte Carlo
// marginal and conditional KLs (with standard errors) and accuracies over the task's
// MCDraws exact draws, no error split and no promises (NaN). The runs of the joint
// model, and runs without parameters whose logits are at the evaluation points (a
// user's model), are measured from their logits alone (EvaluateLogits); on a joint
// point exact jem's additive reference is measured on the same footing
// (evaluateReference).
func (s *source) Evaluate(_ context.Context, tb tasks.TrainedBlock) (tasks.ResultBlock, tasks.LearnedBlock, error) {
	p := s.p
	rb := tasks.ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := tasks.LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]tasks.Learned, len(tb.Runs))}
	// The block's tasks are spread over the cores: a task's runs share its truth, draws
	// and proposal, and depend on no other task, so the rows do not depend on how.
	m := len(p.Methods)
	err := tasks.SpreadTasks(tb.Block.Len(), 1, func(lo, hi int) error {
		s.evaluateRuns(tb, lo*m, hi*m, &rb, &lb)
		return nil
	})
	return rb, lb, err
}

// evaluateRuns measures runs lo..hi-1 of a block (whole tasks) into rb and lb.
func (s *source) evaluateRuns(tb tasks.TrainedBlock, lo, hi int, rb *tasks.ResultBlock, lb *tasks.LearnedBlock) {
	p := s.p
	g, B, K := evalGrid(p), s.spec.B, p.Classes
	model, _ := parseModel(p.Model)
	var truth prob.BlocksTruth
	var draws prob.BlocksDraws
	var task prob.BlocksTask
	var ev *EvalSet
	var prop *prob.ISProposal // the task's importance proposal, drawn once for all its runs
	var truthTab []float64
	for r := lo; r < hi; r++ {
		t := tb.Trained(p, r)
		if r%len(p.Methods) == 0 {
			truthTab = s.table(t.Job.Dataset.Table)
		}
		t.Job.Dataset.Table.P = truthTab // the task's truth, carried or drawn again (CarriesTruth)
		tab := t.Job.Dataset.Table
		tableSeed := tasks.TableSeed(s.env.Options.Seed, tab)
		if r%len(p.Methods) == 0 {
			truth = prob.BlocksTruthFromTable(tab.P, g, B, K)
			draws = truth.Draw(prob.Seed(tableSeed, tagMC), MCDraws)
			task = s.task(tab.Ordinal)
			ev, prop = nil, nil
		}
		proposal := func() prob.ISProposal {
			if prop == nil {
				pr := task.ImportanceProposal(prob.Seed(tableSeed, tagIS), ISDraws, ISShare, prob.BlockDefensiveShare(B), p.Box)
				prop = &pr
			}
			return *prop
		}
		evalSet := func() EvalSet {
			if ev == nil {
				e := evalSet(truth, tableSeed)
				ev = &e
			}
			return *ev
		}
		var row schemas.ResultRow
		var q []float64
		logits := t.Logits
		switch {
		case atPoints(t, K) || (model.joint && t.Job.Method != methods.Yardstick()):
			var adapted *prob.ISEstimate
			if t.Run.Theta != nil && !atPoints(t, K) {
				adapted = adaptedLogZ(evalSet(), truth, tableSeed, t.Logits, func(x []float64, n int) ([]float64, error) {
					return kernel.JointPointLogits(model.hidden, K, 2*B, t.Run.Theta, x, n)
				})
			}
			row = evaluatePoints(t, evalSet(), draws.BayesMean(), adapted)
			logits = nil // no grid joint to write
			if t.Run.Theta != nil && tab.Ordinal < int64(s.env.Options.ReportTables) && t.Run.Logits != nil {
				s.ais(&row, tableSeed, func(x []float64, n int) ([]float64, error) {
					l, err := kernel.JointPointLogits(model.hidden, K, 2*B, t.Run.Theta, x, n)
					if err != nil {
						return nil, err
					}
					return kernel.RowLSE(l, K), nil
				})
			}
		default:
			row, q = evaluateRun(t, truth, draws, B)
			s.importance(&row, t, proposal, tab, truth, evalSet)
			if model.joint {
				s.evaluateReference(&row, t, truth, evalSet(), tableSeed)
			}
		}
		row.LogRatioSD, row.LogRatioSDSE = logRatioSpread(t, model, evalSet, K, B)
		rb.Rows[r] = row
		if !tasks.KeepsCells(s.env.Options, p, tab.Ordinal) {
			logits, q, tab.P = nil, nil, nil
		}
		lb.Runs[r] = tasks.Learned{RunID: t.Job.RunID, PointID: p.ID, TableID: tab.ID, Ordinal: tab.Ordinal, Method: t.Job.Method,
			X: p.XValues, K: K, Logits: logits, Q: q, P: tab.P, Task: p.Task, Curve: t.Run.Curve}
	}
}

// logRatioSpread is a run's Z-free log-ratio spread (EvalSet.LogRatioSpread) over the
// task's first ZFreeDraws truth draws: from the logits at the evaluation points of a
// model given by them, else from the trained model at the draws (NaN without either).
func logRatioSpread(t tasks.Trained, model modelSpec, evalSet func() EvalSet, K, B int) (sd, se float64) {
	if atPoints(t, K) {
		return evalSet().LogRatioSpread(t.Logits, ZFreeDraws)
	}
	if t.Run.Theta == nil || t.Diverged {
		return math.NaN(), math.NaN()
	}
	ev := evalSet()
	n, d := min(ZFreeDraws, ev.M), ev.Dim
	var l []float64
	var err error
	if model.joint {
		l, err = kernel.JointPointLogits(model.hidden, K, d, t.Run.Theta, ev.X[:n*d], n)
	} else {
		l, err = kernel.AdditivePointLogits(model.hidden, K, B, t.Run.Theta, ev.X[:n*d], n)
	}
	kernel.ClearUpper()
	if err != nil {
		return math.NaN(), math.NaN()
	}
	return ev.LogRatioSpread(l, n)
}

// atPoints reports whether a run is a model without parameters whose logits are at the
// evaluation points (a user's model), not the additive model's cell logits.
func atPoints(t tasks.Trained, K int) bool {
	return t.Run.Theta == nil && len(t.Logits) == NumEvalPoints*K
}

// ISDraws are the importance-sampling draws of a run's log Z (half of them exact draws
// of the truth: ISShare).
const (
	ISDraws = 20000
	ISShare = 0.5
)

var (
	tagIS  = prob.SeedString("is")
	tagAIS = prob.SeedString("ais")
)

// adaptedLogZ is the adapted estimate of a model's log Z (EvalSet.AdaptedLogZ with
// prob.DefaultAdapt, seed Seed(tableSeed, "adapt")) from its logits at the evaluation
// points, [M+N][K], and at any points (logits); nil where it cannot be made (a model
// that fails, logits of the wrong length): the truth proposal's estimate is then used.
func adaptedLogZ(ev EvalSet, truth prob.BlocksTruth, tableSeed uint64, at []float64, logits func(x []float64, n int) ([]float64, error)) *prob.ISEstimate {
	k := ev.K
	if len(at) != (ev.M+ev.N)*k {
		return nil
	}
	e, err := ev.AdaptedLogZ(prob.Seed(tableSeed, tagAdapt), truth, prob.DefaultAdapt, kernel.RowLSE(at[ev.M*k:], k), logits)
	kernel.ClearUpper()
	if err != nil {
		return nil
	}
	return &e
}

var tagAdapt = prob.SeedString("adapt")

// proposalName is the is_proposal column of an estimate: ProposalAdapted where the
// adapted estimate was made, else ProposalTruth.
func proposalName(adapted *prob.ISEstimate) string {
	if adapted != nil {
		return ProposalAdapted
	}
	return ProposalTruth
}

// importance fills the row's log Z columns: the additive model's exact log Z over the
// box (the block grids' quadrature, per unit volume), its importance-sampling estimate
// and the joint KL with the estimate (NaN where it is refused). On the measured tasks
// (Options.Measures) the estimate is a joint model's, from the proposal adapted to the
// model (EvalSet.AdaptedLogZ at the task's evaluation points, the model a black box):
// beside the exact log Z, the known-answer check of the estimator every joint row
// relies on. On the others it is prob.BlocksTask.ImportanceLogZ over the task's truth
// proposal (the same draws for every method of a task, drawn once for all of them).
func (s *source) importance(row *schemas.ResultRow, t tasks.Trained, proposal func() prob.ISProposal, tab tasks.Table,
	truth prob.BlocksTruth, evalSet func() EvalSet) {
	p := s.p
	l := split(t.Logits, s.spec.B)
	if l == nil || t.Run.Theta == nil || math.IsNaN(row.KLJoint) || math.IsInf(row.KLJoint, 0) {
		return
	}
	model, _ := parseModel(p.Model)
	row.LogZ = additiveLogZ(l, evalGrid(p), p.Classes)
	lse := func(x []float64, n int) ([]float64, error) {
		return kernel.AdditivePointLSE(model.hidden, p.Classes, s.spec.B, t.Run.Theta, x, n)
	}
	tableSeed := tasks.TableSeed(s.env.Options.Seed, tab)
	var adapted *prob.ISEstimate // the measured tasks' (the truth proposal's where it cannot be made)
	if s.env.Options.Measures(tab.Ordinal) {
		ev, at := evalSet(), s.additiveAt(t.Run.Theta)
		if pl, err := at(ev.X, ev.M+ev.N); err == nil {
			adapted = adaptedLogZ(ev, truth, tableSeed, pl, at)
		}
	}
	var e prob.ISEstimate
	if adapted != nil {
		e = *adapted
	} else {
		var lseErr error
		e = prob.ImportanceLogZ(proposal().LogWeights(func(x []float64, n int) []float64 {
			out, err := lse(x, n)
			if err != nil {
				lseErr = err
				return make([]float64, n)
			}
			return out
		}))
		if lseErr != nil {
			return
		}
	}
	row.LogZIS, row.LogZISSE, row.ISESS, row.ISKHat, row.ISRefused, row.ISProposal = e.LogZ, e.SE, e.ESS, e.K, e.Reason, proposalName(adapted)
	if !e.Refused() {
		row.KLJointIS = row.KLJoint - row.LogZ + e.LogZ
		row.KLJointISSE = e.SE
	}
	if tab.Ordinal < int64(s.env.Options.ReportTables) {
		s.ais(row, tableSeed, lse)
	}
}

// additiveAt is the point's additive model of parameters theta as its logits [n][K] at
// any n points x [n][2B].
func (s *source) additiveAt(theta []float32) func(x []float64, n int) ([]float64, error) {
	model, _ := parseModel(s.p.Model)
	return func(x []float64, n int) ([]float64, error) {
		return kernel.AdditivePointLogits(model.hidden, s.p.Classes, s.spec.B, theta, x, n)
	}
}

// additiveLogZ is the additive model's exact log Z over the box (per unit volume) from
// its block cell logits.
func additiveLogZ(l [][]float64, g prob.Grid, k int) float64 {
	logZ, _ := prob.BlocksLogZ(l, k)
	return logZ + float64(len(l))*math.Log(g.CellArea())
}

// ais fills the AIS cross-check of log Z (prob.AISLogZ) of a model with LSE_y f at n
// points lse(x, n) (nothing where lse fails).
func (s *source) ais(row *schemas.ResultRow, tableSeed uint64, lse func(x []float64, n int) ([]float64, error)) {
	var lseErr error
	a := prob.AISLogZ(prob.Seed(tableSeed, tagAIS), 2*s.spec.B, s.p.Box, prob.DefaultAIS, func(x []float64, n int) []float64 {
		out, err := lse(x, n)
		if err != nil {
			lseErr = err
			return make([]float64, n)
		}
		return out
	})
	if lseErr == nil {
		row.LogZAIS, row.LogZAISSE, row.AISESS = a.LogZ, a.SE, a.ESS
	}
}

// evaluateReference measures exact jem's additive model on a joint point on the joint
// runs' footing: the continuous reading of every KL at the evaluation points. kl_joint
// is its exact joint KL on ℝ^D (exactKLContinuous), kl_marginal the Monte Carlo mean with
// the exact log Z, kl_conditional and the accuracy at the points; kl_joint_is and the
// log Z columns are EvaluateLogitsWith's with the adapted estimate, as the joint runs'
// (the estimator's known-answer check: log_z is exact beside log_z_is).
func (s *source) evaluateReference(row *schemas.ResultRow, t tasks.Trained, truth prob.BlocksTruth, ev EvalSet, tableSeed uint64) {
	p, B, K := s.p, s.spec.B, s.p.Classes
	model, _ := parseModel(p.Model)
	l := split(t.Logits, B)
	nan := math.NaN()
	row.KLJointIS, row.KLJointISSE, row.LogZIS, row.LogZISSE, row.ISESS, row.ISKHat = nan, nan, nan, nan, nan, nan
	if l == nil || t.Run.Theta == nil {
		return
	}
	kl, err := exactKLContinuous(model.hidden, K, t.Run.Theta, truth, l)
	if err != nil {
		return
	}
	at := s.additiveAt(t.Run.Theta)
	pl, err := at(ev.X, ev.M+ev.N)
	if err != nil {
		return
	}
	adapted := adaptedLogZ(ev, truth, tableSeed, pl, at)
	e, err := EvaluateLogitsWith(ev, pl, adapted)
	if err != nil {
		return
	}
	ex := e.WithLogZ(additiveLogZ(l, truth.Grid, K))
	row.KLJoint = kl
	row.KLMarginal, row.KLMarginalSE = ex.KLMarginal, ex.KLMarginalSE
	row.KLConditional, row.KLConditionalSE, row.Accuracy = e.MC.Conditional, e.MC.ConditionalSE, e.MC.Accuracy
	row.LogZIS, row.LogZISSE, row.ISESS, row.ISKHat, row.ISRefused = e.IS.LogZ, e.IS.SE, e.IS.ESS, e.IS.K, e.IS.Reason
	row.ISProposal = proposalName(adapted)
	if !e.Refused() {
		row.KLJointIS, row.KLJointISSE = e.KLJoint, e.KLJointSE
	}
	row.Diverged, row.Nonfinite = tasks.RunStatus(t.Diverged, t.Logits, row.KLJoint, row.KLMarginal, row.KLConditional)
}

// exactKLContinuous is the additive model's exact joint KL on ℝ^D from the grid truth
// read as a density (uniform within the cells): the grid KL (prob.BlocksJointKL) plus
// the model's variation within the cells, E_p[ℓ_b − ḡ_b] summed over the blocks, ℓ_b
// the log cell mean of exp g_b (its cell logits l) and ḡ_b the cell mean of g_b, both
// by the cell rule (kernel.CellLogits, kernel.CellMeanLogits).
func exactKLContinuous(hidden []int, k int, theta []float32, truth prob.BlocksTruth, l [][]float64) (float64, error) {
	mean, err := kernel.AdditiveCellMeanLogits(hidden, k, truth.B(), theta, truth.Grid.G, truth.Grid.Box)
	if err != nil {
		return 0, err
	}
	gap := 0.0
	for y, py := range truth.Prior {
		for b, c := range truth.Cond {
			for i := y; i < len(c); i += k {
				gap += py * c[i] * (l[b][i] - mean[b][i])
			}
		}
	}
	return prob.BlocksJointKL(truth, l) + gap, nil
}

// evaluatePoints is the row of a run measured from its logits at the evaluation points
// (EvaluateLogitsWith, log Z from the adapted estimate where given, else from the truth
// proposal): kl_joint is kl_joint_is, the estimate (NaN where refused, as kl_marginal; a
// refused run is no decision, not a non-finite one).
func evaluatePoints(t tasks.Trained, ev EvalSet, bayes float64, adapted *prob.ISEstimate) schemas.ResultRow {
	row := newRow(t, bayes)
	e, err := EvaluateLogitsWith(ev, t.Logits, adapted)
	if err == nil {
		row.KLJoint, row.KLJointIS, row.KLJointISSE = e.KLJoint, e.KLJoint, e.KLJointSE
		row.KLMarginal, row.KLMarginalSE = e.KLMarginal, e.KLMarginalSE
		row.KLConditional, row.KLConditionalSE, row.Accuracy = e.MC.Conditional, e.MC.ConditionalSE, e.MC.Accuracy
		row.LogZIS, row.LogZISSE, row.ISESS, row.ISKHat, row.ISRefused = e.IS.LogZ, e.IS.SE, e.IS.ESS, e.IS.K, e.IS.Reason
		row.ISProposal = proposalName(adapted)
	}
	kls := []float64{row.KLConditional}
	if err != nil || !e.Refused() {
		kls = append(kls, row.KLJoint, row.KLMarginal)
	}
	finishRow(&row, t, kls...)
	return row
}

// newRow is a run's row with every measure NaN.
func newRow(t tasks.Trained, bayes float64) schemas.ResultRow {
	d := t.Job.Dataset
	p := d.Table.Point
	nan := math.NaN()
	row := schemas.ResultRow{RunID: t.Job.RunID, TableID: d.Table.ID, Method: t.Job.Method, PointID: p.ID,
		KLJoint: nan, KLMarginal: nan, KLConditional: nan, KLMarginalSE: nan, KLConditionalSE: nan,
		LogZ: nan, LogZIS: nan, LogZISSE: nan, ISESS: nan, ISKHat: nan, KLJointIS: nan, KLJointISSE: nan, LogZAIS: nan, LogZAISSE: nan, AISESS: nan,
		Accuracy: nan, BayesAccuracy: bayes,
		FinalLoss: t.Loss, TrainMS: t.TrainMS, DivergedStep: t.Run.DivergedStep,
		BestTemperature: nan, KLJointBestTemperature: nan,
		AUROCPx: nan, AUROCPy: nan, AUROCTruePx: nan, CalibrationErrorTrue: nan,
		AUROCPxGrad: nan, ECE: nan, AccClean: nan, AccAttacked: nan, AccPurified: nan, AccBayesPurified: nan,
		SamplesTVNoise: nan, SamplesTVBuffer: nan,
		BufferInBox: nan, BufferTVTruth: nan, BufferTVModel: nan, KLJointAveraged: nan, RefGap: nan,
	}
	tasks.NoSplit(&row)
	if methods.IsSampler(t.Job.Method) {
		row.BufferInBox, row.BufferTVTruth, row.BufferTVModel = t.Run.BufferInBox, t.Run.BufferTVTruth, t.Run.BufferTVModel
	}
	if t.Run.Logits != nil && !math.IsNaN(t.Run.RefGap) {
		row.RefGap = t.Run.RefGap
	}
	tasks.SetProtocol(&row, t.Run, t.Job.Dataset.Table.Point)
	return row
}

// finishRow sets the run's status from its logits and the KLs and the point's columns.
func finishRow(row *schemas.ResultRow, t tasks.Trained, kls ...float64) {
	row.Diverged, row.Nonfinite = tasks.RunStatus(t.Diverged, t.Logits, kls...)
	tasks.SetRunColumns(row, &t)
}

// evaluateRun is one run's row and its learned joint in the kind's table layout.
func evaluateRun(t tasks.Trained, truth prob.BlocksTruth, draws prob.BlocksDraws, B int) (schemas.ResultRow, []float64) {
	row := newRow(t, draws.BayesMean())
	var q []float64
	if l := split(t.Logits, B); l != nil && len(l[0]) == truth.Grid.Cells()*truth.K {
		row.KLJoint = prob.BlocksJointKL(truth, l)
		mc := draws.Evaluate(l)
		row.KLMarginal, row.KLMarginalSE = mc.Marginal, mc.MarginalSE
		row.KLConditional, row.KLConditionalSE = mc.Conditional, mc.ConditionalSE
		row.Accuracy = mc.Accuracy
		q = modelTable(l, truth.K)
	}
	finishRow(&row, t, row.KLJoint, row.KLMarginal, row.KLConditional)
	return row, q
}

// modelTable is the additive model's grid joint in the kind's table layout (the
// truth's, prob.BlocksTruth.Table): entry ((b·G² + c)·K + y) is
// q(y)^{1/B}·q_b(c|y)/(B·S), S = Σ_y q(y)^{1/B}, with q(y) = Π_b Z_{b,y}/Z and
// q_b(c|y) = exp ℓ_b[c, y]/Z_{b,y}.
func modelTable(l [][]float64, k int) []float64 {
	logZ, lzb := prob.BlocksLogZ(l, k)
	B := len(l)
	root := make([]float64, k) // log q(y)^{1/B}
	for y := range k {
		for b := range B {
			root[y] += lzb[b][y]
		}
		root[y] = (root[y] - logZ) / float64(B)
	}
	norm := prob.LogSumExp(root) + math.Log(float64(B))
	out := make([]float64, 0, B*len(l[0]))
	for b, lb := range l {
		for i, v := range lb {
			y := i % k
			out = append(out, math.Exp(root[y]+v-lzb[b][y]-norm))
		}
	}
	return out
}

// tvPool is the side of the coarse grid the buffer's distances are taken on: the plane
// kind's, the largest divisor of G up to 16.
func tvPool(G int) int {
	for c := min(G, 16); c > 1; c-- {
		if G%c == 0 {
			return c
		}
	}
	return 1
}

// bufferTV is the sgld buffer's total-variation distances per block, averaged over the
// blocks: block b's coordinates of the chains inside its box, pooled on the tvPool grid
// (as the plane kind's buffer_tv columns), against the true block marginal
// p_b(x_b) = Σ_y π(y) P_b(·|y) and the model's q_b(x_b) = Σ_y q(y) q_b(·|y). NaN when a
// block has no chain in its box; the model's is NaN without cell logits (l nil: the
// joint model, whose grid joint is not enumerable).
func bufferTV(g prob.Grid, truth prob.BlocksTruth, l [][]float64, buf []float32) (tvTruth, tvModel float64) {
	B, k := truth.B(), truth.K
	if len(buf) == 0 || len(buf)%(2*B) != 0 {
		return math.NaN(), math.NaN()
	}
	c := tvPool(g.G)
	pool := func(cell int) int { i, j := cell/g.G, cell%g.G; return (i*c/g.G)*c + j*c/g.G }
	var lzb [][]float64
	qy := make([]float64, k)
	if l != nil {
		var logZ float64
		logZ, lzb = prob.BlocksLogZ(l, k)
		for y := range k {
			for b := range B {
				qy[y] += lzb[b][y]
			}
			qy[y] = math.Exp(qy[y] - logZ)
		}
	} else {
		tvModel = math.NaN()
	}
	for b := range B {
		hist, px, qx := make([]float64, c*c), make([]float64, c*c), make([]float64, c*c)
		n := 0
		for s := 2 * b; s+1 < len(buf); s += 2 * B {
			if cell := g.Cell(float64(buf[s]), float64(buf[s+1])); cell >= 0 {
				hist[pool(cell)]++
				n++
			}
		}
		if n == 0 {
			return math.NaN(), math.NaN()
		}
		for i := range hist {
			hist[i] /= float64(n)
		}
		for i, v := range truth.Cond[b] {
			y := i % k
			px[pool(i/k)] += truth.Prior[y] * v
			if l != nil {
				qx[pool(i/k)] += qy[y] * math.Exp(l[b][i]-lzb[b][y])
			}
		}
		tvTruth += prob.TotalVariation(hist, px) / float64(B)
		tvModel += prob.TotalVariation(hist, qx) / float64(B)
	}
	return tvTruth, tvModel
}

// LearnedCells: the report's tasks only above tasks.MaxCells cells a task (a D = 64
// task has B·G²·K = 393,216 cells a run), as binary tables.
func (Kind) LearnedCells(o tasks.Options, p tasks.Point) int64 { return tasks.ReportCells(o, p) }

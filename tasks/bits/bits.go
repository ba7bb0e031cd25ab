// Package bits is the task kind of binary tables: x ∈ {0,1}^D (a state index 0..2^D−1
// as x, so every table reader works on them), K classes, the truth per class a mixture
// of product-Bernoulli components drawn from the task's seed (prob.BitsTask), models
// tanh MLPs on the D bits trained by the fused kernels (kernel.TrainBits), and every KL
// exact by enumerating all 2^D·K cells.
package bits

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() { tasks.Register(Kind{}) }

// Kind is the kind of binary tables "bits:D,K".
type Kind struct{}

// Limits of a binary point.
const (
	// MaxCells bounds 2^D·K: a block carries each task's joint on every cell.
	MaxCells = 1 << 22
	// MaxBlockCells bounds the cells of a block's tasks together.
	MaxBlockCells = 1 << 23
	// MaxJEMWork bounds exact jem's enumeration, 2^D·steps states back-propagated per
	// run (2^20 states × 1,024 steps; 42 CPU s a run at 256 steps at mlp:32 on one Zen 4
	// core, so about 3 CPU minutes at the bound).
	MaxJEMWork = 1 << 30
	// DefaultTasks is the number of tasks of a binary point when the user did not say.
	DefaultTasks = 20
)

// Name is methods.KindBits.
func (Kind) Name() string { return methods.KindBits }

// Owns the tasks "bits:…".
func (Kind) Owns(task string) bool { return strings.HasPrefix(strings.TrimSpace(task), "bits:") }

// Noun names binary tables.
func (Kind) Noun() string { return "binary tables" }

// About is the report's sentence on the kind.
func (Kind) About() string {
	return "Binary tables: x ∈ {0,1}^D with K classes, the truth per class a mixture of product-Bernoulli components; models are MLPs on the D bits, and every KL is exact by enumerating all 2^D·K cells."
}

// Axes only binary tasks read.
func (Kind) Axes() []string { return []string{"components", "select", "holdout", "eval_every"} }

// defaults are a binary point's values of the axes the user did not set.
var defaults = []struct {
	Axis string
	set  func(p *tasks.Point)
}{
	{"model", func(p *tasks.Point) { p.Model = "mlp:32" }},
	{"lr", func(p *tasks.Point) { p.LR = 0.01 }},
	{"steps", func(p *tasks.Point) { p.Steps = 800 }},
	{"batch_size", func(p *tasks.Point) { p.BatchSize = 64 }},
	{"samples", func(p *tasks.Point) { p.Samples = 2000 }},
	{"buffer_size", func(p *tasks.Point) { p.BufferSize = 1000 }},
	{"ed_t", func(p *tasks.Point) { p.EDT = 0.1 }},
	{"ed_m", func(p *tasks.Point) { p.EDNegatives = 8 }},
	{"tables", func(p *tasks.Point) { p.Tables = DefaultTasks }},
	{"methods", func(p *tasks.Point) {
		p.Methods = append([]string{methods.Baseline(), methods.Yardstick()}, methods.DefaultFor(methods.KindBits)...)
	}},
}

// Defaults sets the binary defaults of the axes the user did not set.
func (Kind) Defaults(p *tasks.Point, given func(string) bool) {
	for _, d := range defaults {
		if !given(d.Axis) {
			d.set(p)
		}
	}
}

// Resolve sets XValues = 2^D and Classes = K from the task and zeroes the table and
// 2-D fields.
func (Kind) Resolve(p *tasks.Point) {
	p.Encoding, p.Generator, p.GridCells, p.Box, p.TrainGrid = "", "", 0, 0, 0
	if s, err := prob.ParseBitsSpec(p.Task); err == nil {
		p.Task, p.XValues, p.Classes = s.String(), 1<<s.D, s.K
	}
}

// Rule: the samplers are judged against exact jem.
func (Kind) Rule(tasks.Point) verdict.Rule { return verdict.Samplers }

// Dimension is D: x ∈ {0,1}^D.
func (Kind) Dimension(p tasks.Point) int {
	s, err := prob.ParseBitsSpec(p.Task)
	if err != nil {
		return 0
	}
	return s.D
}

// Family is "bits:·,K (C components)": the task with D taken out.
func (Kind) Family(p tasks.Point) string {
	s, err := prob.ParseBitsSpec(p.Task)
	if err != nil {
		return p.Task
	}
	switch p.Components {
	case 0:
		return fmt.Sprintf("bits:·,%d", s.K)
	case 1:
		return fmt.Sprintf("bits:·,%d (1 component)", s.K)
	}
	return fmt.Sprintf("bits:·,%d (%d components)", s.K, p.Components)
}

var (
	tagBits = prob.SeedString("bits")
	tagInit = prob.SeedString("init")
)

// Seed identifies a task by its spec, components, replicate and ordinal.
func (Kind) Seed(runSeed uint64, p tasks.Point, o int64) uint64 {
	return prob.Seed(runSeed, tagBits, prob.SeedString(p.Task), uint64(p.Components), uint64(p.Replicate), uint64(o))
}

// BlockSize: at most 16 tasks, fewer where their cells are many.
func (Kind) BlockSize(p tasks.Point, trainBatch int) int64 {
	cells := max(1, p.XValues*p.Classes)
	return int64(max(1, min(16, trainBatch/max(1, len(p.Methods)), MaxBlockCells/cells)))
}

// Check: a binary task's truth needs no check beyond Validate.
func (Kind) Check(context.Context, tasks.Options, tasks.Point) error { return nil }

// Validate checks a binary point.
func (Kind) Validate(p tasks.Point) error {
	s, err := prob.ParseBitsSpec(p.Task)
	if err != nil {
		return fmt.Errorf("task: %w", err)
	}
	switch {
	case p.XValues != 1<<s.D || p.Classes != s.K:
		return fmt.Errorf("a %s point has x_values = 2^%d and classes = %d, got %d and %d", p.Task, s.D, s.K, p.XValues, p.Classes)
	case (1<<s.D)*s.K > MaxCells:
		return fmt.Errorf("task %s: 2^%d states × %d classes = %s cells, over the limit of %s (use fewer classes or bits)", p.Task, s.D, s.K, tasks.Count(int64(1<<s.D)*int64(s.K)), tasks.Count(MaxCells))
	case p.Components < 1 || p.Components > prob.MaxBitsComponents:
		return fmt.Errorf("components must be in [1, %d], got %d", prob.MaxBitsComponents, p.Components)
	case p.Samples < 1 || p.Samples > tasks.MaxHeldSamples:
		return fmt.Errorf("samples must be in [1, %d] (a binary task's draws are held in memory), got %d", int64(tasks.MaxHeldSamples), p.Samples)
	case p.Steps < 1 || p.Steps > tasks.MaxSteps:
		return fmt.Errorf("steps must be in [1, %d], got %d", tasks.MaxSteps, p.Steps)
	case p.Tables < 1 || p.Tables > tasks.MaxTables:
		return fmt.Errorf("tables (tasks) must be in [1, %d], got %d", tasks.MaxTables, p.Tables)
	}
	if _, err := models.ParseModel(p.Model); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	for _, m := range p.Methods {
		s, err := spec(p, m)
		if err != nil {
			return err
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("method %s: %s", m, strings.TrimPrefix(err.Error(), "kernel: "))
		}
	}
	return nil
}

// Limits checks the backend (the fused kernels only) and the enumeration of the
// methods that enumerate (exact jem, and jem-converged up to its cap of steps).
func (Kind) Limits(o tasks.Options, p tasks.Point, local bool) error {
	if err := o.CheckBackend(p, true); err != nil {
		return err
	}
	for _, m := range p.Methods {
		if s, err := spec(p, m); err != nil || !s.Exact {
			continue
		}
		steps, most := int64(p.Steps), MaxJEMWork/int64(p.XValues)
		if methods.Has(m, func(x methods.Method) bool { return x.FullBatch }) {
			steps, most = int64(tasks.YardstickCap(p.Steps)), most/tasks.YardstickCapFactor
		}
		if w := tasks.SatMul(int64(p.XValues), steps); w > MaxJEMWork {
			return fmt.Errorf("steps: %s enumerates all 2^D = %d states every step; %d steps is %s states per run, over the limit of %s (pass --steps=%d or less, or leave %s out: the other methods' cost does not grow with 2^D)",
				m, p.XValues, steps, tasks.Count(w), tasks.Count(MaxJEMWork), most, m)
		}
	}
	return nil
}

// batch is the kernel's minibatch of a point: the batch size rounded up to 16, at
// most the draws rounded up (0: all draws).
func batch(p tasks.Point) int {
	b := p.BatchSize
	if b <= 0 || b > p.Samples {
		b = p.Samples
	}
	return min(4096, (b+kernel.VW-1)/kernel.VW*kernel.VW)
}

// spec is the kernel's spec of method m at p: the point's shared settings, then the
// method's part, set by its hook at the methods.Bits plug (a kernel.Objective on the
// binary lanes, SpecBits.Objective, or exact JEM's enumerated log Z).
func spec(p tasks.Point, m string) (kernel.SpecBits, error) {
	hidden, _ := models.ParseModel(p.Model)
	d := 0
	for 1<<d < p.XValues {
		d++
	}
	s := kernel.SpecBits{D: d, K: p.Classes, Hidden: hidden, Steps: p.Steps, Batch: batch(p), PxWeight: float32(p.PxWeight)}
	h, ok := methods.Bits.Of(m)
	if !ok {
		return s, fmt.Errorf("method %s has no trainer for binary tables", methods.Quote(m))
	}
	if err := h(p.Grid, &s); err != nil {
		return s, fmt.Errorf("method %s: %w", m, err)
	}
	return s, nil
}

// source is one binary point's tasks.
type source struct {
	env tasks.Env
	p   tasks.Point
	d   int
}

// Open opens a binary point's source.
func (Kind) Open(_ context.Context, env tasks.Env, p tasks.Point) (tasks.Source, error) {
	s, err := prob.ParseBitsSpec(p.Task)
	if err != nil {
		return nil, err
	}
	return &source{env: env, p: p, d: s.D}, nil
}

// task is the truth of ordinal o.
func (s *source) task(o int64) prob.BitsTask {
	return prob.DrawBits(Kind{}.Seed(s.env.Options.Seed, s.p, o), s.d, s.p.Classes, s.p.Components)
}

// Truth is task o's joint on every cell.
func (s *source) Truth(o int64) (int64, []float64, error) {
	defer scalarCode()()
	return o, s.task(o).Truth(), nil
}

// scalarCode pins the goroutine to its thread and clears the thread's AVX upper state
// for scalar float64 code (see kernel.ClearUpper: math.Exp runs ~100× slower on a dirty
// state, and a goroutine that moves to another thread may find one); call the returned
// function when done.
func scalarCode() func() {
	runtime.LockOSThread()
	kernel.ClearUpper()
	return runtime.UnlockOSThread
}

// truthOf is table t's joint: the block's, or drawn again when the block carries none.
func (s *source) truthOf(t tasks.Table) []float64 {
	if t.P != nil {
		return t.P
	}
	defer scalarCode()()
	return s.task(t.Ordinal).Truth()
}

// draws are table t's N draws (a function of the run seed and the task).
func (s *source) draws(t tasks.Table) ([]uint32, []int32) {
	return s.task(t.Ordinal).Sample(tasks.SampleSeed(s.env.Options.Seed, t), t.Point.Samples)
}

// Sample: a binary task's draws are drawn again where used; with a bucket they are
// written (table_id, x = state, y, and heldout = 1 on the draws the protocol holds out).
func (s *source) Sample(ctx context.Context, b *tasks.Block, bucket *blob.Bucket, key string) error {
	if bucket == nil {
		return nil
	}
	return schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.SampleRow) error) error {
		for i := range b.Len() {
			t := b.Table(s.p, i)
			xs, ys := s.draws(t)
			rows := make([]schemas.SampleRow, len(xs))
			for j := range xs {
				rows[j] = schemas.SampleRow{TableID: t.ID, X: int64(xs[j]), Y: int64(ys[j]), Heldout: s.env.Options.HeldOut(j, len(xs))}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
}

// keepCells reports whether task ordinal o's cells are written (truth and learned
// joints): every task up to tasks.MaxCells cells, else the report's tasks only, so a
// D = 20 run's files stay small.
func (s *source) keepCells(o int64) bool { return tasks.KeepsCells(s.env.Options, s.p, o) }

// CarriesTruth: a block carries its tasks' joints up to tasks.MaxCells cells; above,
// the truth is drawn again from the task's seed where used (Train, Evaluate, WriteTruth)
// and the trained runs carry their parameters, not their logits, so a D = 20 run's
// memory does not grow with its tasks.
func (Kind) CarriesTruth(p tasks.Point) bool { return p.XValues*p.Classes <= tasks.MaxCells }

// LearnedCells are the learned cells the point writes (keepCells).
func (Kind) LearnedCells(o tasks.Options, p tasks.Point) int64 { return tasks.ReportCells(o, p) }

// WriteTruth writes the point's true joints (table_id, x, y, p) like the tables'.
func (s *source) WriteTruth(ctx context.Context, bucket *blob.Bucket, blocks []tasks.Block, multiPoint bool) (string, error) {
	p := s.p
	key := tasks.PointFile("tables", p.ID, multiPoint)
	err := schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.TableRow) error) error {
		for _, b := range blocks {
			for i := range b.Len() {
				t := b.Table(p, i)
				if !s.keepCells(t.Ordinal) {
					continue
				}
				// schemas.TableRows of the table, a chunk at a time (one chunker a
				// table: the bytes of one write a table, as before)
				c := schemas.NewChunker(write)
				for i, pr := range s.truthOf(t) {
					if err := c.Add(schemas.TableRow{TableID: t.ID, X: int64(i / p.Classes), Y: int64(i % p.Classes), P: pr}); err != nil {
						return err
					}
				}
				if err := c.Flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return key, err
}

// Train trains every run of a block: one kernel.TrainBits call per method, the block's
// tasks its runs, every method of a task from the same initial parameters.
func (s *source) Train(ctx context.Context, b tasks.Block) (tasks.TrainedBlock, error) {
	p, seed, o := s.p, s.env.Options.Seed, s.env.Options
	start := time.Now()
	m := len(p.Methods)
	out := tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
	hidden, _ := models.ParseModel(p.Model)
	type data struct {
		t     tasks.Table
		xs    []uint32
		ys    []int32
		hx    []uint32 // the held-out draws (the protocol's split, the same for every method)
		hy    []int32
		truth []float64
	}
	ds := make([]data, b.Len())
	for i := range ds {
		t := b.Table(p, i)
		xs, ys := s.draws(t)
		n := len(ys)
		if o.Select != "" {
			n = o.HoldoutSplit(n)
		}
		ds[i] = data{t: t, xs: xs[:n], ys: ys[:n], hx: xs[n:], hy: ys[n:]}
		if o.Select != "" {
			ds[i].truth = s.truthOf(t)
		}
	}
	every := 0
	if o.Select != "" {
		every = o.CheckEvery(p.Steps)
	}
	for j, meth := range p.Methods {
		sp, err := spec(p, meth)
		if err != nil {
			return out, err
		}
		sp.ObserveEvery = every
		if len(ds) > 0 { // the converged yardstick: full batches of the training draws
			sp.Batch = tasks.RunBatch(meth, sp.Batch, len(ds[0].ys))
		}
		lr := tasks.RunLR(meth, p.LR)
		runs := make([]kernel.RunBits, len(ds))
		for i, d := range ds {
			runs[i] = kernel.RunBits{Seed: tasks.TrainSeed(seed, d.t, meth), LR: float32(lr), X: d.xs, Y: d.ys,
				Theta: kernel.InitMLPBits(prob.Seed(tasks.TableSeed(seed, d.t), tagInit), s.d, hidden, p.Classes)}
		}
		// The protocol's loop (tasks.MethodLoop): at every check the exact held-out NLL and
		// the exact joint KL by enumeration, the iterate of least held-out NLL kept.
		loop := tasks.MethodLoop{Method: meth, Steps: p.Steps, Select: o.Select, PerStep: sp.GradEvalsPerStep(),
			Check: func(i int, theta []float32) (tasks.CurvePoint, []float64) {
				c := tasks.CurvePoint{KLJoint: math.NaN(), KLMarginal: math.NaN(), KLConditional: math.NaN(), HeldoutNLL: math.NaN()}
				lg, err := kernel.BitsLogits(s.d, hidden, p.Classes, theta)
				if err != nil {
					return c, nil
				}
				defer scalarCode()()
				c.HeldoutNLL = heldoutNLL(lg, p.Classes, ds[i].hx, ds[i].hy)
				if ds[i].truth != nil {
					c.KLJoint, c.KLMarginal, c.KLConditional = prob.GridKL(ds[i].truth, prob.Softmax(lg), p.Classes)
				}
				return c, nil
			}}
		bres := make([]kernel.ResultBits, len(runs))
		res, err := loop.Train(len(runs), func(i int, fn func(int, []float32)) { runs[i].Observe = fn }, func(h int, idx []int) ([]kernel.Result2D, error) {
			sp := sp
			sp.Steps = h
			got, err := kernel.TrainBits(ctx, sp, tasks.Subset(runs, idx))
			out := make([]kernel.Result2D, len(got))
			for k, r := range got {
				bres[idx[k]] = r
				out[k] = kernel.Result2D{Theta: r.Theta, Loss: r.Loss, Diverged: r.Diverged, DivergedStep: r.DivergedStep, CPUSeconds: r.CPUSeconds, Extra: r.Extra, Stats: r.Stats}
			}
			return out, err
		})
		if err != nil {
			return out, fmt.Errorf("train point %d block %d (%s, %d runs): %w", p.ID, b.Index, meth, len(runs), err)
		}
		for i, r := range bres {
			r.Theta = res[i].Theta // the iterate a converged yardstick stops at (the loop's)
			nan := math.NaN()
			tr := tasks.TrainedRun{Loss: float64(r.Loss), Diverged: r.Diverged, DivergedStep: int64(r.DivergedStep), Theta: r.Theta,
				BufferInBox: nan, BufferTVTruth: nan, BufferTVModel: nan, KLJointAveraged: nan, RefGap: nan, HeldoutNLL: nan, HeldoutNLLFinal: nan,
				TrainBatch: int64(sp.Batch), TrainLR: lr, PxWeight: tasks.RunPxWeight(p.PxWeight, sp.PxWeight)}
			if o.Select != "" {
				loop.Finish(i, &tr) // the selected iterate's parameters
			}
			lg, err := kernel.BitsLogits(s.d, hidden, p.Classes, tr.Theta)
			if err != nil {
				return out, fmt.Errorf("train point %d block %d (%s): %w", p.ID, b.Index, meth, err)
			}
			tr.Logits, tr.Stats = lg, exactLogZ(r.Stats, lg)
			if o.Timings && !math.IsNaN(r.CPUSeconds) {
				tr.TrainMS = 1000 * r.CPUSeconds
			}
			if r.Buffer != nil {
				tr.BufferInBox = 1
				if p.XValues <= 4*len(r.Buffer) { // else the histogram says nothing: NaN
					tr.BufferTVTruth, tr.BufferTVModel = bufferTV(p, r.Buffer, s.truthOf(ds[i].t), lg)
				}
			}
			if !(Kind{}).CarriesTruth(p) {
				tr.Logits = nil // Evaluate computes them again from Theta
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

// heldoutNLL is the exact mean −log q(x, y) of the held-out draws (states xs, classes
// ys) under the logits [X][K] of every state: log Z by enumeration. NaN with none.
func heldoutNLL(logits []float64, K int, xs []uint32, ys []int32) float64 {
	if len(ys) == 0 {
		return math.NaN()
	}
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = max(mx, v)
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(v - mx)
	}
	lz := mx + math.Log(z)
	var s float64
	for k, x := range xs {
		s += lz - logits[int(x)*K+int(ys[k])]
	}
	return s / float64(len(ys))
}

// exactLogZ adds to a method's stats that report a learned log Z (log_z_learned) the
// exact log Z of the same final parameters (log_z_exact: the log-sum-exp of every
// state's and class's logit), so the two sit side by side, as the plane kind's.
func exactLogZ(stats map[string]float64, logits []float64) map[string]float64 {
	if _, ok := stats["log_z_learned"]; !ok {
		return stats
	}
	defer scalarCode()()
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = max(mx, v)
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(v - mx)
	}
	stats["log_z_exact"] = mx + math.Log(z)
	return stats
}

// bufferTV is the total-variation distance of a pcd run's chains from p(x) and from its
// own q(x) (Train leaves them NaN where the states outnumber the chains 4 to 1: the
// histogram says nothing there).
func bufferTV(p tasks.Point, buf []uint32, truth, logits []float64) (tvTruth, tvModel float64) {
	x, k := p.XValues, p.Classes
	hist := make([]float64, x)
	for _, v := range buf {
		hist[v] += 1 / float64(len(buf))
	}
	return prob.TotalVariation(hist, prob.Marginal(truth, x, k)), prob.TotalVariation(hist, prob.Marginal(prob.Softmax(logits), x, k))
}

// Evaluate measures every run against its task's exact joint on all cells
// (tasks.EvaluateRun), with the OOD reference uniform over the states.
func (s *source) Evaluate(_ context.Context, tb tasks.TrainedBlock) (tasks.ResultBlock, tasks.LearnedBlock, error) {
	p := s.p
	rb := tasks.ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := tasks.LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]tasks.Learned, len(tb.Runs))}
	// The block's tasks are spread over the cores: a task's runs share its truth and
	// references, and depend on no other task, so the rows do not depend on how.
	m := len(p.Methods)
	err := tasks.SpreadTasks(tb.Block.Len(), 1, func(lo, hi int) error { return s.evaluateRuns(tb, lo*m, hi*m, &rb, &lb) })
	return rb, lb, err
}

// evaluateRuns measures runs lo..hi-1 of a block (whole tasks) into rb and lb.
func (s *source) evaluateRuns(tb tasks.TrainedBlock, lo, hi int, rb *tasks.ResultBlock, lb *tasks.LearnedBlock) error {
	p := s.p
	var refs *tasks.Refs
	var truth []float64
	defer scalarCode()()
	hidden, _ := models.ParseModel(p.Model)
	for r := lo; r < hi; r++ {
		kernel.ClearUpper()
		t := tb.Trained(p, r)
		if r%len(p.Methods) == 0 {
			truth = s.truthOf(t.Job.Dataset.Table)
			refs = tasks.GridRefs(truth, p.XValues, p.Classes)
		}
		t.Job.Dataset.Table.P = truth
		if t.Logits == nil && t.Run.Theta != nil { // a block that carries no logits (CarriesTruth)
			lg, err := kernel.BitsLogits(s.d, hidden, p.Classes, t.Run.Theta)
			if err != nil {
				return fmt.Errorf("evaluate point %d block %d: %w", p.ID, tb.Block.Index, err)
			}
			t.Logits, t.Run.Logits = lg, lg
		}
		row, l := tasks.EvaluateRun(t, refs)
		tasks.NoSplit(&row)
		switch {
		case !s.keepCells(t.Job.Dataset.Table.Ordinal):
			l.Logits, l.Q, l.P = nil, nil, nil
		case r%len(p.Methods) != 0:
			// the task's truth rides with its first method's run only: the runs share
			// it here, but each element carried to the writer and the report would
			// copy it (2^21 cells at D = 20); the report takes it from that run
			l.P = nil
		}
		rb.Rows[r], lb.Runs[r] = row, l
	}
	return nil
}

// Close: a binary source holds nothing to release.
func (s *source) Close() error { return nil }

package tasks

import (
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Table is one true joint table p(x,y) of a grid point: a view of one table of a Block
// (elements are blocks; Table, Dataset, Job and Trained are how a DoFn and the per-run
// functions see one table or run of a block).
//
// ID is the user's table id (any int64: sparse, negative or huge ids from
// --tables_from are carried unchanged into every table_id column). Ordinal is the
// table's position 0..T-1 within its point, in id order; everything the pipeline keys
// on (seeds, run ids, batches, sample shards, which tables get triple plots, file
// names) uses the ordinal, so a file's ids change nothing but its table_id columns.
// Generated tables have ID == Ordinal.
type Table struct {
	Point   Point
	ID      int64
	Ordinal int64
	P       []float64 // row-major x*Classes+y
}

// Dataset is a table with its N sampled draws, summarised as cell counts.
// The draws themselves are a deterministic function of the counts and the seed
// (see Samples), so they never travel through the pipeline.
type Dataset struct {
	Table  Table
	Counts []int64 // row-major x*Classes+y, summing to Point.Samples
}

// Job is one training run: a dataset and a method.
type Job struct {
	Dataset Dataset
	Method  string
	RunID   string
}

// Trained is a job with its learned logits.
type Trained struct {
	Job      Job
	Logits   []float64 // f(x)[y], row-major
	Loss     float64   // final training loss
	Diverged bool
	TrainMS  float64 // wall time per run (batch time / runs), 0 unless timings are on
	Run      TrainedRun
}

// Learned is one run's learned joint, with the truth beside it (for the report).
type Learned struct {
	RunID   string
	PointID int64
	TableID int64 // the user's table id
	Ordinal int64 // the table's ordinal within its point (see Table)
	Method  string
	X, K    int
	Logits  []float64
	Q       []float64 // learned joint softmax(f) over all cells
	P       []float64 // true joint
	// 2-D runs: the grid (G cells per side over [−Box, Box]², X = G²; 0 for tables),
	// the final replay buffer of a report run's sampler, and the KL curve.
	G      int
	Box    float64
	Task   string
	Buffer []float32
	Curve  []CurvePoint
	// Frames are the report's runs' Langevin chains from noise at FrameSteps, as
	// (x0, x1) pairs (the samples promise).
	Frames     [][]float32
	FrameSteps []int // the steps of the frames
}

// BlockRef names a block of tables: the element Source creates, one per block, so the
// pipeline parallelises over blocks from its first stage.
type BlockRef struct {
	PointID int64
	Index   int64 // block number within the point
}

// Block is the element of GenerateTables → SampleDatasets → Train: up to BlockTables
// tables of one grid point (the point comes from the DoFns' configuration, never from
// the element), stored column-wise. Table i of the block has ordinal First+i, the
// user's id IDs[i], true cells P[i·C:(i+1)·C] and, once sampled, counts
// Counts[i·C:(i+1)·C], with C = X·K cells.
type Block struct {
	PointID int64
	Index   int64
	First   int64
	IDs     []int64
	P       []float64
	Counts  []int64
}

// Len is the number of tables in the block.
func (b Block) Len() int { return len(b.IDs) }

// TrainedBlock is a block with one trained run per table and method: run i·M+j is
// table i with the point's method j (M methods).
type TrainedBlock struct {
	Block Block
	Runs  []TrainedRun
	// Expected are what a kind computed of its tasks' references while it trained
	// them (on another core, where there is one), for its Evaluate: for tables, per
	// table the exact expected KLs of the add-½ estimates of the joint and of p(x)
	// (prob.ExpectedKLSmoothed), 2 values a table. Empty: Evaluate computes them.
	Expected []float64
}

// TrainedRun is one run's training output.
type TrainedRun struct {
	Logits       []float64 // f(x)[y], row-major (2-D: on the evaluation grid's cells)
	Loss         float64   // final training loss
	Diverged     bool      // flagged by the trainer
	DivergedStep int64     // the step whose divergence guard fired (2-D kernels), 0 if none or unknown
	TrainMS      float64   // wall time per run (batch time / runs), 0 unless timings are on

	// Sampler runs (sgld, pcd): the final replay buffer's share in the box and its
	// total-variation distances from p(x) and q(x) (NaN for other methods), and the
	// buffer itself for the report's runs (2-D: (x0, x1) pairs; tables: x values).
	BufferInBox, BufferTVTruth, BufferTVModel float64
	Buffer                                    []float32
	Curve                                     []CurvePoint // 2-D runs with --eval_every: the KLs during training
	Theta                                     []float32    // 2-D runs: the final parameters (for the promises)
	// pcd and pcd-exact runs: the joint KL at the parameters averaged over the last 10%
	// of the steps (Polyak averaging; NaN for other runs).
	KLJointAveraged float64
	// 2-D exact references: the joint KL the steps after the first third gained on the
	// curve, KL(best check of the first third) − KL(best check) ≥ 0 (a convergence
	// diagnostic; NaN for other runs).
	RefGap float64
	// The protocol's selection (see schemas.ResultRow): the step of the iterate kept,
	// its held-out NLL and the last step's, the collapse flag, the gradient evaluations
	// per point (in all and up to the selected step), the run's CPU seconds (NaN
	// unless measured), and the batch and rate it trained with.
	SelectedStep                 int64
	HeldoutNLL, HeldoutNLLFinal  float64
	Unstable                     bool
	GradEvals, GradEvalsSelected int64
	CPUSeconds                   float64
	TrainBatch                   int64
	TrainLR                      float64
	// PxWeight is the weight of the run's log q(x) term as its method set it on the
	// trainer (RunPxWeight; 0: none, as the baseline's), the row's px_weight; NaN: the
	// kind did not say (the point's, 0 for a NoPx method).
	PxWeight float64
	// Stats are what the run's method reports of itself (kernel.Result2D.Stats: e.g. a
	// learned log Z), to the row's method_stats.
	Stats map[string]float64
}

// ResultBlock is the result rows of a block's runs (schemas.ResultBlock).
type ResultBlock = schemas.ResultBlock

// LearnedBlock is the learned joints of a block's runs, in run-id order.
type LearnedBlock struct {
	PointID, Index int64
	Runs           []Learned
}

// BlockTables is the number of tables in a block of point p: a block's runs of one
// training shape are one training graph of at most trainBatch runs.
func BlockTables(p Point, trainBatch int) int64 {
	return MustOf(p.Task).BlockSize(p, trainBatch)
}

// BlockRefs lists every block of every point, in point then block order.
func BlockRefs(points []Point, trainBatch int) []BlockRef {
	var out []BlockRef
	for _, p := range points {
		b := BlockTables(p, trainBatch)
		for i := int64(0); i*b < int64(p.Tables); i++ {
			out = append(out, BlockRef{PointID: p.ID, Index: i})
		}
	}
	return out
}

// PointsByID indexes the run's points (a DoFn's configuration) by id.
func PointsByID(points []Point) map[int64]Point {
	m := make(map[int64]Point, len(points))
	for _, p := range points {
		m[p.ID] = p
	}
	return m
}

// Table returns table i of block b of point p (P nil for a block that carries no
// truth: see CarriesTruth).
func (b Block) Table(p Point, i int) Table {
	c := p.XValues * p.Classes
	t := Table{Point: p, ID: b.IDs[i], Ordinal: b.First + int64(i)}
	if len(b.P) >= (i+1)*c {
		t.P = b.P[i*c : (i+1)*c]
	}
	return t
}

// truthCarrier is a kind whose blocks need not carry their tasks' truth on every cell
// (tasks/bits above tasks.MaxCells cells: the truth is a function of the task's seed,
// drawn again where used, so a run's memory does not grow with its tasks).
type truthCarrier interface {
	CarriesTruth(p Point) bool
}

// CarriesTruth reports whether point p's blocks carry their tasks' truth in Block.P
// (every kind's do, unless the kind says otherwise).
func CarriesTruth(p Point) bool {
	if k, err := Of(p.Task); err == nil {
		if c, ok := k.(truthCarrier); ok {
			return c.CarriesTruth(p)
		}
	}
	return true
}

// Dataset returns table i of a sampled block with its counts.
func (b Block) Dataset(p Point, i int) Dataset {
	c := p.XValues * p.Classes
	if len(b.Counts) == 0 { // a 2-D block: its draws are continuous, not counts
		return Dataset{Table: b.Table(p, i)}
	}
	return Dataset{Table: b.Table(p, i), Counts: b.Counts[i*c : (i+1)*c]}
}

// Seed tags: every random draw derives from (run seed, tag, identity of the element).
var (
	tagSample = prob.SeedString("sample")
	tagOrder  = prob.SeedString("order")
	tagTrain  = prob.SeedString("train")
)

// TableSeed identifies a task independently of N, lr, steps and method, so sweeps over
// those axes are paired on the same tasks (its kind's Seed). It uses the task's
// ordinal, not its id, so the same tasks under other ids draw the same samples and
// train the same way.
func TableSeed(runSeed uint64, t Table) uint64 {
	return MustOf(t.Point.Task).Seed(runSeed, t.Point, t.Ordinal)
}

// SampleSeed drives the multinomial counts of a table's dataset.
func SampleSeed(runSeed uint64, t Table) uint64 {
	return prob.Seed(TableSeed(runSeed, t), tagSample, uint64(t.Point.Samples))
}

// Samples returns the dataset's N draws as cell indices x*K+y in draw order. Given the
// counts, i.i.d. draws are a uniformly random ordering of the multiset, which is what
// this returns; it is what samples/*.parquet holds and what minibatch training uses.
func Samples(runSeed uint64, d Dataset) []int32 {
	return prob.SamplesFromCounts(prob.NewRand(prob.Seed(SampleSeed(runSeed, d.Table), tagOrder)), d.Counts)
}

// TrainSeed drives a run's initialisation and minibatch order.
func TrainSeed(runSeed uint64, t Table, method string) uint64 {
	return prob.Seed(TableSeed(runSeed, t), tagTrain, prob.SeedString(method))
}

// CurvePoint is a run's exact KL on the grid after a training step.
type CurvePoint struct {
	Step                               int
	KLJoint, KLMarginal, KLConditional float64
	HeldoutNLL                         float64 // the selection criterion (NaN without held-out draws)
	GradEvals                          int64   // forward+backward passes per point up to Step
}

// Trained is run r (table r/M, method r%M) of the block.
func (tb TrainedBlock) Trained(p Point, r int) Trained {
	m := len(p.Methods)
	d := tb.Block.Dataset(p, r/m)
	meth := p.Methods[r%m]
	o := tb.Runs[r]
	return Trained{Job: Job{Dataset: d, Method: meth, RunID: schemas.RunID(p.ID, d.Table.Ordinal, meth)},
		Logits: o.Logits, Loss: o.Loss, Diverged: o.Diverged, TrainMS: o.TrainMS, Run: o}
}

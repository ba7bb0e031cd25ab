package stages

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*TrainedBlock)(nil)).Elem())
	register.DoFn3x1[context.Context, Block, func(TrainedBlock), error](&trainBlockFn{})
	register.Emitter1[TrainedBlock]()
}

var runsTrained = beam.NewCounter("jemcheck", "runs_trained")

// Train trains one run per table and method of every block. A block's runs that share a
// training shape (every method but a minibatch point's oracle, which trains full-batch
// on the true table) are one training batch, trained in one call of the fused CPU
// kernels or one GoMLX graph (see models.NewTrainer and --backend): a block is a batch,
// so no grouping is needed to form batches. Baseline runs minimise
// cross-entropy, jem runs the exact joint negative log-likelihood (Z by enumerating all
// cells), oracle runs the jem loss on the true table.
//
// In: PCollection<Block> (with counts). Out: PCollection<TrainedBlock>.
func Train(s beam.Scope, opts Options, points []Point, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Train")
	return beam.ParDo(s, &trainBlockFn{Seed: opts.Seed, Backend: opts.Backend, TrainBatch: opts.TrainBatch, Timings: opts.Timings,
		TasksFrom: opts.TasksFrom, EvalEvery: opts.EvalEvery, ReportTables: opts.ReportTables, Points: points}, blocks)
}

func shapeKey(s models.Shape) string {
	return fmt.Sprintf("%dx%d/%s/%s/steps=%d/batch=%d", s.XValues, s.Classes, s.Encoding, s.Model, s.Steps, s.BatchSize)
}

type trainBlockFn struct {
	Seed       uint64
	Backend    string
	TrainBatch int // runs per training graph (the block's runs of one shape)
	Timings    bool
	// 2-D points: the user's tasks (--tasks_from), the curves' interval, and the
	// tasks whose sampler buffers the report shows (ordinals below ReportTables).
	TasksFrom    string
	EvalEvery    int
	ReportTables int
	Points       []Point

	points  map[int64]Point
	tasks   map[int64]*taskSource
	trainer *models.Trainer
}

func (f *trainBlockFn) Setup(ctx context.Context) error {
	f.points = pointsByID(f.Points)
	tasks, err := newTaskSources(ctx, f.Points, f.TasksFrom)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	f.tasks = tasks
	t, err := models.NewTrainer(f.Backend)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	t.SetRunsPerBatch(f.TrainBatch)
	f.trainer = t
	return nil
}

func (f *trainBlockFn) Teardown() {
	if f.trainer != nil {
		f.trainer.Close()
	}
}

func (f *trainBlockFn) ProcessElement(ctx context.Context, b Block, emit func(TrainedBlock)) error {
	p := f.points[b.PointID]
	if p.Is2D() {
		start := time.Now()
		out, err := f.train2D(ctx, p, b)
		if err != nil {
			return err
		}
		elapsed := time.Since(start)
		progress(ctx, "train: point %d block %d (%s): %d runs in %v", p.ID, b.Index, p.Task, len(out.Runs), elapsed.Round(time.Millisecond))
		runsTrained.Inc(ctx, int64(len(out.Runs)))
		emit(out)
		return nil
	}
	m := len(p.Methods)
	out := TrainedBlock{Block: b, Runs: make([]TrainedRun, b.Len()*m)}
	// One batch per training shape, in the order of the methods' first appearance.
	var shapes []models.Shape
	for _, meth := range p.Methods {
		if sh := p.Shape(meth); !slices.Contains(shapes, sh) {
			shapes = append(shapes, sh)
		}
	}
	for _, shape := range shapes {
		var idx []int // runs of this shape: i·m + j, table-major
		var runs []models.Run
		for i := range b.Len() {
			d := b.dataset(p, i)
			for j, meth := range p.Methods {
				if p.Shape(meth) != shape {
					continue
				}
				idx = append(idx, i*m+j)
				runs = append(runs, f.run(Job{Dataset: d, Method: meth}))
			}
		}
		start := time.Now()
		outs, err := f.trainer.Train(ctx, shape, runs)
		if err != nil {
			return fmt.Errorf("train point %d block %d (%s, %d runs): %w", p.ID, b.Index, shapeKey(shape), len(runs), err)
		}
		elapsed := time.Since(start)
		perRun := 0.0
		if f.Timings {
			perRun = float64(elapsed.Microseconds()) / 1000 / float64(len(runs))
		}
		for k, o := range outs {
			r := idx[k]
			out.Runs[r] = TrainedRun{Logits: o.Logits, Loss: o.Loss, Diverged: o.Diverged, TrainMS: perRun,
				BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN()}
			if o.AvgLogits != nil {
				out.Runs[r].KLJointAveraged = prob.KL(b.dataset(p, r/m).Table.P, prob.Softmax(o.AvgLogits))
			}
			if o.Buffer != nil {
				d := b.dataset(p, r/m)
				out.Runs[r].BufferInBox = 1
				out.Runs[r].BufferTVTruth, out.Runs[r].BufferTVModel = bufferTVTable(p, o.Buffer, d.Table.P, o.Logits)
				if d.Table.Ordinal < int64(f.ReportTables) {
					out.Runs[r].Buffer = make([]float32, 0, 2*len(o.Buffer))
					for _, x := range o.Buffer {
						out.Runs[r].Buffer = append(out.Runs[r].Buffer, float32(x), 0)
					}
				}
			}
		}
		progress(ctx, "train: point %d block %d %s: %d runs in %v (%.0f runs/s)", p.ID, b.Index, shapeKey(shape), len(runs),
			elapsed.Round(time.Millisecond), float64(len(runs))/elapsed.Seconds())
	}
	// Diverged runs are counted by Evaluate, which records them (runs_diverged).
	runsTrained.Inc(ctx, int64(len(out.Runs)))
	emit(out)
	return nil
}

// trained is run r (table r/M, method r%M) of the block.
func (tb TrainedBlock) trained(p Point, r int) Trained {
	m := len(p.Methods)
	d := tb.Block.dataset(p, r/m)
	meth := p.Methods[r%m]
	o := tb.Runs[r]
	return Trained{Job: Job{Dataset: d, Method: meth, RunID: RunID(p.ID, d.Table.Ordinal, meth)},
		Logits: o.Logits, Loss: o.Loss, Diverged: o.Diverged, TrainMS: o.TrainMS, Run: o}
}

// run builds the trainer's input for a job.
func (f *trainBlockFn) run(j Job) models.Run {
	d := j.Dataset
	p := d.Table.Point
	r := models.Run{LR: p.LR, Seed: trainSeed(f.Seed, d.Table, j.Method)}
	switch j.Method {
	case MethodBaseline:
		r.PxWeight = 0
	default:
		r.PxWeight = p.PxWeight
	}
	if j.Method == MethodOracle {
		r.Counts = slices.Clone(d.Table.P)
		return r
	}
	r.Counts = make([]float64, len(d.Counts))
	for i, c := range d.Counts {
		r.Counts[i] = float64(c)
	}
	if p.BatchSize > 0 {
		r.Samples = Samples(f.Seed, d)
	}
	if j.Method == MethodPCD || j.Method == MethodPCDExact {
		r.PCD = &kernel.PCD{Exact: j.Method == MethodPCDExact, Negatives: pcdNegatives(p), Buffer: p.BufferSize,
			Reinit: float32(p.ReinitFreq), ChainSteps: p.ChainSteps, Neighbour: p.Proposal == "neighbour",
			Seed: prob.Seed(r.Seed, tagSampler), AverageLast: max(1, p.Steps/10)}
	}
	return r
}

var tagSampler = prob.SeedString("sampler")

// pcdNegatives is the number of negatives per step of a table point's pcd runs: the
// minibatch size, or 64 on a full-batch point.
func pcdNegatives(p Point) int {
	if p.BatchSize > 0 {
		return p.BatchSize
	}
	return 64
}

// bufferTVTable is the total-variation distance of a table run's negatives (x values)
// from the true p(x) and from the run's own q(x).
func bufferTVTable(p Point, buf []int32, truth, logits []float64) (tvTruth, tvModel float64) {
	x, k := p.XValues, p.Classes
	hist := make([]float64, x)
	for _, v := range buf {
		if v >= 0 && int(v) < x {
			hist[v]++
		}
	}
	for i := range hist {
		hist[i] /= float64(len(buf))
	}
	return prob.TotalVariation(hist, prob.Marginal(truth, x, k)), prob.TotalVariation(hist, prob.Marginal(prob.Softmax(logits), x, k))
}

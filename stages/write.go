package stages

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

func init() {
	beam.RegisterFunction(blockPointKeyFn)
	beam.RegisterDoFn(reflect.TypeOf((*writeTablesFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*writeResultsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*writeLearnedFn)(nil)).Elem())
}

// WriteTables writes the true tables of every point as Parquet (columns table_id, x,
// y, p; sorted by table_id, x, y), one file per point; for a 2-D point the truth on
// its grid (truth.parquet: task_id, cell, x0, x1, y, p).
//
// In: PCollection<Block>. Out: PCollection<string> (the keys written).
func WriteTables(s beam.Scope, opts Options, points []Point, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteTables")
	grouped := beam.GroupByKey(s, beam.ParDo(s, blockPointKeyFn, blocks))
	return beam.ParDo(s, &writeTablesFn{OutBucket: OutBucket{Out: opts.Out}, Sources: Sources{Options: opts, Points: points},
		MultiPoint: len(points) > 1}, grouped)
}

func blockPointKeyFn(b Block) (int64, Block) { return b.PointID, b }

type writeTablesFn struct {
	OutBucket
	Sources
	MultiPoint bool
}

func (f *writeTablesFn) Setup(ctx context.Context) error {
	if err := f.Sources.Setup(ctx); err != nil {
		return fmt.Errorf("write tables: %w", err)
	}
	return f.OutBucket.Setup(ctx)
}

func (f *writeTablesFn) Teardown() error {
	return errors.Join(f.Sources.Teardown(), f.OutBucket.Teardown())
}

func (f *writeTablesFn) ProcessElement(ctx context.Context, point int64, iter func(*Block) bool, emit func(string)) error {
	p, src, err := f.source(point)
	if err != nil {
		return fmt.Errorf("write tables: %w", err)
	}
	var blocks []Block
	var b Block
	n := 0
	for iter(&b) {
		blocks = append(blocks, Block{First: b.First, IDs: b.IDs, P: b.P})
		n += b.Len()
	}
	// A point's blocks are consecutive ordinal ranges and ordinals follow the ids: in
	// block order the tables are in id order. The rows are streamed a block at a time.
	slices.SortFunc(blocks, func(a, b Block) int { return cmp.Compare(a.First, b.First) })
	key, err := src.WriteTruth(ctx, f.bucket, blocks, f.MultiPoint)
	if err != nil {
		return fmt.Errorf("write the truth of point %d: %w", p.ID, err)
	}
	progress(ctx, "write: %d %s -> %s", n, tasks.MustOf(p.Task).Noun(), key)
	emit(key)
	return nil
}

// ResultsPath is the results/ file of a point's block.
func ResultsPath(pointID, block int64) string {
	return fmt.Sprintf("results/point-%04d-part-%05d.parquet", pointID, block)
}

// WriteResults writes the result rows of every block as a Parquet file of its own
// (results/point-NNNN-part-BBBBB.parquet, part = block number): one row per run, sorted
// by run id. No block's rows wait for another's.
//
// In: PCollection<ResultBlock>. Out: PCollection<string> (the keys written).
func WriteResults(s beam.Scope, opts Options, results beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteResults")
	return beam.ParDo(s, &writeResultsFn{OutBucket: OutBucket{Out: opts.Out}}, results)
}

type writeResultsFn struct {
	OutBucket
	async asyncWrite // the block's file is written beside the pipeline (see asyncWrite)
}

func (f *writeResultsFn) ProcessElement(ctx context.Context, b ResultBlock, emit func(string)) error {
	key := ResultsPath(b.PointID, b.Index)
	err := f.async.start(func() error {
		if err := schemas.WriteParquet(ctx, f.bucket, key, b.Rows); err != nil {
			return fmt.Errorf("write results of point %d block %d: %w", b.PointID, b.Index, err)
		}
		if err := sealPart(ctx, f.bucket, key); err != nil {
			return err
		}
		if AfterResultsWritten != nil {
			AfterResultsWritten(b.PointID, b.Index)
		}
		return nil
	})
	if err != nil {
		return err
	}
	emit(key)
	return nil
}

// AfterResultsWritten, set by tests (to interrupt a run part-way, deterministically
// enough), is called after each block's results file is written.
var AfterResultsWritten func(pointID, block int64)

// LearnedPath is the learned/ file of a point's block.
func LearnedPath(pointID, block int64) string {
	return fmt.Sprintf("learned/point-%04d-part-%05d.parquet", pointID, block)
}

// WriteLearned writes the learned joints of every block as a Parquet file of its own
// (learned/point-NNNN-part-BBBBB.parquet, part = block number): one row per run and cell
// (logit and learned joint probability), sorted by run id, x, y. No run's joint waits
// for another block's.
//
// In: PCollection<LearnedBlock>. Out: PCollection<string> (the keys written).
func WriteLearned(s beam.Scope, opts Options, learned beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteLearned")
	return beam.ParDo(s, &writeLearnedFn{OutBucket: OutBucket{Out: opts.Out}}, learned)
}

type writeLearnedFn struct {
	OutBucket
	async asyncWrite // a table block's file is written beside the pipeline (see asyncWrite)
}

func (f *writeLearnedFn) ProcessElement(ctx context.Context, b LearnedBlock, emit func(string)) error {
	if len(b.Runs) > 0 && b.Runs[0].G > 0 {
		return f.write2D(ctx, b, emit)
	}
	if err := f.writeCurves(ctx, b, emit); err != nil { // block tasks' curves, before their learned joints (BlockComplete)
		return err
	}
	key := LearnedPath(b.PointID, b.Index)
	err := f.async.start(func() error {
		if err := schemas.WriteParquetStream(ctx, f.bucket, key, func(write func([]schemas.LearnedRow) error) error {
			return learnedRows(b, write)
		}); err != nil {
			return fmt.Errorf("write learned joints of point %d block %d: %w", b.PointID, b.Index, err)
		}
		return sealPart(ctx, f.bucket, key)
	})
	if err != nil {
		return err
	}
	emit(key)
	return nil
}

// learnedRows hands a (non-2-D) block's learned rows to write, schemas.StreamChunk at a
// time: a D = 20 task's runs have 2^21 cells each, and rows built for the whole block
// took GBs. The file's bytes are those of one write of every row (schemas.Chunker).
func learnedRows(b LearnedBlock, write func([]schemas.LearnedRow) error) error {
	c := schemas.NewChunker(write)
	for _, l := range b.Runs { // in run-id order (Evaluate sorts them)
		for i, lg := range l.Logits {
			r := schemas.LearnedRow{RunID: l.RunID, TableID: l.TableID, Method: l.Method,
				PointID: l.PointID, X: int64(i / l.K), Y: int64(i % l.K), Logit: lg, Q: l.Q[i]}
			if err := c.Add(r); err != nil {
				return err
			}
		}
	}
	return c.Flush()
}

// Paths of a 2-D block's learned grids, curves and sampler buffers.
func LearnedGridPath(pointID, block int64) string {
	return fmt.Sprintf("learned_grid/point-%04d-part-%05d.parquet", pointID, block)
}
func CurvesPath(pointID, block int64) string {
	return fmt.Sprintf("curves/point-%04d-part-%05d.parquet", pointID, block)
}
func BuffersPath(pointID, block int64) string {
	return fmt.Sprintf("buffers/point-%04d-part-%05d.parquet", pointID, block)
}

// write2D writes a 2-D block's learned joints on the grid (learned_grid/: run_id,
// task_id, cell, y, logit, q), its runs' KL curves (curves/, when --eval_every is on)
// and the final replay buffers of its report runs (buffers/, when it has any). The
// learned grids come last: a block whose learned_grid/ file exists has all its files
// (see BlockComplete).
func (f *writeLearnedFn) write2D(ctx context.Context, b LearnedBlock, emit func(string)) error {
	curves := curveRows(b)
	var bufs []schemas.BufferRow
	for _, l := range b.Runs {
		for s := 0; s+1 < len(l.Buffer); s += 2 {
			bufs = append(bufs, schemas.BufferRow{RunID: l.RunID, TaskID: l.TableID, Index: int64(s / 2),
				X0: float64(l.Buffer[s]), X1: float64(l.Buffer[s+1])})
		}
	}
	if len(curves) > 0 {
		key := CurvesPath(b.PointID, b.Index)
		if err := schemas.WriteParquet(ctx, f.bucket, key, curves); err != nil {
			return fmt.Errorf("write curves of point %d block %d: %w", b.PointID, b.Index, err)
		}
		if err := sealPart(ctx, f.bucket, key); err != nil {
			return err
		}
		emit(key)
	}
	if len(bufs) > 0 {
		key := BuffersPath(b.PointID, b.Index)
		if err := schemas.WriteParquet(ctx, f.bucket, key, bufs); err != nil {
			return fmt.Errorf("write buffers of point %d block %d: %w", b.PointID, b.Index, err)
		}
		if err := sealPart(ctx, f.bucket, key); err != nil {
			return err
		}
		emit(key)
	}
	key := LearnedGridPath(b.PointID, b.Index)
	err := schemas.WriteParquetStream(ctx, f.bucket, key, func(write func([]schemas.LearnedGridRow) error) error {
		for _, l := range b.Runs {
			rows := make([]schemas.LearnedGridRow, len(l.Logits))
			for c := range l.Logits {
				rows[c] = schemas.LearnedGridRow{RunID: l.RunID, TaskID: l.TableID, Cell: int64(c / l.K), Y: int64(c % l.K), Logit: l.Logits[c], Q: l.Q[c]}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write learned grids of point %d block %d: %w", b.PointID, b.Index, err)
	}
	if err := sealPart(ctx, f.bucket, key); err != nil {
		return err
	}
	emit(key)
	return nil
}

// curveRows are a block's runs' curves: the checks of the protocol's selection.
func curveRows(b LearnedBlock) []schemas.CurveRow {
	var curves []schemas.CurveRow
	for _, l := range b.Runs {
		for _, c := range l.Curve {
			curves = append(curves, schemas.CurveRow{RunID: l.RunID, TaskID: l.TableID, Method: l.Method, PointID: l.PointID,
				Step: int64(c.Step), KLJoint: c.KLJoint, KLMarginal: c.KLMarginal, KLConditional: c.KLConditional,
				HeldoutNLL: c.HeldoutNLL, GradEvals: c.GradEvals})
		}
	}
	return curves
}

// writeCurves writes a (non-2-D) block's curves, if its runs have any.
func (f *writeLearnedFn) writeCurves(ctx context.Context, b LearnedBlock, emit func(string)) error {
	curves := curveRows(b)
	if len(curves) == 0 {
		return nil
	}
	key := CurvesPath(b.PointID, b.Index)
	if err := schemas.WriteParquet(ctx, f.bucket, key, curves); err != nil {
		return fmt.Errorf("write curves of point %d block %d: %w", b.PointID, b.Index, err)
	}
	if err := sealPart(ctx, f.bucket, key); err != nil {
		return err
	}
	emit(key)
	return nil
}

package stages

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func init() {
	register.DoFn3x1[context.Context, Block, func(Block), error](&sampleDatasetsFn{})
}

var (
	datasetsSampled = beam.NewCounter("jemcheck", "datasets_sampled")
	samplesDrawn    = beam.NewCounter("jemcheck", "samples_drawn")
)

// sampleChunk is the number of sample rows built and handed to the Parquet writer at a
// time: a block's draws are streamed, never held whole.
const sampleChunk = 1 << 16

// SamplePath is the samples/ file of a point's block.
func SamplePath(pointID, block int64) string {
	return fmt.Sprintf("samples/point-%04d-part-%05d.parquet", pointID, block)
}

// SampleDatasets draws N i.i.d. samples from every table of every block (as
// multinomial cell counts, whose cost does not depend on N) and, when
// opts.WriteSamples is set, writes the block's draws to samples/ as one Parquet file
// per block (deterministic names, rows streamed in chunks).
//
// In: PCollection<Block>. Out: PCollection<Block> (with counts).
func SampleDatasets(s beam.Scope, opts Options, points []Point, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.SampleDatasets")
	return beam.ParDo(s, &sampleDatasetsFn{OutBucket: OutBucket{Out: opts.Out, Off: !opts.WriteSamples}, Seed: opts.Seed,
		TasksFrom: opts.TasksFrom, Points: points}, blocks)
}

type sampleDatasetsFn struct {
	OutBucket
	Seed      uint64
	TasksFrom string
	Points    []Point

	points map[int64]Point
	tasks  map[int64]*taskSource
}

func (f *sampleDatasetsFn) Setup(ctx context.Context) error {
	f.points = pointsByID(f.Points)
	tasks, err := newTaskSources(ctx, f.Points, f.TasksFrom)
	if err != nil {
		return fmt.Errorf("sample datasets: %w", err)
	}
	f.tasks = tasks
	return f.OutBucket.Setup(ctx)
}

func (f *sampleDatasetsFn) ProcessElement(ctx context.Context, b Block, emit func(Block)) error {
	p := f.points[b.PointID]
	if p.Is2D() { // the draws are a function of the task's seed, drawn again where used
		datasetsSampled.Inc(ctx, int64(b.Len()))
		samplesDrawn.Inc(ctx, SatMul(int64(b.Len()), int64(p.Samples)))
		if f.bucket != nil {
			if err := f.writeSamples2D(ctx, p, b); err != nil {
				return err
			}
		}
		emit(b)
		return nil
	}
	b.Counts = make([]int64, 0, len(b.P))
	for i := range b.Len() {
		t := b.table(p, i)
		b.Counts = append(b.Counts, prob.Multinomial(prob.NewRand(sampleSeed(f.Seed, t)), int64(p.Samples), t.P)...)
	}
	datasetsSampled.Inc(ctx, int64(b.Len()))
	samplesDrawn.Inc(ctx, SatMul(int64(b.Len()), int64(p.Samples)))
	if f.bucket != nil {
		if err := f.writeSamples(ctx, p, b); err != nil {
			return err
		}
	}
	emit(b)
	return nil
}

// writeSamples streams the block's draws, table by table in ordinal order, each
// table's N draws in draw order (see Samples).
func (f *sampleDatasetsFn) writeSamples(ctx context.Context, p Point, b Block) error {
	key := SamplePath(p.ID, b.Index)
	rows := make([]schemas.SampleRow, 0, min(sampleChunk, b.Len()*p.Samples))
	err := schemas.WriteParquetStream(ctx, f.bucket, key, func(write func([]schemas.SampleRow) error) error {
		for i := range b.Len() {
			d := b.dataset(p, i)
			for _, c := range Samples(f.Seed, d) {
				rows = append(rows, schemas.SampleRow{TableID: d.Table.ID, X: int64(int(c) / p.Classes), Y: int64(int(c) % p.Classes)})
				if len(rows) == cap(rows) {
					if err := write(rows); err != nil {
						return err
					}
					rows = rows[:0]
				}
			}
		}
		if len(rows) > 0 {
			return write(rows)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sample datasets: point %d block %d: %w", p.ID, b.Index, err)
	}
	progress(ctx, "sample: point %d: tables %d..%d, %d rows -> %s", p.ID, b.First, b.First+int64(b.Len())-1,
		SatMul(int64(b.Len()), int64(p.Samples)), key)
	return nil
}

// writeSamples2D writes a 2-D block's draws (task_id, x0, x1, y), task by task in
// ordinal order, each task's N draws in draw order (as training sees them).
func (f *sampleDatasetsFn) writeSamples2D(ctx context.Context, p Point, b Block) error {
	key := SamplePath(p.ID, b.Index)
	err := schemas.WriteParquetStream(ctx, f.bucket, key, func(write func([]schemas.SampleRow2D) error) error {
		for i := range b.Len() {
			t := b.table(p, i)
			task, _, err := f.tasks[p.ID].task(f.Seed, p, t.Ordinal)
			if err != nil {
				return err
			}
			x0, x1, y := draws2D(f.Seed, t, task)
			rows := make([]schemas.SampleRow2D, len(y))
			for j := range y {
				rows[j] = schemas.SampleRow2D{TaskID: t.ID, X0: float64(x0[j]), X1: float64(x1[j]), Y: int64(y[j])}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sample datasets: point %d block %d: %w", p.ID, b.Index, err)
	}
	progress(ctx, "sample: point %d: tasks %d..%d, %d rows -> %s", p.ID, b.First, b.First+int64(b.Len())-1,
		SatMul(int64(b.Len()), int64(p.Samples)), key)
	return nil
}

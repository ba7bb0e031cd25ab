package stages

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/jemcheck/jemcheck/tasks"
)

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*sampleDatasetsFn)(nil)).Elem())
}

var (
	datasetsSampled = beam.NewCounter("jemcheck", "datasets_sampled")
	samplesDrawn    = beam.NewCounter("jemcheck", "samples_drawn")
)

// SamplePath is the samples/ file of a point's block.
func SamplePath(pointID, block int64) string {
	return fmt.Sprintf("samples/point-%04d-part-%05d.parquet", pointID, block)
}

// SampleDatasets draws N i.i.d. samples from every task of every block
// (tasks.Source.Sample: for tables multinomial cell counts, whose cost does not depend
// on N) and, when opts.WriteSamples is set, writes the block's draws to samples/ as
// one Parquet file per block (deterministic names, rows streamed in chunks).
//
// In: PCollection<Block>. Out: PCollection<Block> (with counts).
func SampleDatasets(s beam.Scope, opts Options, points []Point, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.SampleDatasets")
	return beam.ParDo(s, &sampleDatasetsFn{OutBucket: OutBucket{Out: opts.Out, Off: !opts.WriteSamples},
		Sources: Sources{Options: opts, Points: points}}, blocks)
}

type sampleDatasetsFn struct {
	OutBucket
	Sources
}

func (f *sampleDatasetsFn) Setup(ctx context.Context) error {
	if err := f.Sources.Setup(ctx); err != nil {
		return fmt.Errorf("sample datasets: %w", err)
	}
	return f.OutBucket.Setup(ctx)
}

func (f *sampleDatasetsFn) Teardown() error {
	return errors.Join(f.Sources.Teardown(), f.OutBucket.Teardown())
}

func (f *sampleDatasetsFn) ProcessElement(ctx context.Context, b Block, emit func(Block)) error {
	p, src, err := f.source(b.PointID)
	if err != nil {
		return fmt.Errorf("sample datasets: %w", err)
	}
	key := SamplePath(p.ID, b.Index)
	if err := src.Sample(ctx, &b, f.bucket, key); err != nil {
		return fmt.Errorf("sample datasets: point %d block %d: %w", p.ID, b.Index, err)
	}
	if f.bucket != nil {
		if err := sealPart(ctx, f.bucket, key); err != nil {
			return fmt.Errorf("sample datasets: %w", err)
		}
	}
	n := tasks.SatMul(int64(b.Len()), int64(p.Samples))
	datasetsSampled.Inc(ctx, int64(b.Len()))
	samplesDrawn.Inc(ctx, n)
	if f.bucket != nil {
		progress(ctx, "sample: point %d: %s %d..%d, %d rows -> %s", p.ID, tasks.MustOf(p.Task).Noun(), b.First, b.First+int64(b.Len())-1, n, key)
	}
	blockDone(ctx, f.Options.Out, "sample")
	emit(b)
	return nil
}

package stages

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Dataset)(nil)).Elem())
	register.Function1x2[Table, string, Table](shardKeyFn)
	register.DoFn4x1[context.Context, string, func(*Table) bool, func(Dataset), error](&sampleShardFn{})
	register.Iter1[Table]()
	register.Emitter1[Dataset]()
}

var (
	datasetsSampled = beam.NewCounter("jemcheck", "datasets_sampled")
	samplesDrawn    = beam.NewCounter("jemcheck", "samples_drawn")
)

// shardRows is the target number of sample rows per samples/ Parquet file.
const shardRows = 1 << 20

// tablesPerShard groups tables so each samples/ file holds about shardRows rows.
func tablesPerShard(n int) int64 { return int64(max(1, shardRows/max(n, 1))) }

// SamplePath is the samples/ file of a point's shard.
func SamplePath(pointID, shard int64) string {
	return fmt.Sprintf("samples/point-%04d-part-%05d.parquet", pointID, shard)
}

// SampleDatasets draws N i.i.d. samples from every table (as multinomial cell counts,
// whose cost does not depend on N), writes the draws to samples/ as Parquet when
// opts.WriteSamples is set (one file per shard of tables, deterministic names), and
// emits each table's counts.
//
// In: PCollection<Table>. Out: PCollection<Dataset>.
func SampleDatasets(s beam.Scope, opts Options, tables beam.PCollection) beam.PCollection {
	s = s.Scope("stages.SampleDatasets")
	shards := beam.GroupByKey(s, beam.ParDo(s, shardKeyFn, tables))
	return beam.ParDo(s, &sampleShardFn{Seed: opts.Seed, Out: opts.Out, WriteSamples: opts.WriteSamples}, shards)
}

// shardKeyFn keys a table by its point and shard: consecutive ordinals (never ids, which
// may be negative or sparse) share a shard.
func shardKeyFn(t Table) (string, Table) {
	return fmt.Sprintf("%d/%d", t.Point.ID, t.Ordinal/tablesPerShard(t.Point.Samples)), t
}

type sampleShardFn struct {
	Seed         uint64
	Out          string
	WriteSamples bool

	bucket *blob.Bucket
}

func (f *sampleShardFn) Setup(ctx context.Context) error {
	if !f.WriteSamples {
		return nil
	}
	b, err := schemas.OpenBucket(ctx, f.Out)
	if err != nil {
		return fmt.Errorf("sample datasets: %w", err)
	}
	f.bucket = b
	return nil
}

func (f *sampleShardFn) Teardown() error { return closeBucket(f.bucket) }

func (f *sampleShardFn) ProcessElement(ctx context.Context, _ string, iter func(*Table) bool, emit func(Dataset)) error {
	var tables []Table
	var t Table
	for iter(&t) {
		tables = append(tables, t)
	}
	slices.SortFunc(tables, func(a, b Table) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	p := tables[0].Point
	var rows []schemas.SampleRow
	for _, t := range tables {
		d := Dataset{Table: t, Counts: prob.Multinomial(prob.NewRand(sampleSeed(f.Seed, t)), int64(p.Samples), t.P)}
		if f.WriteSamples {
			for _, c := range Samples(f.Seed, d) {
				rows = append(rows, schemas.SampleRow{TableID: t.ID, X: int64(int(c) / p.Classes), Y: int64(int(c) % p.Classes)})
			}
		}
		emit(d)
	}
	shard := tables[0].Ordinal / tablesPerShard(p.Samples)
	datasetsSampled.Inc(ctx, int64(len(tables)))
	samplesDrawn.Inc(ctx, SatMul(int64(len(tables)), int64(p.Samples)))
	if !f.WriteSamples {
		return nil
	}
	key := SamplePath(p.ID, shard)
	if err := schemas.WriteParquet(ctx, f.bucket, key, rows); err != nil {
		return fmt.Errorf("sample datasets: point %d shard %d: %w", p.ID, shard, err)
	}
	progress("sample: point %d: tables %d..%d, %d rows -> %s", p.ID, tables[0].ID, tables[len(tables)-1].ID, len(rows), key)
	return nil
}

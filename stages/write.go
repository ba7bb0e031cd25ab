package stages

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func init() {
	register.Function1x2[Table, int64, Table](tablePointKeyFn)
	register.DoFn4x1[context.Context, int64, func(*Table) bool, func(string), error](&writeTablesFn{})
	register.Function3x0[int, func(*schemas.ResultRow) bool, func(ResultSet)](collectResultsFn)
	register.Iter1[schemas.ResultRow]()
	register.Emitter1[ResultSet]()
	register.Emitter1[string]()
	register.DoFn3x1[context.Context, ResultSet, func(string), error](&writeResultsFn{})
	register.DoFn4x1[context.Context, int, func(*Learned) bool, func(string), error](&writeLearnedFn{})
	register.Iter1[Learned]()
}

// TablesPath is where a point's true tables go: tables.parquet for single-point runs,
// tables/point-NNNN.parquet when a sweep has several points.
func TablesPath(pointID int64, multiPoint bool) string {
	if !multiPoint {
		return "tables.parquet"
	}
	return fmt.Sprintf("tables/point-%04d.parquet", pointID)
}

// WriteTables writes the true tables of every point as Parquet (columns table_id, x,
// y, p; sorted by table_id, x, y).
//
// In: PCollection<Table>. Out: PCollection<string> (the keys written).
func WriteTables(s beam.Scope, opts Options, multiPoint bool, tables beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteTables")
	grouped := beam.GroupByKey(s, beam.ParDo(s, tablePointKeyFn, tables))
	return beam.ParDo(s, &writeTablesFn{Out: opts.Out, MultiPoint: multiPoint}, grouped)
}

func tablePointKeyFn(t Table) (int64, Table) { return t.Point.ID, t }

type writeTablesFn struct {
	Out        string
	MultiPoint bool
	bucket     *blob.Bucket
}

func (f *writeTablesFn) Setup(ctx context.Context) (err error) {
	f.bucket, err = schemas.OpenBucket(ctx, f.Out)
	return err
}

func (f *writeTablesFn) Teardown() error { return closeBucket(f.bucket) }

func (f *writeTablesFn) ProcessElement(ctx context.Context, point int64, iter func(*Table) bool, emit func(string)) error {
	var ts []prob.Table
	var t Table
	for iter(&t) {
		ts = append(ts, prob.Table{ID: t.ID, X: t.Point.XValues, K: t.Point.Classes, P: t.P})
	}
	slices.SortFunc(ts, func(a, b prob.Table) int { return cmp.Compare(a.ID, b.ID) })
	key := TablesPath(point, f.MultiPoint)
	if err := schemas.WriteParquet(ctx, f.bucket, key, schemas.TableRows(ts)); err != nil {
		return fmt.Errorf("write tables of point %d: %w", point, err)
	}
	progress("write: %d tables -> %s", len(ts), key)
	emit(key)
	return nil
}

// CollectResults gathers every result row into one ResultSet sorted by run id, the
// input of WriteResults, Aggregate and Report.
//
// In: PCollection<schemas.ResultRow>. Out: PCollection<ResultSet> (one element).
func CollectResults(s beam.Scope, rows beam.PCollection) beam.PCollection {
	s = s.Scope("stages.CollectResults")
	return beam.ParDo(s, collectResultsFn, beam.GroupByKey(s, beam.AddFixedKey(s, rows)))
}

func collectResultsFn(_ int, iter func(*schemas.ResultRow) bool, emit func(ResultSet)) {
	var rs ResultSet
	var r schemas.ResultRow
	for iter(&r) {
		rs.Rows = append(rs.Rows, r)
	}
	slices.SortFunc(rs.Rows, func(a, b schemas.ResultRow) int { return strings.Compare(a.RunID, b.RunID) })
	emit(rs)
}

// WriteResults writes results.parquet: one row per run, sorted by run id.
//
// In: PCollection<ResultSet>. Out: PCollection<string> (the key written).
func WriteResults(s beam.Scope, opts Options, results beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteResults")
	return beam.ParDo(s, &writeResultsFn{Out: opts.Out}, results)
}

type writeResultsFn struct {
	Out    string
	bucket *blob.Bucket
}

func (f *writeResultsFn) Setup(ctx context.Context) (err error) {
	f.bucket, err = schemas.OpenBucket(ctx, f.Out)
	return err
}

func (f *writeResultsFn) Teardown() error { return closeBucket(f.bucket) }

func (f *writeResultsFn) ProcessElement(ctx context.Context, rs ResultSet, emit func(string)) error {
	if err := schemas.WriteParquet(ctx, f.bucket, "results.parquet", rs.Rows); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	progress("write: %d runs -> results.parquet", len(rs.Rows))
	emit("results.parquet")
	return nil
}

// WriteLearned writes learned.parquet: one row per run and cell (logit and learned
// joint probability), sorted by run id, x, y.
//
// In: PCollection<Learned>. Out: PCollection<string> (the key written).
func WriteLearned(s beam.Scope, opts Options, learned beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteLearned")
	return beam.ParDo(s, &writeLearnedFn{Out: opts.Out}, beam.GroupByKey(s, beam.AddFixedKey(s, learned)))
}

type writeLearnedFn struct {
	Out    string
	bucket *blob.Bucket
}

func (f *writeLearnedFn) Setup(ctx context.Context) (err error) {
	f.bucket, err = schemas.OpenBucket(ctx, f.Out)
	return err
}

func (f *writeLearnedFn) Teardown() error { return closeBucket(f.bucket) }

func (f *writeLearnedFn) ProcessElement(ctx context.Context, _ int, iter func(*Learned) bool, emit func(string)) error {
	var runs []Learned
	var l Learned
	for iter(&l) {
		runs = append(runs, l)
	}
	slices.SortFunc(runs, func(a, b Learned) int { return strings.Compare(a.RunID, b.RunID) })
	var rows []schemas.LearnedRow
	for _, l := range runs {
		for c := range l.Logits {
			rows = append(rows, schemas.LearnedRow{RunID: l.RunID, TableID: l.TableID, Method: l.Method,
				PointID: l.PointID, X: int64(c / l.K), Y: int64(c % l.K), Logit: l.Logits[c], Q: l.Q[c]})
		}
	}
	if err := schemas.WriteParquet(ctx, f.bucket, "learned.parquet", rows); err != nil {
		return fmt.Errorf("write learned: %w", err)
	}
	progress("write: %d cells of %d runs -> learned.parquet", len(rows), len(runs))
	emit("learned.parquet")
	return nil
}

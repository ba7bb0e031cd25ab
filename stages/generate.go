package stages

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Point)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Table)(nil)).Elem())
	register.DoFn3x1[context.Context, Point, func(Table), error](&generateTablesFn{})
	register.Emitter1[Table]()
}

var tablesGenerated = beam.NewCounter("jemcheck", "tables_generated")

// GenerateTables draws the true joint tables of every point: Point.Tables tables from
// the point's generator, or, when opts.TablesFrom is set, the user's tables (already
// validated by the launcher; re-read here so the file never travels in the pipeline).
// Every table gets its ordinal 0..T-1 within the point, in id order (see Table).
//
// In: PCollection<Point>. Out: PCollection<Table>.
func GenerateTables(s beam.Scope, opts Options, points beam.PCollection) beam.PCollection {
	s = s.Scope("stages.GenerateTables")
	return beam.ParDo(s, &generateTablesFn{Seed: opts.Seed, TablesFrom: opts.TablesFrom}, points)
}

type generateTablesFn struct {
	Seed       uint64
	TablesFrom string
}

func (f *generateTablesFn) ProcessElement(ctx context.Context, p Point, emit func(Table)) error {
	if f.TablesFrom != "" {
		ts, err := schemas.ReadTables(ctx, f.TablesFrom)
		if err != nil {
			return fmt.Errorf("generate tables for point %d: %w", p.ID, err)
		}
		// ReadTables returns the tables sorted by id; sort again so the ordinals are
		// in id order whatever the reader does.
		slices.SortStableFunc(ts, func(a, b prob.Table) int { return cmp.Compare(a.ID, b.ID) })
		for i, t := range ts {
			emit(Table{Point: p, ID: t.ID, Ordinal: int64(i), P: t.P})
		}
		tablesGenerated.Inc(ctx, int64(len(ts)))
		progress("generate: point %d: %d tables read from %s", p.ID, len(ts), f.TablesFrom)
		return nil
	}
	gen, err := prob.ParseGenerator(p.Generator)
	if err != nil {
		return fmt.Errorf("generate tables for point %d: %w", p.ID, err)
	}
	for id := range int64(p.Tables) {
		t := Table{Point: p, ID: id, Ordinal: id}
		t.P = gen.Draw(prob.NewRand(tableSeed(f.Seed, t)), p.XValues, p.Classes)
		emit(t)
	}
	tablesGenerated.Inc(ctx, int64(p.Tables))
	progress("generate: point %d: %d %s tables of %dx%d", p.ID, p.Tables, p.Generator, p.XValues, p.Classes)
	return nil
}

package stages

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/tasks"
)

// The DoFns are registered for reflection (beam.RegisterDoFn), not with the generic
// register package: an element is a block of runs, so the per-call cost of reflection
// is small next to the work, and the generic registrations made up most of the
// functions the package compiled (68k of 70k).
func init() {
	beam.RegisterType(reflect.TypeOf((*BlockRef)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Block)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*generateTablesFn)(nil)).Elem())
}

var tablesGenerated = beam.NewCounter("jemcheck", "tables_generated")

// GenerateTables fills every block with its tasks' truth on the evaluation support
// (tasks.Source.Truth): for task ordinal o of the point, a draw seeded by (run seed,
// the task's identity, o), or the user's task with the o-th smallest id.
//
// In: PCollection<BlockRef>. Out: PCollection<Block> (without counts).
func GenerateTables(s beam.Scope, opts Options, points []Point, refs beam.PCollection) beam.PCollection {
	s = s.Scope("stages.GenerateTables")
	return beam.ParDo(s, &generateTablesFn{Sources: Sources{Options: opts, Points: points}}, refs)
}

type generateTablesFn struct{ Sources }

func (f *generateTablesFn) ProcessElement(ctx context.Context, ref BlockRef, emit func(Block)) error {
	p, src, err := f.source(ref.PointID)
	if err != nil {
		return fmt.Errorf("generate block %d: %w", ref.Index, err)
	}
	size := tasks.BlockTables(p, f.Options.TrainBatch)
	first := ref.Index * size
	n := min(size, int64(p.Tables)-first)
	if n <= 0 {
		return fmt.Errorf("generate: point %d has no block %d", p.ID, ref.Index)
	}
	carry := tasks.CarriesTruth(p)
	b := Block{PointID: p.ID, Index: ref.Index, First: first, IDs: make([]int64, n)}
	if carry {
		b.P = make([]float64, 0, int(n)*p.XValues*p.Classes)
	}
	for i := range n {
		id, truth, err := src.Truth(first + i)
		if err != nil {
			return fmt.Errorf("generate point %d: %w", p.ID, err)
		}
		b.IDs[i] = id
		if carry {
			b.P = append(b.P, truth...)
		}
	}
	tablesGenerated.Inc(ctx, n)
	emit(b)
	return nil
}

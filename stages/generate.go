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
	beam.RegisterType(reflect.TypeOf((*BlockRef)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Block)(nil)).Elem())
	register.DoFn3x1[context.Context, BlockRef, func(Block), error](&generateTablesFn{})
	register.Emitter1[Block]()
}

var tablesGenerated = beam.NewCounter("jemcheck", "tables_generated")

// GenerateTables fills every block with its true joint tables: for table ordinal o of
// the point, a draw from the point's generator seeded by (run seed, o), or, when
// opts.TablesFrom is set, the user's table with the o-th smallest id (the file was
// validated by the launcher and is read once per worker, in Setup).
//
// In: PCollection<BlockRef>. Out: PCollection<Block> (without counts).
func GenerateTables(s beam.Scope, opts Options, points []Point, refs beam.PCollection) beam.PCollection {
	s = s.Scope("stages.GenerateTables")
	return beam.ParDo(s, &generateTablesFn{Seed: opts.Seed, TablesFrom: opts.TablesFrom, TasksFrom: opts.TasksFrom,
		TrainBatch: opts.TrainBatch, Points: points}, refs)
}

type generateTablesFn struct {
	Seed       uint64
	TablesFrom string
	TasksFrom  string
	TrainBatch int
	Points     []Point

	points map[int64]Point
	gens   map[int64]prob.Generator // each point's generator, parsed once
	user   []prob.Table             // the --tables_from tables in id order
	tasks  map[int64]*taskSource    // the 2-D points' tasks
}

func (f *generateTablesFn) Setup(ctx context.Context) error {
	f.points = pointsByID(f.Points)
	tasks, err := newTaskSources(ctx, f.Points, f.TasksFrom)
	if err != nil {
		return fmt.Errorf("generate tasks: %w", err)
	}
	f.tasks = tasks
	if f.TablesFrom == "" {
		f.gens = make(map[int64]prob.Generator, len(f.Points))
		for _, p := range f.Points {
			if p.Is2D() {
				continue
			}
			g, err := prob.ParseGenerator(p.Generator)
			if err != nil {
				return fmt.Errorf("generate tables for point %d: %w", p.ID, err)
			}
			f.gens[p.ID] = g
		}
		return nil
	}
	ts, err := schemas.ReadTables(ctx, f.TablesFrom)
	if err != nil {
		return fmt.Errorf("generate tables: %w", err)
	}
	// ReadTables returns the tables sorted by id; sort again so the ordinals are in id
	// order whatever the reader does.
	slices.SortStableFunc(ts, func(a, b prob.Table) int { return cmp.Compare(a.ID, b.ID) })
	f.user = ts
	return nil
}

func (f *generateTablesFn) ProcessElement(ctx context.Context, ref BlockRef, emit func(Block)) error {
	p, ok := f.points[ref.PointID]
	if !ok {
		return fmt.Errorf("generate tables: block %d of unknown point %d", ref.Index, ref.PointID)
	}
	size := BlockTables(p, f.TrainBatch)
	first := ref.Index * size
	n := min(size, int64(p.Tables)-first)
	if n <= 0 {
		return fmt.Errorf("generate tables: point %d has no block %d", p.ID, ref.Index)
	}
	cells := p.XValues * p.Classes
	b := Block{PointID: p.ID, Index: ref.Index, First: first, IDs: make([]int64, n), P: make([]float64, 0, int(n)*cells)}
	gen := f.gens[p.ID]
	for i := range n {
		o := first + i
		if p.Is2D() { // the task's joint on the evaluation grid
			task, id, err := f.tasks[p.ID].task(f.Seed, p, o)
			if err != nil {
				return fmt.Errorf("generate tasks: %w", err)
			}
			truth, err := truth2D(p, task, id)
			if err != nil {
				return fmt.Errorf("generate tasks: point %d: %w", p.ID, err)
			}
			b.IDs[i] = id
			b.P = append(b.P, truth...)
			continue
		}
		if f.user != nil {
			if o >= int64(len(f.user)) {
				return fmt.Errorf("generate tables: point %d: table %d of %d read from %s", p.ID, o, len(f.user), f.TablesFrom)
			}
			b.IDs[i] = f.user[o].ID
			b.P = append(b.P, f.user[o].P...)
			continue
		}
		t := Table{Point: p, ID: o, Ordinal: o}
		b.IDs[i] = o
		b.P = append(b.P, gen.Draw(prob.NewRand(tableSeed(f.Seed, t)), p.XValues, p.Classes)...)
	}
	tablesGenerated.Inc(ctx, n)
	emit(b)
	return nil
}

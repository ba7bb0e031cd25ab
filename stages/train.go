package stages

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/tasks"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*TrainedBlock)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*trainBlockFn)(nil)).Elem())
}

var runsTrained = beam.NewCounter("jemcheck", "runs_trained")

// Train trains one run per task and method of every block (tasks.Source.Train): for
// tables, a block's runs of one training shape are one call of the fused CPU kernels
// or one GoMLX graph (see models.NewTrainer and --backend); for 2-D tasks, one call of
// the 2-D kernels per method. A block is a batch, so no grouping is needed. A point's
// external methods (a user's models, pipelines/evaluate) are not trained: their runs
// are the user's logits (opts.Logits), read once per worker, in the run order of the
// point's methods. A user's model given as a file (opts.ONNX) has runs without logits:
// stages.Evaluate has the kind evaluate the model (tasks.ModelSource).
//
// In: PCollection<Block> (with counts). Out: PCollection<TrainedBlock>.
func Train(s beam.Scope, opts Options, points []Point, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Train")
	trained := make([]Point, len(points))
	for i, p := range points {
		trained[i] = p.WithoutExternal()
	}
	return beam.ParDo(s, &trainBlockFn{Sources: Sources{Options: opts, Points: trained}, Full: points}, blocks)
}

type trainBlockFn struct {
	Sources
	// Full are the points with their external methods (Sources' points have none).
	Full []Point

	external map[int64]*tasks.External // by point, for points with external methods
}

func (f *trainBlockFn) Setup(ctx context.Context) error {
	if err := f.Sources.Setup(ctx); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	f.external = map[int64]*tasks.External{}
	for _, p := range f.Full {
		if !slices.ContainsFunc(p.Methods, methods.IsExternal) {
			continue
		}
		ids, err := tasks.TaskIDs(ctx, f.Options, p)
		if err != nil {
			return fmt.Errorf("train: point %d: %w", p.ID, err)
		}
		if f.Options.ONNX != "" { // a model file: its runs carry no logits, the kind evaluates the model (stages.Evaluate)
			f.external[p.ID] = tasks.ModelExternal(slices.DeleteFunc(slices.Clone(p.Methods), func(m string) bool { return !methods.IsExternal(m) }), ids)
			continue
		}
		e, _, err := tasks.ReadExternal(ctx, f.Options.Logits, p, ids, cmp.Or(f.Options.LogitsModel, methods.External), false)
		if err != nil {
			return fmt.Errorf("train: point %d: %w", p.ID, err)
		}
		f.external[p.ID] = e
	}
	return nil
}

func (f *trainBlockFn) ProcessElement(ctx context.Context, b Block, emit func(TrainedBlock)) error {
	p, src, err := f.source(b.PointID)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	var out TrainedBlock
	if len(p.Methods) > 0 {
		if out, err = src.Train(ctx, b); err != nil {
			return fmt.Errorf("train point %d block %d: %w", p.ID, b.Index, err)
		}
	} else {
		out = TrainedBlock{Block: b}
	}
	if e := f.external[p.ID]; e != nil {
		if out, err = withExternal(out, f.full(p.ID), p.Methods, e); err != nil {
			return fmt.Errorf("train point %d block %d: %w", p.ID, b.Index, err)
		}
	}
	// Diverged runs are counted by Evaluate, which records them (runs_diverged).
	runsTrained.Inc(ctx, int64(len(out.Runs)))
	blockDone(ctx, f.Options.Out, "train")
	emit(out)
	return nil
}

// full is the point with its external methods.
func (f *trainBlockFn) full(id int64) Point {
	i := slices.IndexFunc(f.Full, func(p Point) bool { return p.ID == id })
	return f.Full[i]
}

// withExternal puts the external runs among a block's trained runs: run i·M+j is
// table i with the full point's method j (trained holds the trained methods' runs).
func withExternal(tb TrainedBlock, full Point, trained []string, e *tasks.External) (TrainedBlock, error) {
	runs := make([]tasks.TrainedRun, 0, tb.Block.Len()*len(full.Methods))
	for i, id := range tb.Block.IDs {
		for _, m := range full.Methods {
			if !methods.IsExternal(m) {
				runs = append(runs, tb.Runs[i*len(trained)+slices.Index(trained, m)])
				continue
			}
			r, err := e.Run(m, id)
			if err != nil {
				return tb, err
			}
			runs = append(runs, r)
		}
	}
	tb.Runs = runs
	return tb, nil
}

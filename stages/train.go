package stages

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*TrainedBlock)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*trainBlockFn)(nil)).Elem())
}

var runsTrained = beam.NewCounter("jemcheck", "runs_trained")

// Train trains one run per task and method of every block (tasks.Source.Train): for
// tables, a block's runs of one training shape are one call of the fused CPU kernels
// or one GoMLX graph (see models.NewTrainer and --backend); for 2-D tasks, one call of
// the 2-D kernels per method. A block is a batch, so no grouping is needed.
//
// In: PCollection<Block> (with counts). Out: PCollection<TrainedBlock>.
func Train(s beam.Scope, opts Options, points []Point, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Train")
	return beam.ParDo(s, &trainBlockFn{Sources: Sources{Options: opts, Points: points}}, blocks)
}

type trainBlockFn struct{ Sources }

func (f *trainBlockFn) ProcessElement(ctx context.Context, b Block, emit func(TrainedBlock)) error {
	p, src, err := f.source(b.PointID)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	out, err := src.Train(ctx, b)
	if err != nil {
		return fmt.Errorf("train point %d block %d: %w", p.ID, b.Index, err)
	}
	// Diverged runs are counted by Evaluate, which records them (runs_diverged).
	runsTrained.Inc(ctx, int64(len(out.Runs)))
	blockDone(ctx, f.Options.Out, "train")
	emit(out)
	return nil
}

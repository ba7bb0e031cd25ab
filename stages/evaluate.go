package stages

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*schemas.ResultRow)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Learned)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*ResultBlock)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*LearnedBlock)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*evaluateFn)(nil)).Elem())
}

// Evaluate compares every learned joint with its true table: from the logits f(x)[y]
// over all cells, q(x,y) = softmax over all cells, q(x) and q(y|x); exact
// KL(p‖q) of the joint, of the marginal p(x), the conditional E_{x~p} KL(p(y|x)‖q(y|x)),
// the accuracy of argmax q(y|x) under p against the table's Bayes accuracy; the joint
// KL split into approximation, optimisation and estimation errors with the exact
// references (see splitError); the first-order floor (X·K−1)/(2N) and the KL of the
// empirical table (the plug-in estimate, +Inf when a cell is empty) for comparison.
//
// In: PCollection<TrainedBlock>. Out: PCollection<ResultBlock>, PCollection<LearnedBlock>.
func Evaluate(s beam.Scope, opts Options, points []Point, trained beam.PCollection) (results, learned beam.PCollection) {
	s = s.Scope("stages.Evaluate")
	return beam.ParDo2(s, &evaluateFn{Sources: Sources{Options: opts, Points: points}}, trained)
}

// runsDiverged counts the result rows recorded as diverged, where the row's flag is set,
// so the console's count is the number of diverged rows in the results/ files;
// runsNonfinite those recorded as nonfinite (a KL not finite, no guard fired).
var (
	runsDiverged  = beam.NewCounter("jemcheck", "runs_diverged")
	runsNonfinite = beam.NewCounter("jemcheck", "runs_nonfinite")
)

type evaluateFn struct{ Sources }

func (f *evaluateFn) ProcessElement(ctx context.Context, tb TrainedBlock, emitRows func(ResultBlock), emitLearned func(LearnedBlock)) error {
	p, src, err := f.source(tb.Block.PointID)
	if err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	rb, lb, err := src.Evaluate(ctx, tb)
	if err != nil {
		return fmt.Errorf("evaluate point %d block %d: %w", p.ID, tb.Block.Index, err)
	}
	if f.Options.ONNX != "" {
		if err := evaluateModels(ctx, f.Options.ONNX, p, src, tb, &rb); err != nil {
			return fmt.Errorf("evaluate point %d block %d: %w", p.ID, tb.Block.Index, err)
		}
	}
	diverged, nonfinite := 0, 0
	for _, r := range rb.Rows {
		if r.Diverged {
			diverged++
		}
		if r.Nonfinite {
			nonfinite++
		}
	}
	// Run ids sort by table ordinal, then method name: the block's rows in that order.
	slices.SortFunc(rb.Rows, func(a, b schemas.ResultRow) int { return strings.Compare(a.RunID, b.RunID) })
	slices.SortFunc(lb.Runs, func(a, b Learned) int { return strings.Compare(a.RunID, b.RunID) })
	runsDiverged.Inc(ctx, int64(diverged))
	if nonfinite > 0 {
		runsNonfinite.Inc(ctx, int64(nonfinite))
	}
	blockDone(ctx, f.Options.Out, "evaluate")
	emitRows(rb)
	emitLearned(lb)
	return nil
}

// evaluateModels replaces the rows of a block's external runs (a user's model given as
// the file loc, or one file per task where loc holds tasks.ONNXPlaceholder,
// pipelines/evaluate --onnx; the kind's Evaluate has no model for them)
// by the kind's evaluation of the model (tasks.ModelSource). Run r's row is rb.Rows[r].
func evaluateModels(ctx context.Context, loc string, p Point, src tasks.Source, tb TrainedBlock, rb *ResultBlock) error {
	if !slices.ContainsFunc(p.Methods, methods.IsExternal) {
		return nil
	}
	ms, ok := src.(tasks.ModelSource)
	if !ok {
		return fmt.Errorf("task %s: its kind does not evaluate a model file (%s)", p.Task, loc)
	}
	if len(rb.Rows) != len(tb.Runs) {
		return fmt.Errorf("%d rows for %d runs", len(rb.Rows), len(tb.Runs))
	}
	for r := range tb.Runs {
		t := tb.Trained(p, r)
		if !methods.IsExternal(t.Job.Method) {
			continue
		}
		row, err := ms.EvaluateModel(ctx, t, tasks.ModelLocation(loc, t.Job.Dataset.Table.ID))
		if err != nil {
			return fmt.Errorf("%s on task %d: %w", t.Job.Method, t.Job.Dataset.Table.ID, err)
		}
		rb.Rows[r] = row
	}
	return nil
}

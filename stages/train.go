package stages

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/models"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Job)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Trained)(nil)).Elem())
	register.DoFn2x0[Dataset, func(string, Job)](&expandJobsFn{})
	register.Emitter2[string, Job]()
	register.DoFn4x1[context.Context, string, func(*Job) bool, func(Trained), error](&trainBatchFn{})
	register.Iter1[Job]()
	register.Emitter1[Trained]()
}

var runsTrained = beam.NewCounter("jemcheck", "runs_trained")

// Train fans every dataset out to one run per method, groups the runs into batches
// of up to opts.TrainBatch runs that share a training shape, and trains each batch in
// one GoMLX graph (one DoFn call per batch). Baseline runs minimise cross-entropy,
// jem runs the exact joint negative log-likelihood (Z by enumerating all cells),
// oracle runs the jem loss on the true table.
//
// In: PCollection<Dataset>. Out: PCollection<Trained>.
func Train(s beam.Scope, opts Options, datasets beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Train")
	jobs := beam.ParDo(s, &expandJobsFn{TrainBatch: int64(opts.TrainBatch)}, datasets)
	return beam.ParDo(s, &trainBatchFn{Seed: opts.Seed, Backend: opts.Backend, Timings: opts.Timings},
		beam.GroupByKey(s, jobs))
}

// expandJobsFn emits one job per method, keyed by its batch: runs with the same
// training shape are numbered consecutively (by point offset, table ordinal and method)
// and cut into batches of TrainBatch.
type expandJobsFn struct {
	TrainBatch int64
}

func (f *expandJobsFn) ProcessElement(d Dataset, emit func(string, Job)) {
	p := d.Table.Point
	for i, m := range p.Methods {
		n := (p.Offset+d.Table.Ordinal)*int64(len(p.Methods)) + int64(i)
		key := fmt.Sprintf("%s#%d", shapeKey(p.Shape(m)), n/f.TrainBatch)
		emit(key, Job{Dataset: d, Method: m, RunID: RunID(p.ID, d.Table.Ordinal, m)})
	}
}

func shapeKey(s models.Shape) string {
	return fmt.Sprintf("%dx%d/%s/%s/steps=%d/batch=%d", s.XValues, s.Classes, s.Encoding, s.Model, s.Steps, s.BatchSize)
}

type trainBatchFn struct {
	Seed    uint64
	Backend string
	Timings bool

	trainer *models.Trainer
}

func (f *trainBatchFn) Setup() error {
	t, err := models.NewTrainer(f.Backend)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	f.trainer = t
	return nil
}

func (f *trainBatchFn) Teardown() {
	if f.trainer != nil {
		f.trainer.Close()
	}
}

func (f *trainBatchFn) ProcessElement(ctx context.Context, key string, iter func(*Job) bool, emit func(Trained)) error {
	var jobs []Job
	var j Job
	for iter(&j) {
		jobs = append(jobs, j)
	}
	// Deterministic order: a retried bundle trains the same batch the same way.
	slices.SortFunc(jobs, func(a, b Job) int { return strings.Compare(a.RunID, b.RunID) })
	shape := jobs[0].Dataset.Table.Point.Shape(jobs[0].Method)
	runs := make([]models.Run, len(jobs))
	for i, j := range jobs {
		runs[i] = f.run(j)
	}
	start := time.Now()
	outs, err := f.trainer.Train(ctx, shape, runs)
	if err != nil {
		return fmt.Errorf("train batch %s (%d runs): %w", key, len(jobs), err)
	}
	elapsed := time.Since(start)
	perRun := 0.0
	if f.Timings {
		perRun = float64(elapsed.Microseconds()) / 1000 / float64(len(jobs))
	}
	// Count diverged runs the way Evaluate records them (results.parquet's diverged
	// column), not only the ones the trainer flagged.
	diverged := 0
	for i, o := range outs {
		t := Trained{Job: jobs[i], Logits: o.Logits, Loss: o.Loss, Diverged: o.Diverged, TrainMS: perRun}
		if Diverged(t) {
			diverged++
		}
		emit(t)
	}
	runsTrained.Inc(ctx, int64(len(jobs)))
	progress("train: batch %s: %d runs in %v (%.0f runs/s), %d diverged", key, len(jobs),
		elapsed.Round(time.Millisecond), float64(len(jobs))/elapsed.Seconds(), diverged)
	return nil
}

// run builds the trainer's input for a job.
func (f *trainBatchFn) run(j Job) models.Run {
	d := j.Dataset
	p := d.Table.Point
	r := models.Run{LR: p.LR, Seed: trainSeed(f.Seed, d.Table, j.Method)}
	switch j.Method {
	case MethodBaseline:
		r.PxWeight = 0
	default:
		r.PxWeight = p.PxWeight
	}
	if j.Method == MethodOracle {
		r.Counts = slices.Clone(d.Table.P)
		return r
	}
	r.Counts = make([]float64, len(d.Counts))
	for i, c := range d.Counts {
		r.Counts[i] = float64(c)
	}
	if p.BatchSize > 0 {
		r.Samples = Samples(f.Seed, d)
	}
	return r
}

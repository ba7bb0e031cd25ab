package stages

import (
	"cmp"
	"context"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*PointAcc)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*schemas.Summary)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*schemas.PointSummary)(nil)).Elem())
	beam.RegisterFunction(keyByPointFn)
	beam.RegisterType(reflect.TypeOf((*pointCombineFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*summaryFn)(nil)).Elem())
}

// Aggregate summarises the results of every grid point: per method the count, mean,
// median, p10 and p90 of each KL, the ratio of mean joint KL to the floor; the paired
// JEM-vs-baseline comparison (win share, Wilcoxon signed-rank test, bootstrap 95% CI of
// the mean difference); and the verdict under opts.Thresholds, which is undecided when a
// method is missing or more than MaxDivergedShare of the pairs diverged.
//
// Each point's blocks are combined (beam.CombinePerKey) into a PointAcc, a partial
// aggregate that is exact up to bootstrapMaxItems tables and of fixed size per block
// beyond (see PointAcc), so no step holds every result row of a large run.
//
// In: PCollection<ResultBlock>. Out: PCollection<schemas.Summary> (one element).
func Aggregate(s beam.Scope, opts Options, points []Point, pipeline string, results beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Aggregate")
	summaries := beam.CombinePerKey(s, &pointCombineFn{Points: points, Seed: opts.Seed, Thresholds: opts.Thresholds},
		beam.ParDo(s, keyByPointFn, results))
	all := beam.GroupByKey(s, beam.AddFixedKey(s, beam.DropKey(s, summaries)))
	return beam.ParDo(s, &summaryFn{Seed: opts.Seed, Pipeline: pipeline, Protocol: ProtocolOf(opts)}, all)
}

// ProtocolOf is the training protocol summary.json declares (tasks.Options.ProtocolOf),
// nil where no kind of the run selects iterates (a table run: Resolve clears --select).
func ProtocolOf(opts Options) *schemas.Protocol {
	if opts.Select == "" {
		return nil
	}
	p := opts.ProtocolOf()
	return &schemas.Protocol{Select: p.Select, Holdout: p.Holdout, Checks: p.Checks, UnstableNats: p.UnstableNats,
		Same: p.Same, Exception: p.Exception}
}

func keyByPointFn(b ResultBlock, emit func(int64, ResultBlock)) { emit(b.PointID, b) }

// pointCombineFn combines a point's result blocks into its summary.
type pointCombineFn struct {
	Points     []Point
	Seed       uint64
	Thresholds Thresholds
}

func (f *pointCombineFn) CreateAccumulator() PointAcc { return PointAcc{} }

func (f *pointCombineFn) AddInput(a PointAcc, b ResultBlock) PointAcc {
	a.Add(b)
	return a
}

func (f *pointCombineFn) MergeAccumulators(a, b PointAcc) PointAcc {
	a.Merge(b)
	return a
}

func (f *pointCombineFn) ExtractOutput(a PointAcc) schemas.PointSummary {
	var pt Point
	for _, p := range f.Points {
		if p.ID == a.PointID {
			pt = p
		}
	}
	return SummarizePoint(pt, a, f.Seed, f.Thresholds)
}

// SummarizePoint is the summary of point p from its accumulated results: the verdict's
// (kind-free) summary with what the point's kind says of it, its dimension and its
// family on the report's dimension ladder.
func SummarizePoint(p Point, a PointAcc, seed uint64, th Thresholds) schemas.PointSummary {
	k := tasks.MustOf(p.Task)
	ps := a.Summary(p.Grid, k.Rule(), seed, th)
	ps.Dimension, ps.LadderFamily = k.Dimension(p), k.Family(p)
	return ps
}

// summaryFn gathers the points' summaries into the run's.
type summaryFn struct {
	Seed     uint64
	Pipeline string
	Protocol *schemas.Protocol
}

func (f *summaryFn) ProcessElement(ctx context.Context, _ int, iter func(*schemas.PointSummary) bool, emit func(schemas.Summary)) {
	var points []schemas.PointSummary
	var ps schemas.PointSummary
	runs := 0
	for iter(&ps) {
		points = append(points, ps)
		for _, m := range ps.Methods {
			runs += m.Runs
		}
	}
	slices.SortFunc(points, func(a, b schemas.PointSummary) int { return cmp.Compare(a.PointID, b.PointID) })
	sum := verdict.SummaryOf(points, f.Seed)
	sum.Pipeline, sum.Protocol = f.Pipeline, f.Protocol
	progress(ctx, "aggregate: %d runs over %d points: %s", runs, len(sum.Points), sum.Verdict.Reason)
	emit(sum)
}

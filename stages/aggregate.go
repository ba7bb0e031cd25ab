package stages

import (
	"cmp"
	"context"
	"fmt"
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
	beam.RegisterDoFn(reflect.TypeOf((*summarizeBlockFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*pointCombineFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*summaryFn)(nil)).Elem())
}

// SummarizePoints summarises the results of every grid point: per method the count,
// mean, median, p10 and p90 of each KL, the ratio of mean joint KL to the floor; the
// paired JEM-vs-baseline comparison (win share, Wilcoxon signed-rank test, bootstrap 95%
// CI of the mean difference); and the verdict under opts.Thresholds, which is undecided
// when a method is missing or more than MaxDivergedShare of the pairs diverged.
//
// A point whose tables are one block (a sweep's usual point) is summarised from that
// block where it is evaluated, so that the runner never holds its rows. The blocks of
// the other points are combined (beam.CombinePerKey) into a PointAcc, a partial
// aggregate that is exact up to bootstrapMaxItems tables and of fixed size per block
// beyond (see PointAcc), so no step holds every result row of a large run; a block of a
// point past that bound is folded where it is evaluated (verdict.PartOf), so the runner
// carries its sums, not its rows. Either way the summary is the one PointAcc gives.
//
// In: PCollection<ResultBlock>. Out: PCollection<schemas.PointSummary> (one per point).
func SummarizePoints(s beam.Scope, opts Options, points []Point, results beam.PCollection) beam.PCollection {
	s = s.Scope("stages.SummarizePoints")
	var single []int64
	for _, p := range points {
		if tasks.BlockTables(p, opts.TrainBatch) >= int64(p.Tables) {
			single = append(single, p.ID)
		}
	}
	slices.Sort(single)
	summarize := pointSummarizer{Points: points, Seed: opts.Seed, Thresholds: opts.Thresholds}
	whole, parts := beam.ParDo2(s, &summarizeBlockFn{pointSummarizer: summarize, Single: single}, results)
	combined := beam.CombinePerKey(s, &pointCombineFn{pointSummarizer: summarize}, parts)
	return beam.Flatten(s, whole, beam.DropKey(s, combined))
}

// pointSummarizer is what a point's summary needs beside its results.
type pointSummarizer struct {
	Points     []Point
	Seed       uint64
	Thresholds Thresholds

	byID map[int64]Point // Points by id, built on first use (a sweep's 10,000 points)
}

// point is the point of the given id.
func (f *pointSummarizer) point(id int64) Point {
	if f.byID == nil {
		f.byID = tasks.PointsByID(f.Points)
	}
	return f.byID[id]
}

func (f *pointSummarizer) summary(a PointAcc) schemas.PointSummary {
	return SummarizePoint(f.point(a.PointID), a, f.Seed, f.Thresholds)
}

// summarizeBlockFn summarises a block that holds all its point's tables (a point of
// Single) and passes the others on, keyed by point, to be combined.
type summarizeBlockFn struct {
	pointSummarizer
	Single []int64 // sorted
}

func (f *summarizeBlockFn) ProcessElement(b ResultBlock, whole func(schemas.PointSummary), part func(int64, PointAcc)) {
	if _, ok := slices.BinarySearch(f.Single, b.PointID); ok {
		var a PointAcc
		a.Add(b)
		whole(f.summary(a))
		return
	}
	part(b.PointID, verdict.PartOf(b, int64(f.point(b.PointID).Tables)))
}

// pointCombineFn combines a point's blocks' accumulators (verdict.PartOf) into its summary.
type pointCombineFn struct{ pointSummarizer }

func (f *pointCombineFn) CreateAccumulator() PointAcc { return PointAcc{} }

func (f *pointCombineFn) AddInput(a, b PointAcc) PointAcc {
	a.Merge(b)
	return a
}

func (f *pointCombineFn) MergeAccumulators(a, b PointAcc) PointAcc {
	a.Merge(b)
	return a
}

func (f *pointCombineFn) ExtractOutput(a PointAcc) schemas.PointSummary { return f.summary(a) }

// Aggregate gathers the points' summaries into the run's (Report does the same for
// summary.json; this is for pipelines that add stages after it).
//
// In: PCollection<schemas.PointSummary>. Out: PCollection<schemas.Summary> (one element).
func Aggregate(s beam.Scope, opts Options, points []Point, pipeline string, summaries beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Aggregate")
	all := beam.GroupByKey(s, beam.AddFixedKey(s, summaries))
	return beam.ParDo(s, &summaryFn{Run: runOf(opts, points, pipeline)}, all)
}

// runInfo is what the run's summary says beside its points'.
type runInfo struct {
	Seed     uint64
	Pipeline string
	Protocol *schemas.Protocol
	Points   int // the run's points, each of which must have a summary
}

func runOf(opts Options, points []Point, pipeline string) runInfo {
	return runInfo{Seed: opts.Seed, Pipeline: pipeline, Protocol: ProtocolOf(opts), Points: len(points)}
}

// gather is the run's summary from its points' (in any order).
func (r runInfo) gather(ctx context.Context, iter func(*schemas.PointSummary) bool) (schemas.Summary, error) {
	var points []schemas.PointSummary
	var ps schemas.PointSummary
	runs := 0
	for iter(&ps) {
		points = append(points, ps)
		for _, m := range ps.Methods {
			runs += m.Runs
		}
		ps = schemas.PointSummary{}
	}
	if len(points) != r.Points {
		return schemas.Summary{}, fmt.Errorf("aggregate: %d of the run's %d points have all their results", len(points), r.Points)
	}
	slices.SortFunc(points, func(a, b schemas.PointSummary) int { return cmp.Compare(a.PointID, b.PointID) })
	sum := verdict.SummaryOf(points, r.Seed)
	sum.Pipeline, sum.Protocol = r.Pipeline, r.Protocol
	progress(ctx, "aggregate: %d runs over %d points: %s", runs, len(sum.Points), sum.Verdict.Reason)
	return sum, nil
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

// SummarizePoint is the summary of point p from its accumulated results: the verdict's
// (kind-free) summary with what the point's kind says of it, its dimension and its
// family on the report's dimension ladder.
func SummarizePoint(p Point, a PointAcc, seed uint64, th Thresholds) schemas.PointSummary {
	k := tasks.MustOf(p.Task)
	ps := a.Summary(p.Grid, k.Rule(p), seed, th)
	ps.Dimension, ps.LadderFamily = k.Dimension(p), k.Family(p)
	return ps
}

// summaryFn gathers the points' summaries into the run's.
type summaryFn struct{ Run runInfo }

func (f *summaryFn) ProcessElement(ctx context.Context, _ int, iter func(*schemas.PointSummary) bool, emit func(schemas.Summary)) error {
	sum, err := f.Run.gather(ctx, iter)
	if err != nil {
		return err
	}
	emit(sum)
	return nil
}

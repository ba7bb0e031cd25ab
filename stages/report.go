package stages

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages/render"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*firstTablesFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*figureRowsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*reportFn)(nil)).Elem())
}

// FigureTablesBudget bounds the result rows the report's per-table figures (the KL
// histogram, the baseline-vs-JEM scatter, the sweep plots and heat maps) are drawn
// from: the first FigureTables(points) tables of each point, by ordinal. Tables are
// i.i.d. draws, so the first n are a random sample; the report's tables and
// summary.json cover every table. A run of one point draws from up to
// FigureTablesBudget tables; a sweep shares SweepFigureTablesBudget among its points
// (its figures pool the points along each axis), at least 2 each, so that the rows the
// report holds do not grow with the number of points (a sweep is at most 10,000). The
// rows travel to the report through the runner (a CoGroupByKey), which copies them
// several times: at 20,000 tables (40,000 rows of a 2×2 job, 37 MB encoded) they were
// 12% of a 100,000-table job's CPU, half of it page faults; at 5,000 a histogram and a
// scatter are as legible, and the statistics are over every table either way.
const (
	FigureTablesBudget      = 5000
	SweepFigureTablesBudget = 4000
)

// FigureTables is the number of tables per point the report's figures are drawn from.
func FigureTables(points int) int64 {
	if points <= 1 {
		return FigureTablesBudget
	}
	return int64(max(2, SweepFigureTablesBudget/points))
}

// FigurePoints bounds the grid points that get per-table figures (the triple plots of
// their first opts.ReportTables tables and the 2-D task figures): the first
// FigurePoints points by id. A sweep of 1,000 points would otherwise draw 3,000 triple
// plots, held by the report stage until they are written; the report says how many
// points were drawn.
const FigurePoints = 24

// figurePointIDs returns the ids of the points that get per-table figures.
func figurePointIDs(points []tasks.Point) []int64 {
	ids := make([]int64, 0, len(points))
	for _, p := range points {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return ids[:min(len(ids), FigurePoints)]
}

// Report writes summary.json, report.html and figures/: the seed's triple plot (joint,
// marginal, conditional; truth vs each method) for the first opts.ReportTables tables
// of each point, the distribution of joint KL per method with the floor marked,
// baseline-vs-JEM KL per table and, for sweeps, KL against each swept axis, drawn from
// the first FigureTables tables of each point. It never holds more result rows than
// those, whatever the number of tables.
//
// In: PCollection<schemas.PointSummary> (one per point, see SummarizePoints),
// PCollection<ResultBlock>, PCollection<LearnedBlock>. Out: PCollection<string> (the
// keys written).
func Report(s beam.Scope, opts Options, points []tasks.Point, pipeline, title, configJSON string, summaries, results, learned beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Report")
	n := FigureTables(len(points))
	first := beam.ParDo(s, &firstTablesFn{N: int64(opts.ReportTables), Curves: n, Points: figurePointIDs(points)}, learned)
	rows := beam.ParDo(s, &figureRowsFn{N: n}, results)
	// One CoGroupByKey, not side inputs: prism reschedules a stage whose side inputs are
	// ready but whose main input is not in a busy loop, which took a quarter of a
	// one-core run's CPU while the blocks trained.
	// The points' summaries, not the run's: the run's summary of a sweep of thousands of
	// points is one element of tens of MB, each hop of which the runner holds in copies.
	all := beam.CoGroupByKey(s, beam.AddFixedKey(s, summaries), beam.AddFixedKey(s, rows), beam.AddFixedKey(s, first))
	return beam.ParDo(s, &reportFn{OutBucket: OutBucket{Out: opts.Out}, Run: runOf(opts, points, pipeline), Title: title, ConfigJSON: configJSON, FigureTables: n}, all)
}

// FailReport, set by tests, makes the report stage fail with its error: a runner failure
// after every block has trained, been evaluated and been written.
var FailReport func() error

// figureRowsFn keeps the result rows of the first N tables (ordinals 0..N-1) of each
// point: a block cut to those rows, or nothing (one element a block, not one a row).
type figureRowsFn struct{ N int64 }

func (f *figureRowsFn) ProcessElement(b ResultBlock, emit func(ResultBlock)) {
	ord := b.First - 1
	for i := range b.Rows {
		if i == 0 || b.Rows[i].TableID != b.Rows[i-1].TableID {
			ord++
		}
		if ord >= f.N {
			b.Rows = b.Rows[:i]
			break
		}
	}
	if len(b.Rows) > 0 {
		emit(b)
	}
}

// firstTablesFn keeps the learned joints of the first N tables of each of the points
// Points (see FigurePoints): the tables with ordinals 0..N-1 (the N lowest ids),
// whatever the ids are, their cells only where a triple plot draws them
// (render.MaxTripleCells); and of 2-D runs with a KL curve, the curve alone (no joint)
// for the first Curves tasks of every point.
type firstTablesFn struct {
	N, Curves int64
	Points    []int64 // sorted; nil: every point
}

func (f *firstTablesFn) ProcessElement(b LearnedBlock, emit func(Learned)) {
	for _, l := range b.Runs {
		switch {
		case l.Ordinal >= 0 && l.Ordinal < f.N && f.drawn(l.PointID):
			if l.G == 0 && l.X*l.K > render.MaxTripleCells {
				// no triple plot is drawn for it (the report counts it): its joints,
				// 2^21 cells a run for a D = 20 binary task, are not carried to the
				// report, which would hold them until every block is done
				l.Logits, l.Q, l.P = nil, nil, nil
			}
			emit(l)
		case len(l.Curve) > 0 && l.Ordinal >= 0 && l.Ordinal < f.Curves:
			emit(Learned{RunID: l.RunID, PointID: l.PointID, TableID: l.TableID, Ordinal: -1 - l.Ordinal, Method: l.Method, G: l.G, Curve: l.Curve})
		}
	}
}

// drawn reports whether the point gets per-table figures.
func (f *firstTablesFn) drawn(point int64) bool {
	if f.Points == nil {
		return true
	}
	_, ok := slices.BinarySearch(f.Points, point)
	return ok
}

type reportFn struct {
	OutBucket
	Run          runInfo
	Title        string
	ConfigJSON   string
	FigureTables int64
}

func (f *reportFn) ProcessElement(ctx context.Context, _ int, sums func(*schemas.PointSummary) bool, blockIter func(*ResultBlock) bool, first func(*Learned) bool, emit func(string)) error {
	if FailReport != nil {
		if err := FailReport(); err != nil {
			return err
		}
	}
	sum, err := f.Run.gather(ctx, sums)
	if err != nil {
		return err
	}
	if err := schemas.WriteSummary(ctx, f.bucket, "summary.json", sum); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	emit("summary.json")
	var cfg any = json.RawMessage(f.ConfigJSON)
	if f.ConfigJSON == "" {
		cfg = nil
	}
	var blocks []ResultBlock
	var b ResultBlock
	for blockIter(&b) {
		blocks = append(blocks, b)
		b = ResultBlock{}
	}
	slices.SortFunc(blocks, func(a, b ResultBlock) int { // the runner's order is not the run's
		return cmp.Or(cmp.Compare(a.PointID, b.PointID), cmp.Compare(a.First, b.First))
	})
	var rows []schemas.ResultRow
	for _, b := range blocks {
		rows = append(rows, b.Rows...)
	}
	tri, tasks, curves := triples(first)
	kinds, docs := whatRan(sum)
	n := 0
	err = render.RenderTo(render.Input{Title: f.Title, Config: cfg, Summary: sum, Results: rows,
		FigureTables: int(f.FigureTables), FigurePoints: FigurePoints, Triples: tri, Tasks2D: tasks, Curves: curves, Kinds: kinds, Methods: docs},
		func(k string, data []byte) error {
			if err := f.bucket.WriteAll(ctx, k, data, nil); err != nil {
				return fmt.Errorf("write %s: %w", k, err)
			}
			emit(k)
			n++
			return nil
		})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	progress(ctx, "report: summary.json, %d report files", n)
	return nil
}

// triples groups learned joints by (point, table ordinal) into the report's triple
// plots (tables) and task figures (2-D tasks), and gathers the 2-D runs' KL curves
// (a curve-only element has Ordinal −1 − its ordinal: see firstTablesFn).
func triples(iter func(*Learned) bool) ([]render.Triple, []render.Task2D, []render.Curve) {
	type key struct{ point, ordinal int64 }
	byKey := map[key]*render.Triple{}
	tasks := map[key]*render.Task2D{}
	var curves []render.Curve
	var l Learned
	for iter(&l) {
		if len(l.Curve) > 0 {
			c := render.Curve{PointID: l.PointID, TaskID: l.TableID, Method: l.Method}
			for _, cp := range l.Curve {
				c.Steps = append(c.Steps, cp.Step)
				c.KLJoint, c.KLMarginal, c.KLConditional = append(c.KLJoint, cp.KLJoint), append(c.KLMarginal, cp.KLMarginal), append(c.KLConditional, cp.KLConditional)
			}
			curves = append(curves, c)
		}
		if l.Ordinal < 0 {
			continue
		}
		k := key{l.PointID, l.Ordinal}
		if l.G > 0 {
			t, ok := tasks[k]
			if !ok {
				t = &render.Task2D{PointID: l.PointID, TaskID: l.TableID, Ordinal: l.Ordinal, Task: l.Task, G: l.G, Box: l.Box, K: l.K,
					True: l.P, Learned: map[string][]float64{}, Buffers: map[string][]float32{}}
				tasks[k] = t
			}
			t.Learned[l.Method] = l.Q
			if len(l.Buffer) > 0 {
				t.Buffers[l.Method] = l.Buffer
			}
			if len(l.Frames) > 0 {
				if t.Frames == nil {
					t.Frames, t.FrameSteps = map[string][][]float32{}, l.FrameSteps
				}
				t.Frames[l.Method] = l.Frames
			}
			continue
		}
		t, ok := byKey[k]
		if !ok {
			t = &render.Triple{TableID: l.TableID, Ordinal: l.Ordinal, PointID: l.PointID, X: l.X, K: l.K, True: l.P,
				Learned: map[string][]float64{}}
			byKey[k] = t
		}
		if t.True == nil { // a binary task's truth rides with one of its runs only
			t.True = l.P
		}
		t.Learned[l.Method] = l.Q
	}
	out := make([]render.Triple, 0, len(byKey))
	for _, t := range byKey {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b render.Triple) int {
		return cmp.Or(cmp.Compare(a.PointID, b.PointID), cmp.Compare(a.Ordinal, b.Ordinal))
	})
	ts := make([]render.Task2D, 0, len(tasks))
	for _, t := range tasks {
		ts = append(ts, *t)
	}
	slices.SortFunc(ts, func(a, b render.Task2D) int {
		return cmp.Or(cmp.Compare(a.PointID, b.PointID), cmp.Compare(a.Ordinal, b.Ordinal))
	})
	slices.SortFunc(curves, func(a, b render.Curve) int {
		return cmp.Or(cmp.Compare(a.PointID, b.PointID), cmp.Compare(a.TaskID, b.TaskID), strings.Compare(a.Method, b.Method))
	})
	return out, ts, curves
}

// whatRan is what the report says of the run's task kinds (each kind's own sentence,
// tasks.Kind.About) and of its methods (the method table's doc lines), in the order the
// points and the method table list them.
func whatRan(sum schemas.Summary) (kinds []string, docs []render.MethodDoc) {
	ran := map[string]bool{}
	exact := map[string]bool{} // the method ran at a point that has an exact JEM
	for _, ps := range sum.Points {
		if k, err := tasks.Of(ps.Params.Task); err == nil && !slices.Contains(kinds, k.About()) {
			kinds = append(kinds, k.About())
		}
		for _, m := range ps.Methods {
			ran[m.Method] = true
			exact[m.Method] = exact[m.Method] || !verdict.NoExact(ps)
		}
	}
	for _, name := range methods.Sorted(maps.Keys(ran)) {
		m, _ := methods.Lookup(name)
		doc := m.Doc
		if m.External && !exact[name] {
			doc = externalNoExactDoc // the method table's line speaks of exact jem, which these tasks lack
		}
		docs = append(docs, render.MethodDoc{Name: name, Doc: doc})
	}
	return kinds, docs
}

// externalNoExactDoc is what a model trained outside jemcheck is, on tasks without an
// exact JEM (image-like tasks, a model file given to evaluate --onnx).
const externalNoExactDoc = "a model trained outside jemcheck, scored as given against the truth itself: these tasks have no exact JEM to compare it with, " +
	"so it gets the Z-free measures on exact draws of the truth (conditional KL to the Bayes classifier, accuracy, ECE, OOD AUROC) and a lower bound " +
	"on its joint KL where the annealed importance sampling passes its calibration on the truth"

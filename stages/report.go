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
// summary.json cover every table.
const FigureTablesBudget = 20000

// FigureTables is the number of tables per point the report's figures are drawn from:
// FigureTablesBudget shared among the points, at least 200 each.
func FigureTables(points int) int64 { return int64(max(200, FigureTablesBudget/max(1, points))) }

// Report writes summary.json, report.html and figures/: the seed's triple plot (joint,
// marginal, conditional; truth vs each method) for the first opts.ReportTables tables
// of each point, the distribution of joint KL per method with the floor marked,
// baseline-vs-JEM KL per table and, for sweeps, KL against each swept axis, drawn from
// the first FigureTables tables of each point. It never holds more result rows than
// those, whatever the number of tables.
//
// In: PCollection<schemas.Summary> (one element), PCollection<ResultBlock>,
// PCollection<LearnedBlock>. Out: PCollection<string> (the keys written).
func Report(s beam.Scope, opts Options, points int, title, configJSON string, summary, results, learned beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Report")
	n := FigureTables(points)
	first := beam.ParDo(s, &firstTablesFn{N: int64(opts.ReportTables), Curves: n}, learned)
	rows := beam.ParDo(s, &figureRowsFn{N: n}, results)
	// One CoGroupByKey, not side inputs: prism reschedules a stage whose side inputs are
	// ready but whose main input is not in a busy loop, which took a quarter of a
	// one-core run's CPU while the blocks trained.
	all := beam.CoGroupByKey(s, beam.AddFixedKey(s, summary), beam.AddFixedKey(s, rows), beam.AddFixedKey(s, first))
	return beam.ParDo(s, &reportFn{OutBucket: OutBucket{Out: opts.Out}, Title: title, ConfigJSON: configJSON, FigureTables: n}, all)
}

// FailReport, set by tests, makes the report stage fail with its error: a runner failure
// after every block has trained, been evaluated and been written.
var FailReport func() error

// figureRowsFn keeps the result rows of the first N tables (ordinals 0..N-1) of each
// point.
type figureRowsFn struct{ N int64 }

func (f *figureRowsFn) ProcessElement(b ResultBlock, emit func(schemas.ResultRow)) {
	ord := b.First - 1
	for i := range b.Rows {
		if i == 0 || b.Rows[i].TableID != b.Rows[i-1].TableID {
			ord++
		}
		if ord >= f.N {
			return
		}
		emit(b.Rows[i])
	}
}

// firstTablesFn keeps the learned joints of the first N tables of each point: the
// tables with ordinals 0..N-1 (the N lowest ids), whatever the ids are, their cells
// only where a triple plot draws them (render.MaxTripleCells); and of 2-D runs with a
// KL curve, the curve alone (no joint) for the first Curves tasks.
type firstTablesFn struct{ N, Curves int64 }

func (f *firstTablesFn) ProcessElement(b LearnedBlock, emit func(Learned)) {
	for _, l := range b.Runs {
		switch {
		case l.Ordinal >= 0 && l.Ordinal < f.N:
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

type reportFn struct {
	OutBucket
	Title        string
	ConfigJSON   string
	FigureTables int64
}

func (f *reportFn) ProcessElement(ctx context.Context, _ int, sums func(*schemas.Summary) bool, rowIter func(*schemas.ResultRow) bool, first func(*Learned) bool, emit func(string)) error {
	if FailReport != nil {
		if err := FailReport(); err != nil {
			return err
		}
	}
	var sum schemas.Summary
	if !sums(&sum) {
		return fmt.Errorf("report: no summary")
	}
	if err := schemas.WriteJSON(ctx, f.bucket, "summary.json", sum); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	emit("summary.json")
	var cfg any = json.RawMessage(f.ConfigJSON)
	if f.ConfigJSON == "" {
		cfg = nil
	}
	var rows []schemas.ResultRow
	var r schemas.ResultRow
	for rowIter(&r) {
		rows = append(rows, r)
	}
	tri, tasks, curves := triples(first)
	kinds, docs := whatRan(sum)
	files, err := render.Render(render.Input{Title: f.Title, Config: cfg, Summary: sum, Results: rows,
		FigureTables: int(f.FigureTables), Triples: tri, Tasks2D: tasks, Curves: curves, Kinds: kinds, Methods: docs})
	if err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := f.bucket.WriteAll(ctx, k, files[k], nil); err != nil {
			return fmt.Errorf("report: write %s: %w", k, err)
		}
		emit(k)
	}
	progress(ctx, "report: summary.json, %d report files", len(keys))
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

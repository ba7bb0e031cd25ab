package stages

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages/render"
)

func init() {
	register.DoFn2x0[LearnedBlock, func(Learned)](&firstTablesFn{})
	register.DoFn5x1[context.Context, schemas.Summary, ResultSet, func(*Learned) bool, func(string), error](&reportFn{})
}

// Report writes summary.json, report.html and figures/: the seed's triple plot (joint,
// marginal, conditional; truth vs each method) for the first opts.ReportTables tables
// of each point, the distribution of joint KL per method with the floor marked,
// baseline-vs-JEM KL per table and, for sweeps, KL against each swept axis.
//
// In: PCollection<schemas.Summary> (one element), PCollection<ResultSet> (one element),
// PCollection<LearnedBlock>. Out: PCollection<string> (the keys written).
func Report(s beam.Scope, opts Options, title, configJSON string, summary, results, learned beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Report")
	first := beam.ParDo(s, &firstTablesFn{N: int64(opts.ReportTables)}, learned)
	return beam.ParDo(s, &reportFn{OutBucket: OutBucket{Out: opts.Out}, Title: title, ConfigJSON: configJSON}, summary,
		beam.SideInput{Input: results}, beam.SideInput{Input: first})
}

// firstTablesFn keeps the learned joints of the first N tables of each point: the
// tables with ordinals 0..N-1 (the N lowest ids), whatever the ids are.
type firstTablesFn struct{ N int64 }

func (f *firstTablesFn) ProcessElement(b LearnedBlock, emit func(Learned)) {
	for _, l := range b.Runs {
		if l.Ordinal >= 0 && l.Ordinal < f.N {
			emit(l)
		}
	}
}

type reportFn struct {
	OutBucket
	Title      string
	ConfigJSON string
}

func (f *reportFn) ProcessElement(ctx context.Context, sum schemas.Summary, rs ResultSet, first func(*Learned) bool, emit func(string)) error {
	if err := schemas.WriteJSON(ctx, f.bucket, "summary.json", sum); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	emit("summary.json")
	var cfg any = json.RawMessage(f.ConfigJSON)
	if f.ConfigJSON == "" {
		cfg = nil
	}
	files, err := render.Render(render.Input{Title: f.Title, Config: cfg, Summary: sum, Results: rs.Rows, Triples: triples(first)})
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
	progress("report: summary.json, %d report files", len(keys))
	return nil
}

// triples groups learned joints by (point, table ordinal) into the report's triple plots.
func triples(iter func(*Learned) bool) []render.Triple {
	type key struct{ point, ordinal int64 }
	byKey := map[key]*render.Triple{}
	var l Learned
	for iter(&l) {
		k := key{l.PointID, l.Ordinal}
		t, ok := byKey[k]
		if !ok {
			t = &render.Triple{TableID: l.TableID, Ordinal: l.Ordinal, PointID: l.PointID, X: l.X, K: l.K, True: l.P,
				Learned: map[string][]float64{}}
			byKey[k] = t
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
	return out
}

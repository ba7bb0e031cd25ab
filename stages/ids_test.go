package stages

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages/render"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// idRun is what one run of the stages on a tables file produced.
type idRun struct {
	ids     []int64               // the user's ids, in ordinal order
	rows    []schemas.ResultRow   // sorted by run id
	samples map[string][]int64    // sample file → its table_id column
	draws   map[string][][2]int64 // sample file → its (x, y) rows
	figures []string              // triple figure names
	titles  []string              // triple table ids, as the report shows them
}

// runStages runs GenerateTables, SampleDatasets, Train, Evaluate and the report's table
// selection on a --tables_from file with the given ids, DoFn by DoFn (the groupings done
// here as GroupByKey would), with samples written to a temporary --out.
func runStages(t *testing.T, ids []int64) idRun {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	// Five 2×2 tables, the same in every file; only the ids change.
	var csv strings.Builder
	csv.WriteString("table_id,x,y,p\n")
	for i, id := range ids {
		p := []float64{0.1, 0.2, 0.3, 0.4}
		p[i%4] += 0.2
		p[(i+1)%4] -= 0.05
		s := p[0] + p[1] + p[2] + p[3]
		for c, v := range p {
			fmt.Fprintf(&csv, "%d,%d,%d,%.17g\n", id, c/2, c%2, v/s)
		}
	}
	tablesFrom := filepath.Join(dir, "tables.csv")
	if err := os.WriteFile(tablesFrom, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two tables per block (6 runs of 3 methods): three blocks, so three sample files,
	// for five tables.
	opts := Options{Seed: 3, Out: out, TablesFrom: tablesFrom, TrainBatch: 6, WriteSamples: true, ReportTables: 2}
	pt := Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "onehot", Generator: tasks.GeneratorFile, Samples: 1 << 10, Model: "linear", LR: 0.05, Steps: 20, PxWeight: 1}, Tables: len(ids), Methods: []string{"baseline", "jem", "oracle"}}
	points := []Point{pt}

	var blocks []Block
	gen := &generateTablesFn{Sources: Sources{Options: opts, Points: points}}
	if err := gen.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ref := range tasks.BlockRefs(points, opts.TrainBatch) {
		if err := gen.ProcessElement(ctx, ref, func(b Block) { blocks = append(blocks, b) }); err != nil {
			t.Fatal(err)
		}
	}
	var run idRun
	for _, b := range blocks {
		for i, id := range b.IDs {
			if o := b.Table(pt, i).Ordinal; o != int64(len(run.ids)) {
				t.Fatalf("table %d (id %d) has ordinal %d", len(run.ids), id, o)
			}
			run.ids = append(run.ids, id)
		}
	}

	sample := &sampleDatasetsFn{OutBucket: OutBucket{Out: opts.Out}, Sources: Sources{Options: opts, Points: points}}
	if err := sample.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	var sampled []Block
	for _, b := range blocks {
		if err := sample.ProcessElement(ctx, b, func(b Block) { sampled = append(sampled, b) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := sample.Teardown(); err != nil {
		t.Fatal(err)
	}
	bucket, err := storage.OpenBucket(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	run.samples, run.draws = map[string][]int64{}, map[string][][2]int64{}
	for block := range int64(3) {
		key := SamplePath(0, block)
		rows, err := schemas.ReadParquet[schemas.SampleRow](ctx, bucket, key)
		if err != nil {
			t.Fatalf("sample file of block %d: %v", block, err)
		}
		for _, r := range rows {
			if n := len(run.samples[key]); n == 0 || run.samples[key][n-1] != r.TableID {
				run.samples[key] = append(run.samples[key], r.TableID)
			}
			run.draws[key] = append(run.draws[key], [2]int64{r.X, r.Y})
		}
	}
	entries, err := os.ReadDir(filepath.Join(out, "samples"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("%d sample files, want 3", len(entries))
	}

	train := &trainBlockFn{Sources: Sources{Options: opts, Points: points}}
	if err := train.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer train.Teardown()
	eval := &evaluateFn{Sources: Sources{Options: opts, Points: points}}
	if err := eval.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	var learned []LearnedBlock
	for _, b := range sampled {
		if n := b.Len() * len(pt.Methods); n > opts.TrainBatch {
			t.Errorf("block %d trains %d runs in a batch of %d", b.Index, n, opts.TrainBatch)
		}
		err := train.ProcessElement(ctx, b, func(tb TrainedBlock) {
			if err := eval.ProcessElement(ctx, tb, func(rb ResultBlock) { run.rows = append(run.rows, rb.Rows...) },
				func(lb LearnedBlock) { learned = append(learned, lb) }); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(run.rows, func(a, b schemas.ResultRow) int { return cmp.Compare(a.RunID, b.RunID) })

	first := &firstTablesFn{N: int64(opts.ReportTables)}
	var kept []Learned
	for _, lb := range learned {
		first.ProcessElement(lb, func(l Learned) { kept = append(kept, l) })
	}
	ts, _, _ := triples(iter(kept))
	run.figures = render.FigureNames(render.Input{Triples: ts})
	for _, tr := range ts {
		run.titles = append(run.titles, fmt.Sprint(tr.TableID))
	}
	return run
}

func iter[T any](xs []T) func(*T) bool {
	i := 0
	return func(x *T) bool {
		if i >= len(xs) {
			return false
		}
		*x = xs[i]
		i++
		return true
	}
}

// TestTableIDs: tables with sparse, negative or huge ids give the results, samples,
// run ids, batches and triple plots of the same tables numbered 0..T-1; only the
// table_id columns (and the tables' titles) carry the user's ids.
func TestTableIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 75 runs")
	}
	want := runStages(t, []int64{0, 1, 2, 3, 4})
	if len(want.rows) != 15 {
		t.Fatalf("%d result rows, want 15", len(want.rows))
	}
	if !slices.Equal(want.figures, []string{"triple_p0_t0", "triple_p0_t1"}) {
		t.Fatalf("0..4: figures %v", want.figures)
	}
	tests := []struct {
		name string
		ids  []int64
	}{
		{"negative", []int64{-5, -4, -3, -2, -1}},
		{"sparse from 100", []int64{100, 101, 150, 1000, 5000}},
		{"huge", []int64{9e18, 9e18 + 1, 9e18 + 7, math.MaxInt64 - 1, math.MaxInt64}},
		{"both signs and extremes", []int64{math.MinInt64, -1, 0, 7, math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runStages(t, tt.ids)
			if !slices.Equal(got.ids, tt.ids) {
				t.Fatalf("ids in ordinal order %v, want %v", got.ids, tt.ids)
			}
			if !slices.Equal(got.figures, want.figures) {
				t.Errorf("triple figures %v, want %v", got.figures, want.figures)
			}
			if wantTitles := []string{fmt.Sprint(tt.ids[0]), fmt.Sprint(tt.ids[1])}; !slices.Equal(got.titles, wantTitles) {
				t.Errorf("triple tables %v, want %v", got.titles, wantTitles)
			}
			if len(got.rows) != len(want.rows) {
				t.Fatalf("%d rows, want %d", len(got.rows), len(want.rows))
			}
			for i, r := range got.rows {
				w := want.rows[i]
				if r.TableID != tt.ids[w.TableID] {
					t.Errorf("row %s: table_id %d, want %d", r.RunID, r.TableID, tt.ids[w.TableID])
				}
				r.TableID = w.TableID
				if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", w) { // exact (shortest round-trip floats), NaN equal to NaN

					t.Errorf("row %d differs from the 0..T-1 run:\n got %+v\nwant %+v", i, r, w)
				}
			}
			for key, wantIDs := range want.samples {
				var mapped []int64
				for _, o := range wantIDs {
					mapped = append(mapped, tt.ids[o])
				}
				if !slices.Equal(got.samples[key], mapped) {
					t.Errorf("%s: table ids %v, want %v", key, got.samples[key], mapped)
				}
				if !slices.Equal(got.draws[key], want.draws[key]) {
					t.Errorf("%s: draws differ from the 0..T-1 run", key)
				}
			}
		})
	}
}

func TestRunIDWellFormed(t *testing.T) {
	for _, o := range []int64{0, 5, 9999999} {
		id := schemas.RunID(3, o, "jem")
		if strings.Contains(id, "-t-") || len(id) != len("p0003-t0000000-jem") {
			t.Errorf("schemas.RunID(3, %d) = %q", o, id)
		}
	}
}

func TestFirstTablesByOrdinal(t *testing.T) {
	tests := []struct {
		name string
		ids  []int64
	}{
		{"0..T-1", []int64{0, 1, 2, 3}},
		{"negative", []int64{-40, -30, -20, -10}},
		{"from 100", []int64{100, 200, 300, 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &firstTablesFn{N: 2}
			var kept []Learned
			for o, id := range tt.ids {
				for _, m := range []string{"baseline", "jem"} {
					l := Learned{RunID: schemas.RunID(0, int64(o), m), TableID: id, Ordinal: int64(o), Method: m, X: 1, K: 2,
						Q: []float64{.5, .5}, P: []float64{.5, .5}}
					f.ProcessElement(LearnedBlock{Runs: []Learned{l}}, func(l Learned) { kept = append(kept, l) })
				}
			}
			ts, _, _ := triples(iter(kept))
			names := render.FigureNames(render.Input{Triples: ts})
			if !slices.Equal(names, []string{"triple_p0_t0", "triple_p0_t1"}) {
				t.Errorf("figures %v", names)
			}
			for i, tr := range ts {
				if tr.TableID != tt.ids[i] || len(tr.Learned) != 2 {
					t.Errorf("triple %d: table %d with %d methods", i, tr.TableID, len(tr.Learned))
				}
			}
		})
	}
}

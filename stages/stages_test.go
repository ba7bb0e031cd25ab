package stages

import (
	"math"
	"slices"
	"strings"
	"testing"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/table"
)

func point() Point {
	return Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 300, PxWeight: 1}, Tables: 10, Methods: []string{"baseline", "jem", "oracle"}}
}

// TestBlockRefs: every point's tables 0..T-1 are cut into blocks of at most
// trainBatch/|methods| tables, so a block's runs are one training batch of at most
// trainBatch runs.
func TestBlockRefs(t *testing.T) {
	tests := []struct {
		name       string
		trainBatch int
		tables     []int // per point
		want       []int // blocks per point
	}{
		{"one block", 100, []int{10}, []int{1}},
		{"three runs per batch: a table per block", 3, []int{10}, []int{10}},
		{"a batch smaller than the methods", 2, []int{4}, []int{4}},
		{"partial last block", 9, []int{10}, []int{4}},
		{"points apart", 30, []int{25, 3, 10}, []int{3, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var points []Point
			for i, n := range tt.tables {
				p := point()
				p.ID, p.Tables = int64(i), n
				points = append(points, p)
			}
			refs := tasks.BlockRefs(points, tt.trainBatch)
			got := make([]int, len(points))
			for i, r := range refs {
				got[r.PointID]++
				if i > 0 && refs[i-1].PointID == r.PointID && refs[i-1].Index+1 != r.Index {
					t.Errorf("blocks %v are not consecutive", refs)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("blocks per point %v, want %v", got, tt.want)
			}
			for _, p := range points {
				if b := tasks.BlockTables(p, tt.trainBatch); b*int64(len(p.Methods)) > int64(max(tt.trainBatch, len(p.Methods))) {
					t.Errorf("%d tables per block × %d methods > batch %d", b, len(p.Methods), tt.trainBatch)
				}
			}
		})
	}
}

func TestPointValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *Point)
		want   string
	}{
		{"ok", func(p *Point) {}, ""},
		{"mlp onehot", func(p *Point) { p.Model, p.Encoding = "mlp:8,8", "onehot" }, ""},
		{"negative px weight", func(p *Point) { p.PxWeight = -1 }, "jem_px_weight"},
		{"inf lr", func(p *Point) { p.LR = math.Inf(1) }, "lr"},
		{"no methods", func(p *Point) { p.Methods = nil }, "no methods"},
		{"huge table", func(p *Point) { p.XValues, p.Classes = 1000, 1000 }, "too many"},
		{"negative batch", func(p *Point) { p.BatchSize = -1 }, "batch_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := point()
			tt.mutate(&p)
			err := p.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestOwnedOutput(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"config.json", true},
		{"tables.parquet", true},
		{"results.parquet", true}, // written by versions before per-block results files
		{"learned.parquet", true}, // written by versions before per-block learned files
		{"learned/point-0000-part-00003.parquet", true},
		{"learned/notes.txt", false},
		{"results/point-0002-part-00000.parquet", true},
		{"summary.json", true},
		{"report.html", true},
		{"verdict.json", true},
		{SamplePath(0, 0), true},
		{SamplePath(12345, 3), true},
		{table.TablesPath(7, true), true},
		{"figures/kl_vs_samples.svg", true},
		{"figures/triple_p0_t2.svg", true},
		{"notes.txt", false},
		{"my/results.parquet", false},
		{"samples/mine.parquet", false},
		{"figures/photo.jpg", false},
		{"results.parquet.bak", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := OwnedOutput(tt.key); got != tt.want {
				t.Errorf("OwnedOutput(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

// TestWhatRan: the report names each kind of the run once, by its own sentence, and the
// run's methods with their doc lines in the method table's order.
func TestWhatRan(t *testing.T) {
	sum := schemas.Summary{Points: []schemas.PointSummary{
		{Params: schemas.Grid{Task: "table"}, Methods: []schemas.MethodSummary{{Method: "jem"}, {Method: "baseline"}}},
		{Params: schemas.Grid{Task: "gmm:3,2"}, Methods: []schemas.MethodSummary{{Method: "sgld"}}},
		{Params: schemas.Grid{Task: "moons:0.1"}, Methods: []schemas.MethodSummary{{Method: "jem"}}},
	}}
	kinds, docs := whatRan(sum)
	if len(kinds) != 2 || !strings.Contains(kinds[0], "joint tables") || !strings.Contains(kinds[1], "2-D") {
		t.Errorf("kinds %q, want the table kind's then the 2-D kind's sentence", kinds)
	}
	var names []string
	for _, d := range docs {
		names = append(names, d.Name)
		if d.Doc == "" {
			t.Errorf("method %s without a doc line", d.Name)
		}
	}
	if !slices.Equal(names, []string{"baseline", "jem", "sgld"}) {
		t.Errorf("methods %v, want [baseline jem sgld]", names)
	}
}

// TestWhatRanExternal: a user's model is described by what was done with it: on a 2-D
// task compared with exact jem like a recipe; on an images task (evaluate --onnx, no
// exact JEM) scored as given against the truth itself, never "compared with exact jem".
func TestWhatRanExternal(t *testing.T) {
	noExact := schemas.Verdict{Reason: "no verdict: exact JEM does not exist on images:8,2 (the model's log Z is intractable at this scale)"}
	tests := []struct {
		name      string
		ps        schemas.PointSummary
		want, not string
	}{
		{"2-D logits", schemas.PointSummary{Params: schemas.Grid{Task: "gmm:3,2"}, Methods: []schemas.MethodSummary{{Method: "external:mine"}}},
			"compared with exact jem", "scored as given against the truth itself"},
		{"images --onnx", schemas.PointSummary{Params: schemas.Grid{Task: "images:8,2"}, Methods: []schemas.MethodSummary{{Method: "external"}}, Verdict: noExact},
			"scored as given against the truth itself", "exact jem like a sampler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, docs := whatRan(schemas.Summary{Points: []schemas.PointSummary{tt.ps}})
			if len(docs) != 1 || !strings.Contains(docs[0].Doc, tt.want) || strings.Contains(docs[0].Doc, tt.not) {
				t.Errorf("docs %q, want one line with %q and without %q", docs, tt.want, tt.not)
			}
		})
	}
}

package plane

import (
	"math"
	"strings"
	"testing"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// point2D is a valid 2-D point before Resolve.
func point2D() tasks.Point {
	return tasks.Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 500,
		Model: "mlp:8", LR: 0.01, Steps: 100, BatchSize: 32, PxWeight: 1, Task: "gmm:3, 2", GridCells: 16, Box: 4, TrainGrid: 8,
		SGLDPreset: "official", SGLDLR: 1, SGLDSteps: 20, BufferSize: 100, ReinitFreq: 0.05, ChainSteps: 5, Proposal: "uniform"},
		Tables: 3, Methods: []string{"jem", "sgld"}}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name  string
		point func() tasks.Point
		check func(t *testing.T, p tasks.Point)
	}{
		{"gmm", point2D, func(t *testing.T, p tasks.Point) {
			if p.Task != "gmm:3,2" || p.XValues != 256 || p.Classes != 3 || p.Encoding != "" || p.Generator != "" {
				t.Errorf("resolved %+v", p.Grid)
			}
			if p.ChainSteps != 0 || p.Proposal != "" || p.SGLDSteps != 20 || p.BufferSize != 100 {
				t.Errorf("sampler options: %+v", p.Grid)
			}
		}},
		{"moons without jem", func() tasks.Point {
			p := point2D()
			p.Task, p.Methods = "moons:0.1", []string{"baseline"}
			return p
		},
			func(t *testing.T, p tasks.Point) {
				if p.Classes != 2 || p.TrainGrid != 0 || p.SGLDSteps != 0 || p.SGLDPreset != "" || p.BufferSize != 0 {
					t.Errorf("resolved %+v", p.Grid)
				}
			}},
		{"table with pcd", func() tasks.Point {
			p := point2D()
			p.Task, p.Model, p.Encoding, p.BatchSize, p.Methods = "", "linear", "scalar", 0, []string{"jem", "pcd"}
			return p
		}, func(t *testing.T, p tasks.Point) {
			if p.Task != schemas.TaskTable || p.GridCells != 0 || p.Box != 0 || p.XValues != 2 || p.Encoding != "scalar" {
				t.Errorf("resolved %+v", p.Grid)
			}
			if p.SGLDSteps != 0 || p.ChainSteps != 5 || p.Proposal != "uniform" || p.BufferSize != 100 {
				t.Errorf("sampler options: %+v", p.Grid)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.point()
			p.Resolve()
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			tt.check(t, p)
		})
	}
}

func TestDefaults(t *testing.T) {
	p := point2D()
	p.Resolve()
	p.Defaults(func(axis string) bool { return axis == "lr" })
	if p.Model != "mlp:32,32" || p.Steps != 1500 || p.BatchSize != 64 || p.Samples != 2000 || p.LR != 0.01 {
		t.Errorf("2-D defaults: %+v", p.Grid)
	}
	q := point2D()
	q.Task = schemas.TaskTable
	q.Defaults(func(string) bool { return false })
	if q.Model != "mlp:8" || q.Steps != 100 {
		t.Errorf("a table point took the 2-D defaults: %+v", q.Grid)
	}
}

func TestValidate2DErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *tasks.Point)
		want   string
	}{
		{"sgld on tables", func(p *tasks.Point) { p.Task = schemas.TaskTable }, "trains on 2-D tasks"},
		{"pcd on 2-D", func(p *tasks.Point) { p.Methods = []string{"pcd-exact"} }, "trains on tables"},
		{"grid too coarse", func(p *tasks.Point) { p.GridCells = 2 }, "grid must be"},
		{"too many cells", func(p *tasks.Point) { p.Task, p.GridCells = "gmm:8,1", 128 }, "over the limit"},
		{"buffer smaller than the batch", func(p *tasks.Point) { p.BufferSize = 8 }, "Buffer >= Batch"},
		{"negative sgld std", func(p *tasks.Point) { p.SGLDStd = -1 }, "sgld_std"},
		{"lr NaN", func(p *tasks.Point) { p.LR = math.NaN() }, "lr must be"},
		{"linear MLP too deep", func(p *tasks.Point) { p.Model = "mlp:8,8,8,8,8" }, "hidden layers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := point2D()
			tt.mutate(&p)
			p.Resolve()
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestBufferTV2D(t *testing.T) {
	g := prob.Grid{G: 32, Box: 2}
	if c := tvPool(32); c != 16 {
		t.Errorf("tvPool(32) = %d", c)
	}
	if c := tvPool(9); c != 9 {
		t.Errorf("tvPool(9) = %d", c)
	}
	// The truth: all mass in cell (0, 0) of the pool; a buffer there is at TV 0, a
	// buffer in the opposite corner at TV 1, and a buffer outside the box is NaN.
	k := 2
	truth := make([]float64, g.Cells()*k)
	truth[0] = 1
	logits := make([]float64, len(truth))
	at := func(x0, x1 float32) []float32 { return []float32{x0, x1, x0, x1} }
	if tv, tvm := bufferTV2D(g, k, at(-1.99, -1.99), truth, logits); tv != 0 || math.Abs(tvm-(1-1.0/256)) > 1e-12 {
		t.Errorf("buffer on the truth: TV %v, from the flat model %v", tv, tvm)
	}
	if tv, _ := bufferTV2D(g, k, at(1.99, 1.99), truth, logits); tv != 1 {
		t.Errorf("buffer away from the truth: TV %v", tv)
	}
	if tv, _ := bufferTV2D(g, k, at(5, 5), truth, logits); !math.IsNaN(tv) {
		t.Errorf("buffer outside the box: TV %v", tv)
	}
}

// TestCheckTasks2D: a task is refused when the box cuts more than MaxOutsideMass of
// it (naming the box that holds it), when the evaluation grid or exact JEM's training
// grid cannot resolve its narrowest component (naming the grid that would), and
// accepted otherwise; the defaults accept every default task.
func TestCheckTasks(t *testing.T) {
	mix := func(comps ...prob.Component) prob.Task2D {
		task, err := prob.NewMixture(1, comps)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	near := mix(prob.Component{Y: 0, Weight: 0.5, SD: 0.5}, prob.Component{Y: 1, Weight: 0.5, Mu0: 1, SD: 0.5})
	cases := []struct {
		name  string
		set   func(p *tasks.Point)
		tasks []prob.Task2D
		want  []string // substrings of the error; nil: accepted
	}{
		{"near", nil, []prob.Task2D{near}, nil},
		{"far", nil, []prob.Task2D{near, mix(prob.Component{Y: 0, Weight: 0.5, Mu0: 100, Mu1: 100, SD: 0.5}, prob.Component{Y: 1, Weight: 0.5, Mu0: 100, Mu1: 101, SD: 0.5})},
			[]string{"task 1", "outside the box", "--box=10"}},
		{"box-cuts-gmm", func(p *tasks.Point) { p.Box = 2 }, []prob.Task2D{mix(prob.Component{Y: 0, Weight: 0.5, Mu0: 1.5, SD: 0.5}, prob.Component{Y: 1, Weight: 0.5, SD: 0.5})},
			[]string{"outside the box", "--box=4"}},
		{"narrow", nil, []prob.Task2D{mix(prob.Component{Y: 0, Weight: 0.5, SD: 0.01}, prob.Component{Y: 1, Weight: 0.5, Mu0: 1, SD: 0.5})},
			[]string{"grid:", "sd 0.01", "over the limit"}},
		{"narrowish", nil, []prob.Task2D{mix(prob.Component{Y: 0, Weight: 0.5, SD: 0.2}, prob.Component{Y: 1, Weight: 0.5, Mu0: 1, SD: 0.5})},
			[]string{"grid:", "--grid=35"}},
		{"train-grid", func(p *tasks.Point) { p.GridCells, p.XValues, p.TrainGrid = 64, 64*64, 8 }, []prob.Task2D{mix(prob.Component{Y: 0, Weight: 0.5, SD: 0.2}, prob.Component{Y: 1, Weight: 0.5, Mu0: 1, SD: 0.5})},
			[]string{"train_grid:", "--train_grid=36"}},
		{"train-grid-unused", func(p *tasks.Point) {
			p.GridCells, p.XValues, p.TrainGrid, p.Methods = 64, 64*64, 0, []string{"baseline"}
		}, []prob.Task2D{mix(prob.Component{Y: 0, Weight: 0.5, SD: 0.2}, prob.Component{Y: 1, Weight: 0.5, Mu0: 1, SD: 0.5})}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := point2D()
			p.Box, p.TrainGrid = 7, 32
			p.Resolve()
			p.Task = tasks.TaskFile
			if tc.set != nil {
				tc.set(&p)
			}
			ids := make([]int64, len(tc.tasks))
			for i := range ids {
				ids[i] = int64(i)
			}
			err := checkTasks(p, 1, tc.tasks, ids)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	for _, task := range []string{"gmm:3,2", "gmm:2,1", "gmm:8,4", "moons:0.1", "circles:0.1"} {
		p := point2D()
		p.Task, p.Box, p.GridCells, p.TrainGrid, p.Tables = task, schemas.DefaultBox, 64, 32, 200
		p.Resolve()
		if err := checkTasks(p, 1, nil, nil); err != nil {
			t.Errorf("%s with the defaults: %v", task, err)
		}
	}
}

// TestHeldoutNLL checks the held-out NLL on the grid against a closed form: a model
// uniform over the cells and classes has q(x, y) = 1/(K·(2b)²) per unit area, whatever
// the draws (also outside the box, counted at the nearest cell); and a model that puts
// logit L on one cell and class scores exactly log(G²K − 1 + e^L) − L + log h² there.
func TestHeldoutNLL(t *testing.T) {
	g := prob.Grid{G: 4, Box: 2}
	k := 3
	h := g.Step()
	uniform := make([]float64, g.G*g.G*k)
	peaked := make([]float64, g.G*g.G*k)
	const L = 3.0
	c := g.Cell(0.1, -0.3)
	peaked[c*k+2] = L
	cases := []struct {
		name   string
		logits []float64
		x0, x1 []float32
		y      []int32
		want   float64
	}{
		{"uniform", uniform, []float32{0.1, -1.9, 1.5}, []float32{0.2, 1.9, -0.7}, []int32{0, 1, 2}, math.Log(float64(k) * 16)},
		{"uniform-outside-box", uniform, []float32{5, -9}, []float32{0, 0}, []int32{0, 1}, math.Log(float64(k) * 16)},
		{"peaked", peaked, []float32{0.1}, []float32{-0.3}, []int32{2}, math.Log(float64(g.G*g.G*k)-1+math.Exp(L)) - L + math.Log(h*h)},
		{"none", uniform, nil, nil, nil, math.NaN()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := heldoutNLL(g, k, tc.logits, tc.x0, tc.x1, tc.y)
			if !(math.Abs(got-tc.want) < 1e-12) && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Errorf("heldoutNLL = %v, want %v", got, tc.want)
			}
		})
	}
}

package tasks_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	. "github.com/jemcheck/jemcheck/tasks"
	_ "github.com/jemcheck/jemcheck/tasks/all"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/verdict"
)

// limitsOptions are the control command's defaults.
func limitsOptions() Options {
	return Options{Out: "mem://x", TrainBatch: DefaultTrainBatch, WriteSamples: true, ReportTables: 3, Thresholds: verdict.DefaultThresholds()}
}

func TestPointValidateLimits(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *Point)
		want string // "" = valid
	}{
		{"defaults", func(p *Point) {}, ""},
		{"samples at the limit", func(p *Point) { p.Samples = MaxSamples }, ""},
		{"samples over the limit", func(p *Point) { p.Samples = MaxSamples + 1 },
			"samples: 1000000000001 draws per table is over the limit of 1000000000000"},
		{"samples MaxInt64", func(p *Point) { p.Samples = math.MaxInt64 },
			"samples: 9223372036854775807 draws per table is over the limit of 1000000000000"},
		{"tables over the limit", func(p *Point) { p.Tables = 1_000_000_000 },
			"tables: 1000000000 tables is over the limit of 10000000 on any runner (2000000 on a local run)"},
		{"steps over the limit", func(p *Point) { p.Steps = MaxSteps + 1 }, "Steps must be in [1, 16777216]"},
		{"cells over the limit", func(p *Point) { p.XValues, p.Classes = 256, 512 },
			"x_values*classes = 131072 cells is too many (max 65536)"},
		{"cells overflow", func(p *Point) { p.XValues, p.Classes = math.MaxInt64, math.MaxInt64 },
			"x_values*classes = more than 9.2e18 cells is too many"},
		{"huge mlp on one-hot", func(p *Point) {
			p.XValues, p.Classes, p.Encoding, p.Model = 256, 256, "onehot", "mlp:4096,4096,4096,4096"
		}, "model: mlp:4096,4096,4096,4096 on 256x256 tables (onehot x) has 52445440 parameters per run, over the limit of 4194304"},
		{"mlp within the limit", func(p *Point) {
			p.XValues, p.Classes, p.Encoding, p.Model = 256, 256, "onehot", "mlp:1024,1024"
		}, ""},
		{"mlp on scalar x", func(p *Point) { p.Model = "mlp:4096,4096" }, "parameters per run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := point()
			tt.edit(&p)
			err := p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestModelParams(t *testing.T) {
	tests := []struct {
		name            string
		x, k            int
		encoding, model string
		want            int64
	}{
		{"linear scalar", 2, 2, "scalar", "linear", 4},                                  // W 1x2 + b 2
		{"linear one-hot", 8, 4, "onehot", "linear", 36},                                // W 8x4 + b 4
		{"mlp one-hot", 8, 4, "onehot", "mlp:16,16", 8*16 + 16 + 16*16 + 16 + 16*4 + 4}, // 484
		{"mlp scalar", 2, 3, "scalar", "mlp:5", 5 + 5 + 5*3 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := point()
			p.XValues, p.Classes, p.Encoding, p.Model = tt.x, tt.k, tt.encoding, tt.model
			got, err := ModelParams(p)
			if err != nil || got != tt.want {
				t.Errorf("ModelParams = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestCheckLimits(t *testing.T) {
	with := func(edit func(p *Point)) []Point {
		p := point()
		edit(&p)
		return []Point{p}
	}
	grid := func(n int, edit func(p *Point)) []Point {
		ps := make([]Point, n)
		for i := range ps {
			ps[i] = point()
			ps[i].ID = int64(i)
			edit(&ps[i])
		}
		return ps
	}
	noWrite := func(o *Options) { o.WriteSamples = false }
	tests := []struct {
		name   string
		opts   func(o *Options)
		points []Point
		local  bool
		want   string // "" = within the limits
	}{
		{"control defaults", nil, with(func(p *Point) { p.Tables = 1000 }), true, ""},
		{"regress defaults", nil, with(func(p *Point) { p.Tables, p.Methods = 10000, []string{"baseline", "jem"} }), true, ""},
		{"N held locally at the limit", nil, with(func(p *Point) { p.Samples, p.Tables = MaxHeldSamplesLocal, 1 }), true, ""},
		{"N held locally over the limit", nil, with(func(p *Point) { p.Samples, p.Tables = 100_000_000, 1 }), true,
			"samples: 100000000 draws per table is over the local limit of 10000000 (run on Dataflow with --runner=dataflow to go higher, or pass --write_samples=false)"},
		{"N not held locally", noWrite, with(func(p *Point) { p.Samples, p.Tables = 100_000_000, 1 }), true, ""},
		{"N counts only at the hard limit", noWrite, with(func(p *Point) { p.Samples = MaxSamples }), true, ""},
		{"N held on Dataflow", nil, with(func(p *Point) { p.Samples, p.Tables = 100_000_000, 1 }), false, ""},
		{"N held on Dataflow over the limit", nil, with(func(p *Point) { p.Samples, p.Tables = 200_000_000, 1 }), false,
			"samples: 200000000 draws per table is over the limit on a distributed runner of 100000000 (pass --write_samples=false)"},
		{"N held by minibatches", noWrite, with(func(p *Point) { p.Samples, p.Tables, p.BatchSize = 20_000_000, 1, 100 }), true,
			"over the local limit of 10000000 (run on Dataflow with --runner=dataflow to go higher, or train full batch with --batch_size=0 and --write_samples=false)"},
		{"tables locally over the limit", noWrite, with(func(p *Point) { p.Tables = 3_000_000 }), true,
			"tables: 3000000 tables is over the local limit of 2000000 (run on Dataflow with --runner=dataflow to go higher)"},
		{"tables on Dataflow", noWrite, with(func(p *Point) { p.Tables = 3_000_000 }), false, ""},
		{"tables over points locally", noWrite, grid(3, func(p *Point) { p.Tables = 700_000 }), true,
			"2100000 tables over 3 grid points is over the local limit of 2000000"},
		{"tables of one point in a grid", noWrite, grid(3, func(p *Point) { p.Tables = 10; p.Tables += int(p.ID) * 2_100_000 }), true,
			"grid point 1: tables: 2100010 tables is over the local limit"},
		{"tables over points on Dataflow", noWrite, grid(3, func(p *Point) { p.Tables = 4_000_000 }), false,
			"12000000 tables over 3 grid points is over the limit of 10000000"},
		{"grid points", noWrite, grid(MaxPoints+1, func(p *Point) { p.Tables = 1 }), false,
			"10001 grid points is over the limit of 10000"},
		{"draws overflow int64", noWrite, grid(2, func(p *Point) { p.Tables, p.Samples = math.MaxInt64, math.MaxInt64 }), false,
			"more than 9.2e18 tables over 2 grid points"},
		{"draws over the limit", noWrite, with(func(p *Point) { p.Tables, p.Samples = 2_000_000, MaxSamples }), false,
			"2000000000000000000 draws (tables × samples) is over the limit of 1000000000000000000"},
		{"sample rows written locally", nil, with(func(p *Point) { p.Tables, p.Samples = 10_000, 1_000_000 }), true,
			"10000000000 sample rows to write (tables × samples) is over the local limit of 1000000000 (run on Dataflow with --runner=dataflow to go higher, or pass --write_samples=false)"},
		{"sample rows at the local limit", nil, with(func(p *Point) { p.Tables, p.Samples = 1000, 1_000_000 }), true, ""},
		{"sample rows just over the local limit", nil, with(func(p *Point) { p.Tables, p.Samples = 1001, 1_000_000 }), true,
			"1001000000 sample rows to write"},
		{"sample rows not written", noWrite, with(func(p *Point) { p.Tables, p.Samples = 10_000, 1_000_000 }), true, ""},
		{"sample rows on Dataflow", nil, with(func(p *Point) { p.Tables, p.Samples = 10_000, 1_000_000 }), false, ""},
		{"learned cells locally", noWrite, with(func(p *Point) { p.XValues, p.Classes, p.Tables = 256, 256, 400 }), true,
			"78643200 learned cells (tables × methods × x_values·classes) is over the local limit of 20000000"},
		{"learned cells on Dataflow", noWrite, with(func(p *Point) { p.XValues, p.Classes, p.Tables = 256, 256, 400 }), false, ""},
		{"training graph too large", noWrite, with(func(p *Point) {
			p.XValues, p.Classes, p.Encoding, p.Tables = 256, 256, "onehot", 500
		}), false, "train_batch: 1500 runs of linear on 256x256 tables (onehot x) need 196992000 values in one training graph, over the limit of 134217728 (pass --train_batch=1022 or less)"},
		{"training graph with a smaller train_batch", func(o *Options) { o.WriteSamples, o.TrainBatch = false, 1022 }, with(func(p *Point) {
			p.XValues, p.Classes, p.Encoding, p.Tables = 256, 256, "onehot", 500
		}), false, ""},
		{"one run too large for a graph", noWrite, with(func(p *Point) {
			p.XValues, p.Classes, p.Model, p.Tables = 32768, 2, "mlp:1024,1024,1024,1024", 1
		}), false, "model: one run of mlp:1024,1024,1024,1024 on 32768x2 tables (scalar x) needs 137436162 values in a training graph, over the limit of 134217728 (use a smaller model or fewer x values)"},
		{"minibatch draws in a graph", noWrite, with(func(p *Point) { p.Samples, p.BatchSize, p.Tables = 1_000_000, 100, 1000 }), false,
			"train_batch: 2000 minibatch runs with 1000000 draws each hold 2000000000 draws in one training graph, over the limit of 268435456 (pass --train_batch=268 or less, or --batch_size=0)"},
		{"minibatch draws with a smaller train_batch", func(o *Options) { o.WriteSamples, o.TrainBatch = false, 200 },
			with(func(p *Point) { p.Samples, p.BatchSize, p.Tables = 1_000_000, 100, 1000 }), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := limitsOptions()
			if tt.opts != nil {
				tt.opts(&o)
			}
			err := o.CheckLimits(tt.points, tt.local)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckLimits: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckLimits = %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}

func TestTrainingGraphMessage(t *testing.T) {
	// The train_batch the message suggests must pass.
	p := point()
	p.XValues, p.Classes, p.Encoding, p.Tables = 256, 256, "onehot", 500
	o := limitsOptions()
	o.WriteSamples = false
	err := o.CheckLimits([]Point{p}, false)
	if err == nil || !strings.Contains(err.Error(), "--train_batch=") {
		t.Fatalf("CheckLimits = %v, want a train_batch suggestion", err)
	}
	var tb int
	msg := err.Error()
	if _, err := fmt.Sscan(msg[strings.Index(msg, "--train_batch=")+len("--train_batch="):], &tb); err != nil {
		t.Fatalf("no number in %q: %v", msg, err)
	}
	o.TrainBatch = tb
	if err := o.CheckLimits([]Point{p}, false); err != nil {
		t.Errorf("with the suggested --train_batch=%d: %v", tb, err)
	}
	o.TrainBatch = tb + 1
	if err := o.CheckLimits([]Point{p}, false); err == nil {
		t.Errorf("--train_batch=%d passes: the suggestion is not the largest", tb+1)
	}
}

func TestSatArith(t *testing.T) {
	tests := []struct {
		name     string
		a, b     int64
		mul, add int64
	}{
		{"small", 3, 4, 12, 7},
		{"zero", 0, math.MaxInt64, 0, math.MaxInt64},
		{"mul overflow", 1 << 32, 1 << 32, math.MaxInt64, 1 << 33},
		{"add overflow", math.MaxInt64, 1, math.MaxInt64, math.MaxInt64},
		{"edge", math.MaxInt64 / 2, 2, math.MaxInt64 - 1, math.MaxInt64/2 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SatMul(tt.a, tt.b); got != tt.mul {
				t.Errorf("satMul = %d, want %d", got, tt.mul)
			}
			if got := SatAdd(tt.a, tt.b); got != tt.add {
				t.Errorf("satAdd = %d, want %d", got, tt.add)
			}
		})
	}
}

// options2D are the control command's defaults on a 2-D task.
func options2D() Options {
	o := limitsOptions()
	o.EvalEvery, o.OOD, o.AttackEps, o.PurifySteps, o.PurifyLR = 100, OODUniform, 0.3, 20, 0.01
	return o
}

// TestCheckLimits2D: a 2-D point's limits (draws per task and per block, curve
// points), the backends a point can train on, and the promises' options at a point.
func TestCheckLimits2D(t *testing.T) {
	with := func(edit func(p *Point)) Point {
		p := point2D()
		edit(&p)
		p.Resolve()
		return p
	}
	table := func(edit func(p *Point)) Point {
		p := point()
		edit(&p)
		return p
	}
	tests := []struct {
		name  string
		opts  func(o *Options)
		point Point
		local bool
		want  string // "" = within the limits
	}{
		{"2-D defaults", nil, with(func(p *Point) {}), true, ""},
		{"N per task at the local limit", nil, with(func(p *Point) { p.Samples, p.Tables = MaxHeldSamplesLocal, 1 }), true, ""},
		{"N per task over the local limit", nil, with(func(p *Point) { p.Samples, p.Tables = 100_000_000, 1 }), true,
			"samples: 100000000 draws per task is over the local limit of 10000000 (a 2-D task's draws are held in memory"},
		{"N per task without samples written", func(o *Options) { o.WriteSamples = false }, with(func(p *Point) { p.Samples, p.Tables = 100_000_000, 1 }), true,
			"over the local limit of 10000000"},
		{"N per task on Dataflow", nil, with(func(p *Point) { p.Samples, p.Tables = 100_000_000, 1 }), false, ""},
		{"draws of a block locally", nil, with(func(p *Point) { p.Samples, p.Tables = 10_000_000, 100 }), true,
			"samples: a 2-D block trains 16 tasks together and holds their 160000000 draws (10000000 per task) in memory, over the local limit of 50000000 (pass --train_batch=10 or less"},
		{"draws of a small block", func(o *Options) { o.TrainBatch = 10 }, with(func(p *Point) { p.Samples, p.Tables = 10_000_000, 100 }), true, ""},
		{"draws of a block on Dataflow", nil, with(func(p *Point) { p.Samples, p.Tables = 10_000_000, 100 }), false, ""},
		{"curve points", func(o *Options) { o.EvalEvery = 1 }, with(func(p *Point) { p.Steps = 100_000 }), true,
			"eval_every: 100000 steps with the exact KL every 1 is 100000 curve points per run, over the limit of 10000 (pass --eval_every=10 or more"},
		{"curve points at the limit", func(o *Options) { o.EvalEvery = 10 }, with(func(p *Point) { p.Steps = 100_000 }), true, ""},
		{"no curves", func(o *Options) { o.EvalEvery = 0 }, with(func(p *Point) { p.Steps = MaxSteps }), true, ""},
		{"GoMLX backend on 2-D", func(o *Options) { o.Backend = "go" }, with(func(p *Point) {}), true,
			"backend: --backend=go does not apply to the 2-D task gmm:3,2: its runs train on the fused float32 kernels only"},
		{"kernel backend on 2-D", func(o *Options) { o.Backend = "kernel" }, with(func(p *Point) {}), true, ""},
		{"GoMLX backend on tables", func(o *Options) { o.Backend = "go" }, table(func(p *Point) {}), true, ""},
		{"GoMLX backend with pcd", func(o *Options) { o.Backend = "go:ops_sequential" },
			table(func(p *Point) { p.Methods = []string{"jem", "pcd", "pcd-exact"} }), false,
			"backend: pcd and pcd-exact train on the fused float32 kernels only, not on --backend=go:ops_sequential"},
		{"pcd on a model the kernels do not cover", nil,
			table(func(p *Point) { p.XValues, p.Classes, p.Methods = 100, 100, []string{"jem", "pcd"} }), true,
			"backend: the fused float32 kernels, which pcd needs, do not cover linear on 100x100 tables"},
		{"kernel backend on a model the kernels do not cover", func(o *Options) { o.Backend = "kernel" },
			table(func(p *Point) { p.Model = "mlp:512,512" }), true, "which --backend=kernel needs, do not cover mlp:512,512"},
		{"attack radius of the box", func(o *Options) { o.AttackEps = 8 }, with(func(p *Point) {}), true, ""},
		{"attack radius over the box", func(o *Options) { o.AttackEps = 8.5 }, with(func(p *Point) {}), true,
			"attack_eps: a radius of 8.5 is wider than the box [−4, 4]² itself"},
		{"other task of a gmm", func(o *Options) { o.OOD = OODOtherTask }, with(func(p *Point) { p.Tables = 1 }), true, ""},
		{"other task of moons", func(o *Options) { o.OOD = OODOtherTask }, with(func(p *Point) { p.Task = "moons:0.1" }), true,
			"ood: other-task takes the OOD draws from another task of moons:0.1, but moons has one shape for each SIGMA"},
		{"other task of one user task", func(o *Options) { o.OOD = OODOtherTask }, with(func(p *Point) { p.Task, p.Tables = TaskFile, 1 }), true,
			"ood: other-task takes the OOD draws from the next task of --tasks_from, which holds one task"},
		{"other task of two user tasks", func(o *Options) { o.OOD = OODOtherTask }, with(func(p *Point) { p.Task, p.Tables = TaskFile, 2 }), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options2D()
			if tt.opts != nil {
				tt.opts(&o)
			}
			err := o.CheckLimits([]Point{tt.point}, tt.local)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckLimits: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckLimits = %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}

// TestBlockDraws2DMessage: the train_batch the message suggests passes, and one more
// task per block does not.
func TestBlockDraws2DMessage(t *testing.T) {
	p := point2D()
	p.Samples, p.Tables = 4_000_000, 100
	p.Resolve()
	o := options2D()
	err := o.CheckLimits([]Point{p}, true)
	if err == nil || !strings.Contains(err.Error(), "--train_batch=") {
		t.Fatalf("CheckLimits = %v, want a train_batch suggestion", err)
	}
	msg := err.Error()
	if _, err := fmt.Sscan(msg[strings.Index(msg, "--train_batch=")+len("--train_batch="):], &o.TrainBatch); err != nil {
		t.Fatalf("no number in %q: %v", msg, err)
	}
	if err := o.CheckLimits([]Point{p}, true); err != nil {
		t.Errorf("with the suggested --train_batch=%d: %v", o.TrainBatch, err)
	}
	o.TrainBatch += len(p.Methods)
	if err := o.CheckLimits([]Point{p}, true); err == nil {
		t.Errorf("--train_batch=%d passes: the suggestion is not the largest", o.TrainBatch)
	}
}

// TestPromiseOptionsFloat32: the promises' options must survive the kernels' float32.
func TestPromiseOptionsFloat32(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"defaults", func(o *Options) {}, ""},
		{"attack_eps overflows", func(o *Options) { o.AttackEps = 1e39 }, "attack_eps: 1e+39 is outside the range of float32"},
		{"purify_lr overflows", func(o *Options) { o.PurifyLR = 1e300 }, "purify_lr: 1e+300 is outside the range of float32"},
		{"purify_lr underflows", func(o *Options) { o.PurifyLR = 1e-50 }, "purify_lr: 1e-50 is outside the range of float32"},
		{"zeros", func(o *Options) { o.AttackEps, o.PurifyLR = 0, 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options2D()
			tt.edit(&o)
			err := o.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// point is a valid 2×2 table point.
func point() Point {
	return Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 300, PxWeight: 1}, Tables: 10, Methods: []string{"baseline", "jem", "oracle"}}
}

// point2D is a 2-D point before Resolve.
func point2D() Point {
	return Point{Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 500,
		Model: "mlp:8", LR: 0.01, Steps: 100, BatchSize: 32, PxWeight: 1, Task: "gmm:3, 2", GridCells: 16, Box: 4, TrainGrid: 8,
		SGLDPreset: "official", SGLDLR: 1, SGLDSteps: 20, BufferSize: 100, ReinitFreq: 0.05, ChainSteps: 5, Proposal: "uniform"},
		Tables: 3, Methods: []string{"jem", "sgld"}}
}

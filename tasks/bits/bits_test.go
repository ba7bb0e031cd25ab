package bits

import (
	"context"
	"math"
	"strings"
	"testing"

	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

func point(task string) tasks.Point {
	p := tasks.Point{Grid: schemas.Grid{Task: task, Components: 2, Samples: 1000, Model: "mlp:16", LR: 0.01, Steps: 200,
		BatchSize: 64, PxWeight: 1, BufferSize: 200, ReinitFreq: 0.05, ChainSteps: 3, Proposal: "uniform",
		Recipe: schemas.Recipe{EDNegatives: 4, EDT: 0.1, EDW: 1}}, Tables: 2,
		Methods: []string{"baseline", "jem", "pcd", "ed"}}
	Kind{}.Resolve(&p)
	return p
}

// trainTwo opens point p's source under options o and trains and evaluates its first
// two tasks in one block.
func trainTwo(t *testing.T, p tasks.Point, o tasks.Options) (tasks.Source, schemas.ResultBlock, tasks.LearnedBlock) {
	t.Helper()
	ctx := context.Background()
	src, err := Kind{}.Open(ctx, tasks.Env{Options: o}, p)
	if err != nil {
		t.Fatal(err)
	}
	b := tasks.Block{PointID: p.ID, IDs: []int64{0, 1}}
	for i := range 2 {
		_, truth, _ := src.Truth(int64(i))
		b.P = append(b.P, truth...)
	}
	tb, err := src.Train(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	rb, lb, err := src.Evaluate(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	return src, rb, lb
}

// TestEvaluateIndependent trains every method on two tasks and recomputes each run's
// KLs from its learned logits and the truth's own log-probabilities (prob.BitsTask.
// LogJoint, not the enumeration the kind uses), as a reader of the Parquet files would.
func TestEvaluateIndependent(t *testing.T) {
	p := point("bits:7,3")
	if err := (Kind{}).Validate(p); err != nil {
		t.Fatal(err)
	}
	o := tasks.Options{Seed: 5, TrainBatch: 64}
	_, rb, lb := trainTwo(t, p, o)
	x, k := p.XValues, p.Classes
	m := len(p.Methods)
	kl := map[string]float64{}
	for r, row := range rb.Rows {
		task := prob.DrawBits(Kind{}.Seed(o.Seed, p, int64(r/m)), 7, k, p.Components)
		lg := lb.Runs[r].Logits
		mx := math.Inf(-1)
		for _, v := range lg {
			mx = max(mx, v)
		}
		var z float64
		for _, v := range lg {
			z += math.Exp(v - mx)
		}
		logZ := mx + math.Log(z)
		var joint, marg, cond, r1, r2 float64
		for xi := range x {
			var lpx, lqx []float64
			for y := range k {
				lp := task.LogJoint(uint32(xi), y)
				lq := lg[xi*k+y] - logZ
				joint += math.Exp(lp) * (lp - lq)
				r := lp - lg[xi*k+y] // the log ratio with the raw logit: Z cancels in its sd
				r1, r2 = r1+math.Exp(lp)*r, r2+math.Exp(lp)*r*r
				lpx, lqx = append(lpx, lp), append(lqx, lq)
			}
			px, qx := lse(lpx), lse(lqx)
			marg += math.Exp(px) * (px - qx)
			for y := range k {
				cond += math.Exp(lpx[y]) * ((lpx[y] - px) - (lqx[y] - qx))
			}
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"joint", row.KLJoint, joint}, {"marginal", row.KLMarginal, marg}, {"conditional", row.KLConditional, cond},
			{"log-ratio spread", row.LogRatioSD, math.Sqrt(max(0, r2-r1*r1))}} {
			if math.Abs(c.got-c.want) > 1e-9 {
				t.Errorf("run %s: %s %v, independently %v", row.RunID, c.name, c.got, c.want)
			}
		}
		kl[row.Method] += row.KLJoint / 2
	}
	t.Logf("mean joint KL: %v", kl)
	if !(kl["jem"] < 0.5*kl["baseline"]) {
		t.Errorf("exact jem's joint KL %v is not under half the baseline's %v", kl["jem"], kl["baseline"])
	}
}

func lse(xs []float64) float64 {
	m := math.Inf(-1)
	for _, v := range xs {
		m = max(m, v)
	}
	var s float64
	for _, v := range xs {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *tasks.Point)
		err  string
	}{
		{"ok", func(*tasks.Point) {}, ""},
		{"bad D", func(p *tasks.Point) { p.Task = "bits:0,2" }, "D must be in [1, 20]"},
		{"bad K", func(p *tasks.Point) { p.Task = "bits:4,1" }, "K must be in [2, 64]"},
		{"too many cells", func(p *tasks.Point) { p.Task = "bits:20,8"; Kind{}.Resolve(p) }, "over the limit"},
		{"components", func(p *tasks.Point) { p.Components = 0 }, "components must be in [1, 64]"},
		{"neighbour proposal", func(p *tasks.Point) { p.Proposal = "neighbour" }, "flips one bit"},
		{"ed flip probability", func(p *tasks.Point) { p.EDT = 0.7 }, "flip probability"},
		{"no samples", func(p *tasks.Point) { p.Samples = 0 }, "samples must be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := point("bits:6,2")
			c.edit(&p)
			err := Kind{}.Validate(p)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
}

func TestLimitsJEMWork(t *testing.T) {
	p := point("bits:20,2")
	p.Steps = 1100
	if err := (Kind{}).Limits(tasks.Options{}, p, true); err == nil || !strings.Contains(err.Error(), "--steps=1024 or less") {
		t.Fatalf("err = %v, want the jem enumeration limit", err)
	}
	p.Methods = []string{"baseline", "pcd"}
	if err := (Kind{}).Limits(tasks.Options{}, p, true); err != nil {
		t.Fatalf("without jem: %v", err)
	}
	// jem-converged enumerates up to 10× the steps: at 800 steps (jem's fit) its cap
	// of 8,000 does not.
	p.Steps, p.Methods = 800, []string{"jem", "jem-converged"}
	if err := (Kind{}).Limits(tasks.Options{}, p, true); err == nil || !strings.Contains(err.Error(), "jem-converged enumerates") || !strings.Contains(err.Error(), "--steps=102 or less") {
		t.Fatalf("err = %v, want jem-converged's enumeration limit", err)
	}
	p.Steps = 100
	if err := (Kind{}).Limits(tasks.Options{}, p, true); err != nil {
		t.Fatalf("jem-converged at 100 steps: %v", err)
	}
}

// TestLogRatioSpreadRanksLikeKL: on binary tasks the exact log-ratio spread orders runs
// (baseline and exact jem after 3, 30 and 300 steps, on two tasks) as their exact joint
// KL does (Spearman ρ).
func TestLogRatioSpreadRanksLikeKL(t *testing.T) {
	var kl, spread []float64
	for _, steps := range []int{3, 30, 300} {
		p := point("bits:7,3")
		p.Steps, p.Methods = steps, []string{"baseline", "jem"}
		_, rb, _ := trainTwo(t, p, tasks.Options{Seed: 5, TrainBatch: 64})
		for _, r := range rb.Rows {
			if !(r.LogRatioSD >= 0) || r.LogRatioSDSE != 0 || !math.IsNaN(r.FisherDiv) {
				t.Errorf("steps %d %s: log_ratio_sd %v ± %v, fisher_div %v: want an exact spread, no Fisher", steps, r.Method, r.LogRatioSD, r.LogRatioSDSE, r.FisherDiv)
			}
			kl, spread = append(kl, r.KLJoint), append(spread, r.LogRatioSD)
		}
	}
	rho := prob.Spearman(kl, spread)
	t.Logf("log_ratio_sd: Spearman ρ with kl_joint over %d runs = %.3f", len(kl), rho)
	if !(rho >= 0.8) {
		t.Errorf("Spearman ρ = %v, want ≥ 0.8", rho)
	}
}

// TestHeldoutSelection: with the protocol's held-out split, every run of a binary table
// is scored at the check of least exact held-out NLL (never the truth): a selected
// step and its held-out NLL, never above the last step's, and the gradient
// evaluations counted; without it (--select none) the last iterate, no NLL.
func TestHeldoutSelection(t *testing.T) {
	p := point("bits:6,2")
	for _, tc := range []struct {
		name string
		o    tasks.Options
		sel  bool
	}{
		{"held-out", tasks.Options{Seed: 3, Select: tasks.SelectHeldout, Holdout: 0.2}, true},
		{"none", tasks.Options{Seed: 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rb, _ := trainTwo(t, p, tc.o)
			for _, r := range rb.Rows {
				switch {
				case tc.sel && (r.SelectedStep <= 0 || !(r.HeldoutNLL <= r.HeldoutNLLFinal) || r.GradEvals <= 0):
					t.Errorf("%s: selected step %d, held-out NLL %v (final %v), grad evals %d", r.Method, r.SelectedStep, r.HeldoutNLL, r.HeldoutNLLFinal, r.GradEvals)
				case !tc.sel && !math.IsNaN(r.HeldoutNLL):
					t.Errorf("%s: held-out NLL %v without a split", r.Method, r.HeldoutNLL)
				case math.IsNaN(r.KLJoint):
					t.Errorf("%s: no joint KL", r.Method)
				}
			}
		})
	}
}

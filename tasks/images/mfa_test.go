package images

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

// TestMFAHoldsTruth: the truth is a member of the MFA family (mfa:5,9 at the default
// spec): loaded into the model (MFAFromTruth) its logits are log p(x, y) at the exact
// draws, its exact log Z is 0, its joint KL (Monte Carlo, exact Z) and Fisher divergence
// are 0 up to the float32 parameters' rounding; a model too small for the truth is
// refused.
func TestMFAHoldsTruth(t *testing.T) {
	for _, tc := range []struct {
		name string
		S, K int
	}{
		{"8x8, two classes", 8, 2},
		{"8x8, three classes", 8, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := mfa.New(21, mfa.DefaultSpec(tc.S, tc.K))
			if err != nil {
				t.Fatal(err)
			}
			sp, theta, err := MFAFromTruth(tr, 5, 9)
			if err != nil {
				t.Fatal(err)
			}
			m, err := kernel.NewMFAModel(sp, theta)
			if err != nil {
				t.Fatal(err)
			}
			if lz := m.LogZ(); math.Abs(lz) > 1e-6 {
				t.Errorf("log Z = %g, want 0 (Σ π = 1)", lz)
			}
			set, err := newEvalSet(tr, 3, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := set.measure(context.Background(), mfaModel{m}, nil)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			kl := r.Joint + m.LogZ()
			if mk := r.Marg + m.LogZ(); math.Abs(mk) > 1e-3 {
				t.Errorf("the truth as its own MFA model: marginal KL %g, want 0", mk)
			}
			if math.Abs(kl) > 1e-3 || math.Abs(r.Fisher) > 1e-3*float64(tr.D()) || math.Abs(r.KLCond) > 1e-4 {
				t.Errorf("the truth as its own MFA model: joint KL %g ± %g, Fisher %g, conditional KL %g; want 0", kl, r.JointSE, r.Fisher, r.KLCond)
			}
			if _, _, err := MFAFromTruth(tr, 3, 9); err == nil {
				t.Error("mfa:3,9 took a truth of 4–5 components a class")
			}
			if _, _, err := MFAFromTruth(tr, 5, 4); err == nil {
				t.Error("mfa:5,4 took a truth of 8–9 factors")
			}
		})
	}
}

// mfaPoint is a small MFA point.
func mfaPoint(t *testing.T, model string, ms ...string) tasks.Point {
	t.Helper()
	p := tasks.Point{Grid: schemas.DefaultGrid(), Tables: 1}
	p.Task, p.Model = "images:8,2", model
	given := map[string]bool{"model": true, "steps": true, "samples": true}
	if len(ms) > 0 {
		p.Methods = ms
		given["methods"] = true
	}
	p.Steps, p.Samples = 240, 1000
	Kind{}.Defaults(&p, func(a string) bool { return given[a] })
	p.Resolve()
	return p
}

// TestMFAKind: the model's name, defaults (every block-task method, lr 0.01), the
// verdict rule (exact jem exists), the methods' kind and the refusals.
func TestMFAKind(t *testing.T) {
	k := Kind{}
	p := mfaPoint(t, " mfa:5, 9")
	if p.Model != "mfa:5,9" || p.LR != DefaultMFALR {
		t.Fatalf("resolved model %q lr %g", p.Model, p.LR)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(p.Methods, ","), "jem,") || len(p.Methods) != len(methods.For(methods.KindBlocks)) {
		t.Errorf("default methods %v, want the block tasks' %v", p.Methods, methods.For(methods.KindBlocks))
	}
	if k.Rule(p) != verdict.Samplers || k.MethodKind(p) != methods.KindBlocks {
		t.Errorf("rule %v, method kind %s", k.Rule(p), k.MethodKind(p))
	}
	cnnp := mfaPoint(t, DefaultModel, "baseline")
	if k.Rule(cnnp) != verdict.NoReference || k.MethodKind(cnnp) != KindName {
		t.Errorf("cnn point: rule %v, method kind %s", k.Rule(cnnp), k.MethodKind(cnnp))
	}
	if err := k.Limits(tasks.Options{Backend: "xla:cuda"}, p, true); err == nil || !strings.Contains(err.Error(), "fused kernels") {
		t.Errorf("xla backend on the MFA model: %v", err)
	}
	for _, c := range []struct{ model, method, want string }{
		{"mfa:0,2", "jem", "C must be"},
		{"mfa:5", "jem", "want mfa:C,d"},
		{"mfa:x,2", "jem", "integers"},
		{"mfa:2,99", "jem", "d must be"},
		{"mfa:5,9", "pcd", "pcd"},
	} {
		q := mfaPoint(t, c.model, "baseline", c.method)
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %s: %v, want %q", c.model, c.method, err, c.want)
		}
	}
}

// TestMFATrainEvaluate: on images:8,2 exact jem and recipes train and evaluate from the
// same start: every joint KL finite with its Monte Carlo SE, exact jem's below the
// baseline's, the held-out selection applied (a selected step and held-out NLL), log Z
// exact. The default suite trains mfa:2,2 for 120 steps on 600 draws with ed;
// JEMCHECK_SLOW=1 (CI) the family that holds the truth, mfa:5,9, for 240 steps on
// 1,000 draws with nce and ed.
func TestMFATrainEvaluate(t *testing.T) {
	p := mfaPoint(t, "mfa:2,2", "baseline", "jem", "ed")
	p.Steps, p.Samples = 120, 600
	if os.Getenv(testenv.SlowEnv) == "1" {
		p = mfaPoint(t, "mfa:5,9", "baseline", "jem", "nce", "ed")
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	_, tb, rb, _ := tasktest.Run(t, p, tasks.Options{Seed: 5, TrainBatch: 64, ReportTables: 1, Select: tasks.SelectHeldout, Holdout: 0.2})
	kl := map[string]float64{}
	for i, row := range rb.Rows {
		if !(row.KLJoint > 0) || !(row.KLJointSE > 0) || !(row.KLMarginal > 0) || !(row.KLMarginal <= row.KLJoint+3*row.KLJointSE) || row.SelectedStep <= 0 || math.IsNaN(row.HeldoutNLL) || math.IsNaN(row.LogZ) {
			t.Errorf("%s: kl_joint %g ± %g, selected step %d, held-out NLL %g, log Z %g", row.Method, row.KLJoint, row.KLJointSE, row.SelectedStep, row.HeldoutNLL, row.LogZ)
		}
		if len(tb.Runs[i].Curve) == 0 || math.IsNaN(tb.Runs[i].Curve[0].KLJoint) {
			t.Errorf("%s: no curve of exact KLs", row.Method)
		}
		kl[row.Method] = row.KLJoint
	}
	t.Logf("joint KL: %v", kl)
	if !(kl["jem"] < kl["baseline"]) {
		t.Errorf("exact jem %g not below the baseline %g", kl["jem"], kl["baseline"])
	}
}

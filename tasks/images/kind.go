// Package images is the task kind of labelled images with an exact density:
// "images:S,K", S×S pixels (S ∈ {8, 16, 28}, D = S²) and K classes, whose truth is a
// per-class mixture of factor analysers (models/prob/mfa, mfa.DefaultSpec(S, K)) drawn
// from the task's seed, fitted by a convolutional JEM (models/cnn, --model=cnn:C1,…).
//
// # Truth and draws
//
// Task ordinal o of a point has the truth mfa.New(tasks.TableSeed(run seed, o),
// mfa.DefaultSpec(S, K)): exact log p(x, y), log p(x), the Bayes posterior and exact
// draws. A task's --samples draws are exact draws of it (tasks.SampleSeed); with the
// protocol's held-out share the last ⌈N·holdout⌉ are held out of training, as on the
// other kinds. WriteTruth writes every task's mfa.Params as JSON under truth/ so the
// density can be recomputed independently (mfa.FromParams, or by hand from the formula
// in mfa.Params).
//
// # Methods
//
// Every method that trains on images registers a hook for the kind "images" of type
// func(schemas.Grid, *cnn.TrainOptions) error: methods/baseline (cross-entropy),
// methods/sgld (jem-sgld with the point's sgld_* options) and the sampler-free recipes
// methods/ed, methods/dsm and methods/nce (models/cnn/recipes.go). The kind builds the
// options from the point (steps, batch_size, lr, the run's seed tasks.TrainSeed, and
// the run's --backend: the pure-Go backend by default, xla:cuda on a GPU; the fused
// kernels have no convolution, so --backend=kernel is refused) and calls the hook;
// every method of a task starts from the same initial parameters. The iterate kept is
// the last (the CNN trainer keeps no checkpoints: no held-out selection). A user's own
// CNN, exported to ONNX, is judged the same way by pipelines/evaluate --onnx
// (external.go).
//
// On a CNN there is no exact JEM: Z_θ of a CNN on R^D has no exact sum, so the yardstick
// of the other kinds is absent. The MFA model (--model=mfa:C,d, mfa.go) is the
// tractable-Z yardstick at image scale: exact JEM and every block-task recipe train it,
// each run's joint KL exact (the rest of this comment is the CNN's). Each method is measured against the truth itself and
// its classifier against the Bayes classifier; the verdict, which pairs samplers with
// exact jem, is undecided on these points and says that jem is missing.
//
// # Evaluation
//
// Monte Carlo over MCDraws fresh exact draws of the truth (the same for every method of
// a task), each with its standard error: kl_conditional = E_p[KL(p(y|x) ‖ q(y|x))];
// accuracy and bayes_accuracy on the same draws; ece (binned, tasks.ECEBins) and
// calibration_error_true (the same bins with the Bayes posterior of the predicted class
// as accuracy: less noise); auroc_px of log q(x) = LSE_y f(x) (Z-free) between the
// draws and as many uniform draws on [0, 1]^D, auroc_py of max_y q(y|x), and the ceiling
// auroc_true_px of the true log p(x).
//
// The joint KL has no exact Z: KL(p‖q) = E_p[log p(x, y) − f(x)[y]] + log Z_θ. Forward
// annealed importance sampling (models/prob/ais) from a class × k-means-cluster mixture
// of low-rank Gaussians fitted to the labelled training draws gives a stochastic LOWER bound on log Z_θ, hence kl_joint_lower (with
// kl_joint_lower_se); the upper side needs exact draws of q_θ, which a learned model
// does not have: kl_joint_upper is NaN. The schedule is first calibrated on the truth
// (its log Z is 0): forward and reverse AIS (reverse chains from exact draws) on the
// truth's own log density with the same settings; it is accepted only where the
// bidirectional gap |upper − lower| plus its SE is at most ais.DefaultGapTol (0.1 nat)
// and ais.Calibrate accepts (k̂, coverage). ais_teacher_lower, ais_teacher_upper,
// ais_teacher_gap and ais_accepted record it; where it is refused kl_joint_lower is NaN
// and ais_refused says why (and the model's forward AIS is not run). kl_joint is NaN
// (no exact joint KL).
package images

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() { tasks.Register(Kind{}) }

// KindName is the kind's name, the key of the methods' hooks.
const KindName = "images"

// Prefix starts the kind's tasks.
const Prefix = "images:"

// Sides are the image sides the kind draws.
var Sides = []int{8, 16, 28}

// Defaults of an images point.
const (
	DefaultModel   = "cnn:8,16"
	DefaultSteps   = 500
	DefaultBatch   = 64
	DefaultLR      = 1e-3
	DefaultSamples = 2000
	DefaultTasks   = 10
)

// Kind is the kind of image tasks.
type Kind struct{}

// Name is "images".
func (Kind) Name() string { return KindName }

// Owns the tasks "images:…".
func (Kind) Owns(task string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(task), ":")
	return name == "images"
}

// Noun names tasks.
func (Kind) Noun() string { return "tasks" }

// About is the report's sentence on the kind.
func (Kind) About() string {
	return "On the MFA model (--model=mfa:C,d) the normaliser is exact: exact JEM is the yardstick, and every run's kl_joint is a Monte Carlo estimate over 4,000 exact draws with its SE. " +
		"Labelled S×S images whose truth is a per-class mixture of factor analysers with an exact density, fitted by a convolutional JEM. " +
		"No exact JEM exists here (the CNN's Z has no exact sum), so there is no yardstick: each method is compared with the truth and with the Bayes classifier. " +
		"kl_conditional, the accuracies, calibration and OOD AUROCs are Monte Carlo estimates over exact draws (± SE); the joint KL is a stochastic lower bound (kl_joint_lower: forward AIS of log Z, reported only where the same AIS schedule brackets the truth's own log Z = 0 within 0.1 nat); its upper side needs exact draws of the model and is not available."
}

// Axes: the protocol's held-out split.
func (Kind) Axes() []string { return []string{"select", "holdout", "ais_chains", "ais_temps"} }

// Defaults sets the image defaults the user did not set.
func (Kind) Defaults(p *tasks.Point, given func(string) bool) {
	lr, steps := DefaultLR, DefaultSteps
	if given("model") && isMFA(p.Model) {
		lr, steps = DefaultMFALR, DefaultMFASteps
	}
	for _, d := range []struct {
		axis string
		set  func()
	}{
		{"model", func() { p.Model = DefaultModel }},
		{"lr", func() { p.LR = lr }},
		{"steps", func() { p.Steps = steps }},
		{"batch_size", func() { p.BatchSize = DefaultBatch }},
		{"samples", func() { p.Samples = DefaultSamples }},
		{"tables", func() { p.Tables = DefaultTasks }},
	} {
		if !given(d.axis) {
			d.set()
		}
	}
	if !given("methods") { // every method with an images hook: baseline, sgld, ed, dsm, nce; on the MFA model every block-task method
		p.Methods = methods.For(KindName)
		if isMFA(p.Model) {
			p.Methods = methods.For(methods.KindBlocks)
		}
	}
}

// spec is the parsed task.
type spec struct{ S, K int }

func (s spec) String() string { return fmt.Sprintf("%s%d,%d", Prefix, s.S, s.K) }

// mfaSpec is the truth's spec.
func (s spec) mfaSpec() mfa.Spec { return mfa.DefaultSpec(s.S, s.K) }

// parseTask reads "images:S,K".
func parseTask(task string) (spec, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(task), Prefix)
	parts := strings.Split(rest, ",")
	if !ok || len(parts) != 2 {
		return spec{}, fmt.Errorf("task %s: want images:S,K (S ∈ {8, 16, 28} pixels a side, K classes in [%d, %d])", methods.Quote(task), mfa.MinK, mfa.MaxK)
	}
	S, err1 := strconv.Atoi(strings.TrimSpace(parts[0]))
	K, err2 := strconv.Atoi(strings.TrimSpace(parts[1]))
	switch {
	case err1 != nil || err2 != nil:
		return spec{}, fmt.Errorf("task %s: S and K must be integers", methods.Quote(task))
	case !slices.Contains(Sides, S):
		return spec{}, fmt.Errorf("task %s: S must be 8, 16 or 28, got %d", methods.Quote(task), S)
	case K < mfa.MinK || K > mfa.MaxK:
		return spec{}, fmt.Errorf("task %s: K must be in [%d, %d], got %d", methods.Quote(task), mfa.MinK, mfa.MaxK, K)
	}
	return spec{S: S, K: K}, nil
}

// Resolve canonicalises the task and the model and sets Classes = K, XValues = D.
func (Kind) Resolve(p *tasks.Point) {
	p.Encoding, p.Generator = "", ""
	p.GridCells, p.Box, p.TrainGrid = 0, 0, 0
	if s, err := parseTask(p.Task); err == nil {
		p.Task, p.Classes, p.XValues = s.String(), s.K, s.S*s.S
	}
	if c, d, ok, err := parseMFA(p.Model); ok && err == nil {
		p.Model = fmt.Sprintf("%s%d,%d", MFAPrefix, c, d)
	} else if m, err := cnn.Parse(p.Model); err == nil {
		p.Model = m.String()
	}
}

// Validate checks an images point.
func (Kind) Validate(p tasks.Point) error {
	s, err := parseTask(p.Task)
	if err != nil {
		return err
	}
	mfaModel := isMFA(p.Model)
	if !mfaModel {
		m, err := cnn.Parse(p.Model)
		if err != nil {
			return fmt.Errorf("model: %w (an images task trains a CNN, cnn:C1,C2,…, or the tractable-Z MFA model, mfa:C,d)", err)
		}
		if err := m.Check(s.S, s.K); err != nil {
			return fmt.Errorf("model %s on %d×%d images: %w", p.Model, s.S, s.S, err)
		}
	}
	switch {
	case p.Classes != s.K || p.XValues != s.S*s.S:
		return fmt.Errorf("an images point has classes = K = %d and x_values = S² = %d, got %d and %d", s.K, s.S*s.S, p.Classes, p.XValues)
	case p.Samples < 2:
		return fmt.Errorf("samples must be >= 2, got %d", p.Samples)
	case p.Steps < 1 || p.Steps > tasks.MaxSteps:
		return fmt.Errorf("steps must be in [1, %d], got %d", tasks.MaxSteps, p.Steps)
	case p.BatchSize < 1:
		return fmt.Errorf("batch_size must be >= 1, got %d", p.BatchSize)
	case p.Tables < 1 || p.Tables > tasks.MaxTables:
		return fmt.Errorf("tables (tasks) must be in [1, %d], got %d", tasks.MaxTables, p.Tables)
	}
	if mfaModel {
		return validateMFA(p)
	}
	for _, meth := range p.Methods {
		var o cnn.TrainOptions
		if err := hook(meth, p, &o); err != nil {
			return err
		}
	}
	return nil
}

// MaxDrawValues bounds the pixel values of one task's draws held in memory (float64).
const MaxDrawValues = 1 << 28

// Limits checks the backend (the CNN trains on GoMLX: the default pure-Go backend or
// --backend, e.g. xla:cuda; the fused kernels have no convolution) and the draws held
// per task.
func (Kind) Limits(o tasks.Options, p tasks.Point, _ bool) error {
	if isMFA(p.Model) && o.Backend != "" && o.Backend != models.BackendKernel {
		return fmt.Errorf("backend: --backend=%s does not apply to the MFA model of %s: it trains on the fused kernels (leave --backend out)", o.Backend, p.Task)
	}
	if o.Backend == models.BackendKernel && !isMFA(p.Model) {
		return fmt.Errorf("backend: --backend=%s does not apply to the images task %s: the CNN trains on GoMLX "+
			"(leave --backend out for the pure-Go backend, or pass a GoMLX backend such as xla:cuda)", o.Backend, p.Task)
	}
	if n := tasks.SatMul(int64(p.Samples), int64(p.XValues)); n > MaxDrawValues {
		return fmt.Errorf("samples: %d draws of %d pixels is %s values held in memory, over the limit of %s (use fewer --samples)",
			p.Samples, p.XValues, tasks.Count(n), tasks.Count(MaxDrawValues))
	}
	return nil
}

// Check builds the first task's truth (every truth of a valid spec builds).
func (Kind) Check(_ context.Context, o tasks.Options, p tasks.Point) error {
	s, err := parseTask(p.Task)
	if err != nil {
		return err
	}
	_, err = mfa.New(tasks.TableSeed(o.Seed, tasks.Table{Point: p}), s.mfaSpec())
	return err
}

var (
	tagTask = prob.SeedString("images task")
	tagMC   = prob.SeedString("mc")
	tagOOD  = prob.SeedString("ood")
	tagAIS  = prob.SeedString("ais")
)

// Seed identifies a task by its spec, replicate and ordinal (not N, the model or the
// steps: sweeps over those are paired on the same truths and draws).
func (Kind) Seed(runSeed uint64, p tasks.Point, o int64) uint64 {
	task := p.Task
	if s, err := parseTask(task); err == nil {
		task = s.String()
	}
	return prob.Seed(runSeed, tagTask, prob.SeedString(task), uint64(p.Replicate), uint64(o))
}

// MaxBlockTasks bounds the tasks of a block (each task holds its draws and truth).
const MaxBlockTasks = 4

// BlockSize is at most MaxBlockTasks tasks.
func (Kind) BlockSize(p tasks.Point, trainBatch int) int64 {
	return int64(max(1, min(MaxBlockTasks, trainBatch/max(1, len(p.Methods)))))
}

// Rule: on a CNN no reference (no exact jem exists there; the rows compare each method
// with the truth, and the point takes no verdict); on the MFA model each sampler
// against exact jem, whose log Z is exact (verdict.Samplers).
func (Kind) Rule(p tasks.Point) verdict.Rule {
	if isMFA(p.Model) {
		return verdict.Samplers
	}
	return verdict.NoReference
}

// Dimension is D = S².
func (Kind) Dimension(p tasks.Point) int {
	if s, err := parseTask(p.Task); err == nil {
		return s.S * s.S
	}
	return 0
}

// Family is "images:·,K".
func (Kind) Family(p tasks.Point) string {
	if s, err := parseTask(p.Task); err == nil {
		return fmt.Sprintf("%s·,%d", Prefix, s.K)
	}
	return p.Task
}

// CarriesTruth: never (a task's truth is drawn again from its seed where used).
func (Kind) CarriesTruth(tasks.Point) bool { return false }

// LearnedCells: none (a CNN's joint on R^D is not enumerable).
func (Kind) LearnedCells(tasks.Options, tasks.Point) int64 { return 0 }

// hook sets a run's training options from the point, then the method's images hook
// (func(schemas.Grid, *cnn.TrainOptions) error).
func hook(m string, p tasks.Point, o *cnn.TrainOptions) error {
	h, ok := methods.Images.Of(m)
	if !ok {
		return fmt.Errorf("method %s has no trainer for %s", methods.Quote(m), methods.KindNoun(KindName))
	}
	o.Steps, o.Batch, o.LR = p.Steps, p.BatchSize, p.LR
	if err := h(p.Grid, o); err != nil {
		return fmt.Errorf("method %s: %w", m, err)
	}
	return nil
}

// Package blocks is the task kind of continuous block tasks (issue 22, item 2):
// "blocks:B,<2-D task>", B independent draws of a 2-D task of the plane kind in
// D = 2B dimensions, tied by one class prior, whose joint KL is exact in any D
// (prob.BlocksSpec has the maths).
//
// # Truth
//
// p(x, y) = π(y)·Π_b p_b(x_b|y): block b is a draw of the 2-D task spec from the task's
// seed and b, rotated about the origin by a random angle (block 0: never rotated, and
// drawn from exactly the plane kind's seed of the same 2-D task, so blocks:1,T is the
// 2-D task T); π is block 0's class prior and every block is conditioned on y. On the
// G×G grid over the box every block's conditional is its exact cell masses.
//
// # Model and methods
//
// The block-additive model f(x)[y] = Σ_b g_b(x_b)[y], one tanh MLP 2-H…-K per block:
// --model=additive:H1,H2,… ("mlp:H1,H2,…" on a block task means the same additive model,
// one such MLP per block, and is recorded as additive:…; "linear" is additive:linear, a
// linear g_b per block). Trained by kernel.TrainAdditive: baseline (cross-entropy), jem
// (exact JEM, Spec2D.Exact: log Z = log Σ_y Π_b Z_{b,y}, each Z_{b,y} on the block's
// shifted training grid, kept at its best iterate on the exact joint KL as the plane
// kind's) and every recipe's kernel.Objective on 2B-dimensional lanes (sgld: the paper's
// replay buffer of 2B-dimensional chains). With B = 1 every method trains exactly as the
// plane kind's on the same task (TestOneBlockIsPlane).
//
// The joint model, --model=joint:H1,H2,… (issue 22, item 3): ONE tanh MLP D-H…-K on all
// D = 2B coordinates, the real JEM setting, trained by kernel.TrainJoint: baseline and
// every recipe's objective (the same options and samplers as the additive model's, in D
// dimensions). Its Z has no exact sum, so exact jem cannot train it (kernel.SpecJoint
// refuses Spec2D.Exact: Validate reports it for jem-converged on a joint point); on a
// joint point jem trains the block-additive model of the same widths on the same tasks
// and draws instead: the exact reference the verdict pairs the samplers with. The
// comparison is on one footing: every run of a joint point is measured at the task's
// evaluation points (below), in the continuous reading; jem's kl_joint there is its
// exact KL on ℝ^D (exactKLContinuous), the joint runs' kl_joint their estimate
// kl_joint_is (with kl_joint_is_se), so the verdict's sampler excess is the joint
// model's estimated KL minus the additive reference's exact one, the estimate's CI
// beside it in the rows. A joint run whose importance estimate is refused (ESS below
// prob.MinESS or Pareto k̂ above prob.MaxParetoK) has NaN joint and marginal KLs (no
// decision on it; the verdict counts it among the sampler's non-finite pairs).
//
// # Evaluation
//
// kl_joint is exact on the grid (prob.BlocksJointKL: a product of 2-D sums). kl_marginal,
// kl_conditional, accuracy and bayes_accuracy are Monte Carlo means over MCDraws exact
// draws of the grid truth (cells: y ~ π, then c_b ~ P_b(·|y), all on the same grid
// discretisation as the joint), the same draws for every method of a task, with the
// standard errors of the KLs in kl_marginal_se and kl_conditional_se. The promises
// (OOD, calibration, robustness, samples) are not measured on block tasks (NaN); sgld's
// buffer_tv_truth and buffer_tv_model are the plane kind's per block, averaged over the
// blocks (bufferTV).
//
// Estimated truth (joint points, and any model given as logits): EvalPoints are a
// task's evaluation points, MCDraws exact draws of the grid truth placed uniformly
// within their cells, then ISDraws draws of the defensive mixture α·p_ε + (1−α)·uniform
// on the box^D (the truth proposal r₀); EvaluateLogits measures a model from its logits
// there alone (eval.go has the estimators and their SEs). A run with parameters (the
// joint MLP, and jem's additive reference on a joint point) takes its log Ẑ instead
// from a proposal adapted to the model (EvalSet.AdaptedLogZ: Metropolis chains on the
// model's own ℓ = LSE_y f, a mixture of the model's own block conditionals on a fine
// grid, block histograms, block Gaussian mixtures and class-wise full Gaussians fitted
// to them with the model's q(y|x) as class weights, fresh draws of it pooled ½/½ with
// r₀'s; the same refusal rule; is_proposal says which proposal a row's estimate used).
// An additive run on the measured tasks (Options.Measures) takes the same adapted
// estimate beside its exact log Z: the estimator's known answer on every such row. The truth there is the grid truth read as a density on
// ℝ^D, P(cells, y)/h^D, piecewise constant: the KLs are those of a function on ℝ^D
// against it, each the grid KL plus the model's variation within the cells (≥ 0). A run
// without parameters whose logits have NumEvalPoints·K entries (a user's model) is
// measured so on any block point.
//
// A block of the framework carries each task's truth as a table over X = B·G² values
// x = b·G² + c (block b, cell c) and the K classes, P[x·K + y] = π(y)^{1/B}·P_b(c|y)/(B·S)
// with S = Σ_y π(y)^{1/B} (prob.BlocksTruth.Table): it sums to 1, and its logarithm read
// as the additive model's block cell logits is the truth itself (so a "model" whose
// logits are the log of the table scores KL 0, as on every kind). A run's learned logits
// in the same layout are its blocks' cell logits ℓ_b[c, y], from which Z and every KL
// above can be recomputed (scripts/blockskl does); learned.parquet's q is the model's
// grid joint in the truth's layout, q(y)^{1/B}·q_b(c|y)/(B·S_q).
package blocks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/plane"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() { tasks.Register(Kind{}) }

// Kind is the kind of block tasks.
type Kind struct{}

// Name is methods.KindBlocks.
func (Kind) Name() string { return methods.KindBlocks }

// Owns the tasks "blocks:…" (any arguments: Validate reports bad ones).
func (Kind) Owns(task string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(task), ":")
	return name == "blocks"
}

// Noun names tasks.
func (Kind) Noun() string { return "tasks" }

// About is the report's sentence on the kind.
func (Kind) About() string {
	return "Continuous block tasks in D = 2B dimensions: B rotated draws of a 2-D task sharing one class prior, fitted by a block-additive model; the joint KL is exact on the product of the blocks' grids (a product of 2-D sums), the marginal and conditional KLs and the accuracies are Monte Carlo estimates over exact draws of the grid truth (± standard error)."
}

// Axes only the grid kinds read (shared with the plane kind).
func (Kind) Axes() []string {
	return []string{"grid", "box", "train_grid", "eval_every", "select", "holdout", "measure_tasks"}
}

// Defaults of a block point (the plane kind's, but for the model, the grid, the box and
// the number of tasks).
const (
	DefaultModel = "additive:32,32"
	DefaultGrid  = 32  // a B-block task carries B·G²·K cells
	DefaultBox   = 6.0 // rotated gmm means reach 2√2 from the origin: 5.3 sd of the widest component inside
	DefaultTasks = 20
)

// Defaults sets the block defaults of the axes the user did not set.
func (Kind) Defaults(p *tasks.Point, given func(string) bool) {
	for _, d := range []struct {
		axis string
		set  func()
	}{
		{"model", func() { p.Model = DefaultModel }},
		{"lr", func() { p.LR = 3e-3 }},
		{"steps", func() { p.Steps = 1500 }},
		{"batch_size", func() { p.BatchSize = 64 }},
		{"samples", func() { p.Samples = 2000 }},
		{"grid", func() { p.GridCells = DefaultGrid }},
		{"box", func() { p.Box = DefaultBox }},
		{"tables", func() { p.Tables = DefaultTasks }},
	} {
		if !given(d.axis) {
			d.set()
		}
	}
	if !given("methods") { // the default methods that train on block tasks (no oracle), and the paper's sampler
		ours := methods.For(methods.KindBlocks)
		p.Methods = slices.DeleteFunc(slices.Clone(p.Methods), func(m string) bool { return !slices.Contains(ours, m) })
		for _, m := range methods.DefaultFor(methods.KindBlocks) {
			if !slices.Contains(p.Methods, m) {
				p.Methods = append(p.Methods, m)
			}
		}
	}
}

// Resolve canonicalises the task and the model, sets Classes = K and XValues = B·G².
func (Kind) Resolve(p *tasks.Point) {
	p.Encoding, p.Generator = "", ""
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err == nil {
		p.Task, p.Classes = spec.String(), spec.Inner.K
	}
	if m, err := canonicalModel(p.Model); err == nil {
		p.Model = m
	}
	if err == nil && p.GridCells > 0 && p.GridCells <= plane.MaxGrid {
		p.XValues = spec.B * p.GridCells * p.GridCells
	}
}

// modelSpec is a block point's model: the hidden widths of the block-additive model's
// per-block MLPs, or of the joint MLP on all D coordinates.
type modelSpec struct {
	hidden []int
	joint  bool
}

// canonicalModel is the model's canonical name: "additive:H1,…", "additive:linear" or
// "joint:H1,…".
func canonicalModel(s string) (string, error) {
	m, err := parseModel(s)
	if err != nil {
		return "", err
	}
	name := "additive:"
	if m.joint {
		name = "joint:"
	}
	if len(m.hidden) == 0 {
		return name + "linear", nil
	}
	parts := make([]string, len(m.hidden))
	for i, h := range m.hidden {
		parts[i] = fmt.Sprint(h)
	}
	return name + strings.Join(parts, ","), nil
}

// parseModel reads the model: "additive:H1,…", "additive:linear", "mlp:H1,…" or
// "linear" (the additive model, its per-block MLP's hidden widths), or "joint:H1,…"
// (the joint MLP's).
func parseModel(s string) (modelSpec, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "joint:"); ok {
		h, err := models.ParseModel("mlp:" + rest)
		if err != nil || len(h) == 0 {
			return modelSpec{}, fmt.Errorf("model %q: the joint model needs its hidden widths, joint:H1,H2,… (each in [1, 256], at most 4)", s)
		}
		return modelSpec{hidden: h, joint: true}, nil
	}
	rest, ok := strings.CutPrefix(s, "additive:")
	if !ok {
		h, err := models.ParseModel(s)
		if err != nil {
			return modelSpec{}, fmt.Errorf("unknown model %q on a block task (want additive:H1,H2,…, additive:linear, mlp:H1,… for the same additive model, or joint:H1,H2,… for one MLP on all coordinates)", s)
		}
		return modelSpec{hidden: h}, nil
	}
	if rest == "linear" {
		return modelSpec{}, nil
	}
	h, err := models.ParseModel("mlp:" + rest)
	if err != nil {
		return modelSpec{}, fmt.Errorf("model %q: %s", s, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "models: "), "model \"mlp:"+rest+"\": "))
	}
	return modelSpec{hidden: h}, nil
}

// Rule: the samplers are judged against exact jem.
func (Kind) Rule(tasks.Point) verdict.Rule { return verdict.Samplers }

// Dimension is D = 2B.
func (Kind) Dimension(p tasks.Point) int {
	s, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return 0
	}
	return 2 * s.B
}

// Family is "blocks:·,<2-D task>": the task with B taken out.
func (Kind) Family(p tasks.Point) string {
	s, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return p.Task
	}
	return prob.BlocksPrefix + "·," + s.Inner.String()
}

var (
	tagTask = prob.SeedString("task") // the plane kind's: block 0 is its task of the same seed
	tagInit = prob.SeedString("init")
	tagMC   = prob.SeedString("mc")
)

// Seed identifies a task by its 2-D task spec, replicate and ordinal: exactly the plane
// kind's seed of the 2-D task (so block 0 is the plane kind's task), not B (blocks:B and
// blocks:B' share their first blocks and draws: a sweep over B is paired), the grid, box
// or N.
func (Kind) Seed(runSeed uint64, p tasks.Point, o int64) uint64 {
	inner := p.Task
	if spec, err := prob.ParseBlocksSpec(p.Task); err == nil {
		inner = spec.Inner.String()
	}
	return prob.Seed(runSeed, tagTask, prob.SeedString(inner), uint64(p.Replicate), uint64(o))
}

// BlockSize is the plane kind's: at most plane.MaxBlockTasks tasks.
func (Kind) BlockSize(p tasks.Point, trainBatch int) int64 {
	return int64(max(1, min(plane.MaxBlockTasks, trainBatch/max(1, len(p.Methods)))))
}

// MaxTaskCells bounds a block task's B·G²·K cells (its truth, and each run's learned
// logits, travel and are written in that layout).
const MaxTaskCells = 1 << 18

// Validate checks a block point.
func (Kind) Validate(p tasks.Point) error {
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return fmt.Errorf("task: %w", err)
	}
	if spec.Inner.Kind != "gmm" && spec.Inner.Sigma < plane.MinShapeSigma {
		return fmt.Errorf("task %s: SIGMA must be at least %g (the truth is a quadrature over the curve with a node every sixteenth of the noise)", p.Task, plane.MinShapeSigma)
	}
	cells := int64(spec.B) * int64(p.GridCells) * int64(p.GridCells) * int64(p.Classes)
	switch {
	case p.GridCells < 4 || p.GridCells > plane.MaxGrid:
		return fmt.Errorf("grid must be in [4, %d] cells per side, got %d", plane.MaxGrid, p.GridCells)
	case p.XValues != spec.B*p.GridCells*p.GridCells:
		return fmt.Errorf("a block point has x_values = B·grid² = %d, got %d", spec.B*p.GridCells*p.GridCells, p.XValues)
	case p.Classes != spec.Inner.K:
		return fmt.Errorf("classes: the task %s has %d classes, got %d", p.Task, spec.Inner.K, p.Classes)
	case cells > MaxTaskCells:
		return fmt.Errorf("grid %d: %d blocks × %d² cells × %d classes is %d cells per task, over the limit of %d (use --grid=%d or less)",
			p.GridCells, spec.B, p.GridCells, p.Classes, cells, MaxTaskCells, maxGridFor(spec.B, p.Classes))
	case !(p.Box >= plane.MinBox && p.Box <= plane.MaxBox):
		return fmt.Errorf("box must be in [%g, %g], got %v", plane.MinBox, plane.MaxBox, p.Box)
	case p.Samples < 1:
		return fmt.Errorf("samples must be >= 1, got %d", p.Samples)
	case p.Samples > tasks.MaxHeldSamples:
		return fmt.Errorf("samples: %d draws per task is over the limit of %d (the draws are held in memory)", p.Samples, tasks.MaxHeldSamples)
	case p.Steps < 1 || p.Steps > tasks.MaxSteps:
		return fmt.Errorf("steps must be in [1, %d], got %d", tasks.MaxSteps, p.Steps)
	case p.Tables < 1 || p.Tables > tasks.MaxTables:
		return fmt.Errorf("tables (tasks) must be in [1, %d], got %d", tasks.MaxTables, p.Tables)
	}
	model, err := parseModel(p.Model)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	for _, m := range p.Methods {
		var err error
		if model.joint && m != methods.Yardstick() {
			var s kernel.SpecJoint
			if s, err = specJoint(p, m); err == nil {
				err = s.Validate()
			}
		} else {
			var s kernel.SpecAdditive
			if s, err = specAdditive(p, m, 0); err == nil {
				err = s.Validate()
			}
		}
		if err != nil {
			return fmt.Errorf("method %s: %s", m, strings.TrimPrefix(err.Error(), "kernel: "))
		}
	}
	return nil
}

// maxGridFor is the largest grid whose B·G²·K cells are within MaxTaskCells.
func maxGridFor(b, k int) int {
	return int(math.Sqrt(float64(MaxTaskCells) / float64(b*k)))
}

// Limits checks the backend (the fused kernels only), the draws held per task and per
// block (2B coordinates a draw) and the sampler's float32 options.
func (Kind) Limits(o tasks.Options, p tasks.Point, local bool) error {
	if err := o.CheckBackend(p, true); err != nil {
		return err
	}
	spec, _ := prob.ParseBlocksSpec(p.Task)
	n := tasks.SatMul(int64(p.Samples), int64(spec.B)) // a draw of B blocks holds as much as B 2-D draws
	if lim := tasks.Pick(local, tasks.MaxHeldSamplesLocal, tasks.MaxHeldSamples); n > lim {
		return fmt.Errorf("samples: %d draws of %d blocks per task is %s 2-D draws held in memory, over %s of %d (%s)",
			p.Samples, spec.B, tasks.Count(n), tasks.LimitName(local), lim, tasks.Lift(local, "use fewer --samples"))
	}
	nt := min(Kind{}.BlockSize(p, o.TrainBatch), int64(max(p.Tables, 1)))
	if lim := tasks.Pick(local, tasks.MaxBlockDraws2DLocal, tasks.MaxBlockDraws2D); tasks.SatMul(n, nt) > lim {
		return fmt.Errorf("samples: a block of %d tasks holds %s 2-D draws (%d draws × %d blocks per task) in memory, over %s of %s "+
			"(pass a lower --train_batch: a block has train_batch/methods tasks)",
			nt, tasks.Count(tasks.SatMul(n, nt)), p.Samples, spec.B, tasks.LimitName(local), tasks.Count(lim))
	}

	return nil
}

// Check refuses, before anything runs, a point with a task whose blocks the box does not
// hold or the grids do not resolve (the plane kind's checks, block by block: the mass
// outside the box at most prob.MaxOutsideMass, every component's sd at least
// prob.MinResolution cell widths of the evaluation grid and, for jem, of the training
// grid).
func (Kind) Check(_ context.Context, o tasks.Options, p tasks.Point) error {
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return err
	}
	ts := make([]prob.BlocksTask, p.Tables)
	for i := range ts {
		ts[i] = spec.Draw(tasks.TableSeed(o.Seed, tasks.Table{Point: p, Ordinal: int64(i)}))
	}
	g := evalGrid(p)
	usesTrainGrid := p.TrainGrid > 0 && slices.Contains(p.Methods, methods.Yardstick())
	for i, t := range ts {
		for b, bt := range t.Blocks {
			name := fmt.Sprintf("task %d block %d (%s, rotated %.0f°)", i, b, bt, t.Angles[b]*180/math.Pi)
			if out := bt.OutsideMass(p.Box); out > prob.MaxOutsideMass {
				hold := 0.0
				for _, u := range ts {
					for _, ub := range u.Blocks {
						hold = max(hold, ub.HoldingBox())
					}
				}
				return fmt.Errorf("box: %s puts %.3g of its mass outside the box [−%g, %g]² (at most %g allowed: exact JEM normalises on the box); --box=%g holds every block of every task of the point",
					name, out, p.Box, p.Box, prob.MaxOutsideMass, hold)
			}
			sd := bt.MinSD()
			if sd < prob.MinResolution*g.Step() {
				return fmt.Errorf("grid: %s has a component of sd %.3g, narrower than the %d×%d grid over [−%g, %g]² resolves (sd ≥ %g cell widths of %.3g); --grid=%d resolves it",
					name, sd, g.G, g.G, p.Box, p.Box, prob.MinResolution, g.Step(), gridFor(sd, p.Box, 1))
			}
			if usesTrainGrid {
				if h := 2 * p.Box / float64(p.TrainGrid); sd < prob.MinResolution*h {
					return fmt.Errorf("train_grid: %s has a component of sd %.3g, narrower than exact JEM's %d×%d training grid resolves (sd ≥ %g cell widths of %.3g); --train_grid=%d resolves it",
						name, sd, p.TrainGrid, p.TrainGrid, prob.MinResolution, h, gridFor(sd, p.Box, 4))
				}
			}
		}
	}
	return nil
}

// gridFor is the least number of cells per side, a multiple of mult, whose cells over
// [−box, box] are at most sd/prob.MinResolution wide.
func gridFor(sd, box float64, mult int) int {
	n := int(math.Ceil(2 * box * prob.MinResolution / sd))
	return (n + mult - 1) / mult * mult
}

// evalGrid is a block point's evaluation grid (every block's).
func evalGrid(p tasks.Point) prob.Grid { return prob.Grid{G: p.GridCells, Box: p.Box} }

// specAdditive is the additive kernel's spec of method m at p (observe: the cadence of
// Observe, 0 = none); its Spec2D is the plane kind's spec of m. On a joint point it is
// the spec of the additive reference of the joint model's widths (exact jem's).
func specAdditive(p tasks.Point, m string, observe int) (kernel.SpecAdditive, error) {
	spec, _ := prob.ParseBlocksSpec(p.Task)
	s, err := spec2D(p, m, observe)
	return kernel.SpecAdditive{Spec2D: s, Blocks: spec.B}, err
}

// specJoint is the joint kernel's spec of method m at p (the baseline or a method's
// objective; SpecJoint.Validate refuses exact JEM).
func specJoint(p tasks.Point, m string) (kernel.SpecJoint, error) {
	spec, _ := prob.ParseBlocksSpec(p.Task)
	s, err := spec2D(p, m, 0)
	return kernel.SpecJoint{Spec2D: s, Dim: 2 * spec.B}, err
}

// spec2D is the 2-D kernel's spec of method m at p with p's hidden widths: the point's
// shared settings, then the method's hook for block tasks (methods.KindBlocks, of the
// plane kind's hook type: func(schemas.Grid, *kernel.Spec2D) error).
func spec2D(p tasks.Point, m string, observe int) (kernel.Spec2D, error) {
	model, _ := parseModel(p.Model)
	s := kernel.Spec2D{Hidden: model.hidden, K: p.Classes, Steps: p.Steps, Batch: p.BatchSize, PxWeight: float32(p.PxWeight),
		Box: float32(p.Box), ObserveEvery: observe}
	return s, plane.Hook(m, methods.KindBlocks, p, &s)
}

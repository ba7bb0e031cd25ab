package tasks

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// # The protocol
//
// Every method of a point is trained and judged alike: the same draws (less one
// held-out split, the same for every method), initial parameters, model, optimiser,
// steps, minibatch and learning rate, and the same selection rule, which never reads
// the truth. The rule is the point's Options.Select:
//
//   - "heldout" (the default): the iterate of least held-out NLL among the checks (every
//     --eval_every steps, or Steps/Checks where that is 0) and the last step;
//   - "last": the last iterate.
//
// The held-out NLL is the mean −log q(x, y) of the held-out draws under the learned
// joint, normalised on the evaluation grid (2-D, per unit area) or its enumeration:
// computed alike for every method, so it may rank their iterates. The KLs against the
// truth are taken at the selected iterate only (and along the curve for the report).
// The one exception is jem-converged, named as such: exact JEM on full batches at a
// rate of at least YardstickMinLR, trained until the convergence rule holds (up to
// YardstickCap steps; see "The converged yardstick" below), "the best this model
// family does on these draws": the converged yardstick, against which every recipe's
// excess is reported beside its excess over exact jem at the shared budget (which
// decides the verdict).

// Selection rules (Options.Select).
const (
	SelectHeldout = "heldout"
	SelectLast    = "last"
)

// Protocol defaults.
const (
	// DefaultHoldout is the share of a task's N draws held out from training (the last
	// ⌈N·share⌉ of the i.i.d. draws), the same for every method.
	DefaultHoldout = 0.2
	// Checks is how many times over its steps a run's held-out NLL (and KL curve) is
	// taken when --eval_every does not set the cadence.
	Checks = 30
	// UnstableNats: a run whose held-out NLL ends more than this above its best check
	// is flagged unstable (a collapse), as is one that ends above the baseline's. The
	// baseline itself (no log q(x) term: its joint NLL is not what it trains) is not
	// flagged.
	UnstableNats = 0.25
)

// Protocol is what config.json and summary.json declare of the training protocol.
type Protocol struct {
	Select       string  `json:"select"`        // heldout or last
	Holdout      float64 `json:"holdout"`       // share of the draws held out from training
	Checks       string  `json:"checks"`        // the cadence of the held-out NLL and the curves
	UnstableNats float64 `json:"unstable_nats"` // the collapse flag's threshold
	Same         string  `json:"same"`          // what every method shares
	Exception    string  `json:"exception"`     // the one method trained otherwise
}

// ProtocolOf is the protocol the options declare.
func (o Options) ProtocolOf() Protocol {
	checks := fmt.Sprintf("every steps/%d steps and the last step", Checks)
	if o.EvalEvery > 0 {
		checks = fmt.Sprintf("every %d steps and the last step", o.EvalEvery)
	}
	return Protocol{Select: o.Select, Holdout: o.Holdout, Checks: checks, UnstableNats: UnstableNats,
		Same: "draws, held-out split, initial parameters, model, optimiser (Adam), steps, batch_size, lr and selection rule, for every method (exact jem and oracle included)",
		Exception: fmt.Sprintf("jem-converged (the converged yardstick): exact JEM on full batches at lr >= 0.01, trained until its best held-out NLL improves by less than %g nats over the last fifth of its checks (at least %d checks), up to %dx the steps, selected by the same rule among its checks up to then (a reference beside the verdict's yardstick, exact jem at the shared budget)",
			ConvergeTol, ConvergeMinChecks, YardstickCapFactor)}
}

// validateProtocol checks the selection options.
func (o Options) validateProtocol() error {
	switch {
	case o.Select != SelectHeldout && o.Select != SelectLast:
		return fmt.Errorf("select: unknown selection rule %s (known: heldout, last)", quote(o.Select))
	case !(o.Holdout >= 0 && o.Holdout <= 0.5):
		return fmt.Errorf("holdout must be a share in [0, 0.5], got %v", o.Holdout)
	case o.Select == SelectHeldout && o.Holdout == 0:
		return errors.New("select=heldout needs held-out draws: give --holdout > 0 (e.g. 0.2) or --select=last")
	}
	return nil
}

// HoldoutSplit is the number of a task's n draws trained on under the options: the
// first n − ⌈n·holdout⌉ (at least 1); the rest are held out.
func (o Options) HoldoutSplit(n int) int {
	h := int(math.Ceil(float64(n) * o.Holdout))
	return max(1, n-h)
}

// HeldOut is the held-out marker of draw j (in draw order) of a task's n draws: 1 when
// the options hold it out of training (the last ⌈n·holdout⌉ draws, HoldoutSplit), 0
// when every method trains on it. Options without a selection rule (Select "": the run
// has no kind that selects) hold nothing out. The kind without a split (tables, which
// train on every draw) writes 0 whatever the options.
func (o Options) HeldOut(j, n int) int64 {
	if o.Select == "" || j < o.HoldoutSplit(n) {
		return 0
	}
	return 1
}

// Split is the held-out split of point p's draws under the options: per task, the
// draws trained on (the first) and held out (the last; HeldOut marks them). Kinds that
// read no selection rule (Kind.Axes without "select": tables and binary tables) train
// on every draw.
func (o Options) Split(p Point) (train, heldout int) {
	n := p.Samples
	k, err := Of(p.Task)
	if err != nil || o.Select == "" || !slices.Contains(k.Axes(), "select") {
		return n, 0
	}
	t := o.HoldoutSplit(n)
	return t, n - t
}

// CheckEvery is the cadence of a run's checks (held-out NLL and curve points):
// --eval_every where set, else Steps/Checks (at least 1).
func (o Options) CheckEvery(steps int) int {
	if o.EvalEvery > 0 {
		return o.EvalEvery
	}
	return max(1, steps/Checks)
}

// SetProtocol copies a run's protocol fields into its result row: NaN where the kind
// did not measure them, the point's batch and rate where the run did not say, and
// whether the convergence rule held on the run's curve and where (ConvergedStep).
func SetProtocol(row *schemas.ResultRow, r TrainedRun, p Point) {
	row.SelectedStep, row.Unstable = r.SelectedStep, r.Unstable
	row.GradEvals, row.GradEvalsSelected = r.GradEvals, r.GradEvalsSelected
	row.HeldoutNLL, row.HeldoutNLLFinal, row.CPUSeconds = math.NaN(), math.NaN(), math.NaN()
	if r.SelectedStep > 0 {
		row.HeldoutNLL, row.HeldoutNLLFinal = r.HeldoutNLL, r.HeldoutNLLFinal
	}
	if r.CPUSeconds > 0 {
		row.CPUSeconds = r.CPUSeconds
	}
	row.ConvergedStep, row.Converged = ConvergedStep(r.Curve)
	row.TrainBatch, row.TrainLR = int64(p.BatchSize), p.LR
	if r.TrainBatch > 0 {
		row.TrainBatch, row.TrainLR = r.TrainBatch, r.TrainLR
	}
}

// Selector follows one run's checks and keeps the iterate the rule selects: the
// parameters and logits of the check of least held-out NLL (rule heldout; ties keep
// the earlier), or of the last step. It also keeps the run's curve (every check) and
// finds the collapse flag's first half (the NLL's rise from its best).
type Selector struct {
	Rule      string
	step      int
	nll       float64
	seen      bool
	theta     []float32
	logits    []float64
	evals     int64
	finalNLL  float64
	finalStep int
}

// Observe records the check at step (theta and logits are kept by reference only if
// chosen: the caller passes copies it will not reuse).
func (s *Selector) Observe(step int, nll float64, evals int64, theta []float32, logits []float64) {
	s.finalNLL, s.finalStep = nll, step
	better := !s.seen || (nll < s.nll) || (math.IsNaN(s.nll) && !math.IsNaN(nll))
	if s.Rule == SelectLast {
		better = true
	}
	if better {
		s.seen, s.step, s.nll, s.evals = true, step, nll, evals
		s.theta = append(s.theta[:0], theta...)
		s.logits = logits
	}
}

// Apply sets the run's selection: the kept iterate's logits and parameters when it
// is not the last one (final is the last step's held-out NLL, finalStep that step,
// finalEvals the run's gradient evaluations).
func (s *Selector) Apply(tr *TrainedRun, final float64, finalStep int, finalEvals int64) {
	tr.HeldoutNLLFinal, tr.GradEvals = final, finalEvals
	tr.SelectedStep, tr.HeldoutNLL, tr.GradEvalsSelected = int64(finalStep), final, finalEvals
	keepFinal := !s.seen || s.Rule == SelectLast || !(s.nll < final) || s.step == finalStep
	if !keepFinal {
		tr.Logits, tr.Theta = s.logits, s.theta
		tr.SelectedStep, tr.HeldoutNLL, tr.GradEvalsSelected = int64(s.step), s.nll, s.evals
	}
	best := final
	if s.seen && s.nll < best {
		best = s.nll
	}
	if final-best > UnstableNats || (math.IsNaN(final) && s.seen && !math.IsNaN(s.nll)) {
		tr.Unstable = true
	}
}

// FlagAgainstBaseline marks the runs of one task whose final held-out NLL ends above
// the baseline's (runs[j] the task's run of method j; base the baseline's index, -1
// if the point has none).
func FlagAgainstBaseline(runs []*TrainedRun, base int) {
	if base < 0 || math.IsNaN(runs[base].HeldoutNLLFinal) {
		return
	}
	b := runs[base].HeldoutNLLFinal
	for j, r := range runs {
		if j != base && r.SelectedStep > 0 && r.HeldoutNLLFinal > b {
			r.Unstable = true
		}
	}
}

// CurveGap is an exact reference's convergence diagnostic read off its curve: the
// least joint KL of the checks in the first third of the steps minus the least of all
// checks (≥ 0; NaN when the curve has no check in the first third).
func CurveGap(curve []CurvePoint, steps int) float64 {
	third, best := math.NaN(), math.NaN()
	for _, c := range curve {
		if math.IsNaN(c.KLJoint) {
			continue
		}
		if 3*c.Step <= steps && !(c.KLJoint >= third) {
			third = c.KLJoint
		}
		if !(c.KLJoint >= best) {
			best = c.KLJoint
		}
	}
	if math.IsNaN(third) {
		return math.NaN()
	}
	return max(0, third-best)
}

// LastStep is the last training step a run applied: before the one whose divergence
// guard fired.
func LastStep(steps int, diverged bool, divergedStep int) int {
	if diverged {
		return max(0, divergedStep-1)
	}
	return steps
}

// EndCurve is a run's curve ending at its last step: the curve as it is when its last
// check was that step, else with the point at (computed only then) appended.
func EndCurve(curve []CurvePoint, last int, at func() CurvePoint) []CurvePoint {
	if n := len(curve); n > 0 && curve[n-1].Step == last {
		return curve
	}
	return append(curve, at())
}

// Finish sets a trained run's selection from its curve, whose last point is its last
// step (EndCurve): Apply, with a method that does not train log q(x) never judged
// unstable on the joint's held-out NLL, and an exact reference's convergence gap.
func (s *Selector) Finish(tr *TrainedRun, method string, steps int) {
	end := tr.Curve[len(tr.Curve)-1]
	s.Apply(tr, end.HeldoutNLL, end.Step, end.GradEvals)
	m, _ := methods.Lookup(method)
	tr.Unstable = tr.Unstable && !m.NoPx
	if m.Reference {
		tr.RefGap = CurveGap(tr.Curve, steps)
	}
}

// FlagBlockAgainstBaseline flags, task by task, the runs of a trained block (run i·M+j
// is task i with method ms[j]) whose held-out NLL ends above the baseline's
// (FlagAgainstBaseline).
func FlagBlockAgainstBaseline(runs []TrainedRun, ms []string) {
	base, m := slices.Index(ms, methods.Baseline()), len(ms)
	for i := 0; i+m <= len(runs); i += m {
		task := make([]*TrainedRun, m)
		for j := range m {
			task[j] = &runs[i+j]
		}
		FlagAgainstBaseline(task, base)
	}
}

// # The converged yardstick
//
// jem-converged (the converged yardstick) trains until a truth-free convergence rule
// holds on its held-out NLL, up to YardstickCap steps; every recipe's excess is
// reported against it beside the excess over exact jem at the shared budget. The rule
// (Converged) reads only the held-out NLL at the run's checks, at the point's cadence
// (CheckEvery): at a check with at least ConvergeMinChecks checks so far, the run has
// converged when the best held-out NLL improved by less than ConvergeTol nats per draw
// over the last fifth of its checks (at least ConvergeMinWindow checks), every check
// of that fifth finite. Its converged step is the first check at which the rule holds.
// The rule asks whether the selected iterate (the best check) still improves, not
// whether the curve is flat: a curve that oscillates or rises past its best (the
// held-out rule already keeps the best) has converged; one still falling has not.

// The convergence rule's constants.
const (
	// ConvergeTol is the rule's tolerance in nats per held-out draw: the best held-out
	// NLL may improve by less than this over the last fifth of the checks. It is a
	// seventh of the smallest gap between exact jem at the shared budget and
	// jem-converged measured on held-out families (0.007 nats), and below the width of a
	// recipe's excess CI over 10 tasks (about 0.004 nats for exact references), so a
	// yardstick that stops under it is converged to what the comparisons can resolve.
	ConvergeTol = 1e-3
	// ConvergeMinChecks is the fewest checks at which the rule may hold (a third of
	// the Checks of a run's own steps).
	ConvergeMinChecks = 10
	// ConvergeMinWindow is the fewest checks in the rule's last fifth.
	ConvergeMinWindow = 3
	// YardstickCapFactor is the converged yardstick's cap in multiples of the point's
	// steps (YardstickCap).
	YardstickCapFactor = 10
)

// Converged is the convergence rule at the last of a run's checks so far: nll are the
// held-out NLLs at its checks, in step order. It holds when there are at least
// ConvergeMinChecks checks, the last fifth of them (⌈n/5⌉, at least
// ConvergeMinWindow) are finite, and the least NLL of all the checks is less than
// ConvergeTol below the least of the checks before that fifth. It reads no truth.
func Converged(nll []float64) bool {
	n := len(nll)
	if n < ConvergeMinChecks {
		return false
	}
	w := max(ConvergeMinWindow, (n+4)/5)
	before, now := math.Inf(1), math.Inf(1)
	for i, v := range nll {
		finite := !math.IsNaN(v) && !math.IsInf(v, 0)
		if i >= n-w && !finite {
			return false
		}
		if !finite {
			continue
		}
		if i < n-w {
			before = min(before, v)
		}
		now = min(now, v)
	}
	return !math.IsInf(before, 1) && before-now < ConvergeTol
}

// Convergence follows one run's checks and finds the first at which the rule
// (Converged) holds: Step is that check's step, 0 while it has not held.
type Convergence struct {
	nll  []float64
	Step int
}

// Observe records the check at step with held-out NLL nll, in step order, and says
// whether the rule has held (at this check or an earlier one; later checks change
// nothing).
func (c *Convergence) Observe(step int, nll float64) bool {
	if c.Step > 0 {
		return true
	}
	c.nll = append(c.nll, nll)
	if Converged(c.nll) {
		c.Step = step
	}
	return c.Step > 0
}

// ConvergedStep is the first step of a run's curve (its checks and its last step) at
// which the convergence rule holds on the held-out NLL, and whether it held at all
// (0, false for a curve on which it never does, or without held-out NLL).
func ConvergedStep(curve []CurvePoint) (int64, bool) {
	var c Convergence
	for _, p := range curve {
		if c.Observe(p.Step, p.HeldoutNLL) {
			return int64(c.Step), true
		}
	}
	return 0, false
}

// RunPxWeight is the px_weight of a run whose trainer's spec has the float32 weight
// spec after its method's hook: the point's own float64 value where the hook left it,
// else the spec's.
func RunPxWeight(point float64, spec float32) float64 {
	if float32(point) == spec {
		return point
	}
	return float64(spec)
}

// YardstickMaxBatch is the converged yardstick's largest minibatch.
const YardstickMaxBatch = 2048

// YardstickMinLR is the converged yardstick's least Adam learning rate: on all N draws
// a step the gradient is exact, and at the 2-D default of 0.003 exact JEM on circles
// still improved by 10% from 1,500 to 4,500 steps; at 0.01 by none on any family.
const YardstickMinLR = 0.01

// isYardstick says whether method m is the converged yardstick (methods' FullBatch).
func isYardstick(m string) bool {
	return methods.Has(m, func(x methods.Method) bool { return x.FullBatch })
}

// RunBatch is the minibatch of method m's runs on draws training draws: the point's
// (batch), or for the converged yardstick all draws (rounded up to the kernels'
// multiple of 16) up to YardstickMaxBatch, so that its gradient is the full data's.
func RunBatch(m string, batch, draws int) int {
	if isYardstick(m) && draws > 0 {
		return min(YardstickMaxBatch, (draws+kernel.VW-1)/kernel.VW*kernel.VW)
	}
	return batch
}

// RunLR is the Adam learning rate of method m's runs: the point's (the protocol: the
// same for every method), or for the converged yardstick at least YardstickMinLR.
func RunLR(m string, lr float64) float64 {
	if isYardstick(m) {
		return max(lr, YardstickMinLR)
	}
	return lr
}

// YardstickCap is the most steps the converged yardstick trains at a point of the
// given steps: YardstickCapFactor times them, at most MaxSteps.
func YardstickCap(steps int) int { return min(MaxSteps, YardstickCapFactor*steps) }

// NextHorizon is the converged yardstick's next training horizon after one of h steps
// on which some run had not converged: twice h, at most limit. A run's trajectory does
// not depend on its horizon (the same seed, data and rate, no decay), so training the
// runs that have not converged again to the next horizon replays and continues them
// exactly: a run costs at most about four times the steps of stopping it where its
// rule held.
func NextHorizon(h, limit int) int { return min(limit, 2*h) }

// TrainYardstick trains a method's n runs for steps, and the converged yardstick's
// (yard) until each run's convergence rule has held (conv, filled by the runs' checks)
// or it has reached YardstickCap(steps) or diverged (diverged(r)): those not converged
// at a horizon are trained again from their start to the next (NextHorizon), reset(i)
// first clearing what run i's checks recorded, and the same seed replays the steps
// already taken. train(h, idx) trains runs idx to horizon h, results in idx order;
// addCPU(r, prev) adds a previous horizon's CPU seconds to the result r. It returns
// each run's result and the horizon it trained to.
func TrainYardstick[R any](n, steps int, yard bool, conv []Convergence, train func(h int, idx []int) ([]R, error),
	reset func(i int), diverged func(r R) bool, addCPU func(r *R, prev R)) ([]R, []int, error) {
	res, horizon := make([]R, n), make([]int, n)
	todo := make([]int, n)
	for i := range todo {
		todo[i] = i
	}
	limit, h := YardstickCap(steps), steps
	for len(todo) > 0 {
		got, err := train(h, todo)
		if err != nil {
			return nil, nil, err
		}
		var next []int
		for k, i := range todo {
			if horizon[i] > 0 {
				addCPU(&got[k], res[i])
			}
			res[i], horizon[i] = got[k], h
			if yard && conv[i].Step == 0 && !diverged(got[k]) && h < limit {
				reset(i)
				conv[i] = Convergence{}
				next = append(next, i)
			}
		}
		todo, h = next, NextHorizon(h, limit)
	}
	return res, horizon, nil
}

package tasks

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
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
// rate of at least RefMinLR, "the best this model family does on these draws",
// reported beside the others and never used as the yardstick.

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
		Same:      "draws, held-out split, initial parameters, model, optimiser (Adam), steps, batch_size, lr and selection rule, for every method (exact jem and oracle included)",
		Exception: "jem-converged: exact JEM on full batches at lr >= 0.01, selected by the same rule (a reference, never the yardstick)"}
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
// has no kind that selects) hold nothing out. The kinds without a split (tables and
// binary tables, which train on every draw) write 0 whatever the options.
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
// did not measure them, and the point's batch and rate where the run did not say.
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

package stages

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*schemas.ResultRow)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Learned)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*ResultBlock)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*LearnedBlock)(nil)).Elem())
	register.DoFn4x1[context.Context, TrainedBlock, func(ResultBlock), func(LearnedBlock), error](&evaluateFn{})
	register.Emitter1[ResultBlock]()
	register.Emitter1[LearnedBlock]()
}

// Evaluate compares every learned joint with its true table: from the logits f(x)[y]
// over all cells, q(x,y) = softmax over all cells, q(x) and q(y|x); exact
// KL(p‖q) of the joint, of the marginal p(x), the conditional E_{x~p} KL(p(y|x)‖q(y|x)),
// the accuracy of argmax q(y|x) under p against the table's Bayes accuracy; the joint
// KL split into approximation, optimisation and estimation errors with the exact
// references (see splitError); the first-order floor (X·K−1)/(2N) and the KL of the
// empirical table (the plug-in estimate, +Inf when a cell is empty) for comparison.
//
// In: PCollection<TrainedBlock>. Out: PCollection<ResultBlock>, PCollection<LearnedBlock>.
func Evaluate(s beam.Scope, opts Options, points []Point, trained beam.PCollection) (results, learned beam.PCollection) {
	s = s.Scope("stages.Evaluate")
	return beam.ParDo2(s, &evaluateFn{Points: points, Options: opts}, trained)
}

// runsDiverged counts the result rows recorded as diverged, where the row's flag is set,
// so the console's count is the number of diverged rows in the results/ files;
// runsNonfinite those recorded as nonfinite (a KL not finite, no guard fired).
var (
	runsDiverged  = beam.NewCounter("jemcheck", "runs_diverged")
	runsNonfinite = beam.NewCounter("jemcheck", "runs_nonfinite")
)

type evaluateFn struct {
	Points  []Point
	Options Options // the seed, the user's tasks and the promises' options (2-D points)

	points map[int64]Point
	tasks  map[int64]*taskSource
	// the current task's held-out draws (a block's runs come task by task)
	eval      *taskEval
	evalOf    int64
	evalPoint int64
}

func (f *evaluateFn) Setup(ctx context.Context) error {
	f.points = pointsByID(f.Points)
	tasks, err := newTaskSources(ctx, f.Points, f.Options.TasksFrom)
	if err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	f.tasks = tasks
	return nil
}

func (f *evaluateFn) ProcessElement(ctx context.Context, tb TrainedBlock, emitRows func(ResultBlock), emitLearned func(LearnedBlock)) error {
	p := f.points[tb.Block.PointID]
	rb := ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]Learned, len(tb.Runs))}
	diverged, nonfinite := 0, 0
	var refs *tableRefs
	for r := range tb.Runs {
		t := tb.trained(p, r)
		if r%len(p.Methods) == 0 { // a new table: its references, once for all its methods
			d := t.Job.Dataset
			if p.Is2D() {
				refs = gridRefs(d.Table.P, p.XValues, p.Classes)
			} else {
				refs = newTableRefs(familyOf(p.Grid), d.Table.P, d.Counts, int64(p.Samples))
			}
		}
		rb.Rows[r], lb.Runs[r] = evaluateRun(t, refs)
		if p.Is2D() {
			if err := f.promises2D(&rb.Rows[r], &lb.Runs[r], p, t); err != nil {
				return fmt.Errorf("evaluate point %d block %d: %w", p.ID, tb.Block.Index, err)
			}
		}
		if rb.Rows[r].Diverged {
			diverged++
		}
		if rb.Rows[r].Nonfinite {
			nonfinite++
		}
	}
	// Run ids sort by table ordinal, then method name: the block's rows in that order.
	slices.SortFunc(rb.Rows, func(a, b schemas.ResultRow) int { return strings.Compare(a.RunID, b.RunID) })
	slices.SortFunc(lb.Runs, func(a, b Learned) int { return strings.Compare(a.RunID, b.RunID) })
	runsDiverged.Inc(ctx, int64(diverged))
	if nonfinite > 0 {
		runsNonfinite.Inc(ctx, int64(nonfinite))
	}
	emitRows(rb)
	emitLearned(lb)
	return nil
}

// promises2D fills a 2-D run's promise columns (the task's held-out and OOD draws are
// drawn once per task, for its first method) and keeps the sampler's buffer for the
// report's runs only.
func (f *evaluateFn) promises2D(row *schemas.ResultRow, l *Learned, p Point, t Trained) error {
	d := t.Job.Dataset
	if f.eval == nil || f.evalOf != d.Table.Ordinal || f.evalPoint != p.ID {
		src := f.tasks[p.ID]
		task, _, err := src.task(f.Options.Seed, p, d.Table.Ordinal)
		if err != nil {
			return err
		}
		f.eval, f.evalOf, f.evalPoint = newTaskEval(f.Options.Seed, f.Options, p, d.Table, task, src.other(f.Options.Seed, p, d.Table.Ordinal)), d.Table.Ordinal, p.ID
	}
	report := d.Table.Ordinal < int64(f.Options.ReportTables)
	if !report {
		l.Buffer = nil
	}
	if t.Run.Theta == nil || row.Diverged || row.Nonfinite {
		return nil
	}
	frames, err := promises2D(row, f.Options, p, f.eval, t.Run.Theta, d.Table.P, t.Run.Buffer, report, trainSeed(f.Options.Seed, d.Table, t.Job.Method))
	l.Frames = frames
	return err
}

// EvaluateRun computes one run's result row and learned joint.
func EvaluateRun(t Trained) (schemas.ResultRow, Learned) { return evaluateRun(t, nil) }

// evaluateRun is EvaluateRun with the table's references, when already computed.
func evaluateRun(t Trained, refs *tableRefs) (schemas.ResultRow, Learned) {
	d := t.Job.Dataset
	p := d.Table.Point
	x, k := p.XValues, p.Classes
	truth := d.Table.P
	q := prob.Softmax(t.Logits)
	row := schemas.ResultRow{
		RunID: t.Job.RunID, TableID: d.Table.ID, Method: t.Job.Method,
		PointID:       p.ID,
		KLJoint:       prob.KL(truth, q),
		KLMarginal:    prob.KL(prob.Marginal(truth, x, k), prob.Marginal(q, x, k)),
		KLConditional: prob.KLConditional(truth, q, x, k),
		Accuracy:      prob.Accuracy(truth, q, x, k),
		BayesAccuracy: prob.BayesAccuracy(truth, x, k),
		FinalLoss:     t.Loss,
		TrainMS:       t.TrainMS,
		DivergedStep:  t.Run.DivergedStep,
		BufferInBox:   math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(),
		RefGap: math.NaN(), RefBestStep: t.Run.RefBestStep,
	}
	if t.Run.Logits != nil && !math.IsNaN(t.Run.RefGap) {
		row.RefGap = t.Run.RefGap
	}
	if t.Run.Logits != nil && (t.Job.Method == MethodPCD || t.Job.Method == MethodPCDExact) {
		row.KLJointAveraged = t.Run.KLJointAveraged
	}
	if slices.Contains(SamplerMethods, t.Job.Method) {
		row.BufferInBox, row.BufferTVTruth, row.BufferTVModel = t.Run.BufferInBox, t.Run.BufferTVTruth, t.Run.BufferTVModel
	}
	if p.Is2D() {
		if refs == nil {
			refs = gridRefs(truth, x, k)
		}
		noSplit(&row)
	} else {
		row.Floor = prob.Floor(x*k, int64(p.Samples))
		row.KLEmpirical = prob.KL(truth, prob.Empirical(d.Counts))
		row.EmptyCells = int64(prob.EmptyCells(d.Counts))
		if refs == nil {
			refs = newTableRefs(familyOf(p.Grid), truth, d.Counts, int64(p.Samples))
		}
		splitError(&row, refs, truth, q, t.Job.Method == MethodOracle)
	}
	promises(&row, refs, truth, q)
	row.Diverged, row.Nonfinite = runStatus(t.Diverged, t.Logits, row.KLJoint, row.KLMarginal, row.KLConditional)
	px := p.PxWeight
	if t.Job.Method == MethodBaseline {
		px = 0
	}
	p.SetColumns(&row, px)
	l := Learned{RunID: t.Job.RunID, PointID: p.ID, TableID: d.Table.ID, Ordinal: d.Table.Ordinal,
		Method: t.Job.Method, X: x, K: k, Logits: t.Logits, Q: q, P: truth, Buffer: t.Run.Buffer, Curve: t.Run.Curve}
	if p.Is2D() {
		l.G, l.Box, l.Task = p.GridCells, p.Box, p.Task
	}
	return row, l
}

// promises fills the row's OOD and calibration columns (see schemas.ResultRow): OOD is x
// uniform over its X values, the tables' analogue of the paper's uniform noise.
func promises(r *schemas.ResultRow, refs *tableRefs, truth, q []float64) {
	x, k := refs.fam.X, refs.fam.K
	logQx, maxQy := prob.OODScores(q, x, k)
	r.AUROCPx, r.AUROCPy, r.AUROCTruePx = prob.AUROC(logQx, refs.px, refs.uniform), prob.AUROC(maxQy, refs.px, refs.uniform), refs.aurocTruePx
	r.CalibrationErrorTrue = prob.CalibrationError(truth, q, x, k)
	nan := math.NaN()
	r.AUROCPxGrad, r.AccClean, r.AccAttacked, r.AccPurified, r.AccBayesPurified = nan, nan, nan, nan, nan
	r.SamplesTVNoise, r.SamplesTVBuffer, r.ECE = nan, nan, nan
	if !finite(q) { // a diverged run: no classifier to bin
		return
	}
	conf, acc := make([]float64, x), make([]float64, x)
	for i := range x {
		row, qi := truth[i*k:(i+1)*k], q[i*k:(i+1)*k]
		best := slices.Index(qi, slices.Max(qi))
		s, m := 0.0, 0.0
		for _, v := range qi {
			s += v
		}
		for _, v := range row {
			m += v
		}
		conf[i] = qi[best] / s
		if m > 0 {
			acc[i] = row[best] / m
		}
	}
	r.ECE = prob.ECEWeighted(conf, acc, refs.px, ECEBins)
}

// runStatus is the one rule for a run's diverged and nonfinite flags, given whether the
// trainer flagged it (a divergence guard fired) and its logits and KLs: diverged is the
// trainer's flag; nonfinite is a run the trainer did not flag whose logits or KLs are not
// finite (q underflowed to 0 where the truth has mass, or the logits overflowed).
func runStatus(trainer bool, logits []float64, kls ...float64) (diverged, nonfinite bool) {
	return trainer, !trainer && (!finite(logits) || !finite(kls))
}

// leftOut says whether a row is out of the statistics of its method (diverged or
// nonfinite; the verdict counts the nonfinite ones against the method).
func leftOut(r *schemas.ResultRow) bool { return r.Diverged || r.Nonfinite }

func finite(xs []float64) bool {
	for _, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// familyOf is the model family a point trains (see prob.Family): scalar x with the
// linear model is the scalar linear family; one-hot x and MLPs are complete. An MLP
// is complete when its last hidden layer has at least X−1 units (it then interpolates
// any X×K logit table); a narrower one is taken as complete too, and familyNote says
// so in the verdict.
func familyOf(p schemas.Grid) prob.Family {
	return prob.Family{X: p.XValues, K: p.Classes, ScalarLinear: p.Encoding == models.EncodingScalar && p.Model == "linear"}
}

// familyNote warns when familyOf's completeness is an assumption rather than a fact:
// an MLP whose last hidden layer is narrower than X−1.
func familyNote(p schemas.Grid) string {
	hidden, err := models.ParseModel(p.Model)
	if err != nil || len(hidden) == 0 || hidden[len(hidden)-1] >= p.XValues-1 {
		return ""
	}
	return fmt.Sprintf("model %q has a last hidden layer of %d units, fewer than X−1 = %d: the split takes its family as complete, "+
		"so its approximation error (0) may be understated and any shortfall counts as optimisation gap", p.Model, hidden[len(hidden)-1], p.XValues-1)
}

// tableRefs are the parts of the error split and the references that depend only on a
// table, its counts and the model family, not on the run: computed once per table and
// shared by its methods.
type tableRefs struct {
	fam                 prob.Family
	best                prob.Projection // the family's closest member to the truth
	fit                 prob.Projection // the family's maximum-likelihood fit of the counts
	data                []float64       // the empirical table p̂
	ref, refExpected    float64
	marginalRefExpected float64
	px, uniform         []float64 // p(x), and x uniform: the in- and out-of-distribution x
	aurocTruePx         float64   // the OOD ceiling: the AUROC of p(x) as the score
}

func newTableRefs(fam prob.Family, truth []float64, counts []int64, n int64) *tableRefs {
	r := &tableRefs{fam: fam, best: fam.Project(truth), data: prob.Empirical(counts)}
	r.fit = fam.Project(r.data)
	r.ref = prob.KL(truth, fam.Project(prob.Smoothed(counts, prob.SmoothingAdd)).Q)
	if fam.Complete() {
		r.refExpected = prob.ExpectedKLSmoothed(truth, n, prob.SmoothingAdd)
	} else {
		r.refExpected = r.best.KL + fam.ExcessTrace(truth, r.best.Q)/(2*float64(n))
	}
	r.px, r.uniform = prob.Marginal(truth, fam.X, fam.K), prob.Uniform(fam.X)
	r.marginalRefExpected = prob.ExpectedKLSmoothed(r.px, n, prob.SmoothingAdd)
	r.aurocTruePx = prob.AUROC(r.px, r.px, r.uniform)
	return r
}

// splitError fills the error split and the references of a run's row:
//
//	kl_joint = KL(p‖q) = A + O + E,
//	A = min_family KL(p‖·)                     (approximation),
//	O = KL(p̂‖q) − min_family KL(p̂‖·)           (optimisation gap on the run's own data),
//	E = kl_joint − A − O                        (estimation: the rest),
//
// with p̂ the empirical table of the counts (the true table for the oracle, which
// trains on it, so its E is 0). The references are the family's fit r of the add-½
// table on the same counts (kl_reference = KL(p‖r), paired with the run) and its
// expectation over N-draw datasets.
func splitError(row *schemas.ResultRow, refs *tableRefs, truth, q []float64, oracle bool) {
	x, k := refs.fam.X, refs.fam.K
	data, fit := refs.data, refs.fit
	if oracle {
		data, fit = truth, refs.best
	}
	row.KLApproximation = refs.best.KL
	row.KLOptimisationGap = prob.KL(data, q) - fit.KL
	row.KLEstimation = row.KLJoint - row.KLApproximation - row.KLOptimisationGap
	dx := prob.Marginal(data, x, k)
	row.KLMarginalGap = prob.KL(dx, prob.Marginal(q, x, k)) - prob.KL(dx, prob.Marginal(fit.Q, x, k))
	row.KLReference = refs.ref
	row.KLReferenceExpected = refs.refExpected
	row.KLMarginalReferenceExpected = refs.marginalRefExpected
}

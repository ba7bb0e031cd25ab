package plane

import (
	"fmt"
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// # The paper's promises on 2-D tasks
//
// Out-of-distribution detection, calibration, robustness and samples, each measured
// on a 2-D run against the task's Bayes-optimal answer, on held-out draws: HeldOut draws
// of the task (in distribution, labelled with their true class) and HeldOut OOD draws
// (--ood: uniform over the box, the task's draws shifted by half the box along x0, or
// the draws of another task of the same kind). The AUROCs are those of the draws'
// scores; the calibration error has a binned (ECE, 15 bins, on the held-out draws) and
// an exact (on the grid) form; the attack is an L∞ PGD of radius --attack_eps on the
// cross-entropy, and the defence --purify_steps steps of energy descent. Samples are
// long-run Langevin chains of the learned q(x), for the report's runs only.

// HeldOut is the number of held-out draws (and of OOD draws) per task.
const HeldOut = 2000

// Chains of the samples promise: SampleChains Langevin chains (ULA: x ← x + ε∇ log q(x)
// + √(2ε)·N(0, I), ε = SampleStep, clamped to the box) run SampleSteps steps from
// uniform noise (samples_tv_noise) and from the final replay buffer
// (samples_tv_buffer, sgld runs).
const (
	SampleChains = 1000
	SampleSteps  = 500
	SampleStep   = 0.005
)

// FrameSteps are the steps at which the report shows the chains from noise (its strip
// of frames); the last is SampleSteps.
var FrameSteps = []int{0, 25, 100, SampleSteps}

// interleave packs two coordinate slices as (x0, x1) pairs.
func interleave(x0, x1 []float32) []float32 {
	out := make([]float32, 0, 2*len(x0))
	for i := range x0 {
		out = append(out, x0[i], x1[i])
	}
	return out
}

// PGDSteps is the number of steps of the attack.
const PGDSteps = 20

var (
	tagHeldOut = prob.SeedString("held-out")
	tagOOD     = prob.SeedString("ood")
	tagChains  = prob.SeedString("chains")
)

// taskEval is what the promises of a task's runs share: the held-out and OOD draws,
// the truth at them (log p(x) and the Bayes classes), the task's components.
type taskEval struct {
	comps          []prob.Component
	mix            prob.MixtureEval // comps with their normalisers' logs, once
	k              int
	in0, in1       []float32
	inY            []int32
	out0, out1     []float32
	trueIn, trueOu []float64 // log p(x) at the in and out draws
	// The truth at the in draws for the Z-free divergences: the score ∇x log p(x), the
	// class-conditional score ∇x log p(x | y) and log p(x, y), at each draw's own class.
	score0, score1, cond0, cond1, logJoint []float64
}

// newTaskEval draws a task's held-out and OOD draws (seeded by the task; other-task:
// the task of the next ordinal's seed, another draw of the same spec or the next user
// task).
func newTaskEval(runSeed uint64, o tasks.Options, p tasks.Point, t tasks.Table, task, other prob.Task2D) *taskEval {
	e := &taskEval{comps: task.Components(0), k: p.Classes}
	e.mix = prob.NewMixtureEval(e.comps)
	seed := tasks.TableSeed(runSeed, t)
	in := task.Sample(prob.Seed(seed, tagHeldOut), HeldOut)
	e.in0, e.in1, e.inY = f32(in.X0), f32(in.X1), in.Y
	rng := prob.NewRand(prob.Seed(seed, tagOOD))
	e.out0, e.out1 = make([]float32, HeldOut), make([]float32, HeldOut)
	switch o.OOD {
	case tasks.OODShifted:
		d := task.Sample(prob.Seed(seed, tagOOD), HeldOut)
		for i := range HeldOut {
			e.out0[i], e.out1[i] = float32(min(d.X0[i]+p.Box/2, p.Box)), float32(d.X1[i])
		}
	case tasks.OODOtherTask:
		d := other.Sample(prob.Seed(seed, tagOOD), HeldOut)
		e.out0, e.out1 = f32(d.X0), f32(d.X1)
	default:
		for i := range HeldOut {
			e.out0[i], e.out1[i] = float32(p.Box*(2*rng.Float64()-1)), float32(p.Box*(2*rng.Float64()-1))
		}
	}
	e.trueIn, e.trueOu = e.logPx(e.in0, e.in1), e.logPx(e.out0, e.out1)
	n := len(e.in0)
	e.score0, e.score1, e.cond0, e.cond1, e.logJoint = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		x0, x1, y := float64(e.in0[i]), float64(e.in1[i]), int(e.inY[i])
		e.score0[i], e.score1[i] = e.mix.Score(x0, x1, -1)
		e.cond0[i], e.cond1[i] = e.mix.Score(x0, x1, y)
		e.logJoint[i] = e.mix.LogDensity(x0, x1, y)
	}
	return e
}

// zfree2D fills the row's Z-free divergences (prob/zfree.go) of the model theta from the
// truth, over the task's held-out draws (exact draws of p(x, y)).
func zfree2D(row *schemas.ResultRow, hidden []int, k int, theta []float32, e *taskEval) error {
	_, q0, q1, err := kernel.EnergyGrad2D(hidden, k, theta, e.in0, e.in1)
	if err != nil {
		return err
	}
	f, c0, c1, err := kernel.LogitGrad2D(hidden, k, theta, e.in0, e.in1, e.inY)
	if err != nil {
		return err
	}
	kernel.ClearUpper() // scalar code after the model's vector code
	n := len(e.in0)
	fisher, cond, ratio := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		d0, d1 := e.score0[i]-float64(q0[i]), e.score1[i]-float64(q1[i])
		fisher[i] = d0*d0 + d1*d1
		d0, d1 = e.cond0[i]-float64(c0[i]), e.cond1[i]-float64(c1[i])
		cond[i] = d0*d0 + d1*d1
		ratio[i] = e.logJoint[i] - float64(f[i])
	}
	row.FisherDiv, row.FisherDivSE = prob.MeanSE(fisher)
	row.FisherDivCond, row.FisherDivCondSE = prob.MeanSE(cond)
	row.LogRatioSD, row.LogRatioSDSE = prob.SDSE(ratio)
	return nil
}

func f32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, v := range xs {
		out[i] = float32(v)
	}
	return out
}

// logPx is the true log p(x) at the points.
func (e *taskEval) logPx(x0, x1 []float32) []float64 {
	kernel.ClearUpper()
	out := make([]float64, len(x0))
	for i := range x0 {
		kernel.ClearUpper()
		out[i] = e.mix.LogDensity(float64(x0[i]), float64(x1[i]), -1)
	}
	return out
}

// bayes is the Bayes classifier's class at a point.
func (e *taskEval) bayes(x0, x1 float32) int32 {
	best, arg := math.Inf(-1), int32(0)
	for y := range e.k {
		if d := e.mix.LogDensity(float64(x0), float64(x1), y); d > best {
			best, arg = d, int32(y)
		}
	}
	return arg
}

// aurocDraws is the AUROC of a score higher in distribution, from the scores of the
// in- and out-of-distribution draws.
func aurocDraws(in, out []float64) float64 {
	score := append(slices.Clone(in), out...)
	wi, wo := make([]float64, len(score)), make([]float64, len(score))
	for i := range in {
		wi[i] = 1
	}
	for i := range out {
		wo[len(in)+i] = 1
	}
	return prob.AUROC(score, wi, wo)
}

// promises2D fills a 2-D run's promise columns (see schemas.ResultRow) from its
// parameters; sample is set for the report's runs (the samples promise).
func promises2D(row *schemas.ResultRow, o tasks.Options, p tasks.Point, e *taskEval, theta []float32, truth []float64, buffer []float32, measure, sample bool, seed uint64) (frames [][]float32, err error) {
	hidden, _ := models.ParseModel(p.Model)
	k, box := p.Classes, float32(p.Box)
	if err := zfree2D(row, hidden, k, theta, e); err != nil { // cheap (two passes): every task
		return nil, err
	}
	if !measure { // a task past --measure_tasks: its draw-based promise columns are not measured
		nan := math.NaN()
		row.AUROCPx, row.AUROCPy, row.AUROCPxGrad, row.AUROCTruePx = nan, nan, nan, nan
		row.ECE, row.AccClean, row.AccAttacked, row.AccPurified, row.AccBayesPurified = nan, nan, nan, nan, nan
		return samples2D(row, p, theta, truth, buffer, sample, seed)
	}
	scores := func(x0, x1 []float32) (lse, maxPy, gradNorm []float64, pred []int32, err error) {
		lg, err := kernel.Logits2D(hidden, k, theta, x0, x1)
		if err != nil {
			return
		}
		l, g0, g1, err := kernel.EnergyGrad2D(hidden, k, theta, x0, x1)
		if err != nil {
			return
		}
		n := len(x0)
		lse, maxPy, gradNorm, pred = make([]float64, n), make([]float64, n), make([]float64, n), make([]int32, n)
		for i := range n {
			f := lg[i*k : (i+1)*k]
			lse[i] = float64(l[i])
			m := slices.Max(f)
			arg := int32(slices.Index(f, m))
			s := 0.0
			for _, v := range f {
				s += math.Exp(float64(v - m))
			}
			maxPy[i], pred[i] = 1/s, arg
			gradNorm[i] = -math.Hypot(float64(g0[i]), float64(g1[i]))
		}
		return
	}
	lseIn, confIn, gnIn, predIn, err := scores(e.in0, e.in1)
	if err != nil {
		return nil, err
	}
	lseOut, confOut, gnOut, _, err := scores(e.out0, e.out1)
	if err != nil {
		return nil, err
	}
	row.AUROCPx, row.AUROCPy, row.AUROCPxGrad = aurocDraws(lseIn, lseOut), aurocDraws(confIn, confOut), aurocDraws(gnIn, gnOut)
	row.AUROCTruePx = aurocDraws(e.trueIn, e.trueOu)
	correct := make([]bool, len(predIn))
	for i := range predIn {
		correct[i] = predIn[i] == e.inY[i]
	}
	row.ECE = prob.ECE(confIn, correct, tasks.ECEBins)
	row.AccClean = share(correct)
	ax0, ax1, err := kernel.PGD2D(hidden, k, theta, e.in0, e.in1, e.inY, float32(o.AttackEps), PGDSteps, box)
	if err != nil {
		return nil, err
	}
	row.AccAttacked = accuracyAt(hidden, k, theta, ax0, ax1, e.inY)
	px0, px1, err := kernel.Purify2D(hidden, k, theta, ax0, ax1, o.PurifySteps, float32(o.PurifyLR), box)
	if err != nil {
		return nil, err
	}
	row.AccPurified = accuracyAt(hidden, k, theta, px0, px1, e.inY)
	bayes := make([]bool, len(px0))
	for i := range px0 {
		kernel.ClearUpper()
		bayes[i] = e.bayes(px0[i], px1[i]) == e.inY[i]
	}
	row.AccBayesPurified = share(bayes)
	return samples2D(row, p, theta, truth, buffer, sample, seed)
}

// samples2D fills the samples promise's columns of a report's run (sample): the
// frames of chains from noise and the TVs of chains from noise and from the buffer;
// NaN for the other runs.
func samples2D(row *schemas.ResultRow, p tasks.Point, theta []float32, truth []float64, buffer []float32, sample bool, seed uint64) (frames [][]float32, err error) {
	hidden, _ := models.ParseModel(p.Model)
	k, box := p.Classes, float32(p.Box)
	row.SamplesTVNoise, row.SamplesTVBuffer = math.NaN(), math.NaN()
	if sample {
		g := evalGrid(p)
		rng := prob.NewRand(prob.Seed(seed, tagChains))
		x0, x1 := make([]float32, SampleChains), make([]float32, SampleChains)
		for i := range x0 {
			x0[i], x1[i] = float32(p.Box*(2*rng.Float64()-1)), float32(p.Box*(2*rng.Float64()-1))
		}
		std := float32(math.Sqrt(2 * SampleStep))
		// The frames of the chains from noise: chain i's noise depends on (seed, i) only,
		// so a run of t steps is the first t steps of the full run.
		for _, t := range FrameSteps {
			c0, c1, err := kernel.Chains2D(hidden, k, theta, x0, x1, t, SampleStep, std, prob.Seed(seed, tagChains, 1), box)
			if err != nil {
				return nil, err
			}
			frames = append(frames, interleave(c0, c1))
			if t == SampleSteps {
				row.SamplesTVNoise = chainsTV(g, c0, c1, truth, k)
			}
		}
		if len(buffer) >= 2 {
			n := min(SampleChains, len(buffer)/2)
			b0, b1 := make([]float32, n), make([]float32, n)
			stride := len(buffer) / 2 / n
			for i := range n {
				b0[i], b1[i] = buffer[2*i*stride], buffer[2*i*stride+1]
			}
			c0, c1, err := kernel.Chains2D(hidden, k, theta, b0, b1, SampleSteps, SampleStep, std, prob.Seed(seed, tagChains, 2), box)
			if err != nil {
				return nil, err
			}
			row.SamplesTVBuffer = chainsTV(g, c0, c1, truth, k)
		}
	}
	return frames, nil
}

// chainsTV is the total-variation distance of chains' end points from the true p(x), on
// the pooled grid of bufferTV2D.
func chainsTV(g prob.Grid, x0, x1 []float32, truth []float64, k int) float64 {
	tv, _ := bufferTV2D(g, k, interleave(x0, x1), truth, make([]float64, len(truth)))
	return tv
}

func share(b []bool) float64 {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return float64(n) / float64(max(1, len(b)))
}

// accuracyAt is the share of points whose argmax_y f(x)[y] is their label.
func accuracyAt(hidden []int, k int, theta, x0, x1 []float32, y []int32) float64 {
	lg, err := kernel.Logits2D(hidden, k, theta, x0, x1)
	if err != nil {
		return math.NaN()
	}
	n := 0
	for i := range y {
		f := lg[i*k : (i+1)*k]
		if int32(slices.Index(f, slices.Max(f))) == y[i] {
			n++
		}
	}
	return float64(n) / float64(max(1, len(y)))
}

// checkPromisePoint checks the promises' options against a 2-D point: the attack's
// radius must fit the box (PGD clamps to it, so a wider radius reaches no further),
// and --ood=other-task needs another task that is not the task itself: moons and
// circles have one shape per σ (another draw is the same distribution), and a tasks
// file of one task has no other.
func checkPromisePoint(o tasks.Options, p tasks.Point) error {
	if o.AttackEps > 2*p.Box {
		return fmt.Errorf("attack_eps: a radius of %v is wider than the box [−%g, %g]² itself (PGD keeps the points in the box; at most 2·box = %g)",
			o.AttackEps, p.Box, p.Box, 2*p.Box)
	}
	if o.OOD != tasks.OODOtherTask {
		return nil
	}
	if p.Task == tasks.TaskFile {
		if p.Tables < 2 {
			return fmt.Errorf("ood: other-task takes the OOD draws from the next task of --tasks_from, which holds one task: " +
				"the OOD draws would be the task's own (use --ood=uniform or shifted, or a file of two tasks or more)")
		}
		return nil
	}
	if spec, err := prob.ParseTaskSpec(p.Task); err == nil && spec.Kind != "gmm" {
		return fmt.Errorf("ood: other-task takes the OOD draws from another task of %s, but %s has one shape for each SIGMA: "+
			"the OOD draws would be in-distribution (use --ood=uniform or shifted, or a gmm task)", p.Task, spec.Kind)
	}
	return nil
}

package blocks

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/tasks"
)

// Evaluation from logits at fixed points (issue 22, item 3): any model of a block task
// (the joint MLP, the additive model, a user's own) is measured from its logits f(x)[y]
// at a task's evaluation points alone.
//
// The truth at the points is the grid truth read as a density on ℝ^D (D = 2B): uniform
// within each cell, p(x, y) = π(y)·Π_b P_b(c_b(x)|y)/h^D, h the cell width and c_b(x)
// block b's cell of x (0 outside the box). The model is normalised on the box,
// q(x, y) = exp f(x)[y]/Z, Z = ∫_box Σ_y exp f. The points are
//
//   - rows 0..M−1: the task's MCDraws exact draws of the grid truth (the cells and classes
//     the additive model's Monte Carlo KLs use) each placed uniformly within its cells:
//     exact draws of p(x, y);
//   - rows M..M+N−1: ISDraws draws of the defensive mixture r = α·p_ε + (1−α)·u,
//     α = evalTruthShare(B), u uniform on the box: the first ⌈αN⌉ draws of the block-defensive
//     truth p_ε (exact draws of p, cells then uniform within, each block then replaced by
//     a uniform draw on its box with probability ε = prob.BlockDefensiveShare(B); the
//     reason is in models/prob/importance_blocks.go), the rest uniform (deterministic
//     mixture sampling, every weight with r's density).
//
// EvaluateLogits estimates from them
//
//	log Ẑ = log mean_j Σ_y exp f(x_j)[y]/r(x_j)                       (prob.ImportanceLogZ)
//	kl_joint_is    = mean_i [log p(x_i, y_i) − f(x_i)[y_i]] + log Ẑ
//	kl_marginal    = mean_i [log p(x_i) − LSE_y f(x_i)] + log Ẑ
//	kl_conditional = mean_i KL(p(·|x_i) ‖ softmax f(x_i))
//
// and the accuracy of argmax_y f against p(y|x_i). The standard errors combine the Monte
// Carlo SE of the mean and the SE of log Ẑ (independent draws: SE² = SE_mean² + SE_Z²,
// the delta method for log Ẑ). The KLs that need Z are NaN (refused) where the
// importance estimate is refused (prob.ImportanceLogZ: ESS below prob.MinESS, or the
// weights' Pareto k̂ above prob.MaxParetoK, where their variance is infinite and no SE
// is honest; IS.Reason says which).
//
// This continuous reading is not the grid KL of the additive model's exact path: by
// Jensen KL(p‖q) on ℝ^D is the grid KL plus E_p[log mean_cell exp f − mean_cell f] ≥ 0,
// the model's variation within the cells (exactKLContinuous computes it for the
// additive model).

// NumEvalPoints is the number of evaluation points of a task: MCDraws exact draws of the
// truth, then ISDraws draws of the importance proposal.
const NumEvalPoints = MCDraws + ISDraws

var tagWithin = prob.SeedString("within")

// EvalSet is a task's evaluation points with the truth there.
type EvalSet struct {
	Dim, K int
	M      int       // rows 0..M−1: exact draws of the truth
	N      int       // rows M..M+N−1: draws of the importance proposal r
	NT     int       // of the proposal draws, the first NT are its truth component, the rest uniform
	X      []float64 // (M+N)×Dim, row-major: row i's coordinate c at X[i·Dim + c]
	// Truth are the truth draws' cells and classes (Truth.Y: the classes of rows 0..M−1),
	// with log p(c) and p(y|c) on the grid (Truth.LogPx, Truth.Post).
	Truth prob.BlocksDraws
	// LogVol is log h^D: log p(x, y) = log p(c, y) − LogVol for x within the cells c.
	LogVol float64
	LogR   []float64 // N: log r(x) of the proposal draws
}

// Y is the class of truth draw i (rows 0..M−1).
func (s EvalSet) Y() []int32 { return s.Truth.Y }

// EvalPoints is the evaluation set of task ordinal of point p (a resolved, valid block
// point) under the run seed: a function of (run seed, task) only, the same for every
// method and every run of the task.
func EvalPoints(runSeed uint64, p tasks.Point, ordinal int64) (EvalSet, error) {
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return EvalSet{}, err
	}
	return EvalPointsEps(runSeed, p, ordinal, prob.BlockDefensiveShare(spec.B))
}

// EvalPointsEps is EvalPoints with the proposal's per-block uniform share ε given
// (ε = 0: the proposal ½·p + ½·u of the earlier versions, the same points).
func EvalPointsEps(runSeed uint64, p tasks.Point, ordinal int64, eps float64) (EvalSet, error) {
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		return EvalSet{}, err
	}
	t := tasks.Table{Point: p, Ordinal: ordinal}
	tableSeed := tasks.TableSeed(runSeed, t)
	task := spec.Draw(tableSeed)
	g := evalGrid(p)
	kernel.ClearUpper()
	for b, bt := range task.Blocks {
		if m := bt.BoxMass(g); !(m > 0) {
			return EvalSet{}, fmt.Errorf("task %d block %d: the box holds none of its mass", ordinal, b)
		}
	}
	return evalSetEps(task.Truth(g), tableSeed, eps), nil
}

// evalSet draws a task's evaluation points from its grid truth and table seed.
func evalSet(truth prob.BlocksTruth, tableSeed uint64) EvalSet {
	return evalSetEps(truth, tableSeed, prob.BlockDefensiveShare(truth.B()))
}

// evalSetEps is evalSet with the per-block uniform share ε given.
func evalSetEps(truth prob.BlocksTruth, tableSeed uint64, eps float64) EvalSet {
	g, B, K := truth.Grid, truth.B(), truth.K
	d := 2 * B
	alpha := evalTruthShare(B)
	s := EvalSet{Dim: d, K: K, M: MCDraws, N: ISDraws, NT: int(math.Ceil(alpha * ISDraws)),
		LogVol: float64(d) * math.Log(g.Step())}
	s.X = make([]float64, (s.M+s.N)*d)
	s.Truth = truth.Draw(prob.Seed(tableSeed, tagMC), s.M)
	within(g, s.Truth, s.X[:s.M*d], prob.NewRand(prob.Seed(tableSeed, tagMC, tagWithin)))
	isSeed := prob.Seed(tableSeed, tagEvalIS)
	prop := truth.Draw(isSeed, s.NT)
	rng := prob.NewRand(prob.Seed(isSeed, tagWithin))
	xp := s.X[s.M*d:]
	within(g, prop, xp[:s.NT*d], rng)
	for i := s.NT * d; i < len(xp); i++ {
		xp[i] = (2*rng.Float64() - 1) * g.Box
	}
	// The truth component made defensive block by block (prob.BlockDefensiveShare): each
	// block of a truth draw uniform on its box with probability ε, from a stream of its
	// own (three numbers a block whatever ε).
	brng := prob.NewRand(prob.Seed(isSeed, tagBlockUniform))
	for j := range s.NT {
		for b := range B {
			u, u0, u1 := brng.Float64(), brng.Float64(), brng.Float64()
			if u < eps {
				xp[j*d+2*b], xp[j*d+2*b+1] = (2*u0-1)*g.Box, (2*u1-1)*g.Box
			}
		}
	}
	s.LogR = make([]float64, s.N)
	cells := make([]int, B)
	lr := make([]float64, K)
	kernel.ClearUpper()
	for j := range s.N {
		x := xp[j*d : (j+1)*d]
		for b := range B {
			cells[b] = g.Cell(x[2*b], x[2*b+1])
		}
		s.LogR[j] = proposalLogDensity(truth, cells, alpha, eps, lr)
	}
	return s
}

var tagBlockUniform = prob.SeedString("block-uniform")

// evalTruthShare is α, the evaluation points' share of the block-defensive truth in
// their proposal: ISShare (½) up to B = 4, 0.9 above. The uniform on the box^D is what
// estimates a model far from the truth at low D (a flat model, a baseline at D ≤ 8:
// ESS in the tens to hundreds); above D = 8 its draws carry no weight for any model
// whose estimate is not refused anyway (D = 32: baseline and sgld ESS 1–97 either way),
// and moving them to p_ε doubles the ESS of the models near the truth (measured at
// B = 16 on 20 exact-JEM models, scripts/iscover).
func evalTruthShare(B int) float64 {
	if B <= 4 {
		return ISShare
	}
	return 0.9
}

// proposalLogDensity is log r(x) of the evaluation points' proposal at a point of the
// box in cells c (one a block): r = α·p_ε + (1−α)·u, p_ε(x) = Σ_y π(y) Π_b [(1−ε)·
// P_b(c_b|y)/h² + ε/(2·box)²] the block-defensive grid truth (prob.BlockDefensiveShare)
// and u uniform on the box^D (lr: scratch of K).
func proposalLogDensity(truth prob.BlocksTruth, cells []int, alpha, eps float64, lr []float64) float64 {
	g, k, B := truth.Grid, truth.K, truth.B()
	logA := 2 * math.Log(2*g.Box)
	l1, le := math.Log1p(-eps)-math.Log(g.CellArea()), math.Log(eps)-logA
	for y := range k {
		v := math.Log(truth.Prior[y])
		for b, c := range truth.Cond {
			lb := l1 + math.Log(c[cells[b]*k+y])
			if eps > 0 {
				lb = prob.LogSumExp([]float64{lb, le})
			}
			v += lb
		}
		lr[y] = v
	}
	return prob.LogSumExp([]float64{math.Log(alpha) + prob.LogSumExp(lr), math.Log1p(-alpha) - float64(B)*logA})
}

var tagEvalIS = prob.SeedString("eval-is")

// within places every draw's cells uniformly: x [M][2B], block b of draw i uniform in
// cell Cells[i·B + b].
func within(g prob.Grid, d prob.BlocksDraws, x []float64, rng interface{ Float64() float64 }) {
	h := g.Step()
	for i := range d.M {
		for b := range d.B {
			c := int(d.Cells[i*d.B+b])
			x[(i*d.B+b)*2] = -g.Box + (float64(c/g.G)+rng.Float64())*h
			x[(i*d.B+b)*2+1] = -g.Box + (float64(c%g.G)+rng.Float64())*h
		}
	}
}

// ZFreeDraws are the truth draws (the first rows of the evaluation set) the log-ratio
// spread of a block run is taken over.
const ZFreeDraws = 2000

// LogRatioSpread is the Z-free log-ratio spread sd_p[log p(x, y) − f(x)[y]] (see
// prob/zfree.go) and its standard error over the first n truth draws of the set (n ≤ M),
// from f at them, logits [n][K] (row i's class y at i·K + y): log p(x, y) is the grid
// truth's density, log p(c, y) − LogVol for x in the cells c. The truth of a block task
// is that piecewise-constant density, which has no score: the Fisher divergences do not
// apply to block tasks.
func (s EvalSet) LogRatioSpread(logits []float64, n int) (sd, se float64) {
	k := s.K
	if n > s.M || len(logits) < n*k {
		return math.NaN(), math.NaN()
	}
	r := make([]float64, n)
	for i := range n {
		y := int(s.Truth.Y[i])
		r[i] = s.Truth.LogPx[i] + math.Log(s.Truth.Post[i*k+y]) - s.LogVol - logits[i*k+y]
	}
	return prob.SDSE(r)
}

// LogitsEval is a model's measures from its logits at a task's evaluation points.
type LogitsEval struct {
	// MC is the Monte Carlo part over the truth draws, without log Z: MC.Joint is
	// mean [log p(x, y) − f(x)[y]] (the density on ℝ^D), MC.Marginal mean [log p(x) −
	// LSE_y f(x)], with their SEs; MC.Conditional, MC.Accuracy, MC.Bayes as named.
	MC prob.BlocksMC
	IS prob.ISEstimate // log Ẑ on the box by importance sampling
	// KLJoint and KLMarginal are the MC means plus log Ẑ, their SEs combined (NaN
	// where the estimate is refused).
	KLJoint, KLJointSE       float64
	KLMarginal, KLMarginalSE float64
}

// Refused reports whether the importance estimate of log Z is too poor to decide on.
func (e LogitsEval) Refused() bool { return e.IS.Refused() }

// WithLogZ is e with an exactly known log Z (on the box, per unit volume) in place of
// the estimate: the KLs carry the Monte Carlo SE only.
func (e LogitsEval) WithLogZ(logZ float64) LogitsEval {
	e.KLJoint, e.KLJointSE = e.MC.Joint+logZ, e.MC.JointSE
	e.KLMarginal, e.KLMarginalSE = e.MC.Marginal+logZ, e.MC.MarginalSE
	return e
}

// EvaluateLogits measures a model from its logits at the evaluation points, [M+N][K]
// row-major (point i's class y at i·K + y).
func EvaluateLogits(s EvalSet, logits []float64) (LogitsEval, error) {
	k := s.K
	if len(logits) != (s.M+s.N)*k {
		return LogitsEval{}, fmt.Errorf("blocks: %d logits, want %d points × %d classes", len(logits), s.M+s.N, k)
	}
	lse := kernel.RowLSE(logits[s.M*k:], k)
	lw := make([]float64, s.N)
	for j, v := range lse {
		lw[j] = v - s.LogR[j]
		if math.IsNaN(lw[j]) {
			lw[j] = math.Inf(1) // a NaN logit refuses the estimate (ImportanceLogZ of +Inf: not finite)
		}
	}
	e := LogitsEval{IS: prob.ImportanceLogZ(lw)}
	// log q(x, y) = f − log Z and log p(x, y) = log p(c, y) − LogVol: the draws' cell
	// measures with log Z shifted by the cell volume.
	e.MC = s.Truth.EvaluateRows(func(i int, f []float64) { copy(f, logits[i*k:(i+1)*k]) }, -s.LogVol)
	nan := math.NaN()
	e.KLJoint, e.KLJointSE, e.KLMarginal, e.KLMarginalSE = nan, nan, nan, nan
	if !e.Refused() {
		e = e.WithLogZ(e.IS.LogZ)
		e.KLJointSE = math.Hypot(e.MC.JointSE, e.IS.SE)
		e.KLMarginalSE = math.Hypot(e.MC.MarginalSE, e.IS.SE)
	}
	return e, nil
}

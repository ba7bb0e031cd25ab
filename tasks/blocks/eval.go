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
// and the accuracy of argmax_y f against p(y|x_i). Where the model's parameters are at
// hand (the joint MLP, jem's additive reference on a joint point: Evaluate), log Ẑ is
// AdaptedLogZ's instead, from a proposal adapted to the model itself: the truth
// proposal r above can only weigh a model near the truth (at D = 32 it refused 27 of 28
// trained runs of 7 recipes, 4 tasks, 600 steps), while a trained joint MLP's mass
// spreads far from the data over the box. The row's is_proposal says which was used.
// The standard errors combine the Monte
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
	// Alpha and Eps are the proposal's truth share α and per-block uniform share ε.
	Alpha, Eps float64
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
		LogVol: float64(d) * math.Log(g.Step()), Alpha: alpha, Eps: eps}
	s.X = make([]float64, (s.M+s.N)*d)
	s.Truth = truth.Draw(prob.Seed(tableSeed, tagMC), s.M)
	within(g, s.Truth, s.X[:s.M*d], prob.NewRand(prob.Seed(tableSeed, tagMC, tagWithin)))
	xp := s.X[s.M*d:]
	proposalDraws(truth, prob.Seed(tableSeed, tagEvalIS), s.NT, eps, xp)
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

// proposalDraws fills xp [n][2B] with draws of the proposal r = α·p_ε + (1−α)·u of
// seed isSeed: the first nt of the block-defensive grid truth p_ε (exact draws of the
// truth's cells and classes, placed uniformly within the cells, each block then
// uniform on its box with probability ε), the rest uniform on the box.
func proposalDraws(truth prob.BlocksTruth, isSeed uint64, nt int, eps float64, xp []float64) {
	g, B := truth.Grid, truth.B()
	d := 2 * B
	prop := truth.Draw(isSeed, nt)
	rng := prob.NewRand(prob.Seed(isSeed, tagWithin))
	within(g, prop, xp[:nt*d], rng)
	for i := nt * d; i < len(xp); i++ {
		xp[i] = (2*rng.Float64() - 1) * g.Box
	}
	// The truth component made defensive block by block (prob.BlockDefensiveShare): each
	// block of a truth draw uniform on its box with probability ε, from a stream of its
	// own (three numbers a block whatever ε).
	brng := prob.NewRand(prob.Seed(isSeed, tagBlockUniform))
	for j := range nt {
		for b := range B {
			u, u0, u1 := brng.Float64(), brng.Float64(), brng.Float64()
			if u < eps {
				xp[j*d+2*b], xp[j*d+2*b+1] = (2*u0-1)*g.Box, (2*u1-1)*g.Box
			}
		}
	}
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
// row-major (point i's class y at i·K + y), log Z estimated from the truth proposal's
// draws alone.
func EvaluateLogits(s EvalSet, logits []float64) (LogitsEval, error) {
	return EvaluateLogitsWith(s, logits, nil)
}

// EvaluateLogitsWith is EvaluateLogits with a given estimate of log Z (is, e.g.
// AdaptedLogZ's) in place of the truth proposal's (is nil).
func EvaluateLogitsWith(s EvalSet, logits []float64, is *prob.ISEstimate) (LogitsEval, error) {
	k := s.K
	if len(logits) != (s.M+s.N)*k {
		return LogitsEval{}, fmt.Errorf("blocks: %d logits, want %d points × %d classes", len(logits), s.M+s.N, k)
	}
	var e LogitsEval
	if is != nil {
		e.IS = *is
	} else {
		e.IS = prob.ImportanceLogZ(s.truthLogWeights(kernel.RowLSE(logits[s.M*k:], k)))
	}
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

// truthLogWeights are the log weights LSE_y f − log r of the truth proposal's N draws
// from the model's LSE there (a NaN becomes +Inf: it refuses the estimate, log Ẑ not
// finite).
func (s EvalSet) truthLogWeights(lse []float64) []float64 {
	lw := make([]float64, s.N)
	for j, v := range lse {
		lw[j] = v - s.LogR[j]
		if math.IsNaN(lw[j]) {
			lw[j] = math.Inf(1)
		}
	}
	return lw
}

// Proposal names for the is_proposal column (schemas.ResultRow.ISProposal).
const (
	ProposalTruth   = "truth"
	ProposalAdapted = "adapted"
)

var (
	tagAdaptChains = prob.SeedString("adapt-chains")
	tagAdaptFit    = prob.SeedString("adapt-fit")
	tagAdaptDraws  = prob.SeedString("adapt-draws")
)

// AdaptedLogZ estimates a model's log Z on the box by importance sampling from a
// proposal adapted to the model (models/prob/importance_adapted.go): o.Chains
// random-walk Metropolis chains on the model's ℓ = LSE_y f started from the set's first
// truth draws (prob.MetropolisChains, seed Seed(seed, "adapt-chains")), o.Keep states
// a chain fitted by a mixture g with the model's own q(y|x) as class weights (fitAdapted:
// block histograms prob.FitBlockHistogram, block Gaussian mixtures prob.FitBlockMixture,
// class-wise full Gaussians prob.FitGaussClasses, in o's shares, the block parts with
// the set's per-block uniform share Eps), then N fresh draws of g (seed
// Seed(seed, "adapt-draws"), independent of the chains) pooled with the set's N truth
// proposal draws r₀, every weight LSE_y f(x)/r(x) with r = ½·g + ½·r₀ (deterministic
// mixture sampling: unbiased for any g). lse0 is the model's LSE_y f at the set's
// proposal draws (rows M..M+N−1), logits(x, n) the model's logits [n][K] at n points
// x [n][Dim]; truth is the set's grid truth (r₀'s density). The estimate and its
// refusal are prob.ImportanceLogZ's.
func (s EvalSet) AdaptedLogZ(seed uint64, truth prob.BlocksTruth, o prob.AdaptOptions, lse0 []float64,
	logits func(x []float64, n int) ([]float64, error)) (prob.ISEstimate, error) {
	lw, err := s.adaptedLogWeights(seed, truth, o, lse0, logits)
	if err != nil {
		return prob.ISEstimate{}, err
	}
	return prob.ImportanceLogZ(lw), nil
}

// adaptedLogWeights are AdaptedLogZ's log weights: the N truth proposal draws', then
// the N mixture draws'.
func (s EvalSet) adaptedLogWeights(seed uint64, truth prob.BlocksTruth, o prob.AdaptOptions, lse0 []float64,
	logits func(x []float64, n int) ([]float64, error)) ([]float64, error) {
	d, k, B, box := s.Dim, s.K, truth.B(), truth.Grid.Box
	if len(lse0) != s.N || truth.K != k || 2*B != d || o.Chains > s.M || o.Chains < 1 {
		return nil, fmt.Errorf("blocks: AdaptedLogZ: %d LSEs for %d proposal draws, K %d and %d, dimension %d and %d, %d chains of %d truth draws",
			len(lse0), s.N, truth.K, k, 2*B, d, o.Chains, s.M)
	}
	var lerr error
	lse := func(x []float64, n int) []float64 {
		l, err := logits(x, n)
		if err != nil {
			lerr = err
			return make([]float64, n)
		}
		return kernel.RowLSE(l, k)
	}
	states := prob.MetropolisChains(prob.Seed(seed, tagAdaptChains), d, box, s.X[:o.Chains*d], o.Steps, o.Keep, lse)
	if lerr != nil {
		return nil, lerr
	}
	n := len(states) / d
	l, err := logits(states, n)
	if err != nil {
		return nil, err
	}
	resp := make([]float64, n*k)
	kernel.ClearUpper()
	for i := range n {
		row := l[i*k : (i+1)*k]
		m := prob.LogSumExp(row)
		for y, v := range row {
			resp[i*k+y] = math.Exp(v - m)
		}
		if math.IsNaN(m) || math.IsInf(m, 0) { // a non-finite state: no class weight
			clear(resp[i*k : (i+1)*k])
		}
	}
	kernel.ClearUpper() // after the model's vector code: see package avx
	g, err := fitAdapted(prob.Seed(seed, tagAdaptFit), states, resp, n, B, k, s.Eps, box, o, logits)
	if err != nil {
		return nil, err
	}
	xg := g.Sample(prob.Seed(seed, tagAdaptDraws), s.N)
	lseG := lse(xg, s.N)
	if lerr != nil {
		return nil, lerr
	}
	kernel.ClearUpper()
	lw := make([]float64, 0, 2*s.N)
	l2 := math.Log(0.5)
	xp := s.X[s.M*d:]
	for j, v := range lse0 { // the truth proposal's draws, all inside the box
		if j%256 == 0 {
			kernel.ClearUpper()
		}
		lr := prob.LogSumExp([]float64{l2 + s.LogR[j], l2 + g.LogDensity(xp[j*d:(j+1)*d])})
		lw = append(lw, nanInf(v-lr))
	}
	cells := make([]int, B)
	lr0 := make([]float64, k)
	for j, v := range lseG {
		if j%256 == 0 {
			kernel.ClearUpper()
		}
		x := xg[j*d : (j+1)*d]
		if !inBox(x, box) { // the integrand is 0 outside the box
			lw = append(lw, math.Inf(-1))
			continue
		}
		for b := range B {
			cells[b] = truth.Grid.Cell(x[2*b], x[2*b+1])
		}
		lr := prob.LogSumExp([]float64{l2 + proposalLogDensity(truth, cells, s.Alpha, s.Eps, lr0), l2 + g.LogDensity(x)})
		lw = append(lw, nanInf(v-lr))
	}
	return lw, nil
}

// nanInf is v, with NaN read as +Inf (a NaN logit refuses the estimate: log Ẑ not
// finite).
func nanInf(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
}

// adapted is the fitted proposal of AdaptedLogZ: g = Σ_j f_j·g_j over its parts (the
// block histogram, the block Gaussian mixture, the class-wise full Gaussians), the
// shares f_j those of the options.
type adapted struct {
	parts  []density
	shares []float64
}

// density is a proposal part: its draws and its log density.
type density interface {
	Sample(seed uint64, n int) []float64
	LogDensity(x []float64) float64
}

// fitAdapted fits the parts of the adapted proposal with a positive share to the
// chains' states (states [keep][o.Chains][2B], their class responsibilities resp), the
// conditional histogram from the model's logits at the last states of o.CondAnchors
// of the chains.
func fitAdapted(seed uint64, states, resp []float64, n, B, k int, eps, box float64, o prob.AdaptOptions,
	logits func(x []float64, n int) ([]float64, error)) (adapted, error) {
	var g adapted
	full := o.FullShare
	mix := 1 - o.HistShare - o.FullShare - o.CondShare
	if o.CondShare > 0 {
		a, na := anchors(states, o.Chains, 2*B, o.CondAnchors)
		w := make([]float64, k) // the class weights of every state, not of the few anchors
		for i, r := range resp {
			w[i%k] += r
		}
		h, err := prob.FitConditionalHistogram(a, na, B, k, o.CondCells, eps, box, w, logits)
		if err != nil {
			return g, err
		}
		g.parts, g.shares = append(g.parts, h), append(g.shares, o.CondShare)
	}
	if o.HistShare > 0 {
		h, err := prob.FitBlockHistogram(states, resp, n, B, k, o.HistCells, eps, box)
		if err != nil {
			return g, err
		}
		g.parts, g.shares = append(g.parts, h), append(g.shares, o.HistShare)
	}
	if mix > 1e-12 {
		xs, rs, ns := strided(states, resp, n, 2*B, k, maxEMStates)
		m, err := prob.FitBlockMixture(seed, xs, rs, ns, B, k, o.Comps, eps, box, o.Inflate)
		if err != nil {
			return g, err
		}
		g.parts, g.shares = append(g.parts, m), append(g.shares, mix)
	}
	if full > 0 {
		f, err := prob.FitGaussClasses(states, resp, n, 2*B, k, box, o.Inflate)
		if err != nil {
			return g, err
		}
		g.parts, g.shares = append(g.parts, f), append(g.shares, full)
	}
	if len(g.parts) == 0 {
		return g, fmt.Errorf("blocks: adapted proposal: no part has a positive share (%+v)", o)
	}
	return g, nil
}

// anchors are the last states of most evenly spaced of the chains (states [keep][chains][d],
// the last kept step last), and their number.
func anchors(states []float64, chains, d, most int) ([]float64, int) {
	last := states[len(states)-chains*d:]
	a := min(chains, max(1, most))
	out := make([]float64, 0, a*d)
	for i := range a {
		c := i * chains / a
		out = append(out, last[c*d:(c+1)*d]...)
	}
	return out, a
}

// counts are the draws of each part among n: ⌊f_j·n⌉, the last part the rest; draw
// sets the shares to them (deterministic mixture sampling: every weight with g's
// density at the shares drawn).
func (g *adapted) counts(n int) []int {
	c := make([]int, len(g.parts))
	left := n
	for j := range c {
		c[j] = min(left, int(math.Round(g.shares[j]*float64(n))))
		if j == len(c)-1 {
			c[j] = left
		}
		left -= c[j]
	}
	for j := range c {
		g.shares[j] = float64(c[j]) / float64(n)
	}
	return c
}

// Sample draws n points of g (parts in order, counts(n) of each) and sets the shares
// to the counts drawn.
func (g *adapted) Sample(seed uint64, n int) []float64 {
	var x []float64
	for j, c := range g.counts(n) {
		if c > 0 {
			x = append(x, g.parts[j].Sample(prob.Seed(seed, uint64(j)), c)...)
		}
	}
	return x
}

// LogDensity is log g at one point.
func (g *adapted) LogDensity(x []float64) float64 {
	l := make([]float64, 0, len(g.parts))
	for j, p := range g.parts {
		if g.shares[j] > 0 {
			l = append(l, math.Log(g.shares[j])+p.LogDensity(x))
		}
	}
	return prob.LogSumExp(l)
}

// inBox reports whether every coordinate of x is in [−box, box].
func inBox(x []float64, box float64) bool {
	for _, v := range x {
		if v < -box || v > box {
			return false
		}
	}
	return true
}

// maxEMStates is the most chain states the block Gaussian mixtures' EM is fitted to
// (every ⌈n/maxEMStates⌉-th: the EM costs K·B·C·n exponentials an iteration).
const maxEMStates = 4096

// strided is every ⌈n/most⌉-th of n states x [n][d] with their responsibilities
// resp [n][k], and their number.
func strided(x, resp []float64, n, d, k, most int) ([]float64, []float64, int) {
	step := (n + most - 1) / most
	if step <= 1 {
		return x, resp, n
	}
	var xs, rs []float64
	for i := 0; i < n; i += step {
		xs, rs = append(xs, x[i*d:(i+1)*d]...), append(rs, resp[i*k:(i+1)*k]...)
	}
	return xs, rs, len(rs) / k
}

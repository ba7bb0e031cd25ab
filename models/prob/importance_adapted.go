package prob

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/internal/avx"
)

// # A proposal adapted to the model
//
// The block tasks' truth proposal (BlocksTask.ImportanceLogZ, tasks/blocks.EvalPoints)
// bounds the weights q/r only where the model is near the truth block by block. A
// trained joint MLP is not: Metropolis chains on its ℓ spread from the truth's draws
// (rms coordinate 1.24) to rms 3.4–3.5 on the box [−6, 6]^32 (a uniform's is 3.46;
// nce, dsm and sgld joint models, blocks:16,gmm:3,2, 600 steps), so its weights under
// the truth proposal have ESS 1–10 of 20,000 and the estimate is refused. The adapted
// proposal is built from the model itself, with no knowledge of the truth on its side:
//
//  1. MetropolisChains: random-walk Metropolis chains on the model's own
//     ℓ(x) = LSE_y f(x)[y] inside the box, started from given states (the evaluation
//     set's truth draws: only a starting point);
//  2. a mixture g fitted to the chains' states, each state split over the classes by
//     the model's own q(y|x) = softmax f(x), of four parts with the truth's structure
//     (a class, then independent 2-D blocks) or beyond it: ConditionalHistogram (per
//     class and block the model's own conditionals on a fine grid of the block's box,
//     the other blocks held at a chain state's, averaged over a few such anchors: the
//     block marginals Rao–Blackwellised, exact for a model additive over blocks
//     whatever the chains), BlockHistogram (per class and block a piecewise-constant
//     density from the states' counts: a model spread over the box), BlockMixture (per
//     class and block a Gaussian mixture by weighted EM, in float64: a model near the
//     truth) and GaussClasses (per class a full-covariance Gaussian: correlations
//     across blocks); every block part defensive with a uniform share as the truth
//     proposal's (BlockDefensiveShare) and the Gaussians' covariances inflated, so
//     each block's weight factor stays bounded;
//  3. the estimate: fresh draws of g (a seed of their own, independent of the chains)
//     pooled with the truth proposal's draws, every weight with the mixture density
//     ½·g + ½·r₀ (deterministic mixture sampling, unbiased whatever g is: the chains only
//     choose the proposal, and a poor chain costs ESS, never bias). The refusal rule is
//     ImportanceLogZ's, unchanged.
//
// Tried and dropped (tasks/blocks, blocks:16,gmm:3,2 joint models of nce, dsm, sgld):
// 1,600 chain steps instead of 400 (ESS 2→5, 41→40, 34→36); covariances × 1.6 or × 2
// instead of × 1.2 (no gain, or less ESS); annealed importance sampling from ½·g + ½·r₀
// with 30 or 100 temperatures of 2 random-walk moves (ESS 7–18 of 2,000 chains: the
// moves do not mix in 32 dimensions, so the weights stay g's). The block histogram
// alone (8, 12 or 16 cells a side) gave ESS nce 4–11, dsm 14–109, sgld 62–257 against
// 2, 31 and 48 without it (½ block Gaussian mixtures, ½ full Gaussians).
//
// What the conditional histogram fixed (scripts/iscover, block-additive models of 12
// recipes, 4 tasks of blocks:16 and blocks:32,gmm:3,2, 600 steps, run seed 5, whose log Z
// is exact): the block histogram's weights were heavy-tailed not from the models'
// dependence across blocks but from two errors that compound over the blocks, the
// counts' noise and the model's variation within a cell. The exact class-wise block
// marginals as a histogram (a diagnostic that knows the model is additive) gave k̂ up
// to 0.75 at 16 cells a side, ≤ 0.39 at 32 and ≤ 0.21 at 64 at D = 32; the conditionals
// reach them from the model alone. The adapted estimate's coverage (the 95% interval
// holding the exact log Z; refusals counted as misses) went from 27 of 48 to 46 of 48 at
// D = 32 (32 cells, 16 anchors) and from 4 of 48 to 38 of 48 at D = 64, where the
// remaining refusals were exact jem, drl and dsm, the sharpest models: 64 cells a side
// fixed them (24 of 24 of six recipes with 4 anchors). A few anchors can miss a class,
// so the class weights are every state's mean q(y|x), not the anchors'.
//
// What it did not fix: joint MLPs (joint:64,64 of baseline, sgld, ed, nce, dsm and drl
// on blocks:16,gmm:3,2, 4 tasks, 600 steps) are accepted as before, 5 of 24 (the
// baselines and one sgld); nce, dsm and drl keep ESS 1–45 of 40,000. A mixture over 64
// anchors of products of the model's conditionals at each anchor (each component the
// model linearised around a chain state, block by block), at a share of 0.3, left them
// at ESS 11–21 and sgld and ed at k̂ 0.53–0.80: their mass lies where no product built
// from these chains' states reaches. At D = 8 (blocks:4) the joint MLPs lose a little:
// 15 of 24 accepted against 18 (ed and nce at k̂ 0.52–0.71), the chain-state parts that
// hold their correlations there having half their former share.

// AdaptOptions are the sizes of a model-adapted proposal's construction.
type AdaptOptions struct {
	Chains  int     // random-walk Metropolis chains on the model's ℓ
	Steps   int     // steps per chain
	Keep    int     // states kept per chain, evenly spaced over the second half of the steps
	Comps   int     // Gaussian components per block and class
	Inflate float64 // factor on every fitted covariance
	// FullShare is the share of the class-wise full-covariance Gaussians (GaussClasses)
	// in the fitted proposal.
	FullShare float64
	// HistShare is the share of the block histograms (BlockHistogram, HistCells cells a
	// side).
	HistShare float64
	HistCells int
	// CondShare is the share of the conditional histogram (FitConditionalHistogram,
	// CondCells cells a side, from CondAnchors of the chains' last states); the block
	// mixture's share is what the others leave.
	CondShare   float64
	CondCells   int
	CondAnchors int
}

// DefaultAdapt are the sizes the block tasks use: 1,024 chains of 400 steps (about
// 410,000 model evaluations), 40 states kept a chain; the proposal ½ conditional
// histograms of 64×64 cells from 8 anchors (8·B·4,096 more model evaluations), ¼
// block histograms of 16×16 cells, ⅛ block Gaussian mixtures of 3 components, ⅛
// class-wise full Gaussians, covariances × 1.2 (the histograms' and chains' sizes chosen on
// blocks:16,gmm:3,2 joint models of nce, dsm and sgld: 40 states a chain and 16 cells
// instead of 3 and 12 raised their ESS from 8, 18, 60 to 11, 110, 174; the conditional
// part's on the additive models of the note above).
var DefaultAdapt = AdaptOptions{Chains: 1024, Steps: 400, Keep: 40, Comps: 3, Inflate: 1.2, FullShare: 0.125, HistShare: 0.25, HistCells: 16,
	CondShare: 0.5, CondCells: 64, CondAnchors: 8}

// MetropolisChains runs one random-walk Metropolis chain per start state (start [n][d])
// on exp l(x) restricted to the box [−box, box]^d for steps steps (Gaussian steps whose
// common scale adapts toward a 25% acceptance; proposals outside the box are
// rejected), l(x, n) being l at n points x [n][d]. It returns the chains' states at
// keep steps evenly spaced over the second half, the last at steps: [keep·n][d].
func MetropolisChains(seed uint64, d int, box float64, start []float64, steps, keep int, l func(x []float64, n int) []float64) []float64 {
	n := len(start) / d
	rng := NewRand(seed)
	x := append([]float64(nil), start...)
	for i := range x {
		x[i] = min(box, max(-box, x[i]))
	}
	cur := l(x, n)
	avx.ClearUpper() // see package avx
	prop := make([]float64, len(x))
	out := make([]float64, 0, keep*len(x))
	avx.ClearUpper()
	scale := 2.38 / math.Sqrt(float64(d)) * 0.5
	for t := 1; t <= steps; t++ {
		acc := metropolisMove(rng, x, prop, cur, d, box, scale, 1, l)
		scale *= math.Exp(float64(acc)/float64(n) - 0.25)
		scale = min(box, max(1e-4*box, scale))
		if kept(t, steps, keep) {
			out = append(out, x...)
			avx.ClearUpper()
		}
	}
	return out
}

// kept reports whether step t (1..steps) is one of the keep steps evenly spaced over
// the second half of the chains, steps/2 + j·(steps/2)/keep for j = 1..keep.
func kept(t, steps, keep int) bool {
	h := steps - steps/2
	for j := 1; j <= keep; j++ {
		if t == steps/2+j*h/keep {
			return true
		}
	}
	return false
}

// BlockMixture is a proposal density on ℝ^{2B}: a class y ~ W, then every block b
// independently uniform on its box [−Box, Box]² with probability Eps, else from its
// Gaussian mixture Σ_c A[ybc] N(μ_ybc, L_ybc L_ybcᵀ):
//
//	g(x) = Σ_y W_y Π_b [(1−ε)·Σ_c A_ybc N(x_b; μ_ybc, Σ_ybc) + ε/(2·Box)²].
//
// Index ybc = (y·B + b)·C + c; Mu holds 2 numbers an index, L 3 (the Cholesky factor's
// l00, l10, l11).
type BlockMixture struct {
	B, K, C  int
	Eps, Box float64
	W        []float64
	A        []float64
	Mu       []float64
	L        []float64
	// logs is what LogDensity takes the log of for every point, once (FitBlockMixture
	// sets it; a mixture built otherwise computes them at each point: the same values).
	logs *blockMixtureLogs
}

// blockMixtureLogs are a BlockMixture's logs that do not depend on the point.
type blockMixtureLogs struct {
	le, l1   float64   // log(Eps) − 2·log(2·Box), log1p(−Eps)
	w, a, ln []float64 // log W_y, log A_k, log(2π·L_k00·L_k11)
}

// setLogs fills g.logs from its parameters.
func (g *BlockMixture) setLogs() {
	lg := &blockMixtureLogs{le: math.Log(g.Eps) - 2*math.Log(2*g.Box), l1: math.Log1p(-g.Eps),
		w: make([]float64, len(g.W)), a: make([]float64, len(g.A)), ln: make([]float64, len(g.A))}
	for y, v := range g.W {
		lg.w[y] = math.Log(v)
	}
	for k, v := range g.A {
		lg.a[k], lg.ln[k] = math.Log(v), math.Log(2*math.Pi*g.L[3*k]*g.L[3*k+2])
	}
	g.logs = lg
}

// FitBlockMixture fits a BlockMixture to n states x [n][2B] whose class
// responsibilities are resp [n][K] (each row summing to 1): W_y the mean
// responsibility, and for every class and block a C-component Gaussian mixture by EM
// over the states of responsibility above 1e-6
// (30 iterations, started from C states drawn with the class's responsibilities as
// weights) on the block's coordinates weighted by the class's responsibilities, each
// covariance floored at (box/100)² and multiplied by inflate. Classes with no
// responsibility keep W_y = 0. eps is the per-block uniform share.
func FitBlockMixture(seed uint64, x, resp []float64, n, B, K, C int, eps, box, inflate float64) (BlockMixture, error) {
	if n < 1 || len(x) != n*2*B || len(resp) != n*K || C < 1 || !(box > 0) || !(eps >= 0 && eps < 1) || !(inflate > 0) {
		return BlockMixture{}, fmt.Errorf("prob: FitBlockMixture: %d states of %d coordinates (want %d), %d responsibilities (want %d), C %d, box %g, eps %g, inflate %g",
			n, len(x), n*2*B, len(resp), n*K, C, box, eps, inflate)
	}
	g := BlockMixture{B: B, K: K, C: C, Eps: eps, Box: box, W: make([]float64, K), A: make([]float64, K*B*C),
		Mu: make([]float64, 2*K*B*C), L: make([]float64, 3*K*B*C)}
	rng := NewRand(seed)
	avx.ClearUpper()
	tot := 0.0
	for y := range K {
		for i := range n {
			g.W[y] += resp[i*K+y]
		}
		tot += g.W[y]
	}
	if !(tot > 0) {
		return BlockMixture{}, fmt.Errorf("prob: FitBlockMixture: responsibilities sum to %g", tot)
	}
	wy := make([]float64, 0, n)
	at := make([]int, 0, n)
	xb := make([]float64, 2*n)
	for y := range K {
		g.W[y] /= tot
		if g.W[y] == 0 {
			continue
		}
		// The class's states: those with a responsibility above 1e-6 (the rest change
		// its fit by less than 1e-6 of a state each, and cost the EM as much).
		wy, at = wy[:0], at[:0]
		for i := range n {
			if v := resp[i*K+y]; v > 1e-6 {
				wy, at = append(wy, v), append(at, i)
			}
		}
		if len(at) == 0 { // a class of no state: none of g's mass
			g.W[y] = 0
			continue
		}
		for b := range B {
			for j, i := range at {
				xb[2*j], xb[2*j+1] = x[i*2*B+2*b], x[i*2*B+2*b+1]
			}
			i0 := (y*B + b) * C
			fitGauss2(rng, xb[:2*len(at)], wy, g.A[i0:i0+C], g.Mu[2*i0:2*(i0+C)], g.L[3*i0:3*(i0+C)], box, inflate)
		}
	}
	tot = 0
	for _, v := range g.W {
		tot += v
	}
	for y := range g.W {
		g.W[y] /= tot
	}
	g.setLogs()
	return g, nil
}

// fitGauss2 fits a C-component 2-D Gaussian mixture to the weighted points x [n][2]
// (weights w) by EM: a (C), mu (2C) and the Cholesky factors l (3C) of the
// covariances, floored at (box/100)² and then multiplied by inflate.
func fitGauss2(rng *rand.Rand, x, w, a, mu, l []float64, box, inflate float64) {
	n, C := len(w), len(a)
	floor := (box / 100) * (box / 100)
	cov := make([]float64, 3*C) // s00, s01, s11
	// Start: C points drawn by weight, the weighted covariance of all points each.
	cum := make([]float64, n)
	s := 0.0
	for i, v := range w {
		s += v
		cum[i] = s
	}
	var m0, m1 float64
	for i, v := range w {
		m0 += v * x[2*i]
		m1 += v * x[2*i+1]
	}
	m0, m1 = m0/s, m1/s
	var c00, c01, c11 float64
	for i, v := range w {
		d0, d1 := x[2*i]-m0, x[2*i+1]-m1
		c00 += v * d0 * d0
		c01 += v * d0 * d1
		c11 += v * d1 * d1
	}
	c00, c01, c11 = c00/s, c01/s, c11/s
	for c := range C {
		u := rng.Float64() * s
		i := 0
		for i < n-1 && cum[i] < u {
			i++
		}
		a[c] = 1 / float64(C)
		mu[2*c], mu[2*c+1] = x[2*i], x[2*i+1]
		cov[3*c], cov[3*c+1], cov[3*c+2] = c00/float64(C)+floor, c01/float64(C), c11/float64(C)+floor
	}
	r, t := make([]float64, n*C), make([]float64, n*C)
	lses, sums := make([]float64, n), make([]float64, n)
	la, ln := make([]float64, C), make([]float64, C)
	for range 30 {
		avx.ClearUpper() // after the allocations: see package avx
		for c := range C {
			setChol(l[3*c:3*c+3], cov[3*c:3*c+3])
			la[c], ln[c] = math.Log(a[c]), math.Log(2*math.Pi*l[3*c]*l[3*c+2])
		}
		// E step: r_ic = w_i·exp(lg_ic − LogSumExp(lg_i·)), lg_ic = log a_c + log N_c(x_i),
		// every exp and log of the pass at once (ExpTo, LogTo: math.Exp's and math.Log's
		// bits) and each LogSumExp's sum in its order
		for i := range n {
			for c := range C {
				r[i*C+c] = la[c] + logGauss2Norm(x[2*i], x[2*i+1], mu[2*c:2*c+2], l[3*c:3*c+3], ln[c])
			}
		}
		for i := range n { // LogSumExp's max and special cases; the exps' arguments
			row, m, nan := r[i*C:(i+1)*C], math.Inf(-1), false
			for _, v := range row {
				nan = nan || math.IsNaN(v)
				m = max(m, v)
			}
			switch {
			case nan:
				lses[i] = math.NaN()
			case math.IsInf(m, 0):
				lses[i] = m
			default:
				lses[i] = m
				for c, v := range row {
					t[i*C+c] = v - m
				}
				continue
			}
			clear(t[i*C : (i+1)*C])
		}
		ExpTo(t, t)
		for i := range n {
			s := 0.0
			for _, e := range t[i*C : (i+1)*C] {
				s += e
			}
			sums[i] = s
		}
		LogTo(sums, sums)
		for i := range n {
			if m := lses[i]; !math.IsNaN(m) && !math.IsInf(m, 0) {
				lses[i] = m + sums[i]
			}
		}
		for i := range n {
			for c := range C {
				t[i*C+c] = r[i*C+c] - lses[i]
			}
		}
		ExpTo(t, t)
		for i := range n {
			for c := range C {
				r[i*C+c] = w[i] * t[i*C+c]
			}
		}
		for c := range C { // M step
			var sw, s0, s1 float64
			for i := range n {
				v := r[i*C+c]
				sw += v
				s0 += v * x[2*i]
				s1 += v * x[2*i+1]
			}
			if !(sw > 1e-12*s) { // an empty component: back to the class's overall fit
				a[c], mu[2*c], mu[2*c+1] = 1e-12, m0, m1
				cov[3*c], cov[3*c+1], cov[3*c+2] = c00+floor, c01, c11+floor
				continue
			}
			m0c, m1c := s0/sw, s1/sw
			var v00, v01, v11 float64
			for i := range n {
				v := r[i*C+c]
				d0, d1 := x[2*i]-m0c, x[2*i+1]-m1c
				v00 += v * d0 * d0
				v01 += v * d0 * d1
				v11 += v * d1 * d1
			}
			a[c], mu[2*c], mu[2*c+1] = sw/s, m0c, m1c
			cov[3*c], cov[3*c+1], cov[3*c+2] = v00/sw+floor, v01/sw, v11/sw+floor
		}
	}
	sa := 0.0
	for _, v := range a {
		sa += v
	}
	for c := range C {
		a[c] /= sa
		cov[3*c] *= inflate
		cov[3*c+1] *= inflate
		cov[3*c+2] *= inflate
		setChol(l[3*c:3*c+3], cov[3*c:3*c+3])
	}
}

// setChol sets l (l00, l10, l11) to the Cholesky factor of the 2×2 covariance s
// (s00, s01, s11), its correlation clipped to ±0.999.
func setChol(l, s []float64) {
	l00 := math.Sqrt(s[0])
	s01 := max(-0.999, min(0.999, s[1]/math.Sqrt(s[0]*s[2]))) * math.Sqrt(s[0]*s[2])
	l10 := s01 / l00
	l[0], l[1], l[2] = l00, l10, math.Sqrt(max(s[2]-l10*l10, 1e-12*s[2]))
}

// logGauss2Norm is log N(x; mu, LLᵀ) in 2-D (l: l00, l10, l11), its normaliser's log
// ln = log(2π·l00·l11) given (computed once a component, not once a point).
func logGauss2Norm(x0, x1 float64, mu, l []float64, ln float64) float64 {
	z0 := (x0 - mu[0]) / l[0]
	z1 := (x1 - mu[1] - l[1]*z0) / l[2]
	return -0.5*(z0*z0+z1*z1) - ln
}

// Sample draws n points of g, [n][2B] (drawn on ℝ^{2B}: a Gaussian draw may leave
// the box, where the integrand of a log Z on the box is 0).
func (g BlockMixture) Sample(seed uint64, n int) []float64 {
	rng := NewRand(seed)
	d := 2 * g.B
	x := make([]float64, n*d)
	cumW := cumulative(g.W)
	avx.ClearUpper()
	for i := range n {
		y := pick(rng, cumW)
		for b := range g.B {
			if rng.Float64() < g.Eps {
				x[i*d+2*b], x[i*d+2*b+1] = (2*rng.Float64()-1)*g.Box, (2*rng.Float64()-1)*g.Box
				continue
			}
			i0 := (y*g.B + b) * g.C
			c := i0 + pick(rng, cumulative(g.A[i0:i0+g.C]))
			z0, z1 := rng.NormFloat64(), rng.NormFloat64()
			l := g.L[3*c : 3*c+3]
			x[i*d+2*b] = g.Mu[2*c] + l[0]*z0
			x[i*d+2*b+1] = g.Mu[2*c+1] + l[1]*z0 + l[2]*z1
		}
	}
	return x
}

// LogDensity is log g at one point x [2B].
func (g BlockMixture) LogDensity(x []float64) float64 {
	lg := g.logs
	if lg == nil {
		g.setLogs()
		lg = g.logs
	}
	le, l1 := lg.le, lg.l1
	ly := make([]float64, 0, g.K)
	lc := make([]float64, g.C)
	avx.ClearUpper() // after the allocations: see package avx
	for y, wy := range g.W {
		if wy == 0 {
			continue
		}
		v := lg.w[y]
		for b := range g.B {
			i0 := (y*g.B + b) * g.C
			for c := range g.C {
				k := i0 + c
				lc[c] = lg.a[k] + logGauss2Norm(x[2*b], x[2*b+1], g.Mu[2*k:2*k+2], g.L[3*k:3*k+3], lg.ln[k])
			}
			lb := l1 + LogSumExp(lc)
			if g.Eps > 0 {
				lb = logAddExp(lb, le)
			}
			v += lb
		}
		ly = append(ly, v)
	}
	return LogSumExp(ly)
}

// GaussClasses is a proposal density on ℝ^D: a class y ~ W, then x ~ N(μ_y, L_y L_yᵀ),
// a full covariance a class (Mu [K][D], L [K][D][D] lower-triangular, row-major). It
// holds what a BlockMixture cannot: the model's correlations across blocks.
type GaussClasses struct {
	D, K int
	W    []float64
	Mu   []float64
	L    []float64
	ldet []float64 // log det L_y
}

// FitGaussClasses fits a GaussClasses to n states x [n][d] whose class
// responsibilities are resp [n][K]: W_y the mean responsibility, μ_y and Σ_y the
// responsibility-weighted mean and covariance, Σ_y shrunk toward its diagonal by
// (d+1)/(n_y+d+1) (n_y the class's effective states), floored at (box/100)² on the
// diagonal and multiplied by inflate.
func FitGaussClasses(x, resp []float64, n, d, K int, box, inflate float64) (GaussClasses, error) {
	if n < 1 || len(x) != n*d || len(resp) != n*K || !(box > 0) || !(inflate > 0) {
		return GaussClasses{}, fmt.Errorf("prob: FitGaussClasses: %d states of %d coordinates (want %d), %d responsibilities (want %d), box %g, inflate %g",
			n, len(x), n*d, len(resp), n*K, box, inflate)
	}
	g := GaussClasses{D: d, K: K, W: make([]float64, K), Mu: make([]float64, K*d), L: make([]float64, K*d*d), ldet: make([]float64, K)}
	floor := (box / 100) * (box / 100)
	tot := 0.0
	avx.ClearUpper()
	for y := range K {
		var s, s2 float64
		mu := g.Mu[y*d : (y+1)*d]
		for i := range n {
			w := resp[i*K+y]
			s += w
			s2 += w * w
			for j := range d {
				mu[j] += w * x[i*d+j]
			}
		}
		g.W[y] = s
		tot += s
		if !(s > 0) {
			continue
		}
		for j := range mu {
			mu[j] /= s
		}
		c := g.L[y*d*d : (y+1)*d*d]
		dev := make([]float64, d)
		for i := range n {
			w := resp[i*K+y]
			if w == 0 {
				continue
			}
			for j := range d {
				dev[j] = x[i*d+j] - mu[j]
			}
			for a := range d {
				for b := 0; b <= a; b++ {
					c[a*d+b] += w * dev[a] * dev[b]
				}
			}
		}
		avx.ClearUpper()
		neff := s * s / s2
		shrink := float64(d+1) / (neff + float64(d+1))
		for a := range d {
			for b := 0; b <= a; b++ {
				v := c[a*d+b] / s
				if a != b {
					v *= 1 - shrink
				} else {
					v += floor
				}
				c[a*d+b] = v * inflate
			}
		}
		if err := Cholesky(c, d); err != nil {
			return GaussClasses{}, fmt.Errorf("prob: FitGaussClasses: class %d: %w", y, err)
		}
		for a := range d {
			for b := a + 1; b < d; b++ {
				c[a*d+b] = 0
			}
			g.ldet[y] += math.Log(c[a*d+a])
		}
	}
	if !(tot > 0) {
		return GaussClasses{}, fmt.Errorf("prob: FitGaussClasses: responsibilities sum to %g", tot)
	}
	for y := range g.W {
		g.W[y] /= tot
	}
	return g, nil
}

// Sample draws n points of g, [n][D] (on ℝ^D: a draw may leave the box).
func (g GaussClasses) Sample(seed uint64, n int) []float64 {
	rng := NewRand(seed)
	d := g.D
	x := make([]float64, n*d)
	z := make([]float64, d)
	cumW := cumulative(g.W)
	avx.ClearUpper()
	for i := range n {
		y := pick(rng, cumW)
		for j := range z {
			z[j] = rng.NormFloat64()
		}
		l := g.L[y*d*d : (y+1)*d*d]
		for a := range d {
			v := g.Mu[y*d+a]
			for b := 0; b <= a; b++ {
				v += l[a*d+b] * z[b]
			}
			x[i*d+a] = v
		}
	}
	return x
}

// LogDensity is log g at one point x [D].
func (g GaussClasses) LogDensity(x []float64) float64 {
	d := g.D
	ly := make([]float64, 0, g.K)
	z := make([]float64, d)
	avx.ClearUpper()
	for y, wy := range g.W {
		if wy == 0 {
			continue
		}
		l := g.L[y*d*d : (y+1)*d*d]
		q := 0.0
		for a := range d { // forward substitution: z = L⁻¹(x − μ)
			v := x[a] - g.Mu[y*d+a]
			for b := range a {
				v -= l[a*d+b] * z[b]
			}
			z[a] = v / l[a*d+a]
			q += z[a] * z[a]
		}
		ly = append(ly, math.Log(wy)-0.5*q-g.ldet[y]-0.5*float64(d)*math.Log(2*math.Pi))
	}
	return LogSumExp(ly)
}

// inBoxAll reports whether every coordinate of x is in [−box, box].
func inBoxAll(x []float64, box float64) bool {
	for _, v := range x {
		if v < -box || v > box {
			return false
		}
	}
	return true
}

// BlockHistogram is a proposal density on the box [−Box, Box]^{2B}: a class y ~ W,
// then every block independently from a piecewise-constant density on a G×G grid of
// its box, cell c with probability P[(y·B + b)·G² + c] and uniform within it. It holds
// what a Gaussian cannot: a model whose mass spreads over the whole box (as a joint
// MLP's does far from the data), with exactly the box as its support.
type BlockHistogram struct {
	B, K, G int
	Box     float64
	W       []float64
	P       []float64
	cum     []float64 // running sums of P per class and block
}

// FitBlockHistogram fits a BlockHistogram of G×G cells a block to n states x [n][2B]
// whose class responsibilities are resp [n][K]: W_y the mean responsibility, and every
// class's block cell probabilities (count + ½)/(n_y + ½·G²) from the
// responsibility-weighted counts, mixed with the uniform on the block's box with
// share eps (defensive, as BlockDefensiveShare's).
func FitBlockHistogram(x, resp []float64, n, B, K, G int, eps, box float64) (BlockHistogram, error) {
	if n < 1 || len(x) != n*2*B || len(resp) != n*K || G < 1 || !(box > 0) || !(eps >= 0 && eps < 1) {
		return BlockHistogram{}, fmt.Errorf("prob: FitBlockHistogram: %d states of %d coordinates (want %d), %d responsibilities (want %d), G %d, box %g, eps %g",
			n, len(x), n*2*B, len(resp), n*K, G, box, eps)
	}
	g2 := G * G
	h := BlockHistogram{B: B, K: K, G: G, Box: box, W: make([]float64, K), P: make([]float64, K*B*g2), cum: make([]float64, K*B*g2)}
	tot := 0.0
	for i := range n {
		for b := range B {
			c := h.cell(x[i*2*B+2*b], x[i*2*B+2*b+1])
			for y := range K {
				h.P[(y*B+b)*g2+c] += resp[i*K+y]
			}
		}
		for y := range K {
			h.W[y] += resp[i*K+y]
			tot += resp[i*K+y]
		}
	}
	if !(tot > 0) {
		return BlockHistogram{}, fmt.Errorf("prob: FitBlockHistogram: responsibilities sum to %g", tot)
	}
	const prior = 0.5
	avx.ClearUpper()
	for y := range K {
		ny := h.W[y]
		h.W[y] /= tot
		for b := range B {
			p := h.P[(y*B+b)*g2 : (y*B+b+1)*g2]
			cum := h.cum[(y*B+b)*g2 : (y*B+b+1)*g2]
			s := 0.0
			for c := range p {
				p[c] = (1-eps)*(p[c]+prior)/(ny+prior*float64(g2)) + eps/float64(g2)
				s += p[c]
				cum[c] = s
			}
		}
	}
	return h, nil
}

// cell is the grid cell of a block's point (clamped to the box).
func (h BlockHistogram) cell(x0, x1 float64) int {
	s := float64(h.G) / (2 * h.Box)
	i := min(h.G-1, max(0, int((x0+h.Box)*s)))
	j := min(h.G-1, max(0, int((x1+h.Box)*s)))
	return i*h.G + j
}

// Sample draws n points of h, [n][2B] (all inside the box).
func (h BlockHistogram) Sample(seed uint64, n int) []float64 {
	rng := NewRand(seed)
	d, g2 := 2*h.B, h.G*h.G
	w := 2 * h.Box / float64(h.G)
	x := make([]float64, n*d)
	cumW := cumulative(h.W)
	avx.ClearUpper()
	for i := range n {
		y := pick(rng, cumW)
		for b := range h.B {
			c := pick(rng, h.cum[(y*h.B+b)*g2:(y*h.B+b+1)*g2])
			x[i*d+2*b] = -h.Box + (float64(c/h.G)+rng.Float64())*w
			x[i*d+2*b+1] = -h.Box + (float64(c%h.G)+rng.Float64())*w
		}
	}
	return x
}

// LogDensity is log h at one point x [2B] (−Inf outside the box).
func (h BlockHistogram) LogDensity(x []float64) float64 {
	if !inBoxAll(x, h.Box) {
		return math.Inf(-1)
	}
	g2 := h.G * h.G
	ly := make([]float64, 0, h.K)
	avx.ClearUpper()
	la := 2 * math.Log(2*h.Box/float64(h.G)) // a cell's area
	for y, wy := range h.W {
		if wy == 0 {
			continue
		}
		v := math.Log(wy)
		for b := range h.B {
			v += math.Log(h.P[(y*h.B+b)*g2+h.cell(x[2*b], x[2*b+1])]) - la
		}
		ly = append(ly, v)
	}
	return LogSumExp(ly)
}

// FitConditionalHistogram fits a BlockHistogram of G×G cells a block from the model's
// own conditionals (a Rao–Blackwellised estimate of its class-wise block marginals):
// for every anchor state a (anchors [A][2B], states of the model's chains) and block b,
// the model's logits with block b moved to each cell's centre and the other blocks kept
// at the anchor's, softmax over the cells of f[y] being the model's conditional
// q(x_b | x_{−b} = a_{−b}, y) on the grid. Class y's block-b cell probabilities are the
// mean of these conditionals over the anchors weighted by q(y|a) (anchors of q(x),
// reweighted, are anchors of q(x|y)), W the class weights w given (nil: the mean of
// q(y|a) over the anchors; a few anchors can miss a class that many chain states
// weigh), and every block mixed
// with the uniform on its box with share eps (defensive). For a model additive over
// blocks (q(x|y) = Π_b q_b(x_b|y)) every anchor gives the exact block marginals at the
// cells' centres, whatever the chains; for any other model the product over blocks is
// its best in form, as BlockHistogram's. logits(x, n) is the model's logits [n][K] at n
// points x [n][2B]; it costs A·(B·G² + 1) model evaluations in A·(B + 1) calls.
func FitConditionalHistogram(anchors []float64, A, B, K, G int, eps, box float64, w []float64, logits func(x []float64, n int) ([]float64, error)) (BlockHistogram, error) {
	d, g2 := 2*B, G*G
	if A < 1 || len(anchors) != A*d || K < 2 || G < 1 || !(box > 0) || !(eps >= 0 && eps < 1) || w != nil && len(w) != K {
		return BlockHistogram{}, fmt.Errorf("prob: FitConditionalHistogram: %d anchors of %d coordinates (want %d), K %d, G %d, box %g, eps %g",
			A, len(anchors), A*d, K, G, box, eps)
	}
	h := BlockHistogram{B: B, K: K, G: G, Box: box, W: make([]float64, K), P: make([]float64, K*B*g2), cum: make([]float64, K*B*g2)}
	cw := 2 * box / float64(G)
	pts := make([]float64, g2*d) // one block's grid at a time: memory O(G²·D), not O(B·G²·D)
	cond := make([]float64, g2)
	for a := range A {
		anchor := anchors[a*d : (a+1)*d]
		la, err := logits(anchor, 1)
		if err != nil {
			return BlockHistogram{}, err
		}
		avx.ClearUpper()
		resp := Softmax(la[:K])
		if !finiteAll(resp) {
			continue // a non-finite anchor: no weight
		}
		for y, ry := range resp {
			h.W[y] += ry
		}
		for b := range B {
			for c := range g2 {
				p := pts[c*d : (c+1)*d]
				copy(p, anchor)
				p[2*b], p[2*b+1] = -box+(float64(c/G)+0.5)*cw, -box+(float64(c%G)+0.5)*cw
			}
			l, err := logits(pts, g2)
			if err != nil {
				return BlockHistogram{}, err
			}
			avx.ClearUpper()
			for y, ry := range resp {
				if ry == 0 {
					continue
				}
				m := math.Inf(-1)
				for c := range g2 {
					cond[c] = l[c*K+y]
					m = max(m, cond[c])
				}
				s := 0.0
				for c := range g2 {
					cond[c] = math.Exp(cond[c] - m)
					s += cond[c]
				}
				if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(s) {
					continue
				}
				p := h.P[(y*B+b)*g2 : (y*B+b+1)*g2]
				for c := range g2 {
					p[c] += ry * cond[c] / s
				}
			}
		}
	}
	tot := 0.0
	for _, v := range h.W {
		tot += v
	}
	if !(tot > 0) {
		return BlockHistogram{}, fmt.Errorf("prob: FitConditionalHistogram: no anchor with finite logits")
	}
	if w != nil {
		copy(h.W, w)
		tot = 0
		for _, v := range w {
			tot += v
		}
		if !(tot > 0) || math.IsInf(tot, 0) {
			return BlockHistogram{}, fmt.Errorf("prob: FitConditionalHistogram: class weights %v", w)
		}
	}
	for y := range K {
		h.W[y] /= tot
		for b := range B {
			p := h.P[(y*B+b)*g2 : (y*B+b+1)*g2]
			cum := h.cum[(y*B+b)*g2 : (y*B+b+1)*g2]
			s := 0.0
			for _, v := range p {
				s += v
			}
			run := 0.0
			for c := range p {
				if s > 0 {
					p[c] = (1-eps)*p[c]/s + eps/float64(g2)
				} else {
					p[c] = 1 / float64(g2)
				}
				run += p[c]
				cum[c] = run
			}
		}
	}
	return h, nil
}

// finiteAll reports whether every value of v is finite.
func finiteAll(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

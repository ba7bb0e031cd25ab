// Package ais estimates the normaliser Z = ∫ f(x) dx of an unnormalised density f on
// R^D by annealed importance sampling, and brackets it from both sides where exact
// draws of f/Z exist, so that a KL to a learned energy model can be reported with a
// known direction of error when its Z has no closed form. Pure maths: no GoMLX, no
// Beam; randomness from prob.Seed and prob.NewRand.
//
// # Annealed importance sampling (Neal 2001)
//
// A normalised base p₀ (Base: any density with exact draws, log density, gradient and
// a per-coordinate Scale that preconditions the kernel; here a diagonal Gaussian
// (FitBase), a low-rank one (LowRank) or a mixture of either (FitMixtureBase, per class
// × k-means cluster: for targets with separated modes, which the chains do not cross,
// so the base must give each mode its share of mass), fitted to data by the caller)
// is joined to f by the geometric path log f_β = (1−β)·log p₀ + β·log f at
// temperatures 0 = β_0 < β_1 < … < β_T = 1 (Betas: sigmoidal as in Grosse, Ghahramani
// & Adams 2015, geometric, or linear). Forward draws x exactly from p₀ and, for
// t = 1..T, adds (β_t − β_{t−1})·(log f(x) − log p₀(x)) to the chain's log weight and
// then moves x by an MCMC transition that leaves f_{β_t}/Z_{β_t} invariant: HMC with
// L leapfrog steps or MALA (one leapfrog step), preconditioned by the base's Scale. The
// weight w = exp(log weight) satisfies E[w] = Z exactly (Neal 2001: AIS is importance
// sampling on the extended space of the whole chain), for any T and any quality of
// mixing: bad mixing costs variance, never unbiasedness of w.
//
// The step size at β_t is chosen by a pilot run (Tune) on chains seeded apart from the
// main ones and then frozen: each main transition is then a fixed kernel invariant for
// its f_β, which is all the unbiasedness argument needs. (Adapting on the main chains
// themselves, from the previous temperature's pooled acceptance, would make each
// chain's kernel depend on its own past: a bias of order 1/Chains. The pilot costs
// PilotChains/Chains of a run and removes it.) Chains are grouped into fixed blocks
// that evaluate the target as one batch (BatchTarget: a network evaluates batches much
// faster) and run over GOMAXPROCS goroutines; chain c's randomness is
// prob.Seed(seed, c), so results do not depend on GOMAXPROCS.
//
// # Which side each estimate errs on
//
//   - Forward: log Ẑ = log mean_i w_i with E[Ẑ] = Z, so E[log Ẑ] ≤ log Z by Jensen,
//     and P(log Ẑ > log Z + t) ≤ e^{−t} by Markov: a stochastic LOWER bound on log Z.
//     Its failure mode is silent: with too few temperatures or poor mixing the weights'
//     mass sits in chains it rarely draws, and log Ẑ reads low with a small SE. Burda,
//     Grosse & Salakhutdinov (2015, RAISE) warn that AIS log-likelihoods (log p =
//     −E − log Ẑ) are thereby over-estimated "with little indication that anything
//     is wrong".
//   - Reverse: chains start at exact draws of f/Z and run the same kernels backwards
//     (β_{T−1}, …, β_1), adding (β_{t−1} − β_t)·(log f − log p₀). Now E[w] = Z₀/Z = 1/Z,
//     so log Ẑ = −log mean_i w_i has E[log Ẑ] ≥ log Z: a stochastic UPPER bound. It needs
//     exact draws of the normalised target: a teacher, not a learned model.
//
// Together they are bidirectional Monte Carlo (BDMC; Grosse, Ghahramani & Adams 2015):
// the true log Z lies between them (up to their noise), and the gap upper − lower
// bounds how far either is from it, in expectation.
//
// # Calibration rule
//
// A learned model p_θ = f_θ/Z_θ has no exact draws, so only its forward (lower) side
// exists. Calibrate runs BDMC on a teacher of known log Z at the same D (for jemcheck,
// the generating density, e.g. a mixture of factor analysers) and accepts the schedule
// (T, path, kernel, L, Moves, Chains) only where the gap plus its SE is at most gapTol
// (default 0.1 nat), both directions' Pareto k̂ are at most 0.7, and the true log Z
// lies within CoverZ = 3 SE of the bracket. The accepted settings are then used, with
// a fresh pilot, for the forward AIS of the learned model. The calibration transfers
// only as far as the model resembles the teacher: it is evidence about the schedule,
// not a certificate for p_θ (Wu, Burda, Salakhutdinov & Grosse 2017, "On the
// quantitative analysis of decoder-based generative models", validate AIS on
// simulated data in exactly this way before trusting it on real models).
//
// # KL bounds
//
// KL(p‖q_θ) = E_p[log p(x) − log f_θ(x)] + log Z_θ. The first term is a sample mean over
// exact draws of p (unbiased); KLBounds adds the forward log Ẑ for a stochastic LOWER
// bound on the KL (the model is at least this many nats off) and the reverse log Ẑ for
// a stochastic UPPER bound, the latter only valid where the reverse chains started at
// exact draws of q_θ.
//
// References: R. M. Neal, "Annealed importance sampling", Statistics and Computing 11
// (2001). R. B. Grosse, Z. Ghahramani & R. P. Adams, "Sandwiching the marginal
// likelihood using bidirectional Monte Carlo", arXiv:1511.02543 (2015). Y. Burda,
// R. B. Grosse & R. Salakhutdinov, "Accurate and conservative estimates of MRF
// log-likelihood using reverse annealing", AISTATS 2015. Y. Wu, Y. Burda,
// R. Salakhutdinov & R. Grosse, "On the quantitative analysis of decoder-based
// generative models", ICLR 2017. A. Vehtari, D. Simpson, A. Gelman, Y. Yao & J. Gabry,
// "Pareto smoothed importance sampling", JMLR 25 (2024). The package models/prob has an
// older box-restricted AIS (prob.AISLogZ: uniform base, random-walk Metropolis) for the
// block tasks; this package is the gradient-based, two-sided one.
package ais

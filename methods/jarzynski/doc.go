// Package jarzynski is JEM with persistent walkers whose Jarzynski importance weights
// correct the log Z gradient's non-equilibrium bias, resampled when their effective
// sample size falls (Carbone, Hua, Coste & Vanden-Eijnden, NeurIPS 2023).
//
// On the plane and on block tasks (D = 2B coordinates: the block-additive model and
// the joint MLP) it is one kernel.Objective (Objective, objective.go), written once for
// any D. Lanes: B data, B walkers (P = 2B). The walkers x_j ∈ ℝ^D carry log weights
// A_j. They start uniformly on the box [−box, box]^D with A_j = ℓ(x_j) (the importance
// weight of q against the uniform start), ℓ(x) = log Σ_y exp f(x)[y]. A training step
//
//  1. adds ℓ_θ(x_j) − ℓ_θ'(x_j) to A_j, θ' the parameters of the last step's forward
//     pass (the model's change under the last update);
//  2. moves every walker by sgld_steps unadjusted Langevin moves x' = x + η∇ℓ(x) +
//     √(2η)ξ, ξ ~ N(0, I_D), adding to A_j each move's Metropolis log ratio instead of
//     accepting or rejecting (the Jarzynski / Crooks weight of a non-equilibrium move)
//     less the log mass inside the box of its backward kernel N(x'+η∇ℓ(x'), 2η·I_D),
//     a product over the D coordinates (the walkers live on the box, so the backward
//     kernel is that Gaussian normalised there); a walker leaving the box gets weight 0;
//  3. resamples the walkers (systematic) and resets A when the weights' ESS falls under
//     ess_resample·B, and restarts them uniformly when no weight is left.
//
// The loss is −mean ℓ(data) + Σ_j softmax(A)_j ℓ(x_j), an asymptotically unbiased
// estimate of log Z's gradient; the trainer adds it, times px_weight, to the data's
// cross-entropy (the walkers' weights enter as their lanes' dL/dℓ). η starts at
// step_size and adapts once per training step on the mean min(1, ratio) of the moves,
// log η += 0.1·(mean − 0.574) within [1e-7, box²] (kernel.AdaptStep, as mala's). The
// walkers are kernel.Langevin (models/kernel/langevin.go). Budget: B·(1 + sgld_steps)
// passes per step beyond the lanes.
//
// Reported: Result2D.StepSize and Stats jarzynski_step, the final η (the plane's sampler
// distribution reruns the sampler at it: the plane.sampler hook); Accept and
// jarzynski_accept, the mean min(1, ratio); Resamples and jarzynski_resamples, the
// resamplings and restarts; jarzynski_ess, the mean ESS share of the weights before
// resampling.
//
// Where it differs from the paper: the paper's walkers move by unadjusted Langevin on
// an unbounded space; here the target is q on the box, hence the walkers' death outside
// it and the backward kernel's box mass in the weights. The step adapts (the paper's is
// fixed). In D dimensions the weights' variance grows with D, so the ESS falls faster
// and the walkers are resampled more often than on the plane.
package jarzynski

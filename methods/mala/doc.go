// Package mala is JEM with sgld's replay buffer refined by Metropolis-adjusted
// Langevin at temperature 1, its step adapted toward 0.574 acceptance (Roberts &
// Tweedie 1996).
//
// On the plane and on block tasks (D = 2B coordinates: the block-additive model and
// the joint MLP) it is one kernel.Objective (Objective, objective.go), written once for
// any D. Lanes: B data, B negatives (P = 2B). Each step draws B distinct chains of a
// replay buffer of buffer_size chains in ℝ^D (restarting each uniformly on the box
// [−box, box]^D with probability reinit_freq), moves them by sgld_steps MALA steps
//
//	x' = x + η∇ℓ(x) + √(2η)ξ,  ξ ~ N(0, I_D),
//
// accepted with min(1, exp(ℓ(x')−ℓ(x)) N(x|x'+η∇ℓ(x'),2η) / N(x'|x+η∇ℓ(x),2η)),
// ℓ(x) = log Σ_y exp f(x)[y], a proposal outside the box rejected (the target is q on
// the box, where jemcheck normalises it), and writes them back. The loss is
// −mean ℓ(data) + mean ℓ(negatives); the trainer adds it, times px_weight, to the
// data's cross-entropy. η starts at step_size and adapts once per training step,
// log η += 0.1·(acceptance − 0.574) within [1e-7, box²] (kernel.AdaptStep; 0.574 is
// MALA's optimal acceptance, Roberts & Rosenthal 1998). The kernel's chains are
// kernel.Langevin (models/kernel/langevin.go). Budget: B·(1 + sgld_steps) passes per
// step beyond the lanes (the chains' start, then each proposal).
//
// Reported: Result2D.StepSize and Stats mala_step, the final η (the plane's sampler
// distribution reruns the sampler at it: the plane.sampler hook); Accept and
// mala_accept, the mean acceptance over the steps run; InBox and Buffer, the final
// buffer [buffer_size][D].
//
// Where it differs from the paper's sampler: Roberts & Tweedie's MALA targets a fixed
// density; here the target moves with the model every training step and the chains
// persist in the buffer (as JEM's SGLD chains do), so the negatives are MALA draws of
// q only as far as the chains keep up with the model. In D dimensions the optimal
// step shrinks as D^(−1/3); the adaptation finds it, so the same step_size serves the
// plane and block tasks. The buffer must hold a batch (buffer_size ≥ batch_size).
package mala

// Package shortrun is JEM with short-run Langevin chains started from uniform noise
// every step and an L2 penalty on the energies (Nijkamp, Hill, Zhu & Wu, NeurIPS 2019;
// Du & Mordatch, NeurIPS 2019; JEM++).
//
// On the plane and on block tasks (D = 2B coordinates: the block-additive model and
// the joint MLP) it is one kernel.Objective (Objective, objective.go), written once for
// any D. Lanes: B data, B negatives (P = 2B). Every step draws B fresh points uniformly
// on the box [−box, box]^D and moves each by sgld_steps unadjusted Langevin steps
//
//	x += η∇ℓ(x) + √(2η)ξ,  ξ ~ N(0, I_D)   (shortrun_noise=false: x += η∇ℓ(x)),
//
// ℓ(x) = log Σ_y exp f(x)[y], η = shortrun_step, neither clamped to the box nor
// Metropolis-adjusted (the chains are kernel.Langevin, models/kernel/langevin.go). The
// loss is
//
//	−mean ℓ(data) + mean ℓ(negatives) + energy_l2·(mean ℓ(data)² + mean ℓ(negatives)²),
//
// and the trainer adds it, times px_weight, to the data's cross-entropy. Budget:
// B·sgld_steps input-gradient passes per step beyond the lanes.
//
// Where it differs from the papers: the chains start from uniform noise on the task's
// box (the papers' images start from uniform noise on the pixel range), and the L2
// penalty is Du & Mordatch's regulariser on the energies of both data and negatives.
// The penalty is inside the objective's loss, so px_weight weighs it too (the plane
// kernel's former built-in shortrun added it unweighted; the two agree at px_weight = 1, the
// default). In D dimensions the uniform start is far from the data (the box's volume
// grows as (2·box)^D), so a short run reaches the model's modes only as far as
// sgld_steps·η allows: the recipe's bias grows with D.
package shortrun

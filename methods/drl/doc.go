// Package drl is the diffusion recovery likelihood (Gao, Song, Poole, Wu & Kingma,
// ICLR 2021) adapted to jemcheck's one energy network on the fused 2-D kernel.
//
// What it optimises. Per data point x, x̃ = x + σε with ε ~ N(0, I). The recovery
// likelihood is the conditional q(x|x̃) ∝ exp(ℓ(x) − ‖x − x̃‖²/(2σ²)), ℓ(x) =
// log Σ_y exp f(x)[y]; its log-likelihood gradient is ∇θ ℓ(x) − E_{q(x'|x̃)} ∇θ ℓ(x'),
// so the loss is −mean ℓ(data) + mean ℓ(negatives), each negative x' a draw of
// q(·|x̃) by K Langevin steps y ← y + ½s²∇y log q(y|x̃) + sξ started at y = x̃, step
// s² = b²σ² (the paper's rule, its code's mcmc_step_size_b_square). Unlike q(x),
// q(x|x̃) is close to Gaussian for small σ, so short chains mix; and its maximiser
// over θ is the truth whatever σ (if x ~ p then x given x̃ is exactly p(·|x̃); the
// known-answer test checks that the gradient along β of β·log p vanishes at β = 1).
// The trainer adds the data lanes' cross-entropy and PxWeight times this loss.
//
// Lanes: B data, B negatives (P = 2B). Passes beyond them (GradEvals): K per chain,
// K + 1 with MH (the start's energy, then each proposal's). x̃ is drawn from st.Rng,
// the Langevin noise and MH's uniforms from st.Noise.
//
// Options:
//
//   - drl_sigma, σ = 0.5 (jemcheck's: the paper's σ schedule is for images scaled to
//     [−1, 1]). Trained 3000 steps on the test mixture (32-32 network, MH, three
//     seeds), σ = 0.5 reached cell TV 0.068 to 0.095 from the truth, σ = 1 0.072 to
//     0.093 (exact JEM 0.07 on one of them); σ = 0.3 0.088 on one.
//   - drl_steps, K = 30 (the paper's).
//   - drl_step, b² = 0.5 (jemcheck's). The paper's b² = 2e-4 goes with its
//     parametrisation log q(y|x̃) = f(y)/s² − ‖y − x̃‖²/(2σ²), which scales the
//     network's output by 1/s²: the drift on f is then ½∇f whatever s. jemcheck's ℓ is
//     the log density itself, so s² must be a sizeable share of the conditional's
//     variance (about σ² at most) for K = 30 steps to cross it; at b² = 0.5 MH accepts
//     about 0.9 at σ = 0.5.
//   - drl_mh, true (jemcheck's): each Langevin step Metropolis-adjusted (MALA),
//     proposals outside the box rejected, so that the chains target q(·|x̃) exactly.
//     The paper's chains are unadjusted; drl_mh=false gives them, and the known-answer
//     test shows their bias on the mixture (dL/dβ at β = 1 about −5 standard errors at
//     K = 30, b² = 0.25; also at b² = 0.1, where the chains have not yet mixed).
//
// Diagnostics (Result2D.Stats): drl_accept, the mean MH acceptance over the run (with
// MH only). The negatives are draws of q(·|x̃), not of q: they are not returned as the
// run's samples (Result2D.Buffer stays empty).
//
// What jemcheck changed, exactly: (1) one noise level, not the paper's T = 6 levels
// (its σ_t schedule and a network conditioned on t, which trains q at every level and
// samples by annealing down them): jemcheck's MLP has no time input, and sharing one
// network across levels without t would make it fit several different noised
// densities at once, so the multi-level scheme needs a t-conditioned network; the
// single level trains q itself (the level-0 recovery likelihood). (2) Variance
// exploding x̃ = x + σε instead of the paper's x̃ = √(1−σ²)·x + σε with the network
// seeing the rescaled y: the same model up to a scale of x. (3) No f/s² scaling of
// the energy and no loss re-weighting across levels (one level). (4) MH by default,
// b² and σ as above.
package drl

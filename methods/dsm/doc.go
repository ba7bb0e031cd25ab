// Package dsm is denoising score matching (Vincent 2011) on the fused kernels, in the
// finite-difference form of Pang et al. (NeurIPS 2020, FD-SM), since the kernels have
// no second derivatives. One objective serves every model they train: the plane's MLP
// (Train2D, D = 2) and, on a block task blocks:B,…, the block-additive model and the
// joint MLP (TrainAdditive, TrainJoint, D = 2B).
//
// What it optimises. Per data point x ∈ ℝ^D, x̃ = x + σε with ε ~ N(0, I_D) (every
// coordinate perturbed); the model's score at x̃ along each axis e_d, d = 0..D−1, is the
// central difference
//
//	ŝ_d(x̃) = (ℓ(x̃ + h e_d) − ℓ(x̃ − h e_d)) / (2h),   ℓ(x) = log Σ_y exp f(x)[y],
//
// and the loss is ½·mean ‖ŝ(x̃) + ε/σ‖²·σ² = ½·mean Σ_d (σŝ_d(x̃) + ε_d)² (Vincent's
// objective with the usual σ² weighting of Song & Ermon 2019, the squared norm summed
// over the D axes). Its minimiser over scores is the score of p_σ = p ∗ N(0, σ²I_D),
// the truth convolved with the noise, not of p: DSM learns a density broadened by σ
// (component variances plus σ² in every coordinate), and nothing but the network's
// smoothness fixes ℓ far from the data (the perturbed points lie within a few σ of it).
// The trainer adds the data lanes' cross-entropy and PxWeight times this loss.
//
// Lanes: the B data points (read by the cross-entropy only), then for data point i the
// 2D lanes B + k·B + i, k = 0..2D−1, at x̃_i + h e_{k/2} (k even) and x̃_i − h e_{k/2}
// (k odd): P = (1 + 2D)·B (5B on the plane, x̃_i ± h e_0 then x̃_i ± h e_1), and no
// passes beyond them (GradEvals 0). The derivative of the loss in ℓ at lane x̃ ± h e_d
// is ±(σŝ_d + ε_d)·σ/(2h)/B. Perturbations are drawn from the run's st.Rng, each data
// point's D coordinates in order (on the plane the same draws, lanes and loss as the
// 2-D objective before the port, bit for bit). The lanes follow the run's dimension
// (kernel.Objective.Lanes(B, D)): at D = 64 (blocks:32) and batch 64, 8256 lanes a step.
//
// Options (jemcheck's defaults, for 2-D tasks on a box of half-width 5 with component
// sd about 0.3 to 0.6, and for the block tasks built of them):
//
//   - dsm_sigma, σ = 0.2. Vincent and Pang et al. give no 2-D default; the choice
//     trades the bias of p_σ (a component of sd 0.3 is fitted as 0.36, one of 0.6 as
//     0.63) against how far from the data the loss reaches. Trained 3000 steps on the
//     test mixture (32-32 network), σ = 0.2 reached cell TV 0.12 from the truth
//     (exact JEM 0.07), σ = 0.1 0.44, σ = 0.3 0.14, σ = 0.5 0.21. On the 2-block task
//     of the block test (1000 full-batch steps, additive 8-unit blocks), σ = 0.2
//     reached joint KL 0.12 to 0.19 (three tasks; exact JEM 0.05), σ = 0.3 0.13 to 0.19.
//   - dsm_h, h = 0.25·σ (the option is h/σ, so that it follows σ in a sweep). The
//     central difference's error is O(h²) times ℓ's third derivative, under the
//     known-answer test's standard error at h/σ 0.25 and 0.5; float32 rounding of ℓ (about 1e-6 relative)
//     costs about 1e-6·|ℓ|/h in the score, negligible at h = 0.05.
//
// What jemcheck changed: Pang et al. difference along random directions (the sliced
// form) and expand the squared norm; here the score is differenced along every axis
// (D directions cover the score exactly, at 2D lanes per point: four on the plane) and
// the squared error is taken as is. Single noise level, no annealing (no σ input to the
// network).
//
// Known answers: on exact draws of a Gaussian mixture (dsm_test.go), the loss of
// β·log p_σ is least at β = 1 and dL/dβ(1) is 0 within 3 standard errors; with the
// clean β·log p the minimiser is β* ≈ 0.88 at the defaults, the noise's bias. On a
// 2-block task (blocks_test.go, D = 4) training the additive model lowers the exact
// joint KL from 6.8 (start; the baseline 7.8) to within 0.3 nats of exact JEM's; on a
// 4-block task (D = 8) the joint MLP's DSM loss on held-out draws falls toward the
// truth's log p_σ.
//
// On images (images.go, models/cnn's DSM) the loss is exact: the score is the CNN's
// input gradient and its parameter gradient double backprop through it, so dsm_h does
// not apply there (refused); dsm_sigma is σ per pixel.
package dsm

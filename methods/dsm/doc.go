// Package dsm is denoising score matching (Vincent 2011) on the fused 2-D kernel, in
// the finite-difference form of Pang et al. (NeurIPS 2020, FD-SM), since the kernel
// has no second derivatives.
//
// What it optimises. Per data point x, x̃ = x + σε with ε ~ N(0, I); the model's score
// at x̃ along each axis e_d is the central difference
//
//	ŝ_d(x̃) = (ℓ(x̃ + h e_d) − ℓ(x̃ − h e_d)) / (2h),   ℓ(x) = log Σ_y exp f(x)[y],
//
// and the loss is ½·mean ‖ŝ(x̃) + ε/σ‖²·σ² = ½·mean ‖σŝ(x̃) + ε‖² (Vincent's objective
// with the usual σ² weighting of Song & Ermon 2019). Its minimiser over scores is the
// score of p_σ = p ∗ N(0, σ²I), the truth convolved with the noise, not of p: DSM
// learns a density broadened by σ (component variances plus σ²), and nothing but the
// network's smoothness fixes ℓ far from the data (the perturbed points lie within a
// few σ of it). The trainer adds the data lanes' cross-entropy and PxWeight times
// this loss.
//
// Lanes: the B data points (read by the cross-entropy only), then for data point i
// the four lanes B + k·B + i, k = 0..3, at x̃_i + h e_0, x̃_i − h e_0, x̃_i + h e_1,
// x̃_i − h e_1: P = 5B, and no passes beyond them (GradEvals 0). The derivative of the
// loss in ℓ at lane x̃ ± h e_d is ±(σŝ_d + ε_d)·σ/(2h)/B. Perturbations are drawn from
// the run's st.Rng.
//
// Options (jemcheck's defaults, for 2-D tasks on a box of half-width 5 with component
// sd about 0.3 to 0.6):
//
//   - dsm_sigma, σ = 0.2. Vincent and Pang et al. give no 2-D default; the choice
//     trades the bias of p_σ (a component of sd 0.3 is fitted as 0.36, one of 0.6 as
//     0.63) against how far from the data the loss reaches. Trained 3000 steps on the
//     test mixture (32-32 network), σ = 0.2 reached cell TV 0.12 from the truth
//     (exact JEM 0.07), σ = 0.1 0.44, σ = 0.3 0.14, σ = 0.5 0.21.
//   - dsm_h, h = 0.25·σ (the option is h/σ, so that it follows σ in a sweep). The
//     central difference's error is O(h²) times ℓ's third derivative, under the
//     known-answer test's standard error at h/σ 0.25 and 0.5; float32 rounding of ℓ (about 1e-6 relative)
//     costs about 1e-6·|ℓ|/h in the score, negligible at h = 0.05.
//
// What jemcheck changed: Pang et al. difference along random directions (the sliced
// form) and expand the squared norm; here the score is differenced along both axes
// (two directions cover a 2-D score exactly, at four lanes per point) and the squared
// error is taken as is. Single noise level, no annealing (no σ input to the network).
//
// Known answer (dsm_test.go): on exact draws of a Gaussian mixture, the loss of
// β·log p_σ is least at β = 1 and dL/dβ(1) is 0 within 3 standard errors; with the
// clean β·log p the minimiser is β* ≈ 0.88 at the defaults, the noise's bias.
//
// On images (images.go, models/cnn's DSM) the loss is exact: the score is the CNN's
// input gradient and its parameter gradient double backprop through it, so dsm_h does
// not apply there (refused); dsm_sigma is σ per pixel.
package dsm

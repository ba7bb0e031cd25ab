// Package tre is telescoping density-ratio estimation (Rhodes, Xu & Gutmann, NeurIPS
// 2020) of JEM's q(x) ∝ exp ℓ(x), ℓ(x) = log Σ_y exp f(x)[y], on continuous tasks in
// ℝ^D (the plane, D = 2; block tasks, D = 2B, on the additive and the joint model),
// adapted to jemcheck's single energy model.
//
// What it optimises. Waymarks k = 0..m between the data and the noise: one noise draw
// ε per data point x_0 and x_k = √(1−α_k²)·x_0 + α_k·ε, α_k = k/m (the paper's "linear
// combinations" waymarks; α_0 = 0 the data, α_m = 1 the noise). Bridge k estimates
// log p_k/p_{k+1} by logistic regression of waymark k against waymark k+1; the loss is
// the sum of the m bridges' logistic losses (each a mean over the batch's pairs), and
// the telescoping sum of the bridges' log ratios is the model's log p_0/p_m. A step has
// B·(m+1) lanes (waymark k in lanes kB..(k+1)B).
//
// What jemcheck changed (an adaptation, not the paper's method). The paper gives every
// bridge its own ratio model (separate networks, or one network with a per-bridge
// head). jemcheck has one energy network, so the bridges share it: bridge k's log ratio
// is
//
//	r_k(u) = a_k·(ℓ(u) − c − log pn(u)) + d_k,  a = softmax(θ),  Σ_k d_k = 0,
//
// with learned scalars (the objective's 2m parameters: c, θ_0..θ_{m−1},
// d_0..d_{m−2}; d_{m−1} = −Σ the others), so that Σ_k r_k = ℓ − c − log pn exactly and c
// is the learned log normaliser. The bridges start at a_k = 1/m, d_k = 0. This family
// holds the true bridges only where every waymark's log ratio is affine in log p −
// log pn (e.g. an isotropic Gaussian against an isotropic Gaussian noise of the same
// mean); elsewhere the bridges are misspecified and the loss's minimiser is not the
// truth: on kernel's three-component mixture, with a_k = 1/m, the loss of β·log p is
// least at β ≈ 0.6–0.8, not 1 (tre_test.go logs it). With m = 1 tre is nce with ν = 1.
//
// The noise (tre_noise), the last waymark: "gaussian" (default), the Gaussian with the
// mean and full D×D covariance of the run's training draws times tre_inflate (default
// 1), the choice of the TRE paper's and NCE's experiments; or "uniform" on the task's
// box [−Box, Box]^D (nce.Noise, D-dimensional, the plane's numbers bit for bit). The
// uniform's log density is the constant −D·log(2Box) everywhere, including the
// waymarks that leave the box (a feature of the bridges there, not a density). The
// waymarks mix each coordinate alike, in any D. The paper's data are not centred here:
// with the Gaussian noise the waymarks √(1−α²)·x_0 + α·ε of data and noise of mean μ
// have mean (√(1−α²) + α)·μ, off both where μ is far from 0.
//
// m (tre_m, default 4). The paper tunes the number and spacing of waymarks per
// experiment and prescribes no single default; jemcheck takes 4 bridges, equally
// spaced in α.
//
// c starts at the importance-sampling estimate of the initial model's log Z under the
// noise (as nce's). Every draw comes from the run's own stream (Step.Rng).
//
// Reported (Result2D.Stats): log_z_learned (the final c), log_z_init, and share_min,
// share_max (the bridges' smallest and largest a_k).
//
// Known answers (tre_test.go): where the family holds the true bridges the loss of
// β·log p at the true bridges is least at β = 1 and its gradient in (β, c, θ, d) is 0
// within 3 standard errors; the coefficients and the parameters' gradient match finite
// differences; trained runs are deterministic by seed and c approaches the exact log Z.
// blocks_test.go: on a 2-block task (D = 4) tre with the uniform noise brings the
// additive model's exact joint KL from 6.8 nats (start; the baseline's 7.2) to within
// 0.25 nats of exact JEM's (0.04); with the data's Gaussian it learns slowly (1.7 after
// 1000 steps); on the joint MLP in D = 8 it stays finite and lowers its training loss.
// The TRE paper's prediction that NCE fails far from the noise is measured on a narrow
// mixture (~6 nats from the uniform noise, short of the paper's tens of nats): there the
// single-energy tre does not beat nce (TestChasm logs the numbers).
package tre

// Package snl is the self-normalised likelihood (arXiv 2503.07021, 2025) on the fused
// kernels' continuous tasks in ℝ^D (the plane, D = 2; block tasks, D = 2B, on the
// additive and the joint model): maximum likelihood of q(x) = exp ℓ(x)/Z without Z,
// through one learned scalar b.
//
// What it optimises. For any b, log Z ≤ e^{−b}Z + b − 1 (log t ≤ t − 1 at t = Z/e^b),
// with equality at b = log Z. So
//
//	L(θ, b) = −mean_i ℓ(x_i) + e^{−b}·Ẑ + b − 1
//
// upper-bounds the NLL −mean ℓ(x_i) + log Z and is minimised jointly at b = log Z and
// the maximum-likelihood θ. Z = ∫_box exp ℓ is estimated by importance sampling,
// Ẑ = (1/n) Σ_j exp ℓ(u_j)/r(u_j) over n = N·B proposal draws u_j ~ r on the box: the
// bound's value is then unbiased (linear in Ẑ), which the NLL's log Ẑ is not. e^{−b}Ẑ
// is computed by log-sum-exp. Gradients: −1/B per data lane, e^{−b}·w_j/n per proposal
// lane (w_j = exp ℓ(u_j)/r(u_j)), and 1 − e^{−b}Ẑ in b. b is st.Extra[0], trained by
// Adam beside the network at the run's learning rate; since a constant shift of ℓ
// also trades against e^{−b}Z, the network itself moves toward self-normalisation
// (Z ≈ e^b). The trainer adds the data lanes' cross-entropy and PxWeight times L.
//
// Lanes: B data, then the n = N·B proposal draws (P = B(1+N); GradEvals 0). At the
// first step b is set to the importance-sampling log Ẑ of the initial model (one
// forward pass of the proposal draws through st.LSE, not counted in the budget), so
// that the bound starts tight instead of at b = 0.
//
// Options:
//
//   - snl_n, N = 4 proposal draws per data point (jemcheck's; as ED's M).
//   - snl_proposal, "gaussian" (default) or "uniform". gaussian: a diagonal Gaussian
//     (a product of D one-dimensional ones) fitted to the run's training draws
//     (st.Data in Begin; to the first minibatch when the run trains on fresh draws),
//     each sd inflated by 1.5 (Inflate), truncated to the box per axis and mixed with
//     the uniform density on the box at weight 0.1 (Defensive: Hesterberg's defensive
//     importance sampling, so that no weight exceeds exp ℓ·volume/0.1 wherever the
//     model puts mass). uniform: the box's uniform density. The paper's own proposals
//     are not reproduced; the inflation and defensive weight are jemcheck's choices.
//
// Diagnostics (Result2D.Stats): log_z_learned = b at the end; log_z_is = the last
// step's importance-sampling log Ẑ; is_ess_share = its weights' effective sample size
// over n.
//
// What jemcheck changed: Z is over the box [−Box, Box]^D (where jemcheck normalises
// q), proposal draws lie in the box; b's initial value as above. On the plane the
// D-dimensional code does the 2-D arithmetic (the plane's numbers bit for bit). In D
// dimensions the uniform proposal's importance weights degenerate (an IS effective
// sample share of 0.002 on a 4-dimensional block task, against 0.24 for the Gaussian),
// so the Gaussian is the one to use there.
//
// On binary tables (bits.go, methods.KindBits; x ∈ {0,1}^D, kernel.TrainBits) Z is
// the sum over the 2^D states and the proposal a product of Bernoullis: snl_proposal=
// gaussian (the default) reads as the one of the draws' bit frequencies, clamped to
// [0.05, 0.95] (nce.BitsClamp) and mixed with the uniform on the states at weight 0.1;
// snl_proposal=uniform is the uniform. bits_test.go: on a 6-bit, 2-class table both
// bring the exact joint KL from the baseline's 1.53 to exact JEM's level (0.022 and
// 0.017 against 0.021, 800 steps), b within 0.1 nats of the enumerated log Z.
//
// Known answers: snl_test.go on the plane (b = log Z minimises the bound, the loss of
// β·log p is least at β = 1, derivatives match finite differences, b approaches the
// exact log Z); blocks_test.go on a 2-block task (D = 4): the additive model's exact
// joint KL from 6.8 nats (start; the baseline's 7.2) to within 0.25 nats of exact
// JEM's (0.04), b within 0.3 nats of the model's log Z on the box; on the joint MLP in
// D = 8 the run stays finite and lowers its training loss.
package snl

// Package nce is noise-contrastive estimation (Gutmann & Hyvärinen, AISTATS 2010;
// JMLR 2012) of JEM's q(x) ∝ exp ℓ(x), ℓ(x) = log Σ_y exp f(x)[y], on 2-D tasks.
//
// What it optimises. The model's log density is ℓ(x) − c with c a learned log
// normaliser (the objective's one parameter, trained by Adam beside the network).
// With ν noise draws y per data point x and G(u) = ℓ(u) − c − log(ν·pn(u)), the loss
// is logistic regression of data against noise,
//
//	L = −mean_data log σ(G(x)) − ν·mean_noise log(1 − σ(G(y))),
//
// Gutmann & Hyvärinen's J_T up to sign; its population minimiser is ℓ − c = log p, so
// that c is the model's log Z. The trainer adds the classes' cross-entropy and
// PxWeight·L. A step has B·(1+ν) lanes: the B data, then the ν·B noise draws.
//
// The noise (nce_noise). "gaussian" (default): the Gaussian with the mean and full
// 2×2 covariance of the run's training draws, the covariance times nce_inflate
// (default 1): the papers' choice (a Gaussian matching the data's mean and covariance;
// Gutmann & Hyvärinen state that the noise should be close to the data). "uniform":
// uniform on the task's box [−Box, Box]², where jemcheck normalises q: then c
// estimates exactly the log Z the plane kind computes.
//
// ν (nce_nu, default 10). The papers show the estimator's error falling as ν grows
// (approaching maximum likelihood's as ν → ∞), with diminishing returns, and
// recommend as many noise draws as one can afford; they prescribe no single value.
// ν = 10 is jemcheck's choice (not verified against a stated default in the papers).
//
// What jemcheck changed. The unnormalised model is JEM's classifier read as an
// energy, not a separately parametrised density. c starts at the importance-sampling
// estimate of the initial model's log Z under the noise, log mean exp(ℓ(y) − log
// pn(y)) over the first step's noise draws (one extra forward pass per run), instead
// of 0, so that Adam does not spend its steps on the normaliser's scale. The Gaussian
// is fitted to the run's training draws (or, for a run on fresh draws, to its first
// minibatch). Every draw comes from the run's own stream (Step.Rng).
//
// Reported (Result2D.Stats): log_z_learned, the final c (nce's belief of the model's
// log Z: on the noise's support, which for the Gaussian is not the whole box, so the
// model's mass far from the data is seen only through the Gaussian's tails), and
// log_z_init, c's initial value.
//
// Known answers (nce_test.go): on exact draws of a known mixture the loss of β·log p
// is least at β = 1 with dL/dβ and dL/dc at (1, 0) zero within 3 standard errors; the
// coefficients match finite differences; trained runs are deterministic by seed and c
// approaches the exact log Z on the box.
//
// On images (images.go, models/cnn's NCE) the noise is the Gaussian with the mean and
// full covariance of the run's training draws (times nce_inflate; nce_noise=uniform is
// refused: an image has no box), c is learned alike, and the row's method_stats carry
// log_z_learned, log_z_init, log_z_is (an importance-sampling estimate of log Z_θ under
// the noise at the last step) and nce_ridge; there is no exact log Z to set beside them.
package nce

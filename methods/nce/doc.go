// Package nce is noise-contrastive estimation (Gutmann & Hyvärinen, AISTATS 2010;
// JMLR 2012) of JEM's q(x) ∝ exp ℓ(x), ℓ(x) = log Σ_y exp f(x)[y], on continuous
// tasks in ℝ^D: the plane (D = 2, kernel.Train2D) and the block tasks (D = 2B, the
// block-additive model of kernel.TrainAdditive and the joint MLP of kernel.TrainJoint),
// one objective (kernel.Objective) for every D and model.
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
// D×D covariance of the run's training draws, the covariance times nce_inflate
// (default 1): the papers' choice (a Gaussian matching the data's mean and covariance;
// Gutmann & Hyvärinen state that the noise should be close to the data). It is drawn
// and evaluated through the covariance's Cholesky factor (a covariance that is not
// positive definite, e.g. of fewer draws than D, gets a ridge: GaussianNoiseD). On the
// plane the D-dimensional code does the 2-D arithmetic, so plane runs are bit for bit
// those of the 2-D version (TestNoisePlaneBitForBit). "uniform": uniform on the task's
// box [−Box, Box]^D, where jemcheck normalises q: then c estimates exactly the log Z
// the plane and block kinds compute. In D dimensions a Gaussian fitted to the data
// reaches the model's mass away from the data only through its tails, and the uniform
// on the box puts most draws where the data are not (its share of the data's region
// shrinks geometrically in D): neither is the papers' setting of low-dimensional data,
// and which wins depends on the task (the block tests measure both).
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
// approaches the exact log Z on the box. noise_test.go: the plane's noise is the 2-D
// arithmetic's bit for bit; in D up to 64 the log density is the closed form and a
// fit to the noise's own draws recovers its moments. blocks_test.go: on a 2-block task
// (D = 4) nce brings the additive model's exact joint KL from 6.8 nats (start; the
// baseline's 7.2) to within 0.25 nats of exact JEM's (0.04), with c within 0.6 nats of
// the model's log Z on the box, for the Gaussian, inflated Gaussian and uniform
// noises; on the joint MLP in D = 8 it stays finite and lowers its training loss.
//
// On binary tables (bits.go, methods.KindBits; x ∈ {0,1}^D, kernel.TrainBits) the
// noise is a product of Bernoullis: nce_noise=gaussian (the default) reads as the one
// of the draws' bit frequencies (a binary table's moments are its means), each clamped
// to [0.05, 0.95] (BitsClamp) so that every state keeps some noise mass;
// nce_noise=uniform is the uniform on the 2^D states, where c estimates exactly the
// enumerated log Z. nce_inflate does not apply there and is refused unless 1.
// bits_test.go: on a 6-bit, 2-class table both noises bring the exact joint KL from the
// baseline's 1.53 to exact JEM's level (0.015 and 0.014 against 0.021, 800 steps), c
// within 0.1 nats of the enumerated log Z.
//
// On images (images.go, models/cnn's NCE) the noise is the Gaussian with the mean and
// full covariance of the run's training draws (times nce_inflate; nce_noise=uniform is
// refused: an image has no box), c is learned alike, and the row's method_stats carry
// log_z_learned, log_z_init, log_z_is (an importance-sampling estimate of log Z_θ under
// the noise at the last step) and nce_ridge; there is no exact log Z to set beside them.
package nce

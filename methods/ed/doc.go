// Package ed is Energy Discrepancy (Schröder, Ou, Lim, Li, Vollmer & Duncan, NeurIPS
// 2023): sampler-free, it compares the energy at each draw with M perturbed negatives.
//
// On the plane and on block tasks (D = 2B coordinates, the block-additive model and the
// joint MLP) it is one kernel.Objective (Objective, objective.go), written once for any
// D: per data point x, y = x + √t ξ and M negatives x'_j = y + √t ξ'_j, ξ and ξ'_j
// standard normal in every coordinate (the paper's Gaussian perturbation, variance t per
// coordinate); on binary tables (st.Binary) the same objective draws the paper's
// Bernoulli perturbation y = x ⊕ ξ, x'_j = y ⊕ ξ'_j, each bit of ξ and ξ'_j flipped
// with probability t (t ≤ ½). Both perturbations are symmetric, so the loss is the
// same on every kind:
//
//	mean_i log(w/M + (1/M) Σ_j exp(E(x'_ij) − E(x_i))),
//
// E(x) = log Σ_y exp f(x)[y] the model's log unnormalised q(x) and w the stabiliser;
// the trainer adds it, times px_weight, to the data's cross-entropy. With w = 1 the
// data point counts as one more draw beside its M negatives, and the loss's minimiser is
// the truth for any M (TestLossMinimisedAtTruth; with w ≠ 1 only as M grows).
//
// Where it differs from the paper: the negatives are not clipped to the task's box
// (the truth is q on the box, but a perturbation may leave it; the model is evaluated
// there as anywhere), and t is the same for every coordinate and every D, so in high D
// the negatives lie about √(2tD) from their data point and the term's gradient fades
// (the paper tunes t per data set; ed_t is a grid axis). On images the package trains
// the CNN's own ED (images.go, cnn.ED), not this objective.
package ed

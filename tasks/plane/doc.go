// Package plane is the task kind of continuous 2-D densities: "gmm:K,C" (a random
// Gaussian mixture per class), "moons:SIGMA", "circles:SIGMA", or "file" (mixtures read
// from --tasks_from). A task's truth is evaluated on the Grid×Grid grid of cells over
// the box [−Box, Box]² (prob.Grid): the point has Grid² x values (the cells) and K
// classes, its blocks carry each task's grid joint, and every table metric (KLs,
// accuracies, OOD, calibration) applies to the grid joint unchanged; the truth must
// hold its mass inside the box and be resolved by the grid (Validate says what to
// change when it is not).
//
// The models are tanh MLPs 2-H…-K on the coordinates, trained by the fused 2-D kernels
// (kernel.Train2D): baseline (cross-entropy), jem (exact JEM, Z on the
// TrainGrid×TrainGrid training grid), jem-converged (the same on full batches at lr ≥
// 0.01, a reference beside the others), oracle (exact JEM on fresh draws of the truth
// every step) and the sampler recipes (sgld, the paper's persistent SGLD, and the
// others methods lists for this kind), whose log q(x) gradient comes from samples.
// A cell's logit is the log of the model's mean of exp f(x)[y] over the cell, by the
// 3×3 Gauss–Legendre rule. The points' verdict is the Samplers rule: each recipe
// against exact jem on the same tasks and draws.
//
// Beyond the KLs, promises.go measures the paper's promises against the Bayes-optimal
// answer on held-out draws (OOD detection, calibration, robustness, samples), and
// support.go gives the grid's cells as an export's evaluation support.
package plane

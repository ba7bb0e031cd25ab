// Package kernel trains jemcheck's small models with fused float32 CPU kernels, beside
// the GoMLX path of package models (which stays the path for xla:cpu/xla:cuda and for
// models the kernels do not cover). Pure Go, no cgo, no GoMLX.
//
// # Table kernel (Train)
//
// The linear model and MLPs with up to 4 tanh hidden layers (width ≤ 256) on scalar or
// one-hot x, on X·K ≤ 4096 cells: baseline (cross-entropy), JEM on counts (exact Z) and
// any px weight, full batch or minibatch cell weights. Runs are trained in blocks of L
// lanes (L a multiple of 16: 256 for the 2×2 linear model, 16 for an 8×4 MLP 16,16)
// whose state is kept "lane-major", every scalar of the per-run algorithm a vector of L
// floats: element j of lane l at a[j·L+l]. One step is one pass over the block:
// forward, dL/dlogits (softmaxes), backward to every parameter, Adam (the scaled-moment
// form of models/adam.go), and every CheckEvery steps the divergence guard (a lane whose
// parameters or moments went non-finite is restored to the last check and frozen, as on
// the GoMLX path). Every operation is per lane, so a run's result never depends on its
// block-mates.
//
// # SGLD kernel (SGLD.Step)
//
// One training step of JEM with sampled negatives for an MLP 2-H-H-K: T SGLD steps on
// the negatives (input gradients of LSE_y f(x)), forward and backward on data and
// negatives, Adam. Here the B points are the lanes and the matrix products are small
// GEMMs with a broadcast weight. Not wired into the pipeline yet.
//
// # 2-D, block and binary trainers (Train2D, TrainAdditive, TrainJoint, TrainBits)
//
// Complete training loops over blocks of runs, one run at a time per goroutine: the
// plane's MLP on x ∈ ℝ² (Train2D, sgld2d.go), the block-additive model and the joint
// MLP of block tasks on x ∈ ℝ^2B (TrainAdditive, TrainJoint: additive.go, joint.go) and
// the MLP of binary tables on x ∈ {0,1}^D (TrainBits, bits.go). The kernels know three
// losses and no training recipe by name: the baseline's cross-entropy (a spec with
// neither Exact nor Objective), exact JEM (Spec2D.Exact, SpecBits.Exact: the model's own
// log Z on the training grid, on each block's grid, or by enumeration; the joint model
// refuses it), and a method's Objective (objective.go: the step contract every recipe
// of methods/<name> is written against, run by all four trainers). The recipes'
// samplers that the kernels export for them are SGLDSteps (sgld), Langevin (mala,
// jarzynski, shortrun; langevin.go), GWGDraw and GWGLogProb (pcd on binary tables;
// bits_gwg.go), and Chain2D (the plane's sampler distribution; chains2d.go).
//
// # Vectorisation
//
// The kernels are written in array primitives (vec_generic.go). Built with
// GOEXPERIMENT=simd on amd64 and run on an AVX-512 CPU, the primitives use
// simd/archsimd (16 float32 lanes); otherwise portable scalar loops (the Go compiler
// does not auto-vectorise). Both do the same float32 operations in the same order per
// lane, without fused multiply-adds, so they give the same bits
// (TestVecMatchesGeneric): same seeds, same outputs, in either build.
//
// # Accuracy of the float32 functions
//
// Exp32, Tanh32 and Log32 (Cephes-style range reduction and minimax polynomials) are
// checked by TestMath32Accuracy against float64 math on dense sweeps of float32 inputs:
//
//   - Exp32: relative error ≤ 1.5e-7 on [-87.3, 88] (measured max 8.1e-8); inputs below
//     -87.34 give the smallest normal float32 (1.2e-38) and above 88 give exp(88), so no
//     subnormals or infinities are produced;
//   - Tanh32: relative error ≤ 2.5e-7 on [-12, 12] (measured max 1.3e-7); |x| ≥ 10 gives
//     ±1 exactly;
//   - Log32: relative error ≤ 1.5e-7 where |log x| > 0.5 (measured max 7.8e-8) and
//     absolute error ≤ 5e-8 where |log x| ≤ 0.5 (measured 2.5e-8), on positive normal
//     floats; 0 and subnormals give -Inf, negatives NaN.
//
// float32 itself rounds with a relative error of 6e-8 (half an ulp), so these are 1–3
// ulps. Against the GoMLX path, after tens of Adam steps the trained logits agree to
// about 1e-5 (TestKernelMatchesGoMLX in package models).
package kernel

// Package cnn is a convolutional joint energy-based model (JEM) on GoMLX: a small CNN
// classifier f: S×S×1 images → K logits whose LSE_y f(x)_y is the (negative) energy of
// the density p(x) ∝ exp(LSE_y f(x)_y) (Grathwohl et al. 2020).
//
// # Architecture
//
// A Spec, parsed from "cnn:C1,C2,...[,dense:H][,swish|,tanh]", is a stack of 3×3 "same"
// conv layers with C_l output channels, each followed by a smooth activation (swish by
// default, or tanh: SGLD needs input gradients) and 2×2 average pooling (smooth, unlike
// max pooling), then an optional dense hidden layer and a dense head to K logits. Images
// are S×S×1 (S = 8, 16, 28, ...; every pooling needs an even side, so S=28 allows two
// conv layers). Spec.NumParams counts parameters; Init draws them from a uint64 seed
// (PCG; equal seeds give bit-identical parameters and, with the same options, bit-
// identical training).
//
// In the graph, activations are spatial-major [pixels, N, C]. A convolution is an
// im2col Gather of the 9 neighbours of every pixel (out-of-image neighbours read an
// appended zero row) and one DotGeneral with the [9, Cin, Cout] kernel; pooling is a
// Reshape and a ReduceSum. Reasons: SimpleGo (GoMLX v0.26.0) lacks Pad and Reverse, which
// the VJPs of GoMLX's ConvGeneral and pooling ops need, and GoMLX's VJP of DotGeneral
// materialises a broadcast product ([M, N, K] for an M×K·K×N product), so the backward
// pass (parameters and input) is written by hand with DotGeneral and Gather. GoMLX
// autodiff of the same forward graph (TrainOptions.Autodiff) gives the same numbers
// (tests: ≤3e-7 after three Adam steps; input gradients ≤2e-8 apart, both within 1e-5 of
// central finite differences).
//
// # Methods
//
// Train runs Adam (β = 0.9, 0.999, ε = 1e-8) on minibatches drawn as seeded shuffled
// epochs, on cross-entropy plus PxWeight times the log q(x) term of TrainOptions.Objective
// (objective.go: the one step contract; nil trains cross-entropy alone):
//   - SGLD (sgld.go): mean LSE f(x̃) − mean LSE f(x) (the gradient of −log q(x)),
//     negatives x̃ from a host-side replay buffer (uniform [-1,1] start, re-initialisation
//     probability ReinitFreq) refined by SGLD x ← x + LR·∇x LSE f(x) + Std·ξ, the JEM
//     recipe (defaults 20 steps, LR 1, Std 0.01, ReinitFreq 0.05, buffer 10000). The SGLD
//     steps are unrolled inside the one training graph (GoMLX v0.26 has no While), the
//     noise comes from GoMLX's RNG with a seeded state. Optional L2 (mean LSE² on data
//     and samples).
//   - ED, DSM and NCE (recipes.go): sampler-free terms on LSE f.
//
// Optional DataNoise adds Gaussian noise to every minibatch.
//
// Divergence — a non-finite loss or |loss| > 1e8 (JEM's guard) — stops training; the
// parameters of the last good step come back and Stats.Diverged/DivergedStep say so.
// GoMLX panics are recovered into errors.
//
// Logits and Energy evaluate a Params on a batch (Energy optionally with the input
// gradient of LSE, for annealed importance sampling).
//
// # Backends
//
// TrainOptions.Backend names a GoMLX backend as the models package does: "" is
// DefaultBackend (models.DefaultBackend, SimpleGo with the sequential executor, on CPU),
// "go", and "xla:cpu" / "xla:cuda" when built with -tags xla and a PJRT plugin is
// installed. Unknown or absent backends are errors. Logits and Energy use DefaultBackend.
//
// # Runs
//
// Every Train call is one run with its own parameters, backend and graph; train several
// runs from goroutines. Runs are not stacked into one graph: on SimpleGo the cost is per
// element, and the fixed per-call overhead (tens of µs) is small against a training step
// (milliseconds, see the benchmark), so stacking could save only a few percent on CPU.
//
// # ONNX
//
// LoadONNX reads an ONNX classifier with github.com/gomlx/onnx-gomlx v0.3.4 (which builds
// on GoMLX v0.26.0) and ONNXModel.Logits runs it on DefaultBackend. On SimpleGo that
// version cannot run a PyTorch CNN as exported: it has no Sigmoid op (so no SiLU/swish),
// and both "same"-padded convolutions and torch 1.13's avg_pool2d export use Pad, which
// SimpleGo lacks (ONNXModel now falls back on a concatenation, below); the test model (testdata/make_tiny_onnx.py) is a valid conv, tanh,
// reshape-mean pooling and a dense head, and matches torch to 3e-8.
//
// ONNXModel.Energy is LSE_y f(x)[y] and its input gradient by GoMLX autodiff
// (graph.Gradient) through the onnx-gomlx graph. SimpleGo lacks Reverse (the input
// gradient of a convolution reverses its kernel) and Pad (onnx-gomlx's "same"
// convolutions, torch's avg_pool2d export, the gradient of a Slice), and GoMLX defines no
// gradient for Pad: the ONNX models run on a backend wrapper (onnxgrad.go) that falls
// back on exact equivalents (Reverse: a product with the anti-identity; Pad: a
// concatenation with the fill value, interior padding by interleaving; empty strides and
// dilations read as 1s) and registers Pad's gradient (a strided slice). A CNN of "same"
// convolutions, relu, tanh, avg_pool2d and a linear head (testdata/torchcnn-8x2.onnx)
// then gives torch's logits (2e-8) and torch's autograd input gradient (2e-9); max_pool2d
// runs forward but its gradient (SelectAndScatterMax) is not in SimpleGo, and Sigmoid
// (SiLU) does not convert. TestONNXEnergy also checks tiny.onnx's gradient against finite
// differences.
//
// # Costs
//
// scripts/bench-cnn.sh (one thread, cnn:16,32, S=16, K=10, batch 64; shared 2-core
// Xeon VM under load, so ±30%), ms per step:
//
//	case        Go hand  torch 1.13  ratio   Go autodiff  ratio
//	baseline       83       3.9       21×        357        92×
//	sgld-step      57       3.6       16×        209        57×
//	jem-sgld20   1484      79         19×       8185       103×
//
// SimpleGo's DotGeneral (about 1 GFLOP/s here) dominates; Gather (im2col), transposes
// and the Logistic op follow. A JEM step with n SGLD steps costs about n forward+input-
// backward passes on the batch plus one forward+backward on 2× the batch. The per-call
// overhead of the sequential executor (tens of µs) is under 0.1% of a step, which is why
// runs are not stacked into one graph on CPU.
package cnn

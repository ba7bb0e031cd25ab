// Package models trains many tiny classifiers f(x) -> K logits at once, either with
// cross-entropy (the baseline) or as Joint Energy-based Models (JEM), where the logits
// are read as negative energies and q(x,y) = exp(f(x)[y]) / Z with Z computed exactly by
// enumerating all X*K cells.
//
// It is the only package of the project that imports GoMLX. All runs of one Train call
// that share a Shape are stacked into one computation graph: every parameter has a
// leading run axis (or, on the fast path, one [R] tensor per scalar parameter), the
// loss is summed over runs so each run's gradient is its own, and a vectorised Adam
// with a per-run learning rate updates them. A run's result depends only on its own
// Run (counts, samples, learning rate, px weight and seed), never on its batch-mates.
//
// # Loss
//
// For one run with cell weights c[x,y] (W = sum of c) and logits f(x)[y]:
//
//	CE      = -(1/W) sum_{x,y} c[x,y] log softmax_y f(x)[y]
//	JEMterm = (1/W) sum_x c(x) (-LSE_y f(x)[y]) + log Z,   log Z = LSE over all X*K cells
//	loss    = CE + PxWeight * JEMterm
//
// PxWeight = 1 gives exactly the joint negative log-likelihood -(1/W) sum c log q(x,y).
// On counts this equals the mean per-sample loss over the samples the counts came from.
//
// # Models
//
//   - "linear": f(x) = e(x) W + b.
//   - "mlp:H1,H2,...": tanh hidden layers of the given widths, then a linear output layer.
//
// e(x) is the encoding of x: "scalar" feeds the float value x (a 1-dimensional input, as
// the seed notebook does), "onehot" feeds the one-hot vector of length X.
//
// # Initialisation
//
// Parameters are drawn on the host from Run.Seed only: uniform(-1,1) for every weight
// and bias of the linear model (as the hand-fused peer does); for an MLP, weights are
// Glorot-uniform, uniform(-a,a) with a = sqrt(6/(fan_in+fan_out)), and biases are 0.
//
// # Numerics
//
// Training runs in float32 (results are returned as float64). Adam uses beta1=0.9,
// beta2=0.999, eps=1e-8 with bias correction, in the algebraically equivalent form
// m' = m/(1-beta1), v' = v/(1-beta2) that saves operations per step.
//
// # Execution paths
//
// On CPU the default (NewTrainer("")) trains every model the fused float32 kernels of
// package models/kernel cover (linear and MLPs of up to 4 small tanh layers, on up to
// 4096 cells) there: one fused pass per step over a block of runs held in cache, the
// same initialisation, cell weights, minibatch order and divergence checks as below,
// results equal to the GoMLX paths' to float32 rounding. "kernel" uses only the
// kernels; a GoMLX backend ("go", "go:ops_sequential", "xla:cpu", "xla:cuda") trains
// everything in GoMLX graphs:
//
//   - Fast path (linear model, X*K <= 256): split form, one [R] tensor per scalar
//     parameter and cell, hand-derived gradient, graphs specialised on the px weights
//     (runs are grouped into PxWeight 0, 1 and other). About 70 element-wise ops per step
//     for the 2x2 JEM model; only same-shape loops on SimpleGo.
//   - Tensor path (MLPs and larger tables): [R, in, out] parameters, loss gradient with
//     respect to the logits by GoMLX autodiff, then back-propagated through the dense
//     layers by hand with Einsum (GoMLX's own Einsum VJP builds broadcast products that
//     are several times slower on SimpleGo). Full autodiff remains as the tested reference.
//
// Steps are unrolled in the graph (GoMLX has no loop op): 25 per call on the fast path,
// 5 on the tensor path, with a second graph for the remainder. Runs per graph: at most
// DefaultRunsPerBatch (4096); BenchmarkTrain measured about 55k JEM and 72k baseline
// runs per CPU-second on one core at that size (2x2, linear, 300 steps).
//
// # Divergence
//
// A run whose parameters (or Adam moments) become non-finite is masked: its state is
// restored to the last finite values checked (the start of the unrolled block of steps
// in which it went non-finite; see Trainer) and frozen there, and its Outcome has
// Diverged=true. The other runs of the batch are unaffected. A run whose final loss is
// non-finite is also reported as diverged. Adam moves each parameter by at most about
// LR per step, so in float32 this happens only on overflow (LR of order 1e36 and beyond,
// or an LR that is itself +Inf in float32); huge but finite parameters are not flagged.
package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// Encodings of x.
const (
	EncodingScalar = "scalar" // x fed as the float value x
	EncodingOneHot = "onehot" // x fed as the one-hot vector of length XValues
)

// Limits that keep a single graph reasonable.
const (
	maxXValues   = 1 << 16
	maxClasses   = 1 << 12
	maxCells     = 1 << 20
	maxHidden    = 1 << 12
	maxLayers    = 16
	maxStepsEver = 1 << 24
)

// Shape is what all runs in one batch share; runs are grouped by it.
type Shape struct {
	XValues, Classes int
	Encoding         string // "scalar" or "onehot"
	Model            string // "linear" or "mlp:H1,H2,..." (tanh hidden layers)
	Steps            int    // Adam steps
	BatchSize        int    // 0 = full batch on cell counts; >0 = minibatch SGD over the samples
}

// String is a compact description used in error messages.
func (s Shape) String() string {
	return fmt.Sprintf("X=%d K=%d enc=%s model=%s steps=%d batch=%d",
		s.XValues, s.Classes, s.Encoding, s.Model, s.Steps, s.BatchSize)
}

// Validate reports the first problem with s, or nil.
func (s Shape) Validate() error {
	if s.XValues < 1 || s.XValues > maxXValues {
		return fmt.Errorf("models: XValues must be in [1, %d], got %d", maxXValues, s.XValues)
	}
	if s.Classes < 2 || s.Classes > maxClasses {
		return fmt.Errorf("models: Classes must be in [2, %d], got %d", maxClasses, s.Classes)
	}
	if s.XValues*s.Classes > maxCells {
		return fmt.Errorf("models: XValues*Classes = %d cells exceeds the limit %d", s.XValues*s.Classes, maxCells)
	}
	switch s.Encoding {
	case EncodingScalar, EncodingOneHot:
	default:
		return fmt.Errorf("models: unknown encoding %q (want %q or %q)", s.Encoding, EncodingScalar, EncodingOneHot)
	}
	if _, err := ParseModel(s.Model); err != nil {
		return err
	}
	if s.Steps < 1 || s.Steps > maxStepsEver {
		return fmt.Errorf("models: Steps must be in [1, %d], got %d", maxStepsEver, s.Steps)
	}
	if s.BatchSize < 0 {
		return fmt.Errorf("models: BatchSize must be >= 0 (0 = full batch), got %d", s.BatchSize)
	}
	return nil
}

// ParseModel returns the hidden layer sizes of a model spec: "linear" gives nil,
// "mlp:H1,H2,..." gives [H1, H2, ...].
func ParseModel(s string) ([]int, error) {
	if s == "linear" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(s, "mlp:")
	if !ok {
		return nil, fmt.Errorf("models: unknown model %q (want \"linear\" or \"mlp:H1,H2,...\")", s)
	}
	parts := strings.Split(rest, ",")
	if len(parts) > maxLayers {
		return nil, fmt.Errorf("models: model %q has %d hidden layers, at most %d allowed", s, len(parts), maxLayers)
	}
	hidden := make([]int, len(parts))
	for i, p := range parts {
		h, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || h < 1 || h > maxHidden {
			return nil, fmt.Errorf("models: model %q: hidden size %q must be an integer in [1, %d]", s, p, maxHidden)
		}
		hidden[i] = h
	}
	return hidden, nil
}

// Run is one training run: its data, learning rate, px weight and seed.
//
// With Shape.BatchSize = 0 the run trains full-batch on Counts. With BatchSize > 0 it
// trains on minibatches of Samples (Counts is then only checked if given); a run with
// no Samples (e.g. the oracle, whose Counts are the true table) trains full-batch on
// its Counts at every step even in a minibatch batch.
type Run struct {
	Counts   []float64 // len X*K, row-major x*K+y: cell weights (sample counts, or the true p for the oracle). Full-batch loss uses these.
	Samples  []int32   // cell indices x*K+y of the N samples, in draw order; used only when BatchSize>0 (see below)
	LR       float64   // per-run Adam learning rate
	PxWeight float64   // 0 = baseline CE; 1 = JEM joint NLL; general w: CE + w*(-log p(x) term)
	Seed     uint64    // parameter init and minibatch order derive only from this
	// PCD, if set, estimates the log Z gradient with sampled negatives instead of the
	// exact softmax over all cells: pcd (persistent MH chains over x in a replay buffer)
	// or pcd-exact (exact draws from q(x) every step); see kernel.PCD. Its own Seed
	// drives every draw of the sampler. Only the fused CPU kernels train such runs (a
	// GoMLX backend, or a model they do not cover, is an error); the reported Loss stays
	// the exact loss.
	PCD *kernel.PCD
}

// Outcome is the result of one run.
type Outcome struct {
	Logits   []float64 // X*K, learned f(x)[y], row-major x*K+y
	Loss     float64   // final per-example training loss: on Counts (on the histogram of Samples for a minibatch run)
	Diverged bool      // the run went non-finite and was frozen at its last finite state
	Buffer   []int32   // runs with PCD: the final replay buffer (pcd) or the last step's negatives (pcd-exact), x values
	// AvgLogits are runs with PCD.AverageLast > 0: the logits at the parameters averaged
	// over the last AverageLast steps (nil if the run diverged).
	AvgLogits []float64
}

// validateRuns checks runs against a valid shape.
func validateRuns(s Shape, runs []Run) error {
	cells := s.XValues * s.Classes
	for i, r := range runs {
		if !(r.LR > 0) || math.IsInf(r.LR, 0) {
			return fmt.Errorf("models: run %d: LR must be finite and > 0, got %v", i, r.LR)
		}
		if !(r.PxWeight >= 0) || math.IsInf(r.PxWeight, 0) {
			return fmt.Errorf("models: run %d: PxWeight must be finite and >= 0, got %v", i, r.PxWeight)
		}
		if s.BatchSize > 0 && len(r.Samples) == 0 && len(r.Counts) == 0 {
			return fmt.Errorf("models: run %d: minibatch mode (BatchSize=%d) needs Samples (or Counts to train full-batch)", i, s.BatchSize)
		}
		if s.BatchSize == 0 || len(r.Samples) == 0 || r.Counts != nil {
			if len(r.Counts) != cells {
				return fmt.Errorf("models: run %d: len(Counts)=%d, want X*K=%d", i, len(r.Counts), cells)
			}
			w := 0.0
			for j, c := range r.Counts {
				if !(c >= 0) || math.IsInf(c, 0) {
					return fmt.Errorf("models: run %d: Counts[%d]=%v must be finite and >= 0", i, j, c)
				}
				w += c
			}
			if !(w > 0) {
				return fmt.Errorf("models: run %d: Counts sum to %v, need > 0", i, w)
			}
		}
		if err := r.PCD.Validate(); err != nil {
			return fmt.Errorf("models: run %d: %w", i, err)
		}
		if s.BatchSize > 0 {
			for j, c := range r.Samples {
				if c < 0 || int(c) >= cells {
					return fmt.Errorf("models: run %d: Samples[%d]=%d out of range [0,%d)", i, j, c, cells)
				}
			}
		}
	}
	return nil
}

package models

import (
	"context"
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// The kernel path: models the fused float32 CPU kernels (package models/kernel) cover
// are trained there instead of in a GoMLX graph. The runs' initial parameters, cell
// weights and minibatch order come from the same host code as on the GoMLX path
// (initTheta, normalise, histogram, sampler), the divergence guard checks at the same
// steps as the GoMLX path's graph calls, and the maths is the same in float32, so the
// two paths agree to float32 rounding (TestKernelMatchesGoMLX).

// kernelUse says which path a Trainer trains on.
type kernelUse int

const (
	kernelAuto kernelUse = iota // the kernel where it covers the model, else GoMLX
	kernelOnly                  // the kernel; uncovered models are an error
	kernelOff                   // GoMLX only
)

// useKernel reports whether Train sends shape to the kernel. The GoMLX test knobs
// (noFast, fullAutodiff) select GoMLX paths, so they keep GoMLX.
func (t *Trainer) useKernel(shape Shape, hidden []int) bool {
	if t.kernel == kernelOff || (t.kernel == kernelAuto && (t.noFast || t.fullAutodiff)) {
		return false
	}
	return kernel.Covers(shape.XValues, shape.Classes, shape.Encoding == EncodingOneHot, hidden)
}

// pcdKernel is the routing of a call with PCD runs (Run.PCD): nil if the Trainer sends
// it to the fused CPU kernels, which alone train them (whatever the GoMLX test knobs),
// else the error: a GoMLX backend, or a model the kernels do not cover.
func (t *Trainer) pcdKernel(shape Shape, hidden []int) error {
	if t.kernel == kernelOff {
		return fmt.Errorf("models: backend %q: pcd trains on the fused CPU kernels only; use --backend=kernel or the default", t.config)
	}
	if !kernel.Covers(shape.XValues, shape.Classes, shape.Encoding == EncodingOneHot, hidden) {
		return fmt.Errorf("models: pcd trains on the fused CPU kernels only, which do not cover %s", shape)
	}
	return nil
}

// hasPCD reports whether any run has a PCD sampler.
func hasPCD(runs []Run) bool {
	for _, r := range runs {
		if r.PCD != nil {
			return true
		}
	}
	return false
}

// kernelCheckEvery is the number of steps between divergence checks: the steps per
// graph call of the GoMLX path that would train the shape.
func (t *Trainer) kernelCheckEvery(shape Shape, hidden []int) int {
	XK := shape.XValues * shape.Classes
	if len(hidden) == 0 && XK <= fastMaxCells {
		return fastUnroll(t.unrollFast, XK)
	}
	return max(1, t.unrollGeneral)
}

func (t *Trainer) trainKernel(ctx context.Context, shape Shape, hidden []int, runs []Run) ([]Outcome, error) {
	ls := layerDims(shape, hidden)
	XK := shape.XValues * shape.Classes
	spec := kernel.Spec{X: shape.XValues, K: shape.Classes, OneHot: shape.Encoding == EncodingOneHot,
		Hidden: hidden, Steps: shape.Steps, CheckEvery: t.kernelCheckEvery(shape, hidden)}
	kr := make([]kernel.Run, len(runs))
	for i, r := range runs {
		kr[i] = kernel.Run{Theta: initTheta(r.Seed, ls), LR: float32(r.LR), PxWeight: float32(r.PxWeight), PCD: r.PCD}
		if shape.BatchSize > 0 && len(r.Samples) > 0 {
			kr[i].Cells = histogram(r.Samples, XK)
			kr[i].Next = minibatchCells(newSampler(r.Samples, r.Seed), shape.BatchSize, XK)
		} else {
			kr[i].Cells = normalise(r.Counts)
		}
	}
	res, err := kernel.Train(ctx, spec, kr)
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, len(runs))
	for i, r := range res {
		lg := make([]float64, XK)
		for j, v := range r.Logits {
			lg[j] = float64(v)
		}
		l := float64(r.Loss)
		out[i] = Outcome{Logits: lg, Loss: l, Diverged: r.Diverged || math.IsNaN(l) || math.IsInf(l, 0), Buffer: r.Buffer}
		if r.AvgLogits != nil {
			out[i].AvgLogits = make([]float64, XK)
			for j, v := range r.AvgLogits {
				out[i].AvgLogits[j] = float64(v)
			}
		}
	}
	return out, nil
}

// minibatchCells returns the kernel's per-step source of cell weights for a minibatch
// run: the normalised histogram of the sampler's next minibatch (histogram's values),
// in a buffer reused every step.
func minibatchCells(s *sampler, B, XK int) func() []float32 {
	counts := make([]float64, XK)
	buf := make([]float32, XK)
	return func() []float32 {
		clear(counts)
		batch := s.next(B)
		for _, c := range batch {
			counts[c]++
		}
		n := float64(len(batch))
		for j, c := range counts {
			buf[j] = float32(c / n)
		}
		return buf
	}
}

package models

import (
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// Host-side helpers: parameter initialisation, cell weights, minibatch sampling, and the
// conversions between per-run host slices and the batched tensors of the two layouts.

// initTheta draws one run's canonical parameters from its seed (kernel.InitTheta:
// uniform(-1,1) for the linear model; Glorot-uniform weights and zero biases for an MLP).
func initTheta(seed uint64, ls []layer) []float32 {
	layers := make([][2]int, len(ls))
	for i, l := range ls {
		layers[i] = [2]int{l.in, l.out}
	}
	return kernel.InitTheta(seed, layers)
}

// normalise returns c / sum(c) in float32.
func normalise(c []float64) []float32 {
	s := 0.0
	for _, v := range c {
		s += v
	}
	out := make([]float32, len(c))
	for i, v := range c {
		out[i] = float32(v / s)
	}
	return out
}

// histogram returns the normalised cell histogram of samples.
func histogram(samples []int32, XK int) []float32 {
	h := make([]float64, XK)
	for _, s := range samples {
		h[s]++
	}
	return normalise(h)
}

// sampler yields minibatches: the run's samples shuffled per epoch (RNG seeded from the
// run's seed), taken in consecutive chunks of B (the last chunk of an epoch may be
// smaller), reshuffled at the end of each epoch.
type sampler struct {
	perm []int32
	pos  int
	rng  *rand.Rand
}

func newSampler(samples []int32, seed uint64) *sampler {
	s := &sampler{perm: slices.Clone(samples), rng: rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))}
	s.shuffle()
	return s
}

func (s *sampler) shuffle() {
	s.rng.Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	s.pos = 0
}

func (s *sampler) next(B int) []int32 {
	if s.pos >= len(s.perm) {
		s.shuffle()
	}
	end := min(s.pos+B, len(s.perm))
	out := s.perm[s.pos:end]
	s.pos = end
	return out
}

// cellColumns turns per-run cell vectors into XK [R] tensors (split form).
func cellColumns(perRun [][]float32, XK int) []*tensors.Tensor {
	R := len(perRun)
	out := make([]*tensors.Tensor, XK)
	for c := range XK {
		col := make([]float32, R)
		for i := range R {
			col[i] = perRun[i][c]
		}
		out[c] = tensors.FromFlatDataAndDimensions(col, R)
	}
	return out
}

// minibatchHistograms draws the next minibatch of every run and returns its normalised
// cell histogram; runs without samples (and padding) get their full-batch weights.
func (st *batchState) minibatchHistograms() [][]float32 {
	XK := st.shape.XValues * st.shape.Classes
	out := make([][]float32, st.R)
	for i, s := range st.samplers {
		if s == nil {
			out[i] = st.chat[i]
		} else {
			out[i] = histogram(s.next(st.shape.BatchSize), XK)
		}
	}
	return out
}

// packTensor converts per-run canonical parameters to the [R,in,out], [R,1,out] tensors.
func packTensor(theta [][]float32, ls []layer) []*tensors.Tensor {
	R := len(theta)
	var out []*tensors.Tensor
	off := 0
	for _, l := range ls {
		nw, nb := l.in*l.out, l.out
		W := make([]float32, R*nw)
		b := make([]float32, R*nb)
		for i := range R {
			copy(W[i*nw:(i+1)*nw], theta[i][off:off+nw])
			copy(b[i*nb:(i+1)*nb], theta[i][off+nw:off+nw+nb])
		}
		out = append(out, tensors.FromFlatDataAndDimensions(W, R, l.in, l.out),
			tensors.FromFlatDataAndDimensions(b, R, 1, l.out))
		off += nw + nb
	}
	return out
}

// unpackTensor is the inverse of packTensor.
func unpackTensor(ts []*tensors.Tensor, theta [][]float32, ls []layer) {
	R := len(theta)
	off := 0
	for k, l := range ls {
		nw, nb := l.in*l.out, l.out
		W := tensors.MustCopyFlatData[float32](ts[2*k])
		b := tensors.MustCopyFlatData[float32](ts[2*k+1])
		for i := range R {
			copy(theta[i][off:off+nw], W[i*nw:(i+1)*nw])
			copy(theta[i][off+nw:off+nw+nb], b[i*nb:(i+1)*nb])
		}
		off += nw + nb
	}
}

// countsTensor stacks per-run normalised counts into [R,X,K].
func countsTensor(perRun [][]float32, X, K int) *tensors.Tensor {
	R := len(perRun)
	flat := make([]float32, 0, R*X*K)
	for _, c := range perRun {
		flat = append(flat, c...)
	}
	return tensors.FromFlatDataAndDimensions(flat, R, X, K)
}

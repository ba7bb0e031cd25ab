package cnn

import (
	"fmt"
	"math"
	"slices"

	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// SGLD is the paper's JEM term (Grathwohl et al. 2020): mean ℓ(x̃) − mean ℓ(x), the
// gradient of −log q(x), with negatives x̃ from a host-side replay buffer refined by
// SGLD, x ← x + LR·∇x ℓ(x) + Std·ξ for Steps steps (unrolled in the step's graph:
// GoMLX v0.26 has no While), each batch entry re-initialised with probability
// ReinitFreq. Zero fields take the JEM paper's defaults (wgrathwohl/JEM
// train_wrn_ebm.py).
type SGLD struct {
	Steps      int     // 20
	LR         float64 // 1
	Std        float64 // 0.01 (a Std ≤ 1e-30 is noise-free)
	ReinitFreq float64 // 0.05
	BufferSize int     // 10000
	// Informative starts the buffer and its restarts from a class-wise Gaussian fitted to
	// the training draws (a class by its frequency, then a draw with that class's mean
	// and covariance) instead of uniform noise on [-1, 1]: JEM++'s informative
	// initialisation (Yang & Ji, ICCV 2021; sgld_preset=jempp).
	Informative bool
	// L2 weights Grathwohl's stabiliser mean(ℓ(x)²) + mean(ℓ(x̃)²) on data and samples
	// (0.1 suggested; default 0).
	L2 float64
}

func (o SGLD) withDefaults() SGLD {
	if o.Steps == 0 {
		o.Steps = 20
	}
	if o.LR == 0 {
		o.LR = 1
	}
	if o.Std == 0 {
		o.Std = 0.01
	}
	if o.ReinitFreq == 0 {
		o.ReinitFreq = 0.05
	}
	if o.BufferSize == 0 {
		o.BufferSize = 10000
	}
	return o
}

// Name is "jem-sgld".
func (SGLD) Name() string { return "jem-sgld" }

// GradEvals is the SGLD steps.
func (o SGLD) GradEvals() int64 { return int64(o.withDefaults().Steps) }

// Check refuses negative settings and a reinitialisation probability outside [0, 1].
func (o SGLD) Check(TrainOptions) error {
	if o.Steps < 0 || o.BufferSize < 0 || o.ReinitFreq < 0 || o.ReinitFreq > 1 || o.Std < 0 || !(o.L2 >= 0) || math.IsInf(o.L2, 0) {
		return fmt.Errorf("cnn: bad SGLD options %+v", o)
	}
	return nil
}

// sgldTerm is one run's buffer.
type sgldTerm struct {
	o       SGLD
	r       *Run
	N, D    int
	buffer  []float32
	x0      []float32
	bidx    []int
	restart func(row []float32)
}

// Begin fills the buffer from the run's host stream.
func (o SGLD) Begin(r *Run) (Term, error) {
	o = o.withDefaults()
	D := r.Data.S * r.Data.S
	t := &sgldTerm{o: o, r: r, N: r.Batch, D: D, x0: make([]float32, r.Batch*D), bidx: make([]int, r.Batch)}
	t.restart = func(row []float32) { // a fresh chain start: uniform on [-1, 1], or informative
		for k := range row {
			row[k] = float32(2*r.Host.Float64() - 1)
		}
	}
	if o.Informative {
		cs, err := newClassStart(r.Data)
		if err != nil {
			return nil, fmt.Errorf("cnn: %w", err)
		}
		t.restart = func(row []float32) { cs.draw(r.Host, row) }
	}
	t.buffer = make([]float32, o.BufferSize*D)
	for i := 0; i < len(t.buffer); i += D {
		t.restart(t.buffer[i : i+D])
	}
	return t, nil
}

func (*sgldTerm) Own() []float32 { return nil }

// Lanes are the buffer's starts (a host input) after the SGLD steps.
func (t *sgldTerm) Lanes(s *StepGraph) *Node {
	xs := s.Input(t.N, t.D)
	for range t.o.Steps {
		_, dx := s.LSEGrad(xs)
		xs = Add(Add(xs, MulScalar(dx, t.o.LR)), MulScalar(s.Normal(t.N, t.D), t.o.Std))
	}
	s.Output(xs)
	return xs
}

// Loss is (Σ ℓ(x̃) − Σ ℓ(x))/B, plus L2·(Σ ℓ(x)² + Σ ℓ(x̃)²)/B.
func (t *sgldTerm) Loss(s *StepGraph, ld, ln *Node) *Node {
	invN := 1 / float64(s.B)
	term := MulScalar(Sub(ReduceAllSum(ln), ReduceAllSum(ld)), invN)
	if t.o.L2 > 0 {
		term = Add(term, MulScalar(Add(ReduceAllSum(Square(ld)), ReduceAllSum(Square(ln))), t.o.L2*invN))
	}
	return term
}

// Feed draws the step's chain starts: a buffer entry, or a restart with probability
// ReinitFreq (which goes back to a random slot).
func (t *sgldTerm) Feed() []*tensors.Tensor {
	B, D, host := t.o.BufferSize, t.D, t.r.Host
	for i := range t.N {
		row := t.x0[i*D : (i+1)*D]
		if B == 0 || host.Float64() < t.o.ReinitFreq {
			t.bidx[i] = -1
			t.restart(row)
			continue
		}
		t.bidx[i] = host.IntN(B)
		copy(row, t.buffer[t.bidx[i]*D:(t.bidx[i]+1)*D])
	}
	for i := range t.N {
		if t.bidx[i] < 0 && B > 0 {
			t.bidx[i] = host.IntN(B)
		}
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(slices.Clone(t.x0), t.N, D)}
}

// After writes the refined samples back to their slots.
func (t *sgldTerm) After(outs []*tensors.Tensor) {
	if t.o.BufferSize == 0 {
		return
	}
	xs := tensors.MustCopyFlatData[float32](outs[0])
	for i := range t.N {
		copy(t.buffer[t.bidx[i]*t.D:(t.bidx[i]+1)*t.D], xs[i*t.D:(i+1)*t.D])
	}
}

// End reports nothing: the term is the model's own energy gap.
func (*sgldTerm) End([]float32, *Stats) {}

package shortrun

import (
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Objective is shortrun as a kernel.Objective, in any dimension D: lanes 0..B the
// data, lanes B..2B the negatives, B fresh chains every step: uniform on the box
// [−Box, Box]^D (from st.Rng), then Steps unadjusted Langevin moves
// x += η∇ℓ(x) + √(2η)ξ (noise from st.Noise; without Noise x += η∇ℓ(x)), unclamped
// (kernel.Langevin.ShortRun). The loss is −mean ℓ(data) + mean ℓ(negatives) +
// L2·(mean ℓ(data)² + mean ℓ(negatives)²).
type Objective struct {
	o  Options
	lv *kernel.Langevin
}

// New is shortrun's objective with the options o.
func New(o Options) *Objective { return &Objective{o: o} }

// Lanes is 2B: the data and B negatives.
func (*Objective) Lanes(B, _ int) int { return 2 * B }

// Params: none.
func (*Objective) Params() int { return 0 }

// GradEvals is the chains' input gradients: Steps per negative.
func (s *Objective) GradEvals(B int) int64 { return int64(B) * int64(s.o.Steps) }

// Begin sets up the chains' scratch and their noise stream.
func (s *Objective) Begin(st *kernel.Step) {
	if s.lv == nil || s.lv.Dim != st.Dim || s.lv.N != st.B {
		s.lv = kernel.NewLangevin(st.Dim, st.B)
	}
	s.lv.Rng = st.Noise
}

// Fill starts B chains uniformly on the box, runs them and writes them into lanes
// B..2B.
func (s *Objective) Fill(st *kernel.Step) {
	B, P := st.B, st.P
	s.lv.Uniform(st.Rng, st.Box)
	s.lv.ShortRun(st.LSE, s.o.Steps, float32(s.o.Step), s.o.Noise)
	for c := range s.lv.Dim {
		copy(st.X[c*P+B:c*P+2*B], s.lv.X[c*B:(c+1)*B])
	}
}

// Loss is −mean ℓ(data) + mean ℓ(negatives) + L2·(mean ℓ(data)² + mean ℓ(negatives)²).
func (s *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	B := st.B
	invB := 1 / float32(B)
	l2 := float32(s.o.L2)
	var loss float32
	for p := range 2 * B {
		e := lse[p]
		if p < B {
			loss -= e * invB
			coef[p] = -invB
		} else {
			loss += e * invB
			coef[p] = invB
		}
		if l2 > 0 {
			loss += l2 * e * e * invB
			coef[p] += 2 * l2 * e * invB
		}
	}
	return loss
}

// End has nothing to report: the chains are fresh every step.
func (*Objective) End(*kernel.Step, *kernel.Result2D) {}

package mala

import (
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Objective is mala as a kernel.Objective, in any dimension D: lanes 0..B the data,
// lanes B..2B the negatives. Every step draws B distinct chains of the replay buffer
// (a partial Fisher–Yates shuffle of a persistent permutation, from st.Rng), restarts
// each uniformly on the box [−Box, Box]^D with probability Reinit, refines them by
// Steps MALA moves at temperature 1 (kernel.Langevin.MALA, noise and MH uniforms
// from st.Noise), writes them back and uses them as the step's negatives; η adapts
// once per step toward kernel.AcceptTarget (kernel.AdaptStep). The loss is
// −mean ℓ(data) + mean ℓ(negatives).
type Objective struct {
	o Options
	// KeepBuffer: End returns the final buffer in Result2D.Buffer (the hook sets it, as
	// it sets Spec2D.KeepBuffer).
	KeepBuffer bool

	d     int
	buf   []float32 // the replay buffer [M][D]
	perm  []int32   // the persistent permutation of the buffer's slots
	slots []int32   // this step's slots
	lv    *kernel.Langevin
	eta   float32 // the current step
	acc   float64 // the steps' acceptances, summed
	steps int
}

// New is mala's objective with the options o (o.Buffer at least the batch; Begin
// panics otherwise).
func New(o Options) *Objective { return &Objective{o: o} }

// Lanes is 2B: the data and B negatives.
func (*Objective) Lanes(B, _ int) int { return 2 * B }

// Params: none.
func (*Objective) Params() int { return 0 }

// GradEvals is the chains' passes: their ℓ and ∇ℓ at the start, then at each proposal.
func (m *Objective) GradEvals(B int) int64 { return int64(B) * int64(1+m.o.Steps) }

// Begin fills the buffer uniformly on the box from st.Rng, resets the permutation and
// sets η to the initial step.
func (m *Objective) Begin(st *kernel.Step) {
	B, D, M := st.B, st.Dim, m.o.Buffer
	if M < B {
		panic("mala: buffer_size smaller than the batch")
	}
	if m.d != D || len(m.buf) != M*D || m.lv == nil || m.lv.N != B {
		m.d = D
		m.buf, m.perm, m.slots = make([]float32, M*D), make([]int32, M), make([]int32, B)
		m.lv = kernel.NewLangevin(D, B)
	}
	for i := range m.buf {
		m.buf[i] = (2*st.Rng.Float32() - 1) * st.Box
	}
	for i := range m.perm {
		m.perm[i] = int32(i)
	}
	m.lv.Rng = st.Noise
	m.eta, m.acc, m.steps = float32(m.o.Step), 0, 0
}

// Fill draws the step's chains, refines them, adapts η, writes them back and into
// lanes B..2B.
func (m *Objective) Fill(st *kernel.Step) {
	B, P, D, M := st.B, st.P, m.d, len(m.perm)
	box, x := st.Box, m.lv.X
	reinit := float32(m.o.Reinit)
	for p := range B {
		q := p + st.Rng.IntN(M-p)
		m.perm[p], m.perm[q] = m.perm[q], m.perm[p]
		slot := int(m.perm[p])
		m.slots[p] = int32(slot)
		if st.Rng.Float32() < reinit {
			for c := range D {
				x[c*B+p] = (2*st.Rng.Float32() - 1) * box
			}
		} else {
			for c := range D {
				x[c*B+p] = m.buf[slot*D+c]
			}
		}
	}
	m.lv.Eval(st.LSE)
	acc := m.lv.MALA(st.LSE, m.o.Steps, m.eta, box)
	m.acc += acc
	m.steps++
	m.eta = kernel.AdaptStep(m.eta, acc, box)
	for p, slot := range m.slots {
		for c := range D {
			m.buf[int(slot)*D+c] = x[c*B+p]
		}
	}
	for c := range D {
		copy(st.X[c*P+B:c*P+2*B], x[c*B:(c+1)*B])
	}
}

// Loss is −mean ℓ(data) + mean ℓ(negatives).
func (m *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	B := st.B
	invB := 1 / float32(B)
	var loss float32
	for p := range B {
		loss -= lse[p] * invB
		coef[p] = -invB
	}
	for p := B; p < 2*B; p++ {
		loss += lse[p] * invB
		coef[p] = invB
	}
	return loss
}

// End reports the final step η (Result2D.StepSize, Stats mala_step), the mean
// acceptance over the steps run (Accept, mala_accept), the share of the buffer's
// chains inside the box (InBox) and, with KeepBuffer, the buffer ([M][D]).
func (m *Objective) End(st *kernel.Step, res *kernel.Result2D) {
	D := m.d
	in := 0
	for i := 0; i < len(m.buf); i += D {
		ok := true
		for _, v := range m.buf[i : i+D] {
			ok = ok && v >= -st.Box && v <= st.Box
		}
		if ok {
			in++
		}
	}
	res.InBox = float64(in) / float64(len(m.buf)/D)
	if m.KeepBuffer {
		res.Buffer = append([]float32(nil), m.buf...)
	}
	res.StepSize = float64(m.eta)
	if m.steps > 0 {
		res.Accept = m.acc / float64(m.steps)
	}
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	res.Stats["mala_step"], res.Stats["mala_accept"] = res.StepSize, res.Accept
}

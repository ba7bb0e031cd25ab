package sgld

import (
	"math"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// Objective is the paper's JEM as a kernel.Objective, in any dimension D: lanes
// 0..B the data, lanes B..2B the negatives. Every step draws B distinct chains of
// the replay buffer (a partial Fisher–Yates shuffle of a persistent permutation:
// uniform without replacement whatever its state), restarts each with probability
// Reinit (uniformly on the box^D, or from the class-wise Gaussians with
// Informative), refines them by Steps SGLD moves x += LR·∇x ℓ(x) + Std·ξ (clamped to
// the box with Clamp), writes them back and uses them as the step's negatives. The
// loss is −mean ℓ(data) + mean ℓ(negatives), whose gradient is the paper's estimate
// of −∇θ log q(x). On the plane it draws from the run's streams exactly as the 2-D
// kernel's former built-in sgld did, and trained as it did bit for bit.
type Objective struct {
	o     kernel.SGLDOptions
	d     int
	buf   []float32 // the replay buffer [M][D]
	perm  []int32   // the persistent permutation of the buffer's slots
	slots []int32   // this step's slots
	xn    []float32 // this step's chains [D][B]
	dx    []float32 // their input gradient [D][B]
	noise []float32 // SGLD noise [D][B]
	e     []float32 // LSE at the chains (scratch)
	start *kernel.ClassGauss
}

// New is sgld's objective with the kernel's options o.
func New(o kernel.SGLDOptions) *Objective { return &Objective{o: o} }

// Lanes is 2B: the data and B negatives.
func (*Objective) Lanes(B, _ int) int { return 2 * B }

// Params: none.
func (*Objective) Params() int { return 0 }

// GradEvals is the SGLD moves' input gradients: Steps per negative.
func (s *Objective) GradEvals(B int) int64 { return int64(B) * int64(s.o.Steps) }

// Begin fills the buffer uniformly on the box (then, with Informative, from the
// class-wise Gaussians fitted to the run's draws) and resets the permutation.
func (s *Objective) Begin(st *kernel.Step) {
	B, D, M := st.B, st.Dim, s.o.Buffer
	if s.d != D || len(s.buf) != M*D || len(s.xn) != D*B {
		s.d = D
		s.buf, s.perm = make([]float32, M*D), make([]int32, M)
		s.slots, s.xn, s.dx, s.noise, s.e = make([]int32, B), make([]float32, D*B), make([]float32, D*B), make([]float32, D*B), make([]float32, B)
	}
	box := st.Box
	for i := range s.buf {
		s.buf[i] = (2*st.Rng.Float32() - 1) * box
	}
	s.start = nil
	if s.o.Informative && len(st.Data) == D && len(st.DataY) > 0 {
		s.start = kernel.FitClassGauss(st.Data, st.DataY, maxClass(st.DataY)+1)
		for i := 0; i < M; i++ {
			s.start.Draw(st.Rng, s.buf[i*D:(i+1)*D])
		}
	}
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
}

// Fill draws the step's chains, refines them and writes them into lanes B..2B.
func (s *Objective) Fill(st *kernel.Step) {
	B, P, D, M := st.B, st.P, s.d, len(s.perm)
	box := st.Box
	for p := range B {
		q := p + st.Rng.IntN(M-p)
		s.perm[p], s.perm[q] = s.perm[q], s.perm[p]
		slot := int(s.perm[p])
		s.slots[p] = int32(slot)
		switch {
		case st.Rng.Float32() >= s.o.Reinit:
			for c := range D {
				s.xn[c*B+p] = s.buf[slot*D+c]
			}
		case s.start != nil:
			s.start.DrawStrided(st.Rng, s.xn, p, B)
		default:
			for c := range D {
				s.xn[c*B+p] = (2*st.Rng.Float32() - 1) * box
			}
		}
	}
	kernel.SGLDSteps(s.o, box, s.xn, s.dx, s.noise, st.Noise, func() { st.LSE(s.xn, B, s.e, s.dx) })
	for p, slot := range s.slots {
		for c := range D {
			s.buf[int(slot)*D+c] = s.xn[c*B+p]
		}
	}
	for c := range D {
		copy(st.X[c*P+B:c*P+2*B], s.xn[c*B:(c+1)*B])
	}
}

// Loss is −mean ℓ(data) + mean ℓ(negatives).
func (s *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
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

// End reports the final buffer ([M][D]) and the share of its chains inside the box.
func (s *Objective) End(st *kernel.Step, res *kernel.Result2D) {
	D := s.d
	in := 0
	for i := 0; i < len(s.buf); i += D {
		ok := true
		for _, v := range s.buf[i : i+D] {
			ok = ok && float32(math.Abs(float64(v))) <= st.Box
		}
		if ok {
			in++
		}
	}
	res.InBox = float64(in) / float64(len(s.buf)/D)
	res.Buffer = append(res.Buffer[:0], s.buf...)
}

func maxClass(y []int32) int {
	m := 0
	for _, v := range y {
		m = max(m, int(v))
	}
	return m
}

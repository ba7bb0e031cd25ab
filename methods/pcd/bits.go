package pcd

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// BitsOptions are pcd's settings on binary tables.
type BitsOptions struct {
	Buffer     int     // persistent chains (at least the batch)
	Reinit     float32 // per-chain restart probability each step
	ChainSteps int     // Metropolis–Hastings steps per training step (≥ 1)
	GWG        bool    // Gibbs-with-Gradients proposal (else a uniform bit)
}

// bits is the binary kind's hook: pcd's objective (Bits) on the spec.
func bits(g schemas.Grid, s *kernel.SpecBits) error {
	if g.Proposal != "uniform" && g.Proposal != "gwg" {
		return fmt.Errorf("proposal: pcd on binary tasks flips one bit, chosen uniformly or by gwg (Gibbs with gradients); got %q (known: uniform, gwg)", g.Proposal)
	}
	o := BitsOptions{Buffer: g.BufferSize, Reinit: float32(g.ReinitFreq), ChainSteps: g.ChainSteps, GWG: g.Proposal == "gwg"}
	if o.Buffer < s.Batch || !(o.Reinit >= 0 && o.Reinit <= 1) || o.ChainSteps < 1 {
		return fmt.Errorf("pcd on binary tasks needs buffer_size >= the batch (%d), reinit_freq in [0, 1] and chain_steps >= 1, got %d, %v, %d", s.Batch, o.Buffer, o.Reinit, o.ChainSteps)
	}
	s.Objective = func() kernel.Objective { return NewBits(o) }
	return nil
}

// Bits is pcd on binary tables as a kernel.Objective: JEM whose log q(x) gradient uses
// persistent Metropolis–Hastings chains on q(x) ∝ Σ_y exp f(x)[y] in a replay buffer
// of states (Tieleman 2008). Each step it draws Batch distinct buffer slots (each chain
// restarted at a uniform state with probability Reinit), runs ChainSteps single-bit
// flips (the bit uniform, or by Gibbs with gradients), writes the chains back and
// makes them the step's negatives, lanes B..2B. The loss is PxWeight·(mean ℓ over
// the negatives − mean ℓ over the data), whose gradient is the JEM gradient of
// −log q(x) with E_q[∇ℓ] replaced by the chains' mean.
//
// It draws from Step.Rng exactly as the binary kernel's former built-in pcd drew from
// its buffer stream, and trained as it did bit for bit; it evaluates a chain's state
// once per step and each proposal once (the built-in evaluated the current states again
// before every flip: the same numbers, twice the passes). Lanes must be binary (Step.Binary,
// D ≤ kernel.MaxBitsD).
type Bits struct {
	o            BitsOptions
	d, b         int
	buf          []uint32 // the replay buffer of states
	perm         []int32
	slots        []int32  // this step's chains' buffer slots
	chains, prop []uint32 // [B] states
	xc, xp       []float32
	lseC, lseP   []float32
	gradC, gradP []float32 // gwg: ∇x ℓ at the chains and at the proposals [D][B]
	flips        []int
	logFwd       []float64
	acc, tries   int64
}

// NewBits is pcd's objective on binary tables with options o.
func NewBits(o BitsOptions) *Bits { return &Bits{o: o} }

// Lanes is the data and one chain per data point.
func (e *Bits) Lanes(B, _ int) int { return 2 * B }

// Params: none.
func (*Bits) Params() int { return 0 }

// GradEvals is the chains' passes per step: their states once and each of the
// ChainSteps proposals (with the input gradient under gwg).
func (e *Bits) GradEvals(B int) int64 { return int64((1 + e.o.ChainSteps) * B) }

// Begin sizes the chains for the step's batch and dimension (once for a goroutine's
// runs of one spec) and fills the buffer with uniform states.
func (e *Bits) Begin(st *kernel.Step) {
	if !st.Binary || st.Dim < 1 || st.Dim > kernel.MaxBitsD {
		panic(fmt.Sprintf("pcd: the binary objective needs binary lanes of 1 to %d bits (Step.Binary %v, Dim %d)", kernel.MaxBitsD, st.Binary, st.Dim))
	}
	B, D := st.B, st.Dim
	M := max(e.o.Buffer, B)
	if e.d != D || e.b != B || len(e.buf) != M {
		e.d, e.b = D, B
		e.buf, e.perm = make([]uint32, M), make([]int32, M)
		e.slots, e.chains, e.prop = make([]int32, B), make([]uint32, B), make([]uint32, B)
		e.xc, e.xp = make([]float32, D*B), make([]float32, D*B)
		e.lseC, e.lseP = make([]float32, B), make([]float32, B)
		if e.o.GWG {
			e.gradC, e.gradP = make([]float32, D*B), make([]float32, D*B)
		}
		e.flips, e.logFwd = make([]int, B), make([]float64, B)
	}
	mask := uint32(1)<<D - 1
	for i := range e.buf {
		e.buf[i] = st.Rng.Uint32() & mask
		e.perm[i] = int32(i)
	}
	e.acc, e.tries = 0, 0
}

// setLane writes state s into lane p of x [D][n].
func setLane(x []float32, D, n, p int, s uint32) {
	for j := range D {
		x[j*n+p] = float32((s >> j) & 1)
	}
}

// Fill draws the step's chains from the buffer, runs the Metropolis–Hastings flips and
// writes them back and into lanes B..2B.
func (e *Bits) Fill(st *kernel.Step) {
	o := e.o
	B, D, P := st.B, st.Dim, st.P
	M := len(e.perm)
	mask := uint32(1)<<D - 1
	rng := st.Rng
	for p := range B {
		q := p + rng.IntN(M-p)
		e.perm[p], e.perm[q] = e.perm[q], e.perm[p]
		e.slots[p] = e.perm[p]
		if rng.Float32() < o.Reinit {
			e.chains[p] = rng.Uint32() & mask
		} else {
			e.chains[p] = e.buf[e.perm[p]]
		}
		setLane(e.xc, D, B, p, e.chains[p])
	}
	st.LSE(e.xc, B, e.lseC, e.gradC)
	kernel.ClearUpper()
	for range o.ChainSteps {
		for p := range B {
			if o.GWG {
				e.flips[p], e.logFwd[p] = kernel.GWGDraw(rng, e.gradC, e.chains[p], D, B, p)
			} else {
				e.flips[p] = rng.IntN(D)
			}
			e.prop[p] = e.chains[p] ^ 1<<e.flips[p]
			setLane(e.xp, D, B, p, e.prop[p])
		}
		st.LSE(e.xp, B, e.lseP, e.gradP)
		kernel.ClearUpper()
		for p := range B {
			logA := float64(e.lseP[p] - e.lseC[p])
			if o.GWG {
				logA += kernel.GWGLogProb(e.gradP, e.prop[p], e.flips[p], D, B, p) - e.logFwd[p]
			}
			e.tries++
			if logA >= 0 || rng.Float64() < math.Exp(logA) {
				e.acc++
				e.chains[p], e.lseC[p] = e.prop[p], e.lseP[p]
				if o.GWG {
					for c := range D {
						e.gradC[c*B+p] = e.gradP[c*B+p]
					}
				}
			}
		}
	}
	for p, slot := range e.slots {
		e.buf[slot] = e.chains[p]
		setLane(st.X, D, P, B+p, e.chains[p])
	}
}

// Loss is mean ℓ over the chains − mean ℓ over the data (the trainer weighs it by
// PxWeight).
func (e *Bits) Loss(st *kernel.Step, lse, coef []float32) float32 {
	B := st.B
	inv := 1 / float32(B)
	var loss float32
	for p := range st.P {
		if p < B {
			coef[p] = -inv
			loss -= lse[p] * inv
		} else {
			coef[p] = inv
			loss += lse[p] * inv
		}
	}
	return loss
}

// End reports the mean acceptance (Stats "accept" and Result2D.Accept) and the final
// buffer ([M][D] points of {0,1}^D).
func (e *Bits) End(st *kernel.Step, res *kernel.Result2D) {
	D := st.Dim
	if e.tries > 0 {
		res.Accept = float64(e.acc) / float64(e.tries)
	}
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	res.Stats["accept"] = res.Accept
	res.Buffer = make([]float32, len(e.buf)*D)
	for i, s := range e.buf {
		for c := range D {
			res.Buffer[i*D+c] = float32((s >> c) & 1)
		}
	}
}

package jarzynski

import (
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Objective is jarzynski as a kernel.Objective, in any dimension D: lanes 0..B the
// data, lanes B..2B the B persistent walkers in ℝ^D with their log weights A. At the
// first step the walkers start uniformly on the box [−Box, Box]^D (from st.Rng) with
// A = ℓ(x), the importance weight of q against the uniform start. Every step adds to A
// the change of ℓ at the walkers from the parameters of the last step's forward pass
// to the current ones, moves them by Steps weighted Langevin moves
// (kernel.Langevin.Weighted: the noise from st.Noise), resamples them (systematic)
// when their ESS falls under ESS·B, and restarts them uniformly when no weight is
// left; η adapts once per step on the mean min(1, ratio) (kernel.AdaptStep). The loss
// is −mean ℓ(data) + Σ_j softmax(A)_j ℓ(walker_j): its coefficient dL/dℓ per walker
// lane is the walker's normalised weight.
type Objective struct {
	o Options

	lv        *kernel.Langevin
	a         []float64 // log weights
	eOld      []float32 // ℓ at the walkers in the last step's forward pass
	w         []float32 // normalised weights: the walker lanes' coefficients
	started   bool
	eta       float32 // the current step
	acc       float64 // the steps' acceptances, summed
	steps     int
	resamples int
	ess       float64 // the steps' ESS shares (before resampling), summed
}

// New is jarzynski's objective with the options o.
func New(o Options) *Objective { return &Objective{o: o} }

// Lanes is 2B: the data and the B walkers.
func (*Objective) Lanes(B, _ int) int { return 2 * B }

// Params: none.
func (*Objective) Params() int { return 0 }

// GradEvals is the walkers' passes: their ℓ and ∇ℓ at the step's start, then at each
// proposal.
func (j *Objective) GradEvals(B int) int64 { return int64(B) * int64(1+j.o.Steps) }

// Begin resets the run: η to the initial step, the walkers to be drawn at the first
// step.
func (j *Objective) Begin(st *kernel.Step) {
	B, D := st.B, st.Dim
	if j.lv == nil || j.lv.Dim != D || j.lv.N != B {
		j.lv = kernel.NewLangevin(D, B)
		j.a, j.eOld, j.w = make([]float64, B), make([]float32, B), make([]float32, B)
	}
	j.lv.Rng = st.Noise
	j.started = false
	j.eta, j.acc, j.steps, j.resamples, j.ess = float32(j.o.Step), 0, 0, 0, 0
}

// uniform (re)starts the walkers uniformly on the box with log weights ℓ(x).
func (j *Objective) uniform(st *kernel.Step) {
	j.lv.Uniform(st.Rng, st.Box)
	j.lv.Eval(st.LSE)
	for p, e := range j.lv.E {
		j.a[p] = float64(e)
	}
}

// Fill updates the walkers (weights, moves, resampling or restart), adapts η and
// writes the walkers into lanes B..2B.
func (j *Objective) Fill(st *kernel.Step) {
	B, P := st.B, st.P
	first := !j.started
	if first {
		j.uniform(st)
		j.started = true
	}
	acc, ess, resampled, dead := j.lv.Weighted(st.LSE, j.a, j.eOld, first, j.o.Steps, j.eta, st.Box, float32(j.o.ESS), j.w)
	j.acc += acc
	j.ess += ess / float64(B)
	j.steps++
	j.eta = kernel.AdaptStep(j.eta, acc, st.Box)
	if resampled || dead {
		j.resamples++
	}
	if dead {
		j.uniform(st)
		kernel.NormWeights(j.w, j.a)
	}
	for c := range j.lv.Dim {
		copy(st.X[c*P+B:c*P+2*B], j.lv.X[c*B:(c+1)*B])
	}
}

// Loss is −mean ℓ(data) + Σ_j w_j ℓ(walker_j), w the walkers' normalised weights; it
// keeps the walkers' ℓ under the step's parameters for the next step's weight update.
func (j *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	B := st.B
	invB := 1 / float32(B)
	var loss float32
	for p := range B {
		loss -= lse[p] * invB
		coef[p] = -invB
	}
	for p := B; p < 2*B; p++ {
		w := j.w[p-B]
		j.eOld[p-B] = lse[p]
		loss += lse[p] * w
		coef[p] = w
	}
	return loss
}

// End reports the final step η (Result2D.StepSize, Stats jarzynski_step), the mean
// min(1, ratio) of the moves over the steps run (Accept, jarzynski_accept), the
// resamplings and restarts (Resamples, jarzynski_resamples) and the mean ESS share of
// the weights before resampling (jarzynski_ess).
func (j *Objective) End(st *kernel.Step, res *kernel.Result2D) {
	res.StepSize, res.Resamples = float64(j.eta), j.resamples
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	if j.steps > 0 {
		res.Accept = j.acc / float64(j.steps)
		res.Stats["jarzynski_ess"] = j.ess / float64(j.steps)
	}
	res.Stats["jarzynski_step"], res.Stats["jarzynski_accept"], res.Stats["jarzynski_resamples"] = res.StepSize, res.Accept, float64(j.resamples)
}

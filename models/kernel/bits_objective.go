package kernel

import (
	"github.com/jemcheck/jemcheck/models/prob"
)

// # Objectives on binary tables
//
// TrainBits runs any Objective (SpecBits.Objective) as the 2-D and block trainers do
// (additive.go): a step has P = Objective.Lanes(Batch) lanes [D][P], the first Batch
// the minibatch's states, every coordinate 0 or 1 (Step.Binary; Step.Box is 0 and
// unused), the objective filling the others with states in Fill. Step.LSE evaluates
// the MLP at n lanes, and its gradient is ∇x ℓ of the MLP on the relaxation x ∈ ℝ^D
// (Gibbs-with-Gradients' d_i = (1 − 2x_i)·∂ℓ/∂x_i reads it). Step.Data[c][i] is bit c
// of draw i (0 or 1), built once per run. The loss is the shared objLoss (the data's
// cross-entropy plus PxWeight times the objective's), Adam steps the network and the
// objective's Extra with the run's rate (no decay: the binary schedule has none), and
// the divergence guard is TrainBits' (|loss| and the data's and the other lanes' mean
// LSE at most 1e6).
//
// End writes into a scratch Result2D: its Stats, Accept and the objective's Extra
// become the ResultBits', and its Buffer, read as [n][D] states (a coordinate > ½ is
// bit 1), the ResultBits' Buffer of state numbers.

// validateObjective checks a binary spec's objective as Spec2D's: its lanes for the
// batch and its parameters.
func (s SpecBits) validateObjective() error {
	return Spec2D{Batch: s.Batch, Objective: s.Objective}.validateObjective(s.D)
}

// newObjective sets up the trainer's objective, its lanes and its parameters' space.
func (t *trainerBits) newObjective() {
	t.obj = t.spec.Objective()
	t.P = t.obj.Lanes(t.B, t.spec.D)
	n := t.obj.Params()
	t.st.Extra, t.st.ExtraGrad, t.xm, t.xv = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
}

// energy is the objective's view of the model (Step.LSE): e[i] = LSE_y f(x_i)[y] at n
// lanes x [D][n] and, when grad is not nil, grad [D][n] = ∇x LSE_y f(x_i) on the
// relaxation. It overwrites the trainer's forward pass.
func (t *trainerBits) energy(x []float32, n int, e, grad []float32) {
	K := t.K
	t.net.forward(t.theta, x, n)
	f := t.net.f[:K*n]
	if grad == nil {
		vSoftmaxLSE(nil, e[:n], f, K, n)
		return
	}
	s := t.net.s[:K*n]
	vSoftmaxLSE(s, e[:n], f, K, n)
	t.net.backward(t.theta, s, n, false, grad)
}

// beginObjective starts an objective's run: the draws by bit, the noise stream, the
// objective's parameters reset and its Begin.
func (t *trainerBits) beginObjective(r *RunBits) {
	D, n := t.D, len(r.Y)
	if len(t.data) != D || cap(t.data[0]) < n {
		t.data = make([][]float32, D)
		for c := range t.data {
			t.data[c] = make([]float32, n)
		}
	}
	for c := range t.data {
		row := t.data[c][:n]
		for i, s := range r.X {
			row[i] = float32((s >> c) & 1)
		}
		t.data[c] = row
	}
	t.noiseRng = prob.NewRand(prob.Seed(r.Seed, tagNoise))
	t.st = Step{B: t.B, P: t.P, Dim: D, Binary: true, X: t.x, Y: t.yd, Rng: t.bufRng, Noise: t.noiseRng,
		Extra: t.st.Extra, ExtraGrad: t.st.ExtraGrad, LSE: t.energy, Data: t.data, DataY: r.Y}
	clear(t.st.Extra)
	clear(t.xm)
	clear(t.xv)
	t.obj.Begin(&t.st)
}

// trainObjective runs one run of the objective to the end (train has set the
// parameters, the streams and the data order).
func (t *trainerBits) trainObjective(r *RunBits) ResultBits {
	spec := t.spec
	np := t.net.np
	K, P := t.K, t.P
	t.beginObjective(r)
	res := ResultBits{}
	const maxE = 1e6
	for step := 1; step <= spec.Steps; step++ {
		t.batch(r)
		t.st.Step = step
		t.obj.Fill(&t.st)
		t.net.forward(t.theta, t.x, P)
		loss, lseD, lseNeg := objLoss(t.obj, &t.st, t.net.f[:K*P], t.net.s[:K*P], t.delta, t.e, t.coef, spec.PxWeight)
		if !finite32(loss) || abs32(loss) > maxE || abs32(lseD) > maxE || abs32(lseNeg) > maxE {
			res.Diverged, res.DivergedStep = true, step
			break
		}
		t.net.backward(t.theta, t.delta, P, true, nil)
		copy(t.snap[:np], t.theta)
		copy(t.snap[np:2*np], t.m)
		copy(t.snap[2*np:], t.v)
		lrScale, epsT := AdamScalars(step)
		lr := r.LR * float32(lrScale)
		vAdamFlat(t.theta, t.m, t.v, t.net.g, lr, float32(epsT))
		gAdamFlat(t.st.Extra, t.xm, t.xv, t.st.ExtraGrad, lr, float32(epsT))
		if !allFinite(t.theta) || !allFinite(t.m) || !allFinite(t.v) {
			copy(t.theta, t.snap[:np])
			copy(t.m, t.snap[np:2*np])
			copy(t.v, t.snap[2*np:])
			res.Diverged, res.DivergedStep = true, step
			break
		}
		res.Loss = loss
		r.observe(spec, step, t.theta[:len(r.Theta)])
	}
	res.Theta = append([]float32(nil), t.theta[:len(r.Theta)]...)
	var end Result2D
	t.obj.End(&t.st, &end)
	res.Extra = append([]float32(nil), t.st.Extra...)
	res.Stats, res.Accept = end.Stats, end.Accept
	if end.Buffer != nil {
		res.Buffer = StatesOf(end.Buffer, t.D)
	}
	return res
}

// StatesOf reads points [n][D] of {0,1}^D (a coordinate > ½ is bit 1) as the state
// numbers Σ_c bit_c·2^c.
func StatesOf(x []float32, D int) []uint32 {
	out := make([]uint32, len(x)/D)
	for i := range out {
		var s uint32
		for c, v := range x[i*D : (i+1)*D] {
			if v > 0.5 {
				s |= 1 << c
			}
		}
		out[i] = s
	}
	return out
}

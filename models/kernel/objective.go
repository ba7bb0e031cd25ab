package kernel

import (
	"fmt"
	"math/rand/v2"
)

// Objective is the one step contract of a training method (methods/<name>) in the
// fused kernels, on every model they train: the plane's MLP (Train2D, D = 2), the
// block-additive model and the joint MLP of block tasks (TrainAdditive, TrainJoint,
// D = 2B) and the MLP of binary tables (TrainBits: lanes in {0,1}^D, Step.Binary). A step has P lanes, points of ℝ^D: the first B are the minibatch's data,
// the objective fills the others (negatives, noise draws, perturbations). The trainer
// runs the model's forward pass on every lane and hands the objective each lane's
// log-sum-exp ℓ(x) = log Σ_y exp f(x)[y]; the objective returns its log q(x) loss with
// dL/dℓ per lane and the gradient of its own scalar parameters. The trainer adds the
// data lanes' cross-entropy and PxWeight times the objective's loss (each objective
// weighs its own terms inside its loss), back-propagates through the lanes into the
// model, and takes the Adam step of the model's and the objective's parameters, with
// the divergence guard, the learning-rate decay and the observation cadence shared by
// every method. An objective sees only Step: it is written once, for any D and any
// model.
//
// One value serves one goroutine's runs in turn (Spec2D.Objective makes one per
// goroutine); Begin resets it for each run, so a run depends only on its own seed.
type Objective interface {
	// Lanes is the lanes of a step for B data points in D dimensions: P ≥ B, a
	// multiple of VW (16).
	Lanes(B, D int) int
	// Params is the number of the objective's own scalar parameters (e.g. a learned
	// log Z), trained by Adam beside the network's.
	Params() int
	// GradEvals is the objective's forward+backward passes per step beyond the P lanes
	// (e.g. a sampler's input-gradient steps), for the protocol's budget.
	GradEvals(B int) int64
	// Begin starts a run: it may draw from st's streams and sets st.Extra's initial
	// values (zero by default).
	Begin(st *Step)
	// Fill writes lanes B..P of st.X (the data lanes 0..B are filled) before the
	// forward pass; it may evaluate the model through st.LSE.
	Fill(st *Step)
	// Loss returns the objective's loss given each lane's ℓ (P values), and writes its
	// derivative dL/dℓ per lane into coef (zeroed before) and dL/dExtra into
	// st.ExtraGrad (zeroed before).
	Loss(st *Step, lse, coef []float32) float32
	// End finishes a run: the objective's diagnostics into res.Stats, its final
	// negatives into res.Buffer ([n][D], point by point) when it has any.
	End(st *Step, res *Result2D)
}

// Step is what an objective sees of its run at a step.
type Step struct {
	Step int // 1-based; 0 in Begin
	B, P int
	// Dim is D, the coordinates of a point: 2 on the plane, 2B on a block task.
	Dim int
	// Box is the box [−Box, Box]^D the task lives in (continuous lanes).
	Box float32
	// Binary: the lanes are states of {0,1}^D (binary tables, TrainBits), each
	// coordinate 0 or 1; an objective fills its lanes with such states (bit flips,
	// Bernoulli noise) and ∇x of LSE is the relaxation's gradient (Gibbs-with-Gradients').
	Binary bool
	// X are the lanes [Dim][P] (coordinate c of lane p at X[c·P+p]); the first B are
	// the data.
	X []float32
	// Y are the data lanes' classes.
	Y []int32
	// Rng is the run's stream for perturbations, buffers and restarts; Noise the
	// stream for sampler noise. Both derive from the run's seed only.
	Rng, Noise *rand.Rand
	// Extra are the objective's scalar parameters and ExtraGrad their gradient.
	Extra, ExtraGrad []float32
	// LSE evaluates the model at its current parameters at n points x [Dim][n] (n a
	// multiple of VW, at most P): lse[i] = ℓ(x_i) and, when grad is not nil,
	// grad [Dim][n] = ∇x ℓ(x_i). It overwrites the trainer's forward pass, so call it
	// in Fill or End, not in Loss.
	LSE func(x []float32, n int, lse, grad []float32)
	// Data are the run's training draws by coordinate: Data[c][i] is coordinate c of
	// draw i (nil when the run trains on fresh draws); DataY their classes.
	Data  [][]float32
	DataY []int32
}

// Coord is coordinate c of the lanes: X[c·P : (c+1)·P].
func (st *Step) Coord(c int) []float32 { return st.X[c*st.P : (c+1)*st.P] }

// validateObjective checks an objective's lanes for the spec's batch in D dimensions.
func (s Spec2D) validateObjective(D int) error {
	o := s.Objective()
	P := o.Lanes(s.Batch, D)
	if P < s.Batch || P%VW != 0 || P > 1<<16 {
		return fmt.Errorf("kernel: the objective's lanes %d for batch %d: want a multiple of %d in [batch, 65536]", P, s.Batch, VW)
	}
	if o.Params() < 0 || o.Params() > 64 {
		return fmt.Errorf("kernel: the objective has %d parameters, want 0 to 64", o.Params())
	}
	return nil
}

// objLoss is the loss and dL/dF of an objective's step after the forward pass on t.x:
// the data lanes' cross-entropy plus PxWeight times the objective's loss.
func (t *trainer2D) objLoss() float32 {
	var loss float32
	loss, t.lseD, t.lseNeg = objLoss(t.obj, &t.st, t.net.f[:t.K*t.P], t.net.s[:t.K*t.P], t.delta, t.lse, t.coef, t.spec.PxWeight)
	return loss
}

// objLoss is every trainer's step of an objective, after the forward pass gave the
// logits f [K][P] of st's lanes: the data lanes' cross-entropy plus w times the
// objective's loss. It writes the softmax into s, dL/df into delta, every lane's LSE
// into lse and the objective's dL/dℓ into coef, w times dL/dExtra into
// st.ExtraGrad, and returns the loss with the mean LSE of the data and of the other
// lanes (the divergence guard's).
func objLoss(obj Objective, st *Step, f, s, delta, lse, coef []float32, w float32) (loss, lseD, lseNeg float32) {
	B, P := st.B, st.P
	K := len(f) / P
	invB := 1 / float32(B)
	lse, coef = lse[:P], coef[:P]
	vSoftmaxLSE(s, lse, f, K, P) // lse[p] = lse32(f, p, K, P)
	clear(coef)
	clear(st.ExtraGrad)
	loss = w * obj.Loss(st, lse, coef)
	for i := range st.ExtraGrad {
		st.ExtraGrad[i] *= w
	}
	yd := st.Y
	var sumD, sumN float32
	for p := range P {
		scale := w * coef[p]
		if p < B {
			sumD += lse[p]
			loss += (lse[p] - f[int(yd[p])*P+p]) * invB
			scale += invB
		} else {
			sumN += lse[p]
		}
		for y := range K {
			delta[y*P+p] = s[y*P+p] * scale
		}
		if p < B {
			delta[int(yd[p])*P+p] -= invB
		}
	}
	lseD = sumD * invB
	if P > B {
		lseNeg = sumN / float32(P-B)
	}
	return loss, lseD, lseNeg
}

// adamExtra is the Adam step of the objective's own parameters (vAdamFlat's).
func (t *trainer2D) adamExtra(lrT, epsT float32) {
	gAdamFlat(t.st.Extra, t.xm, t.xv, t.st.ExtraGrad, lrT, epsT)
}

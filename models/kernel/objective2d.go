package kernel

import (
	"fmt"
	"math/rand/v2"
)

// Objective2D is a method's part of the fused 2-D trainer, for the methods that live
// in their own packages (methods/<name>): the lanes it adds beyond the minibatch's data
// to every forward pass, and its log q(x) loss as a function of every lane's
// log-sum-exp ℓ(x) = log Σ_y exp f(x)[y]. The trainer adds the data lanes'
// cross-entropy and PxWeight times the objective's loss, back-propagates through the
// lanes, and takes the Adam step (the objective's own scalar parameters with it).
//
// One value serves one goroutine's runs in turn (Spec2D.Objective makes one per
// goroutine); Begin resets it for each run, so a run depends only on its own seed.
type Objective2D interface {
	// Lanes is the lanes of a step for B data points: P ≥ B, a multiple of VW (16).
	Lanes(B int) int
	// Params is the number of the objective's own scalar parameters (e.g. a learned
	// log Z), trained by Adam beside the network's.
	Params() int
	// GradEvals is the objective's forward+backward passes per step beyond the P lanes
	// (e.g. a sampler's input-gradient steps), for the protocol's budget.
	GradEvals(B int) int64
	// Begin starts a run: it may draw from st's streams and sets st.Extra's initial
	// values (zero by default).
	Begin(st *Step2D)
	// Fill writes lanes B..P of st.X (the data lanes 0..B are filled) before the
	// forward pass; it may evaluate the model through st.LSE.
	Fill(st *Step2D)
	// Loss returns the objective's loss given each lane's ℓ (P values), and writes its
	// derivative dL/dℓ per lane into coef (zeroed before) and dL/dExtra into
	// st.ExtraGrad (zeroed before).
	Loss(st *Step2D, lse, coef []float32) float32
	// End finishes a run: the objective's diagnostics into res.Stats, its final
	// negatives into res.Buffer when it has any.
	End(st *Step2D, res *Result2D)
}

// Step2D is what an objective sees of its run at a step.
type Step2D struct {
	Step int // 1-based; 0 in Begin
	B, P int
	Box  float32
	// X are the lanes [2][P] (x0 in X[:P], x1 in X[P:]); the first B are the data.
	X []float32
	// Y are the data lanes' classes.
	Y []int32
	// Rng is the run's stream for perturbations, buffers and restarts; Noise the
	// stream for sampler noise. Both derive from the run's seed only.
	Rng, Noise *rand.Rand
	// Extra are the objective's scalar parameters and ExtraGrad their gradient.
	Extra, ExtraGrad []float32
	// LSE evaluates the model at its current parameters at n points x [2][n] (n a
	// multiple of VW, at most P): lse[i] = ℓ(x_i) and, when grad is not nil,
	// grad [2][n] = ∇x ℓ(x_i). It overwrites the trainer's forward pass, so call it
	// in Fill or End, not in Loss.
	LSE func(x []float32, n int, lse, grad []float32)
	// Data are the run's training draws (nil when the run trains on fresh draws).
	Data0, Data1 []float32
}

// validateObjective checks an objective's lanes for the spec's batch.
func (s Spec2D) validateObjective() error {
	o := s.Objective()
	P := o.Lanes(s.Batch)
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
	B, P, K := t.B, t.P, t.K
	w := t.spec.PxWeight
	f, s := t.net.f[:K*P], t.net.s[:K*P]
	invB := 1 / float32(B)
	lse, coef := t.lse[:P], t.coef[:P]
	vSoftmaxLSE(s, lse, f, K, P) // lse[p] = lse32(f, p, K, P)
	clear(coef)
	clear(t.st.ExtraGrad)
	loss := w * t.obj.Loss(&t.st, lse, coef)
	for i := range t.st.ExtraGrad {
		t.st.ExtraGrad[i] *= w
	}
	var sumD, sumN float32
	for p := range P {
		scale := w * coef[p]
		if p < B {
			sumD += lse[p]
			loss += (lse[p] - f[int(t.yd[p])*P+p]) * invB
			scale += invB
		} else {
			sumN += lse[p]
		}
		for y := range K {
			t.delta[y*P+p] = s[y*P+p] * scale
		}
		if p < B {
			t.delta[int(t.yd[p])*P+p] -= invB
		}
	}
	t.lseD = sumD * invB
	if P > B {
		t.lseNeg = sumN / float32(P-B)
	} else {
		t.lseNeg = 0
	}
	return loss
}

// adamExtra is the Adam step of the objective's own parameters (vAdamFlat's).
func (t *trainer2D) adamExtra(lrT, epsT float32) {
	gAdamFlat(t.st.Extra, t.xm, t.xv, t.st.ExtraGrad, lrT, epsT)
}

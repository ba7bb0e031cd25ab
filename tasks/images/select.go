package images

import (
	"math"

	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/tasks"
)

// The protocol on a CNN: a CNN's log Z is intractable, so its held-out criterion is the
// one a practitioner has, the conditional NLL −log q(y | x) of the held-out draws
// (truth-free and Z-free). Every CNN run is checked at the point's cadence
// (Options.CheckEvery) and at its last step, and the held-out rule keeps the iterate of
// least held-out conditional NLL (rows: heldout_nll, heldout_nll_final, selected_step,
// the curve). The curve's kl_conditional is the exact KL(p(y|x) ‖ q(y|x)) on the same
// held-out draws (the truth's posterior; never read by the selection). The MFA model's
// criterion is its exact joint NLL (mfa.go), as on the other kinds.

// heldout is one task's held-out draws for a CNN's checks: pixels as float32 (the
// network's input), labels, and the truth's posterior p(y | x) of each (row-major
// [n][K]).
type heldout struct {
	x    []float32
	y    []int32
	post []float64
	k    int
}

func newHeldout(tr *mfa.Truth, x []float64, y []int32) *heldout {
	n := len(y)
	h := &heldout{x: make([]float32, len(x)), y: y, k: tr.K(), post: make([]float64, n*tr.K())}
	for i, v := range x {
		h.x[i] = float32(v)
	}
	D := len(x) / max(1, n)
	for i := range n {
		tr.Posterior(x[i*D:(i+1)*D], h.post[i*h.k:(i+1)*h.k])
	}
	return h
}

// check measures a CNN's parameters on the held-out draws: the mean conditional NLL
// (HeldoutNLL) and the exact conditional KL (KLConditional); the joint and marginal KLs
// are not known for a CNN (NaN).
func (h *heldout) check(backend string, p cnn.Params) (tasks.CurvePoint, error) {
	nan := math.NaN()
	c := tasks.CurvePoint{KLJoint: nan, KLMarginal: nan, KLConditional: nan, HeldoutNLL: nan}
	n := len(h.y)
	if n == 0 {
		return c, nil
	}
	f, err := cnn.LogitsOn(backend, p, h.x, n)
	if err != nil {
		return c, err
	}
	var nll, kl float64
	row := make([]float64, h.k)
	for i := range n {
		for k := range h.k {
			row[k] = float64(f[i*h.k+k])
		}
		lse := logSumExp(row)
		nll += lse - row[h.y[i]]
		for k, pk := range h.post[i*h.k : (i+1)*h.k] {
			if pk > 0 {
				kl += pk * (math.Log(pk) - (row[k] - lse))
			}
		}
	}
	c.HeldoutNLL, c.KLConditional = nll/float64(n), kl/float64(n)
	return c, nil
}

// cnnRun follows one CNN run's checks (cnn.TrainOptions.Observe): its curve and the
// selection.
type cnnRun struct {
	held    *heldout
	backend string
	perStep int64
	sel     tasks.Selector
	curve   []tasks.CurvePoint
	err     error // the first check that failed
}

func (r *cnnRun) observe(step int, p cnn.Params) {
	if r.err != nil {
		return
	}
	c, err := r.held.check(r.backend, p)
	if err != nil {
		r.err = err
		return
	}
	c.Step, c.GradEvals = step, int64(step)*r.perStep
	r.curve = append(r.curve, c)
	r.sel.Observe(step, c.HeldoutNLL, c.GradEvals, flatten(p), nil)
}

// finish sets the run's curve (ending at its last step, whose parameters final are) and
// its selection.
func (r *cnnRun) finish(tr *tasks.TrainedRun, method string, last int, final cnn.Params, steps int) {
	tr.Curve = tasks.EndCurve(r.curve, last, func() tasks.CurvePoint {
		c, err := r.held.check(r.backend, final)
		if err != nil && r.err == nil {
			r.err = err
		}
		c.Step, c.GradEvals = last, int64(last)*r.perStep
		return c
	})
	r.sel.Finish(tr, method, steps)
}

package cnn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Data is a labelled image set: X holds n = len(Y) row-major S×S images (n×S·S, values
// of order 1; the SGLD buffer starts uniform in [-1, 1]), Y their classes in [0, K).
type Data struct {
	X    []float32
	Y    []int
	S, K int
}

// TrainOptions configure Train. Zero fields take the defaults noted.
type TrainOptions struct {
	// Objective is the method's log q(x) term (SGLD, ED, DSM, NCE, or a method's own);
	// nil trains cross-entropy alone (the baseline).
	Objective Objective
	Steps     int     // Adam steps (required, > 0)
	Batch     int     // minibatch size, 64 (capped at the data size)
	LR        float64 // Adam learning rate, 1e-3
	Seed      uint64  // initialisation, minibatches, buffer, SGLD noise
	// PxWeight weights the objective's term against the cross-entropy, 1.
	PxWeight float64
	// DataNoise is the std of Gaussian noise added to every data minibatch (JEM: 0.03;
	// default 0).
	DataNoise float64
	// Backend is the GoMLX backend ("" = DefaultBackend; "go", "xla:cpu", "xla:cuda" where
	// compiled in with -tags xla).
	Backend string
	// Autodiff takes every gradient (parameters and SGLD's input gradient) from GoMLX
	// autodiff instead of the hand-written backward pass (same values, slower on SimpleGo).
	Autodiff bool
	// Init, if non-nil, starts from these parameters instead of Init(spec, S, K, Seed).
	Init *Params
	// Observe, where set, is called with the parameters after every ObserveEvery-th step
	// and after the last step (the protocol's checks: tasks/images selects a run's
	// iterate on its held-out draws with it). Not after a diverged step, whose update is
	// discarded. ObserveEvery <= 0 observes the last step only.
	Observe      func(step int, p Params)
	ObserveEvery int
}

// GradEvalsPerStep is the forward+backward passes one training step makes per data
// point (the protocol's cost axis): 1 for the data, plus the objective's own
// (Objective.GradEvals: SGLD's steps, ED's negatives, NCE's ν noise draws).
func (o TrainOptions) GradEvalsPerStep() int64 {
	if o.Objective == nil {
		return 1
	}
	return 1 + o.Objective.GradEvals()
}

// TermWeight is the weight the trainer gives the objective's term: PxWeight (1 where
// unset), 0 without an objective.
func (o TrainOptions) TermWeight() float64 {
	switch {
	case o.Objective == nil:
		return 0
	case o.PxWeight == 0:
		return 1
	}
	return o.PxWeight
}

// Stats report a training run.
type Stats struct {
	Steps        int       // Adam steps taken (Steps, or fewer after divergence or cancellation)
	Loss         []float32 // total loss per step
	CE           []float32 // cross-entropy part per step
	Diverged     bool      // a non-finite or huge (|loss| > 1e8, JEM's guard) loss stopped training
	DivergedStep int       // the 1-based step that diverged; its update is discarded
	Backend      string
	Seconds      float64 // wall time, graph building and compilation included
	// Term is the objective's log q(x) term per step, before PxWeight (nil for the
	// baseline).
	Term []float32
	// MethodStats are what the objective reports of itself (Term.End; nil for the
	// baseline and SGLD):
	// "ed_loss", "dsm_loss", "nce_loss" (the term averaged over the last tenth of the
	// steps); nce's "log_z_learned" (the final c), "log_z_init" (c's start) and
	// "log_z_is" (log mean exp(ℓ(y) − log pn(y)) over the last step's noise draws y: an
	// importance-sampling estimate of log Z_θ under the noise, biased low), and
	// "nce_ridge" (the ridge added to the fitted covariance, 0 if none).
	MethodStats map[string]float64
}

const divergeLimit = 1e8

func (o *TrainOptions) defaults() {
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.LR == 0 {
		o.LR = 1e-3
	}
	if o.PxWeight == 0 {
		o.PxWeight = 1
	}
	if o.Backend == "" {
		o.Backend = DefaultBackend
	}
}

func (o TrainOptions) validate() error {
	switch {
	case o.Steps <= 0:
		return fmt.Errorf("cnn: Steps must be positive, got %d", o.Steps)
	case o.LR < 0 || math.IsNaN(o.LR):
		return fmt.Errorf("cnn: bad learning rate %g", o.LR)
	case !finitePos(o.PxWeight):
		return fmt.Errorf("cnn: PxWeight must be a finite number > 0, got %v", o.PxWeight)
	case o.DataNoise < 0:
		return fmt.Errorf("cnn: DataNoise must be >= 0")
	case o.Objective != nil:
		return o.Objective.Check(o)
	}
	return nil
}

func (d Data) check() error {
	n := len(d.Y)
	if err := (Spec{Convs: []int{1}}).Check(2, d.K); d.K < 2 || err != nil {
		return fmt.Errorf("cnn: data needs K >= 2 classes, got %d", d.K)
	}
	if n == 0 || d.S <= 0 || len(d.X) != n*d.S*d.S {
		return fmt.Errorf("cnn: data X has %d values for %d labels of %d×%d images", len(d.X), n, d.S, d.S)
	}
	for i, y := range d.Y {
		if y < 0 || y >= d.K {
			return fmt.Errorf("cnn: label %d of example %d outside [0, %d)", y, i, d.K)
		}
	}
	return nil
}

// trainGraph is one run's training step: the network, the run's term (nil: the
// baseline) and the settings the graph depends on.
type trainGraph struct {
	nt       *net
	term     Term
	N        int
	noise, w float64
	autodiff bool
	// after building: the term's own parameters and host inputs
	own, inputs int
}

// build builds the step. Inputs: params, Adam m, v (each the network's then the term's
// own scalars), lrT and epsT (scalars), x [N, D], y [N] int32, rng state, then the
// term's host inputs. Outputs: params', m', v', loss, ce, rng', then for a term its
// value and its outputs.
func (tg *trainGraph) build(g *Graph) {
	nt, N := tg.nt, tg.N
	sh := nt.sp.layerShapes(nt.S, nt.K)
	np := len(sh)
	var own []float32
	if tg.term != nil {
		own = tg.term.Own()
	}
	for range own {
		sh = append(sh, []int{})
	}
	tg.own = len(own)
	p := paramNodes(g, sh, "p")
	m := paramNodes(g, sh, "m")
	v := paramNodes(g, sh, "v")
	f32 := dtypes.Float32
	lrT := Parameter(g, "lrT", shapes.Make(f32))
	epsT := Parameter(g, "epsT", shapes.Make(f32))
	D := nt.S * nt.S
	x := Parameter(g, "x", shapes.Make(f32, N, D))
	y := Parameter(g, "y", shapes.Make(dtypes.Int32, N))
	s := &StepGraph{G: g, B: N, D: D, K: nt.K, Own: p[np:], nt: nt, p: p[:np], autodiff: tg.autodiff,
		rng: Parameter(g, "rng", RNGStateForGraph(g).Shape())}
	if tg.noise > 0 {
		x = Add(x, MulScalar(s.Normal(N, D), tg.noise))
	}
	s.X = x
	onehot := OneHot(y, nt.K, f32)
	loss, ce, term, grads := tg.lossGrads(s, p, onehot)
	outs := make([]*Node, 0, 3*len(sh)+4+len(s.outputs))
	newM, newV := make([]*Node, len(sh)), make([]*Node, len(sh))
	for j := range sh { // Adam with scaled moments, as models/adam.go
		newM[j] = Add(MulScalar(m[j], adamBeta1), grads[j])
		newV[j] = Add(MulScalar(v[j], adamBeta2), Mul(grads[j], grads[j]))
		outs = append(outs, Sub(p[j], Div(Mul(lrT, newM[j]), Add(Sqrt(newV[j]), epsT))))
	}
	outs = append(outs, newM...)
	outs = append(outs, newV...)
	outs = append(outs, loss, ce, s.rng)
	if term != nil {
		outs = append(outs, term)
	}
	outs = append(outs, s.outputs...)
	tg.inputs = s.inputs
	g.Compile(outs...)
}

// lossGrads builds the step's loss, cross-entropy and term (nil for the baseline) and
// the loss's gradients in p (the network's parameters, then the term's own) on the
// step's data s.X with one-hot labels [N, K].
func (tg *trainGraph) lossGrads(s *StepGraph, p []*Node, onehot *Node) (loss, ce, term *Node, grads []*Node) {
	g, nt, N, x := s.G, tg.nt, s.B, s.X
	np := len(p) - len(s.Own)
	f32 := dtypes.Float32
	invN := 1 / float64(N)
	ceOf := func(logits *Node) *Node {
		return MulScalar(ReduceAllSum(Sub(logSumExp(logits), ReduceSum(Mul(logits, onehot), -1))), invN)
	}
	var lanes *Node
	if tg.term != nil {
		if lanes = tg.term.Lanes(s); lanes != nil {
			lanes = StopGradient(lanes)
		}
	}
	switch {
	case tg.term == nil:
		logits, ac := nt.forward(p, x)
		ce = ceOf(logits)
		loss = ce
		if tg.autodiff {
			grads = Gradient(loss, p...)
		} else {
			grads, _ = nt.backward(p, ac, MulScalar(Sub(Softmax(logits, -1), onehot), invN), true, false)
		}
	case tg.autodiff: // a forward pass per set of lanes: the VJP of Slice needs Pad, which SimpleGo lacks
		logitsD, _ := nt.forward(p[:np], x)
		var ln *Node
		if lanes != nil {
			logitsN, _ := nt.forward(p[:np], lanes)
			ln = logSumExp(logitsN)
		}
		ce = ceOf(logitsD)
		s.inLoss = true
		term = tg.term.Loss(s, logSumExp(logitsD), ln)
		loss = Add(ce, MulScalar(term, tg.w))
		grads = Gradient(loss, p...)
	default: // one forward pass over the data and the lanes, one hand backward pass
		in := x
		if lanes != nil {
			in = Concatenate([]*Node{x, lanes}, 0)
		}
		logits, ac := nt.forward(p[:np], in)
		sm := Softmax(logits, -1)
		l := logSumExp(logits)
		logitsD, smD := logits, sm
		if lanes != nil {
			logitsD, smD = Slice(logits, AxisRange(0, N)), Slice(sm, AxisRange(0, N))
		}
		ce = ceOf(logitsD)
		// The term's derivative in every lane's ℓ, not through the network.
		wrt := []*Node{Identity(StopGradient(l))}
		if lanes != nil {
			wrt = []*Node{Identity(StopGradient(Slice(l, AxisRange(0, N)))), Identity(StopGradient(Slice(l, AxisRange(N))))}
		}
		var ln *Node
		if lanes != nil {
			ln = wrt[1]
		}
		s.inLoss = true
		term = tg.term.Loss(s, wrt[0], ln)
		loss = Add(ce, MulScalar(term, tg.w))
		tgs := Gradient(term, append(wrt, s.Own...)...)
		coef := tgs[0]
		if lanes != nil {
			coef = Concatenate([]*Node{tgs[0], tgs[1]}, 0)
		}
		dl := MulScalar(Mul(InsertAxes(coef, -1), sm), tg.w)
		dce := MulScalar(Sub(smD, onehot), invN)
		if lanes != nil {
			dce = Concatenate([]*Node{dce, Zeros(g, shapes.Make(f32, lanes.Shape().Dimensions[0], nt.K))}, 0)
		}
		grads, _ = nt.backward(p[:np], ac, Add(dl, dce), true, false)
		if s.direct { // the term's input gradients: its parameter gradient by autodiff through them
			dg := Gradient(term, p[:np]...)
			for j := range grads {
				grads[j] = Add(grads[j], MulScalar(dg[j], tg.w))
			}
		}
		for _, t := range tgs[len(wrt):] {
			grads = append(grads, MulScalar(t, tg.w))
		}
	}
	return loss, ce, term, grads
}

const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// adamScalars returns lr·lrScale(t) and epsT(t) for step t >= 1 (models/adam.go's form:
// moments scaled by 1/(1-β), algebraically the bias-corrected textbook update).
func adamScalars(lr float64, t int) (lrT, epsT float32) {
	bc1 := 1 - math.Pow(adamBeta1, float64(t))
	sq2 := math.Sqrt(1 - math.Pow(adamBeta2, float64(t)))
	sqB2 := math.Sqrt(1 - adamBeta2)
	return float32(lr * (1 - adamBeta1) * sq2 / (bc1 * sqB2)), float32(adamEps * sq2 / sqB2)
}

// Train trains one run of spec on data with Adam and returns its parameters (those of
// the last finite step if training diverged) and statistics. Divergence (a non-finite
// loss or |loss| > 1e8) stops training and is reported in Stats, not as an error;
// errors are bad arguments, an unavailable backend, a GoMLX failure or ctx's
// cancellation (then the parameters so far come back too). Runs are independent and
// deterministic given opts.Seed: call Train from several goroutines to train several
// runs (each call has its own backend and graph).
func Train(ctx context.Context, spec Spec, data Data, opts TrainOptions) (Params, Stats, error) {
	start := time.Now()
	opts.defaults()
	if err := opts.validate(); err != nil {
		return Params{}, Stats{}, err
	}
	if err := data.check(); err != nil {
		return Params{}, Stats{}, err
	}
	S, K := data.S, data.K
	if err := spec.Check(S, K); err != nil {
		return Params{}, Stats{}, err
	}
	params := opts.Init
	if params == nil {
		p, err := Init(spec, S, K, opts.Seed)
		if err != nil {
			return Params{}, Stats{}, err
		}
		params = &p
	} else if err := params.check(); err != nil || params.Spec.String() != spec.String() || params.S != S || params.K != K {
		return Params{}, Stats{}, fmt.Errorf("cnn: TrainOptions.Init does not match %s on %d×%d, K=%d (%v)", spec, S, K, K, err)
	}
	backend, err := newBackend(opts.Backend)
	if err != nil {
		return Params{}, Stats{}, err
	}
	defer func() { _ = catch(func() error { backend.Finalize(); return nil }) }()

	n, D := len(data.Y), S*S
	N := min(opts.Batch, n)
	nt := newNet(spec, S, K)
	rngState, err := RNGStateFromSeed(int64(opts.Seed ^ 0x9e3779b97f4a7c15))
	if err != nil {
		return Params{}, Stats{}, fmt.Errorf("cnn: %w", err)
	}
	state := params.toTensors()                                  // params, then the term's own scalars, m, v
	host := rand.New(rand.NewPCG(opts.Seed, 0x636e6e2d7472616e)) // minibatches and the term's host side
	tg := &trainGraph{nt: nt, N: N, noise: opts.DataNoise, w: opts.PxWeight, autodiff: opts.Autodiff}
	if opts.Objective != nil {
		r := &Run{Data: data, Batch: N, Host: host, backend: backend, nt: nt, params: state, rng: rngState, autodiff: opts.Autodiff}
		if tg.term, err = opts.Objective.Begin(r); err != nil {
			return Params{}, Stats{}, err
		}
		rngState = r.rng
		for _, c := range tg.term.Own() {
			state = append(state, tensors.FromScalar(c))
		}
	}
	g := NewGraph(backend, "cnn_train")
	defer func() { _ = catch(func() error { g.Finalize(); return nil }) }()
	if err := catch(func() error { tg.build(g); return nil }); err != nil {
		return Params{}, Stats{}, fmt.Errorf("cnn: building training graph: %w", err)
	}
	np := len(spec.layerShapes(S, K)) // the network's parameters; the term's own follow them
	na := np + tg.own
	for range 2 {
		for _, t := range state[:na] {
			state = append(state, tensors.FromShape(t.Shape()))
		}
	}
	perm := host.Perm(n)
	pos := 0
	xb, yb := make([]float32, N*D), make([]int32, N)
	st := Stats{Backend: opts.Backend}
	for step := 1; step <= opts.Steps; step++ {
		if err := ctx.Err(); err != nil {
			st.Seconds = time.Since(start).Seconds()
			return readParams(*params, state[:np]), st, err
		}
		for i := range N {
			if pos == n {
				perm, pos = host.Perm(n), 0
			}
			j := perm[pos]
			pos++
			copy(xb[i*D:(i+1)*D], data.X[j*D:(j+1)*D])
			yb[i] = int32(data.Y[j])
		}
		lrT, epsT := adamScalars(opts.LR, step)
		inputs := make([]any, 0, 3*na+5+tg.inputs)
		for _, t := range state {
			inputs = append(inputs, t)
		}
		inputs = append(inputs, lrT, epsT, tensors.FromFlatDataAndDimensions(slices.Clone(xb), N, D),
			tensors.FromFlatDataAndDimensions(slices.Clone(yb), N), rngState)
		if tg.term != nil {
			fed := tg.term.Feed()
			if len(fed) != tg.inputs {
				return readParams(*params, state[:np]), st, fmt.Errorf("cnn: %s fed %d host inputs, declared %d", opts.Objective.Name(), len(fed), tg.inputs)
			}
			for _, t := range fed {
				inputs = append(inputs, t)
			}
		}
		var outs []*tensors.Tensor
		if err := catch(func() error { outs = g.Run(inputs...); return nil }); err != nil {
			st.Seconds = time.Since(start).Seconds()
			return readParams(*params, state[:np]), st, fmt.Errorf("cnn: training step %d: %w", step, err)
		}
		loss := tensors.MustCopyFlatData[float32](outs[3*na])[0]
		ce := tensors.MustCopyFlatData[float32](outs[3*na+1])[0]
		if math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0) || math.Abs(float64(loss)) > divergeLimit {
			st.Diverged, st.DivergedStep = true, step
			break
		}
		st.Steps = step
		st.Loss, st.CE = append(st.Loss, loss), append(st.CE, ce)
		for _, t := range state {
			_ = t.FinalizeAll()
		}
		state = outs[:3*na]
		rngState = outs[3*na+2]
		if tg.term != nil {
			st.Term = append(st.Term, tensors.MustCopyFlatData[float32](outs[3*na+3])[0])
			tg.term.After(outs[3*na+4:])
		}
		if opts.Observe != nil && (step == opts.Steps || (opts.ObserveEvery > 0 && step%opts.ObserveEvery == 0)) {
			opts.Observe(step, readParams(*params, state[:np]))
		}
	}
	st.Seconds = time.Since(start).Seconds()
	if tg.term != nil {
		own := make([]float32, tg.own)
		for i := range own {
			own[i] = tensors.MustCopyFlatData[float32](state[np+i])[0]
		}
		tg.term.End(own, &st)
	}
	return readParams(*params, state[:np]), st, nil
}

func readParams(like Params, ts []*tensors.Tensor) Params {
	out := Params{Spec: like.Spec, S: like.S, K: like.K, Tensors: make([][]float32, len(ts))}
	for i, t := range ts {
		out.Tensors[i] = tensors.MustCopyFlatData[float32](t)
	}
	return out
}

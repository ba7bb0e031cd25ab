package models

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// The general path: parameters as [R, in, out] / [R, 1, out] tensors, any model and
// encoding, loss on [R, X, K] normalised counts. The gradient of the loss with respect
// to the logits comes from GoMLX autodiff; by default it is back-propagated through the
// dense layers by hand (backprop), or, with generalKey.autodiff, by GoMLX autodiff all
// the way to the parameters. The full-autodiff variant is the reference against which
// both the hand backprop and the fast path are tested.

// layer is one dense layer's fan-in and fan-out.
type layer struct{ in, out int }

// layerDims lists the layers of the model: encoding input -> hidden... -> K.
func layerDims(s Shape, hidden []int) []layer {
	in := 1
	if s.Encoding == EncodingOneHot {
		in = s.XValues
	}
	var ls []layer
	for _, h := range hidden {
		ls = append(ls, layer{in, h})
		in = h
	}
	return append(ls, layer{in, s.Classes})
}

// numParams is the number of scalar parameters of one run.
func numParams(ls []layer) int {
	n := 0
	for _, l := range ls {
		n += l.in*l.out + l.out
	}
	return n
}

// generalKey identifies a compiled general-path graph.
type generalKey struct {
	X, K      int
	onehot    bool
	model     string
	R, U      int
	minibatch bool
	autodiff  bool // gradients w.r.t. the parameters by GoMLX autodiff (else backprop by hand)
	eval      bool // the evaluation graph (logits and loss); U and minibatch unused
}

// paramShapes returns the [R,...] shapes of W_l, b_l for every layer, in order.
func paramShapes(ls []layer, R int) []shapes.Shape {
	out := make([]shapes.Shape, 0, 2*len(ls))
	for _, l := range ls {
		out = append(out, shapes.Make(dtypes.Float32, R, l.in, l.out), shapes.Make(dtypes.Float32, R, 1, l.out))
	}
	return out
}

// forward computes the logits [R, X, K] of the model with tensor parameters
// (W_0, b_0, W_1, b_1, ...); hidden layers use tanh.
func forward(params []*Node, X int, onehot bool) *Node {
	logits, _ := forwardActs(params, X, onehot)
	return logits
}

// forwardActs is forward that also returns the input of every layer: acts[0] is the
// encoded x ([R, X, 1] for scalar; nil for one-hot, whose first layer is a row lookup)
// and acts[l] the tanh output of hidden layer l.
func forwardActs(params []*Node, X int, onehot bool) (logits *Node, acts []*Node) {
	g := params[0].Graph()
	R := params[0].Shape().Dimensions[0]
	nl := len(params) / 2
	var h *Node
	if !onehot {
		xs := make([]float32, X)
		for x := range X {
			xs[x] = float32(x)
		}
		h = BroadcastToDims(Const(g, [][][]float32{toColumn(xs)}), R, X, 1)
	}
	for l := range nl {
		W, b := params[2*l], params[2*l+1]
		acts = append(acts, h)
		var z *Node
		if h == nil {
			z = W // one-hot(x) · W selects row x of W: [R, X, out].
		} else {
			z = Einsum("rxi,rio->rxo", h, W)
		}
		z = Add(z, BroadcastToDims(b, z.Shape().Dimensions...)) // same-shape Add: no broadcasting iterator
		if l < nl-1 {
			z = Tanh(z)
		}
		h = z
	}
	return h, acts
}

// backprop maps dLoss/dlogits [R,X,K] to the parameter gradients of forwardActs by
// hand, with Einsum (DotGeneral) for the batched matrix products. GoMLX's own VJP of
// Einsum materialises broadcast [R,X,in,out] products, several times slower on
// SimpleGo.
func backprop(params, acts []*Node, delta *Node) []*Node {
	nl := len(params) / 2
	grads := make([]*Node, len(params))
	for l := nl - 1; l >= 0; l-- {
		W := params[2*l]
		R, out := delta.Shape().Dimensions[0], delta.Shape().Dimensions[2]
		grads[2*l+1] = Reshape(ReduceSum(delta, 1), R, 1, out)
		h := acts[l]
		if h == nil {
			grads[2*l] = delta // one-hot input: dW[x,:] = delta[x,:]
		} else {
			grads[2*l] = Einsum("rxi,rxo->rio", h, delta)
		}
		if l > 0 { // through W and the tanh of the previous layer
			delta = Mul(Einsum("rxo,rio->rxi", delta, W), OneMinus(Mul(h, h)))
		}
	}
	return grads
}

func toColumn(xs []float32) [][]float32 {
	out := make([][]float32, len(xs))
	for i, v := range xs {
		out[i] = []float32{v}
	}
	return out
}

// logSumExp reduces axis (removed) stably; its gradient is the softmax.
func logSumExp(x *Node, axis int) *Node {
	m := StopGradient(ReduceAndKeep(x, ReduceMax, axis))
	return Add(Squeeze(m, axis), Log(ReduceSum(Exp(Sub(x, BroadcastToDims(m, x.Shape().Dimensions...))), axis)))
}

// countsLoss is the per-run loss [R] on normalised counts chat [R,X,K] (each run's
// cells sum to 1) with px weights w [R]:
//
//	CE      = sum_{x,y} ĉ[x,y] (LSE_y f(x) - f(x)[y])
//	JEMterm = -sum_x ĉ(x) LSE_y f(x) + log Z
//	loss    = CE + w JEMterm
func countsLoss(logits, chat, w *Node) *Node {
	R, X, K := logits.Shape().Dimensions[0], logits.Shape().Dimensions[1], logits.Shape().Dimensions[2]
	lse := logSumExp(logits, 2)                                                 // [R, X]
	rowW := ReduceSum(chat, 2)                                                  // [R, X]
	ce := Sub(ReduceSum(Mul(rowW, lse), 1), ReduceSum(Mul(chat, logits), 1, 2)) // [R]
	logZ := logSumExp(Reshape(logits, R, X*K), 1)                               // [R]
	jem := Add(Neg(ReduceSum(Mul(rowW, lse), 1)), logZ)                         // [R]
	return Add(ce, Mul(w, jem))
}

// buildGeneralTrain builds the autodiff training graph. Parameters, in order:
//
//	params[2L], m[2L], v[2L] (paramShapes), diverged [R] bool, lr [R], w [R],
//	chat [R,X,K] (U of them in minibatch mode), then per step: lrScale_i, epsT_i (scalars).
//
// Outputs: params, m, v, diverged.
func buildGeneralTrain(g *Graph, key generalKey, ls []layer) {
	R, U := key.R, key.U
	f32 := dtypes.Float32
	ps := paramShapes(ls, R)
	np := len(ps)
	state := make([][]*Node, 3)
	for k, prefix := range []string{"p", "m", "v"} {
		state[k] = make([]*Node, np)
		for j, s := range ps {
			state[k][j] = Parameter(g, fmt.Sprintf("%s%d", prefix, j), s)
		}
	}
	div0 := Parameter(g, "diverged", shapes.Make(dtypes.Bool, R))
	lr := Parameter(g, "lr", shapes.Make(f32, R))
	w := Parameter(g, "w", shapes.Make(f32, R))
	nSets := 1
	if key.minibatch {
		nSets = U
	}
	chat := make([]*Node, nSets)
	for s := range nSets {
		chat[s] = Parameter(g, fmt.Sprintf("chat%d", s), shapes.Make(f32, R, key.X, key.K))
	}
	lrScale := make([]*Node, U)
	epsT := make([]*Node, U)
	for i := range U {
		lrScale[i] = Parameter(g, fmt.Sprintf("lrscale%d", i), shapes.Make(f32))
		epsT[i] = Parameter(g, fmt.Sprintf("epst%d", i), shapes.Make(f32))
	}

	// Per-run learning rates broadcast once per call to every parameter shape; each step
	// then scales them by its scalar lrScale_i (no broadcasting iterator per step).
	lrFull := make([]*Node, np)
	for j, s := range ps {
		dims := make([]int, s.Rank())
		for k := range dims {
			dims[k] = 1
		}
		dims[0] = R
		lrFull[j] = BroadcastToDims(Reshape(lr, dims...), s.Dimensions...)
	}
	theta, m, v := state[0], state[1], state[2]
	for i := range U {
		c := chat[0]
		if key.minibatch {
			c = chat[i]
		}
		var grads []*Node
		if key.autodiff {
			loss := ReduceAllSum(countsLoss(forward(theta, key.X, key.onehot), c, w))
			grads = Gradient(loss, theta...)
		} else {
			logits, acts := forwardActs(theta, key.X, key.onehot)
			loss := ReduceAllSum(countsLoss(logits, c, w))
			grads = backprop(theta, acts, Gradient(loss, logits)[0])
		}
		lrT := make([]*Node, np)
		for j := range np {
			lrT[j] = Mul(lrFull[j], lrScale[i])
		}
		theta, m, v = adam(theta, m, v, grads, lrT, epsT[i])
	}

	// Divergence: a run is finite iff sum(0*s) over all its state is 0 (NaN otherwise).
	var probe *Node
	for _, list := range [][]*Node{theta, m, v} {
		for _, n := range list {
			axes := make([]int, n.Rank()-1)
			for k := range axes {
				axes[k] = k + 1
			}
			z := ReduceSum(MulScalar(n, 0), axes...)
			if probe == nil {
				probe = z
			} else {
				probe = Add(probe, z)
			}
		}
	}
	keep := LogicalAnd(IsFinite(probe), LogicalNot(div0))
	outs := make([]*Node, 0, 3*np+1)
	for k, list := range [][]*Node{theta, m, v} {
		for j := range list {
			outs = append(outs, Where(keep, list[j], state[k][j]))
		}
	}
	outs = append(outs, LogicalNot(keep))
	g.Compile(outs...)
}

// buildEval builds the evaluation graph: inputs params[2L], chat [R,X,K], w [R];
// outputs logits [R,X,K] and loss [R].
func buildEval(g *Graph, key generalKey, ls []layer) {
	R := key.R
	f32 := dtypes.Float32
	ps := paramShapes(ls, R)
	params := make([]*Node, len(ps))
	for j, s := range ps {
		params[j] = Parameter(g, fmt.Sprintf("p%d", j), s)
	}
	chat := Parameter(g, "chat", shapes.Make(f32, R, key.X, key.K))
	w := Parameter(g, "w", shapes.Make(f32, R))
	logits := forward(params, key.X, key.onehot)
	g.Compile(logits, countsLoss(logits, chat, w))
}

// generalLayout is the tensor form: per layer one [R,in,out] weight and one [R,1,out]
// bias tensor, and [R,X,K] cell weights (see general.go).
type generalLayout struct {
	t   *Trainer
	st  *batchState
	key generalKey // U is set per call
}

func newGeneralLayout(t *Trainer, st *batchState) *generalLayout {
	s := st.shape
	return &generalLayout{t: t, st: st, key: generalKey{X: s.XValues, K: s.Classes, onehot: s.Encoding == EncodingOneHot,
		model: s.Model, R: st.R, minibatch: s.BatchSize > 0, autodiff: t.fullAutodiff}}
}

func (l *generalLayout) unroll() int { return l.t.unrollGeneral }

func (l *generalLayout) graph(u int) (*Graph, error) {
	key := l.key
	key.U = u
	return l.t.graphFor(key, fmt.Sprintf("general_%dx%d_%s_R%d_U%d_ad%v", key.X, key.K, key.model, key.R, u, key.autodiff),
		func(g *Graph) { buildGeneralTrain(g, key, l.st.ls) })
}

func (l *generalLayout) initState() []*tensors.Tensor {
	state := packTensor(l.st.theta, l.st.ls)
	for range 2 { // m, v
		for _, s := range paramShapes(l.st.ls, l.st.R) {
			state = append(state, tensors.FromShape(s)) // zeros
		}
	}
	return append(state, tensors.FromFlatDataAndDimensions(slices.Clone(l.st.diverged), l.st.R))
}

func (l *generalLayout) fixed() []*tensors.Tensor {
	st := l.st
	fixed := []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(st.lr, st.R),
		tensors.FromFlatDataAndDimensions(st.w, st.R),
	}
	if !l.key.minibatch {
		fixed = append(fixed, countsTensor(st.chat, l.key.X, l.key.K))
	}
	return fixed
}

func (l *generalLayout) stepInputs(u int) []*tensors.Tensor {
	if !l.key.minibatch {
		return nil
	}
	counts := make([]*tensors.Tensor, u)
	for i := range u {
		counts[i] = countsTensor(l.st.minibatchHistograms(), l.key.X, l.key.K)
	}
	return counts
}

func (l *generalLayout) readBack(state []*tensors.Tensor) {
	np := 2 * len(l.st.ls)
	unpackTensor(state[:np], l.st.theta, l.st.ls)
	copy(l.st.diverged, tensors.MustCopyFlatData[bool](state[3*np]))
}

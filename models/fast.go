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

// The fast path: linear model (scalar or one-hot encoding) with a hand-derived gradient,
// in "split form": every scalar parameter, Adam moment and cell quantity of the R runs is
// its own [R] tensor. SimpleGo then only runs same-shape element-wise loops (no
// broadcasting iterator, no reductions over tiny axes), which the research found several
// times faster than Einsum on [R,...] tensors for tiny models.
//
// With normalised weights ĉ = c/W, row sums ĉ(x) = sum_y ĉ[x,y], the local softmax
// s[x,y] = softmax_y f(x)[y] and the global softmax q[x,y] = exp f(x)[y] / Z, the gradient
// of the loss with respect to the logits is
//
//	dL/df[x,y] = (1-w) ĉ(x) s[x,y] - ĉ[x,y] + w q[x,y]
//
// so CE (w=0) needs only s, JEM (w=1) only q (g = q - ĉ), and a mix both. The parameter
// gradients follow from f(x)[y] = e(x)·W[:,y] + b[y].

// pxMode specialises the graph on the px weights of the batch.
type pxMode int

const (
	pxCE  pxMode = iota // every run has PxWeight 0
	pxJEM               // every run has PxWeight 1
	pxMix               // anything else: per-run w input
)

func (m pxMode) String() string {
	return [...]string{"ce", "jem", "mix"}[m]
}

// fastMaxCells bounds X*K for the split-form fast path: its graph has about 20 nodes
// per cell and step. Measured on 16x8 one-hot linear tables, it is still about twice
// as fast as the tensor path.
const fastMaxCells = 256

// fastUnroll caps the steps per graph call so that a graph has at most about 2048 cell
// steps (some 40k nodes).
func fastUnroll(unroll, cells int) int {
	return max(1, min(unroll, 2048/cells))
}

// fastKey identifies a compiled fast-path training graph.
type fastKey struct {
	X, K      int
	onehot    bool
	mode      pxMode
	R, U      int // runs, unrolled steps
	minibatch bool
}

// fastNumParams is the number of scalar parameters of the linear model.
func fastNumParams(X, K int, onehot bool) int {
	if onehot {
		return X*K + K
	}
	return 2 * K
}

// buildFastTrain builds the training graph for key. Parameters, in order:
//
//	theta[P], m[P], v[P] (each [R] float32), diverged [R] bool, lr [R],
//	w [R] (mix mode only), cells (XK [R] tensors of normalised counts; U*XK in minibatch
//	mode, step-major), then per step i<U: lrScale_i, epsT_i (scalars).
//
// Outputs: theta[P], m[P], v[P], diverged.
func buildFastTrain(g *Graph, key fastKey) {
	X, K, R, U := key.X, key.K, key.R, key.U
	XK := X * K
	P := fastNumParams(X, K, key.onehot)
	f32 := dtypes.Float32
	vec := shapes.Make(f32, R)
	param := func(name string, s shapes.Shape) *Node { return Parameter(g, name, s) }

	theta0 := make([]*Node, P)
	m0 := make([]*Node, P)
	v0 := make([]*Node, P)
	for j := range P {
		theta0[j] = param(fmt.Sprintf("theta%d", j), vec)
	}
	for j := range P {
		m0[j] = param(fmt.Sprintf("m%d", j), vec)
	}
	for j := range P {
		v0[j] = param(fmt.Sprintf("v%d", j), vec)
	}
	div0 := param("diverged", shapes.Make(dtypes.Bool, R))
	lr := param("lr", vec)
	var w, oneMinusW *Node
	if key.mode == pxMix {
		w = param("w", vec)
		oneMinusW = OneMinus(w)
	}
	nCellSets := 1
	if key.minibatch {
		nCellSets = U
	}
	cells := make([][]*Node, nCellSets)
	for s := range nCellSets {
		cells[s] = make([]*Node, XK)
		for c := range XK {
			cells[s][c] = param(fmt.Sprintf("c%d_%d", s, c), vec)
		}
	}
	lrScale := make([]*Node, U)
	epsT := make([]*Node, U)
	for i := range U {
		lrScale[i] = param(fmt.Sprintf("lrscale%d", i), shapes.Make(f32))
		epsT[i] = param(fmt.Sprintf("epst%d", i), shapes.Make(f32))
	}

	// Per cell-set derived weights: row sums ĉ(x) (CE) or (1-w) ĉ(x) (mix).
	type derived struct{ rowW []*Node }
	derive := func(c []*Node) derived {
		if key.mode == pxJEM {
			return derived{}
		}
		d := derived{rowW: make([]*Node, X)}
		for x := range X {
			sum := c[x*K]
			for y := 1; y < K; y++ {
				sum = Add(sum, c[x*K+y])
			}
			if key.mode == pxMix {
				sum = Mul(oneMinusW, sum)
			}
			d.rowW[x] = sum
		}
		return d
	}
	var fullDerived derived
	if !key.minibatch {
		fullDerived = derive(cells[0])
	}

	theta, m, v := theta0, m0, v0
	for i := range U {
		c, d := cells[0], fullDerived
		if key.minibatch {
			c, d = cells[i], derive(cells[i])
		}
		grad := fastGradient(theta, c, d.rowW, w, X, K, key.onehot, key.mode)
		lrT := slices.Repeat([]*Node{Mul(lr, lrScale[i])}, P) // one [R] node shared by every parameter
		theta, m, v = adam(theta, m, v, grad, lrT, epsT[i])
	}

	// Divergence masking: keep the new state only where it is all finite and the run had
	// not diverged before; otherwise restore the state at the start of this chunk.
	var ok *Node
	for _, list := range [][]*Node{theta, m, v} {
		for _, n := range list {
			fin := IsFinite(n)
			if ok == nil {
				ok = fin
			} else {
				ok = LogicalAnd(ok, fin)
			}
		}
	}
	keep := LogicalAnd(ok, LogicalNot(div0))
	outs := make([]*Node, 0, 3*P+1)
	for _, pair := range [][2][]*Node{{theta, theta0}, {m, m0}, {v, v0}} {
		for j := range P {
			outs = append(outs, Where(keep, pair[0][j], pair[1][j]))
		}
	}
	outs = append(outs, LogicalNot(keep))
	g.Compile(outs...)
}

// fastGradient returns dLoss/dtheta (one [R] node per parameter) for the linear model
// given the normalised cell weights c (XK nodes), per-x weights rowW (ĉ(x) for CE,
// (1-w)ĉ(x) for mix; unused for JEM) and w (mix only).
func fastGradient(theta, c, rowW []*Node, w *Node, X, K int, onehot bool, mode pxMode) []*Node {
	f := fastLogits(theta, X, K, onehot)
	XK := X * K
	gf := make([]*Node, XK) // dL/df per cell
	var q []*Node
	if mode != pxCE {
		q = globalSoftmax(f)
	}
	for x := range X {
		var s []*Node
		if mode != pxJEM {
			s = localSoftmax(f[x*K : (x+1)*K])
		}
		for y := range K {
			cell := x*K + y
			switch mode {
			case pxJEM:
				gf[cell] = Sub(q[cell], c[cell])
			case pxCE:
				gf[cell] = Sub(Mul(rowW[x], s[y]), c[cell])
			default:
				gf[cell] = Sub(Add(Mul(rowW[x], s[y]), Mul(w, q[cell])), c[cell])
			}
		}
	}
	return fastParamGrad(gf, X, K, onehot)
}

// fastLogits computes the XK logit nodes of the linear model from split parameters.
// Layout: scalar: W_y (K), b_y (K); onehot: W_xy (X*K, row-major), b_y (K).
func fastLogits(theta []*Node, X, K int, onehot bool) []*Node {
	f := make([]*Node, X*K)
	for x := range X {
		for y := range K {
			var logit *Node
			if onehot {
				logit = Add(theta[x*K+y], theta[X*K+y])
			} else {
				wy, by := theta[y], theta[K+y]
				switch x {
				case 0:
					logit = by
				case 1:
					logit = Add(wy, by)
				default:
					logit = Add(MulScalar(wy, float64(x)), by)
				}
			}
			f[x*K+y] = logit
		}
	}
	return f
}

// fastParamGrad maps dL/df (per cell) to dL/dtheta.
func fastParamGrad(gf []*Node, X, K int, onehot bool) []*Node {
	var grads []*Node
	if onehot {
		grads = append(grads, gf...) // dW_xy = g_xy
	} else {
		for y := range K { // dW_y = sum_x x g_xy
			var sum *Node
			for x := 1; x < X; x++ {
				term := gf[x*K+y]
				if x > 1 {
					term = MulScalar(term, float64(x))
				}
				if sum == nil {
					sum = term
				} else {
					sum = Add(sum, term)
				}
			}
			if sum == nil { // X == 1: x is always 0.
				sum = ZerosLike(gf[y])
			}
			grads = append(grads, sum)
		}
	}
	for y := range K { // db_y = sum_x g_xy
		sum := gf[y]
		for x := 1; x < X; x++ {
			sum = Add(sum, gf[x*K+y])
		}
		grads = append(grads, sum)
	}
	return grads
}

// localSoftmax is the softmax over the K logit nodes of one x.
func localSoftmax(f []*Node) []*Node {
	if len(f) == 2 {
		s1 := Logistic(Sub(f[1], f[0]))
		return []*Node{OneMinus(s1), s1}
	}
	return softmaxNodes(f)
}

// globalSoftmax is q over all cells.
func globalSoftmax(f []*Node) []*Node {
	return softmaxNodes(f)
}

// softmaxNodes is a max-stabilised softmax across a list of same-shape nodes.
func softmaxNodes(f []*Node) []*Node {
	mx := f[0]
	for _, n := range f[1:] {
		mx = Max(mx, n)
	}
	e := make([]*Node, len(f))
	var z *Node
	for i, n := range f {
		e[i] = Exp(Sub(n, mx))
		if z == nil {
			z = e[i]
		} else {
			z = Add(z, e[i])
		}
	}
	rz := Reciprocal(z)
	out := make([]*Node, len(f))
	for i := range e {
		out[i] = Mul(e[i], rz)
	}
	return out
}

// fastLayout is the split form: every scalar parameter, moment and cell weight is its
// own [R] tensor (see fast.go).
type fastLayout struct {
	t   *Trainer
	st  *batchState
	key fastKey // U is set per call
	P   int     // scalar parameters per run
}

func newFastLayout(t *Trainer, st *batchState) *fastLayout {
	X, K := st.shape.XValues, st.shape.Classes
	onehot := st.shape.Encoding == EncodingOneHot
	return &fastLayout{t: t, st: st, P: fastNumParams(X, K, onehot),
		key: fastKey{X: X, K: K, onehot: onehot, mode: st.mode, R: st.R, minibatch: st.shape.BatchSize > 0}}
}

func (l *fastLayout) unroll() int { return fastUnroll(l.t.unrollFast, l.key.X*l.key.K) }

func (l *fastLayout) graph(u int) (*Graph, error) {
	key := l.key
	key.U = u
	return l.t.graphFor(key, fmt.Sprintf("fast_%dx%d_%s_R%d_U%d", key.X, key.K, key.mode, key.R, u),
		func(g *Graph) { buildFastTrain(g, key) })
}

func (l *fastLayout) initState() []*tensors.Tensor {
	R, P := l.st.R, l.P
	state := make([]*tensors.Tensor, 0, 3*P+1)
	for j := range P { // theta, transposed to split form
		col := make([]float32, R)
		for i := range R {
			col[i] = l.st.theta[i][j]
		}
		state = append(state, tensors.FromFlatDataAndDimensions(col, R))
	}
	for range 2 * P { // m, v
		state = append(state, tensors.FromFlatDataAndDimensions(make([]float32, R), R))
	}
	return append(state, tensors.FromFlatDataAndDimensions(slices.Clone(l.st.diverged), R))
}

func (l *fastLayout) fixed() []*tensors.Tensor {
	st := l.st
	fixed := []*tensors.Tensor{tensors.FromFlatDataAndDimensions(st.lr, st.R)}
	if st.mode == pxMix {
		fixed = append(fixed, tensors.FromFlatDataAndDimensions(st.w, st.R))
	}
	if !l.key.minibatch {
		fixed = append(fixed, cellColumns(st.chat, l.key.X*l.key.K)...)
	}
	return fixed
}

func (l *fastLayout) stepInputs(u int) []*tensors.Tensor {
	if !l.key.minibatch {
		return nil
	}
	var cells []*tensors.Tensor
	for range u {
		cells = append(cells, cellColumns(l.st.minibatchHistograms(), l.key.X*l.key.K)...)
	}
	return cells
}

func (l *fastLayout) readBack(state []*tensors.Tensor) {
	for j := range l.P {
		col := tensors.MustCopyFlatData[float32](state[j])
		for i := range l.st.R {
			l.st.theta[i][j] = col[i]
		}
	}
	copy(l.st.diverged, tensors.MustCopyFlatData[bool](state[3*l.P]))
}

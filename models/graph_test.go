package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// perSampleLoss is the loss in per-sample form for one run (R=1): the mean over the
// samples (x_i, y_i) of
//
//	-log softmax f(x_i)[y_i] + w (-LSE f(x_i) + log Z).
//
// logits is [1,X,K]; xs, ys are [N] int32; w is a scalar.
func perSampleLoss(logits, xs, ys, w *Node) *Node {
	X, K := logits.Shape().Dimensions[1], logits.Shape().Dimensions[2]
	N := xs.Shape().Dimensions[0]
	L := Reshape(logits, X, K)
	Li := Gather(L, Reshape(xs, N, 1))                              // [N, K]
	picked := ReduceSum(Mul(Li, OneHot(ys, K, dtypes.Float32)), -1) // [N]
	lse := logSumExp(Li, 1)                                         // [N]
	logZ := logSumExp(Reshape(L, X*K), 0)                           // []
	ce := ReduceAllMean(Sub(lse, picked))
	jem := Add(Neg(ReduceAllMean(lse)), logZ)
	return Add(ce, Mul(w, jem))
}

// TestCountsVsSamples: the loss on the cell histogram equals the mean per-sample loss,
// and so do its gradients, for all samples (full batch) and for a minibatch chunk.
func TestCountsVsSamples(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []struct {
		name  string
		shape Shape
		w     float64
	}{
		{"linear scalar ce", Shape{XValues: 3, Classes: 4, Encoding: "scalar", Model: "linear"}, 0},
		{"linear scalar jem", Shape{XValues: 3, Classes: 4, Encoding: "scalar", Model: "linear"}, 1},
		{"linear onehot w=0.3", Shape{XValues: 5, Classes: 2, Encoding: "onehot", Model: "linear"}, 0.3},
		{"mlp onehot jem", Shape{XValues: 4, Classes: 3, Encoding: "onehot", Model: "mlp:7,5"}, 1},
		{"mlp scalar w=2", Shape{XValues: 6, Classes: 3, Encoding: "scalar", Model: "mlp:4"}, 2},
	}
	for ci, c := range cases {
		hidden, err := ParseModel(c.shape.Model)
		if err != nil {
			t.Fatal(err)
		}
		ls := layerDims(c.shape, hidden)
		X, K := c.shape.XValues, c.shape.Classes
		rng := rand.New(rand.NewPCG(uint64(ci), 3))
		samples := drawSamples(rng, randomTable(rng, X*K), 300)
		for _, sub := range []struct {
			name string
			s    []int32
		}{{"all samples", samples}, {"minibatch chunk", samples[40:77]}} {
			t.Run(c.name+"/"+sub.name, func(t *testing.T) {
				N := len(sub.s)
				xs, ys := make([]int32, N), make([]int32, N)
				for i, s := range sub.s {
					xs[i], ys[i] = s/int32(K), s%int32(K)
				}
				theta := [][]float32{initTheta(uint64(ci)+77, ls)}
				g := NewGraph(tr.backend, fmt.Sprintf("counts_vs_samples_%d", ci))
				ps := paramShapes(ls, 1)
				params := make([]*Node, len(ps))
				for j, s := range ps {
					params[j] = Parameter(g, fmt.Sprintf("p%d", j), s)
				}
				chat := Parameter(g, "chat", shapes.Make(dtypes.Float32, 1, X, K))
				xsN := Parameter(g, "xs", shapes.Make(dtypes.Int32, N))
				ysN := Parameter(g, "ys", shapes.Make(dtypes.Int32, N))
				w := Const(g, []float32{float32(c.w)})
				logits := forward(params, X, c.shape.Encoding == EncodingOneHot)
				lc := ReduceAllSum(countsLoss(logits, chat, w))
				ls2 := perSampleLoss(logits, xsN, ysN, Reshape(w))
				outs := []*Node{lc, ls2}
				outs = append(outs, Gradient(lc, params...)...)
				outs = append(outs, Gradient(ls2, params...)...)
				g.Compile(outs...)
				var inputs []any
				for _, p := range packTensor(theta, ls) {
					inputs = append(inputs, p)
				}
				inputs = append(inputs, countsTensor([][]float32{histogram(sub.s, X*K)}, X, K),
					tensors.FromFlatDataAndDimensions(xs, N), tensors.FromFlatDataAndDimensions(ys, N))
				res := g.Run(inputs...)
				lossC := float64(tensors.MustCopyFlatData[float32](res[0])[0])
				lossS := float64(tensors.MustCopyFlatData[float32](res[1])[0])
				if math.Abs(lossC-lossS) > 1e-5*math.Max(1, math.Abs(lossS)) {
					t.Errorf("loss on counts %.7f != mean per-sample loss %.7f", lossC, lossS)
				}
				np := len(params)
				for j := range np {
					gc := tensors.MustCopyFlatData[float32](res[2+j])
					gs := tensors.MustCopyFlatData[float32](res[2+np+j])
					for k := range gc {
						if math.Abs(float64(gc[k]-gs[k])) > 2e-6 {
							t.Errorf("param %d[%d]: gradient on counts %.7g != per-sample %.7g", j, k, gc[k], gs[k])
						}
					}
				}
				if math.IsNaN(lossC) || lossC <= 0 {
					t.Errorf("implausible loss %v", lossC)
				}
				g.Finalize()
			})
		}
	}
}

// TestHandGradient: one step of the fast path's hand-derived gradient equals the
// autodiff gradient of countsLoss with respect to the same split parameters.
func TestHandGradient(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []struct {
		X, K   int
		onehot bool
		mode   pxMode
	}{
		{2, 2, false, pxJEM}, {2, 2, false, pxCE}, {2, 2, false, pxMix},
		{4, 3, false, pxMix}, {3, 4, true, pxMix}, {3, 2, true, pxCE}, {1, 3, false, pxJEM},
	}
	const R = 5
	for ci, c := range cases {
		t.Run(fmt.Sprintf("%dx%d onehot=%v %s", c.X, c.K, c.onehot, c.mode), func(t *testing.T) {
			X, K, XK := c.X, c.K, c.X*c.K
			P := fastNumParams(X, K, c.onehot)
			rng := rand.New(rand.NewPCG(uint64(ci), 5))
			g := NewGraph(tr.backend, fmt.Sprintf("hand_gradient_%d", ci))
			vec := shapes.Make(dtypes.Float32, R)
			theta := make([]*Node, P)
			for j := range theta {
				theta[j] = Parameter(g, fmt.Sprintf("t%d", j), vec)
			}
			cells := make([]*Node, XK)
			for j := range cells {
				cells[j] = Parameter(g, fmt.Sprintf("c%d", j), vec)
			}
			w := Parameter(g, "w", vec)
			// Derived per-x weights as buildFastTrain computes them.
			rowW := make([]*Node, X)
			for x := range X {
				s := cells[x*K]
				for y := 1; y < K; y++ {
					s = Add(s, cells[x*K+y])
				}
				if c.mode == pxMix {
					s = Mul(OneMinus(w), s)
				}
				rowW[x] = s
			}
			hand := fastGradient(theta, cells, rowW, w, X, K, c.onehot, c.mode)
			// Autodiff: assemble tensor-form parameters from the split nodes.
			in := 1
			if c.onehot {
				in = X
			}
			Wt := Reshape(Stack(theta[:in*K], 1), R, in, K)
			bt := Reshape(Stack(theta[in*K:], 1), R, 1, K)
			chat := Reshape(Stack(cells, 1), R, X, K)
			loss := ReduceAllSum(countsLoss(forward([]*Node{Wt, bt}, X, c.onehot), chat, w))
			auto := Gradient(loss, theta...)
			g.Compile(append(hand, auto...)...)
			var inputs []any
			for range P {
				v := make([]float32, R)
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 1.5)
				}
				inputs = append(inputs, tensors.FromFlatDataAndDimensions(v, R))
			}
			tables := make([][]float64, R)
			for i := range R {
				tables[i] = randomTable(rng, XK)
			}
			for j := range XK {
				v := make([]float32, R)
				for i := range R {
					v[i] = float32(tables[i][j])
				}
				inputs = append(inputs, tensors.FromFlatDataAndDimensions(v, R))
			}
			wv := make([]float32, R)
			for i := range wv {
				switch c.mode {
				case pxJEM:
					wv[i] = 1
				case pxMix:
					wv[i] = float32(rng.Float64() * 2)
				}
			}
			inputs = append(inputs, tensors.FromFlatDataAndDimensions(wv, R))
			expectSameGradients(t, g.Run(inputs...), P, "hand gradient")
			g.Finalize()
		})
	}
}

// TestBackpropGradient: the hand backprop through the dense layers equals GoMLX
// autodiff with respect to the parameters.
func TestBackpropGradient(t *testing.T) {
	tr := newTestTrainer(t)
	cases := []Shape{
		{XValues: 3, Classes: 4, Encoding: "scalar", Model: "linear"},
		{XValues: 5, Classes: 2, Encoding: "onehot", Model: "linear"},
		{XValues: 4, Classes: 3, Encoding: "scalar", Model: "mlp:6,5"},
		{XValues: 4, Classes: 3, Encoding: "onehot", Model: "mlp:8,3,4"},
	}
	const R = 3
	for ci, shape := range cases {
		t.Run(fmt.Sprintf("%s %s", shape.Encoding, shape.Model), func(t *testing.T) {
			hidden, _ := ParseModel(shape.Model)
			ls := layerDims(shape, hidden)
			X, K := shape.XValues, shape.Classes
			rng := rand.New(rand.NewPCG(uint64(ci), 9))
			g := NewGraph(tr.backend, fmt.Sprintf("backprop_%d", ci))
			ps := paramShapes(ls, R)
			params := make([]*Node, len(ps))
			for j, s := range ps {
				params[j] = Parameter(g, fmt.Sprintf("p%d", j), s)
			}
			chat := Parameter(g, "chat", shapes.Make(dtypes.Float32, R, X, K))
			w := Parameter(g, "w", shapes.Make(dtypes.Float32, R))
			logits, acts := forwardActs(params, X, shape.Encoding == EncodingOneHot)
			loss := ReduceAllSum(countsLoss(logits, chat, w))
			hand := backprop(params, acts, Gradient(loss, logits)[0])
			auto := Gradient(loss, params...)
			g.Compile(append(hand, auto...)...)
			theta := make([][]float32, R)
			counts := make([][]float32, R)
			for i := range R {
				theta[i] = initTheta(rng.Uint64(), ls)
				for j := range theta[i] {
					theta[i][j] += float32(rng.NormFloat64() * 0.3) // non-zero biases too
				}
				counts[i] = histogram(drawSamples(rng, randomTable(rng, X*K), 50), X*K)
			}
			var inputs []any
			for _, p := range packTensor(theta, ls) {
				inputs = append(inputs, p)
			}
			inputs = append(inputs, countsTensor(counts, X, K), tensors.FromFlatDataAndDimensions([]float32{0, 1, 0.4}, R))
			expectSameGradients(t, g.Run(inputs...), len(params), "backprop")
			g.Finalize()
		})
	}
}

// expectSameGradients compares the first n results of a graph (gradients computed by
// hand, named what) with the next n (GoMLX autodiff), element by element, within 1e-6.
func expectSameGradients(t *testing.T, res []*tensors.Tensor, n int, what string) {
	t.Helper()
	for j := range n {
		h := tensors.MustCopyFlatData[float32](res[j])
		a := tensors.MustCopyFlatData[float32](res[n+j])
		for k := range h {
			if math.Abs(float64(h[k]-a[k])) > 1e-6 {
				t.Errorf("param %d[%d]: %s %.7g != autodiff %.7g", j, k, what, h[k], a[k])
			}
		}
	}
}

package cnn

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The network as GoMLX graph code. Activations are kept spatial-major, [P, N, C] (P
// pixels, row-major, N images, C channels), so that a 3×3 "same" convolution is one
// Gather of the 9 neighbours of every pixel from the leading axis (im2col; out-of-image
// neighbours read an appended zero row) followed by one DotGeneral with the [9, Cin,
// Cout] kernel. 2×2 average pooling is a Reshape and a ReduceSum. These ops have
// gradients on every backend (SimpleGo lacks Pad and Reverse, which the VJPs of GoMLX's
// ConvGeneral and pooling ops use), and the backward pass (backward) is written by hand
// with DotGeneral: GoMLX's own VJP of DotGeneral materialises a broadcast product,
// several times slower on SimpleGo. Autodiff (GoMLX Gradient) of the same forward graph
// is the reference in the tests and an option of Train.

// net is one model on S×S images with K classes.
type net struct {
	sp    Spec
	S, K  int
	sides []int // input side of every conv layer
	pix   int   // pixels after the last pooling
}

func newNet(sp Spec, S, K int) *net {
	n := &net{sp: sp, S: S, K: K}
	side := S
	for range sp.Convs {
		n.sides = append(n.sides, side)
		side /= 2
	}
	n.pix = side * side
	return n
}

// acts holds what the hand backward pass needs from the forward pass.
type acts struct {
	N       int
	patches []*Node // per conv layer: [HW, 9, N, Cin]
	z       []*Node // per conv layer: pre-activation [HW, N, Cout]
	a       []*Node // per conv layer: activation [HW, N, Cout] (tanh' uses it)
	s       []*Node // per conv layer: σ(z) (swish' uses it)
	h       *Node   // pooled output of the last conv layer, [P, N, C]
	z1, a1  *Node   // dense hidden layer pre-activation and activation [N, H] (if any)
	s1      *Node   // σ(z1) (swish)
}

// convIndices returns the im2col gather indices of a 3×3 same convolution on a side×side
// image, [side²·9, 1]: entry q·9+k is the source pixel of neighbour k of pixel q, or side²
// (the zero row) outside the image.
func convIndices(side int) [][]int32 {
	hw := side * side
	idx := make([][]int32, 0, hw*9)
	for i := range side {
		for j := range side {
			for di := -1; di <= 1; di++ {
				for dj := -1; dj <= 1; dj++ {
					si, sj := i+di, j+dj
					src := int32(hw)
					if si >= 0 && si < side && sj >= 0 && sj < side {
						src = int32(si*side + sj)
					}
					idx = append(idx, []int32{src})
				}
			}
		}
	}
	return idx
}

// convTIndices returns the transposed (col2im) indices, [side²·9, 1]: entry p·9+k is the
// row q·9+k of the flattened [HW·9] patch gradient whose neighbour k is pixel p, or
// side²·9 (the zero row) if none.
func convTIndices(side int) [][]int32 {
	hw := side * side
	idx := make([][]int32, 0, hw*9)
	for i := range side {
		for j := range side {
			k := 0
			for di := -1; di <= 1; di++ {
				for dj := -1; dj <= 1; dj++ {
					qi, qj := i-di, j-dj // q's neighbour (di,dj) is p
					src := int32(hw * 9)
					if qi >= 0 && qi < side && qj >= 0 && qj < side {
						src = int32((qi*side+qj)*9 + k)
					}
					idx = append(idx, []int32{src})
					k++
				}
			}
		}
	}
	return idx
}

// act returns act(z) and, for swish, σ(z) (kept for the backward pass: SimpleGo's
// Logistic costs an exp per element).
func (n *net) act(z *Node) (a, s *Node) {
	if n.sp.Act == ActTanh {
		return Tanh(z), nil
	}
	s = Sigmoid(z)
	return Mul(z, s), s
}

// actGrad is d act/dz times d, given z, a = act(z) and s = σ(z) (swish).
func (n *net) actGrad(z, a, s, d *Node) *Node {
	if n.sp.Act == ActTanh {
		return Mul(d, OneMinus(Mul(a, a)))
	}
	return Mul(d, Add(s, Mul(a, OneMinus(s)))) // σ + zσ(1−σ)
}

func addBias(z, b *Node) *Node {
	dims := z.Shape().Dimensions
	bd := make([]int, len(dims))
	for i := range bd {
		bd[i] = 1
	}
	bd[len(bd)-1] = dims[len(dims)-1]
	return Add(z, BroadcastToDims(Reshape(b, bd...), dims...))
}

// forward maps x [N, S·S] to logits [N, K]; p are the parameters in layerShapes order.
func (n *net) forward(p []*Node, x *Node) (*Node, *acts) {
	g := x.Graph()
	N := x.Shape().Dimensions[0]
	ac := &acts{N: N}
	h := Reshape(Transpose(x, 0, 1), n.S*n.S, N, 1)
	cin := 1
	for l, cout := range n.sp.Convs {
		side := n.sides[l]
		hw := side * side
		hz := Concatenate([]*Node{h, Zeros(g, shapes.Make(dtypes.Float32, 1, N, cin))}, 0)
		patches := Reshape(Gather(hz, Const(g, convIndices(side))), hw, 9, N, cin)
		z := addBias(DotGeneral(patches, []int{1, 3}, nil, p[2*l], []int{0, 1}, nil), p[2*l+1]) // [HW, N, Cout]
		a, sg := n.act(z)
		pooled := MulScalar(ReduceSum(Reshape(a, side/2, 2, side/2, 2, N, cout), 1, 3), 0.25)
		h = Reshape(pooled, hw/4, N, cout)
		ac.patches, ac.z, ac.a = append(ac.patches, patches), append(ac.z, z), append(ac.a, a)
		ac.s = append(ac.s, sg)
		cin = cout
	}
	ac.h = h
	j := 2 * len(n.sp.Convs)
	if n.sp.Dense > 0 {
		ac.z1 = addBias(DotGeneral(h, []int{0, 2}, nil, p[j], []int{0, 1}, nil), p[j+1]) // [N, H]
		ac.a1, ac.s1 = n.act(ac.z1)
		return addBias(Dot(ac.a1, p[j+2]), p[j+3]), ac
	}
	return addBias(DotGeneral(h, []int{0, 2}, nil, p[j], []int{0, 1}, nil), p[j+1]), ac
}

// backward back-propagates dlogits [N, K] through the forward pass: the parameter
// gradients (if wantParams) and the input gradient [N, S·S] (if wantX).
func (n *net) backward(p []*Node, ac *acts, dlogits *Node, wantParams, wantX bool) (grads []*Node, dx *Node) {
	g := dlogits.Graph()
	N := ac.N
	grads = make([]*Node, len(p))
	j := 2 * len(n.sp.Convs)
	var dh *Node // [P, N, C]
	if n.sp.Dense > 0 {
		da1 := DotGeneral(dlogits, []int{1}, nil, p[j+2], []int{1}, nil) // [N, H]
		dz1 := n.actGrad(ac.z1, ac.a1, ac.s1, da1)
		if wantParams {
			grads[j+2] = DotGeneral(ac.a1, []int{0}, nil, dlogits, []int{0}, nil)
			grads[j+3] = ReduceSum(dlogits, 0)
			grads[j] = DotGeneral(ac.h, []int{1}, nil, dz1, []int{0}, nil) // [P, C, H]
			grads[j+1] = ReduceSum(dz1, 0)
		}
		dh = Transpose(DotGeneral(p[j], []int{2}, nil, dz1, []int{1}, nil), 1, 2) // [P, C, N] -> [P, N, C]
	} else {
		if wantParams {
			grads[j] = DotGeneral(ac.h, []int{1}, nil, dlogits, []int{0}, nil) // [P, C, K]
			grads[j+1] = ReduceSum(dlogits, 0)
		}
		dh = Transpose(DotGeneral(p[j], []int{2}, nil, dlogits, []int{1}, nil), 1, 2)
	}
	for l := len(n.sp.Convs) - 1; l >= 0; l-- {
		side, cout := n.sides[l], n.sp.Convs[l]
		hw := side * side
		cin := 1
		if l > 0 {
			cin = n.sp.Convs[l-1]
		}
		da := Reshape(BroadcastToDims(Reshape(MulScalar(dh, 0.25), side/2, 1, side/2, 1, N, cout), side/2, 2, side/2, 2, N, cout), hw, N, cout)
		dz := n.actGrad(ac.z[l], ac.a[l], ac.s[l], da)
		if wantParams {
			grads[2*l] = DotGeneral(ac.patches[l], []int{0, 2}, nil, dz, []int{0, 1}, nil) // [9, Cin, Cout]
			grads[2*l+1] = ReduceSum(dz, 0, 1)
		}
		if l == 0 && !wantX {
			break
		}
		dp := DotGeneral(dz, []int{2}, nil, p[2*l], []int{2}, nil) // [HW, N, 9, Cin]
		dp = Reshape(TransposeAllAxes(dp, 0, 2, 1, 3), hw*9, N, cin)
		dp = Concatenate([]*Node{dp, Zeros(g, shapes.Make(dtypes.Float32, 1, N, cin))}, 0)
		dh = ReduceSum(Reshape(Gather(dp, Const(g, convTIndices(side))), hw, 9, N, cin), 1) // [HW, N, Cin]
	}
	if wantX {
		dx = Transpose(Reshape(dh, n.S*n.S, N), 0, 1)
	}
	return grads, dx
}

// logSumExp over the last axis of [N, K] (stable), [N].
func logSumExp(x *Node) *Node {
	m := StopGradient(ReduceAndKeep(x, ReduceMax, -1))
	return Add(Squeeze(m, -1), Log(ReduceSum(Exp(Sub(x, m)), -1)))
}

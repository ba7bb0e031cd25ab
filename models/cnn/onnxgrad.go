package cnn

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// gradBackend is a backend whose builders fall back on other ops for Reverse and Pad
// where the backend has none (SimpleGo at GoMLX v0.26.0): GoMLX's autodiff of a
// convolution reverses its kernel (the input gradient of Conv), and that of a Slice
// pads; onnx-gomlx pads "same" convolutions with Pad. The fallbacks are exact: Reverse
// is a product with the anti-identity (each output one input times 1 plus zeros), Pad a
// concatenation with the fill value (interior padding by interleaving). Every other op
// is the backend's.
type gradBackend struct{ backends.Backend }

func (b gradBackend) Builder(name string) backends.Builder {
	return gradBuilder{b.Backend.Builder(name)}
}

type gradBuilder struct{ backends.Builder }

// Reverse is the backend's, else per axis a DotGeneral with the anti-identity J
// (J[i][k−1−i] = 1) and a transpose back to the axis's place.
func (b gradBuilder) Reverse(x backends.Op, axes ...int) (backends.Op, error) {
	if op, err := b.Builder.Reverse(x, axes...); err == nil {
		return op, nil
	}
	shape, err := b.OpShape(x)
	if err != nil {
		return nil, err
	}
	for _, a := range axes {
		k := shape.Dimensions[a]
		if k <= 1 {
			continue
		}
		var j backends.Op
		switch shape.DType {
		case dtypes.Float32:
			v := make([]float32, k*k)
			for i := range k {
				v[i*k+k-1-i] = 1
			}
			j, err = b.Constant(v, k, k)
		case dtypes.Float64:
			v := make([]float64, k*k)
			for i := range k {
				v[i*k+k-1-i] = 1
			}
			j, err = b.Constant(v, k, k)
		default:
			return nil, fmt.Errorf("cnn: Reverse of %s has no fallback", shape.DType)
		}
		if err != nil {
			return nil, err
		}
		if x, err = b.DotGeneral(x, []int{a}, nil, j, []int{0}, nil); err != nil {
			return nil, err
		}
		r := shape.Rank()
		perm := make([]int, r) // the reversed axis comes last: move it back to a
		for i := range r {
			switch {
			case i < a:
				perm[i] = i
			case i == a:
				perm[i] = r - 1
			default:
				perm[i] = i - 1
			}
		}
		if x, err = b.Transpose(x, perm...); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// Pad is the backend's, else per axis: interior padding by interleaving (x and the
// fill value concatenated on a new axis, merged, the trailing fill sliced off),
// negative padding by a slice, positive by concatenating the fill value broadcast
// before and after.
func (b gradBuilder) Pad(x, fill backends.Op, axesConfig ...backends.PadAxis) (backends.Op, error) {
	if op, err := b.Builder.Pad(x, fill, axesConfig...); err == nil {
		return op, nil
	}
	fillLike := func(shape shapes.Shape, a, n int) (backends.Op, error) {
		dims := append([]int(nil), shape.Dimensions...)
		dims[a] = n
		return b.BroadcastInDim(fill, shapes.Make(shape.DType, dims...), nil)
	}
	for a, c := range axesConfig {
		shape, err := b.OpShape(x)
		if err != nil {
			return nil, err
		}
		if n := shape.Dimensions[a]; c.Interior > 0 && n > 1 {
			dims := append(append(append([]int(nil), shape.Dimensions[:a+1]...), 1), shape.Dimensions[a+1:]...)
			if x, err = b.Reshape(x, dims...); err != nil {
				return nil, err
			}
			wide := shapes.Make(shape.DType, dims...)
			f, err := fillLike(wide, a+1, c.Interior)
			if err != nil {
				return nil, err
			}
			if x, err = b.Concatenate(a+1, x, f); err != nil {
				return nil, err
			}
			merged := append([]int(nil), shape.Dimensions...)
			merged[a] = n * (1 + c.Interior)
			if x, err = b.Reshape(x, merged...); err != nil {
				return nil, err
			}
			starts, limits := make([]int, len(merged)), slices.Clone(merged)
			limits[a] = n + (n-1)*c.Interior
			if x, err = b.Slice(x, starts, limits, ones(len(starts))); err != nil {
				return nil, err
			}
			if shape, err = b.OpShape(x); err != nil {
				return nil, err
			}
		}
		if c.Start < 0 || c.End < 0 {
			starts, limits := make([]int, shape.Rank()), slices.Clone(shape.Dimensions)
			starts[a] = max(0, -c.Start)
			limits[a] -= max(0, -c.End)
			if x, err = b.Slice(x, starts, limits, ones(len(starts))); err != nil {
				return nil, err
			}
			if shape, err = b.OpShape(x); err != nil {
				return nil, err
			}
		}
		parts := []backends.Op{x}
		if c.Start > 0 {
			f, err := fillLike(shape, a, c.Start)
			if err != nil {
				return nil, err
			}
			parts = append([]backends.Op{f}, parts...)
		}
		if c.End > 0 {
			f, err := fillLike(shape, a, c.End)
			if err != nil {
				return nil, err
			}
			parts = append(parts, f)
		}
		if len(parts) > 1 {
			if x, err = b.Concatenate(a, parts...); err != nil {
				return nil, err
			}
		}
	}
	return x, nil
}

// ConvGeneral fills empty strides and dilations with 1s: GoMLX's convolution gradient
// passes none, which SimpleGo reads as stride 0.
func (b gradBuilder) ConvGeneral(input, kernel backends.Op, axes backends.ConvolveAxesConfig, strides []int, paddings [][2]int,
	inputDilations, kernelDilations []int, channelGroupCount, batchGroupCount int) (backends.Op, error) {
	ones := func(v []int) []int {
		if len(v) > 0 {
			return v
		}
		v = make([]int, len(axes.InputSpatial))
		for i := range v {
			v[i] = 1
		}
		return v
	}
	return b.Builder.ConvGeneral(input, kernel, axes, ones(strides), paddings, ones(inputDilations), ones(kernelDilations),
		max(1, channelGroupCount), max(1, batchGroupCount))
}

// ones is n 1s (unit strides).
func ones(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// GoMLX v0.26.0 defines no gradient for Pad, which torch 1.13's export of avg_pool2d
// puts in a CNN's graph: padVJP is registered where none is (an absent entry panics, so
// nothing that worked changes). It reads the node's padding by reflection (GoMLX keeps
// it unexported); a layout it does not know, or negative padding, panics, which the
// callers turn into an error.
func init() {
	if _, ok := graph.VJPRegistration[graph.NodeTypePad]; !ok {
		graph.VJPRegistration[graph.NodeTypePad] = func(node *graph.Node, v []*graph.Node, _ shapes.Shape) []*graph.Node {
			return []*graph.Node{padVJP(node, v[0]), nil}
		}
	}
}

// padVJP is the input gradient of a Pad node: v at the positions x landed on.
func padVJP(node, v *graph.Node) *graph.Node {
	cfg := reflect.ValueOf(node).Elem().FieldByName("inputs").Elem().Elem().FieldByName("axesConfig")
	x := node.Inputs()[0]
	specs := make([]graph.SliceAxisSpec, x.Rank())
	for a := range specs {
		n := x.Shape().Dimensions[a]
		start, end, interior := 0, 0, 0
		if a < cfg.Len() {
			c := cfg.Index(a)
			start, end, interior = int(c.FieldByName("Start").Int()), int(c.FieldByName("End").Int()), int(c.FieldByName("Interior").Int())
		}
		if start < 0 || end < 0 || interior < 0 {
			panic(fmt.Sprintf("cnn: the gradient of Pad with negative padding (%d, %d, %d) is not defined", start, end, interior))
		}
		specs[a] = graph.AxisRange(start, start+(n-1)*(interior+1)+1).Stride(interior + 1)
	}
	return graph.Slice(v, specs...)
}

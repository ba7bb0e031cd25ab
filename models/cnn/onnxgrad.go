package cnn

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// gradBackend is a backend whose builders fall back on other ops for Reverse and Pad
// where the backend has none (SimpleGo at GoMLX v0.26.0): GoMLX's autodiff of a
// convolution reverses its kernel (the input gradient of Conv), and that of a Slice
// pads; onnx-gomlx pads "same" convolutions with Pad. The fallbacks are exact: Reverse
// is a product with the anti-identity (each output one input times 1 plus zeros), Pad a
// concatenation with the fill value. Every other op is the backend's.
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

// Pad is the backend's, else (no interior padding, no negative padding) a
// concatenation of the fill value broadcast before and after x on each axis.
func (b gradBuilder) Pad(x, fill backends.Op, axesConfig ...backends.PadAxis) (backends.Op, error) {
	op, err := b.Builder.Pad(x, fill, axesConfig...)
	if err == nil {
		return op, nil
	}
	for _, c := range axesConfig {
		if c.Interior != 0 || c.Start < 0 || c.End < 0 {
			return nil, err
		}
	}
	for a, c := range axesConfig {
		shape, err := b.OpShape(x)
		if err != nil {
			return nil, err
		}
		parts := []backends.Op{x}
		for i, n := range []int{c.Start, c.End} {
			if n == 0 {
				continue
			}
			dims := append([]int(nil), shape.Dimensions...)
			dims[a] = n
			f, err := b.BroadcastInDim(fill, shapes.Make(shape.DType, dims...), nil)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				parts = append([]backends.Op{f}, parts...)
			} else {
				parts = append(parts, f)
			}
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

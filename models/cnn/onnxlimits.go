package cnn

import (
	"fmt"

	"github.com/gomlx/onnx-gomlx/onnx"
)

// MaxONNXElements bounds the values of any one tensor an ONNX model declares (an
// initializer, a Constant's value, a shape given to ConstantOfShape, Expand or Tile) and
// of all its stored tensors together: 2²⁸ (a GiB of float32s, far beyond a classifier of
// images of at most 28×28 pixels). Nothing a file declares is made before it is checked.
const MaxONNXElements = 1 << 28

// checkDeclared checks, before any tensor is made, what the model declares against what
// it holds: every stored tensor (initializers, and the tensor attributes of every node,
// in subgraphs too) has non-negative dimensions whose product is at most
// MaxONNXElements and exactly the values its data holds (raw bytes or typed values; a
// tensor in external data is refused: the model must be one file), the tensors together
// hold at most MaxONNXElements values, a constant shape given to ConstantOfShape, Expand
// or Tile asks for at most MaxONNXElements values, and one input example has at most
// MaxONNXElements values. A 614-byte file declaring a 10⁶×10⁶ initializer is refused
// here instead of asking for 4 TB.
func checkDeclared(m *onnx.Model) error {
	g := m.Proto.Graph
	if g == nil {
		return fmt.Errorf("no graph")
	}
	total := int64(0)
	consts := map[string][]int64{} // int64 constants by name (initializers and Constant outputs): shapes
	for _, t := range g.Initializer {
		n, err := declaredTensor(t.Name, t.Dims, t.DataType, len(t.RawData), len(t.FloatData), len(t.Int32Data),
			len(t.Int64Data), len(t.DoubleData), len(t.Uint64Data), len(t.StringData), len(t.ExternalData) > 0 || t.DataLocation != 0)
		if err != nil {
			return err
		}
		if total += n; total > MaxONNXElements {
			return fmt.Errorf("its stored tensors hold over %d values together (limit MaxONNXElements)", MaxONNXElements)
		}
		if t.DataType == 7 && len(t.Int64Data) > 0 { // INT64 shape constants, stored typed
			consts[t.Name] = t.Int64Data
		}
	}
	for _, node := range g.Node {
		for _, a := range node.Attribute {
			for _, t := range append(append(a.Tensors[:0:0], a.Tensors...), a.T) {
				if t == nil {
					continue
				}
				n, err := declaredTensor(node.Name+"."+a.Name, t.Dims, t.DataType, len(t.RawData), len(t.FloatData), len(t.Int32Data),
					len(t.Int64Data), len(t.DoubleData), len(t.Uint64Data), len(t.StringData), len(t.ExternalData) > 0 || t.DataLocation != 0)
				if err != nil {
					return err
				}
				if total += n; total > MaxONNXElements {
					return fmt.Errorf("its stored tensors hold over %d values together (limit MaxONNXElements)", MaxONNXElements)
				}
				if node.OpType == "Constant" && t.DataType == 7 && len(t.Int64Data) > 0 && len(node.Output) > 0 {
					consts[node.Output[0]] = t.Int64Data
				}
			}
			if a.G != nil || len(a.Graphs) > 0 {
				return fmt.Errorf("node %q (%s) holds a subgraph: control flow (If, Loop, Scan) is not supported", node.Name, node.OpType)
			}
		}
	}
	for _, node := range g.Node {
		switch node.OpType {
		case "ConstantOfShape", "Expand", "Tile":
			idx := 0
			if node.OpType != "ConstantOfShape" {
				idx = 1
			}
			if idx < len(node.Input) {
				if shape, ok := consts[node.Input[idx]]; ok {
					if _, err := product(shape); err != nil {
						return fmt.Errorf("node %q (%s) asks for a shape %v: %w", node.Name, node.OpType, shape, err)
					}
				}
			}
		}
	}
	if len(m.InputsShapes) > 0 {
		dims := m.InputsShapes[0].Dimensions
		per := make([]int64, 0, len(dims))
		for _, d := range dims[min(1, len(dims)):] {
			per = append(per, int64(max(d, 0)))
		}
		if _, err := product(per); err != nil {
			return fmt.Errorf("input %q declares examples of %v values: %w", m.InputsNames[0], per, err)
		}
	}
	return nil
}

// product is the number of values of a tensor of dimensions dims, refused where a
// dimension is negative or the product passes MaxONNXElements (checked before it can
// overflow).
func product(dims []int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("a negative dimension %d", d)
		}
		if d > 0 && n > MaxONNXElements/d {
			return 0, fmt.Errorf("over %d values (limit MaxONNXElements)", MaxONNXElements)
		}
		n *= d
	}
	return n, nil
}

// onnxElemBytes are the bytes of one value of an ONNX data type in raw data (0: not a
// fixed-size type jemcheck reads).
var onnxElemBytes = map[int32]int{1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}

// declaredTensor checks one stored tensor: its declared values are bounded and are
// exactly what its data holds. It returns the number of values.
func declaredTensor(name string, dims []int64, dtype int32, raw, f32, i32, i64, f64, u64, str int, external bool) (int64, error) {
	if external {
		return 0, fmt.Errorf("tensor %q is stored in external data: export the model as one self-contained file", name)
	}
	n, err := product(dims)
	if err != nil {
		return 0, fmt.Errorf("tensor %q declares dimensions %v: %w", name, dims, err)
	}
	held := -1
	switch {
	case raw > 0:
		size, ok := onnxElemBytes[dtype]
		if !ok {
			return 0, fmt.Errorf("tensor %q has data type %d, which jemcheck does not read", name, dtype)
		}
		if int64(raw)%int64(size) == 0 {
			held = raw / size
		}
	case dtype == 1:
		held = f32
	case dtype == 7:
		held = i64
	case dtype == 11:
		held = f64
	case dtype == 12 || dtype == 13:
		held = u64
	case dtype == 8:
		held = str
	default:
		held = i32
	}
	if held < 0 || int64(held) != n {
		return 0, fmt.Errorf("tensor %q declares dimensions %v (%d values) but holds %s", name, dims, n, heldText(held, raw))
	}
	return n, nil
}

func heldText(held, raw int) string {
	if held < 0 {
		return fmt.Sprintf("%d bytes, not a whole number of values", raw)
	}
	return fmt.Sprintf("%d", held)
}

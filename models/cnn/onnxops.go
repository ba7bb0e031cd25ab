package cnn

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/onnx-gomlx/onnx"
	"google.golang.org/protobuf/proto"
)

// The ONNX ops a user's classifier may hold (pipelines/evaluate --onnx), and what is
// said of the others. onnx-gomlx v0.3.4 converts the ops in convertedOps; Sigmoid,
// which it lacks, is rewritten before the conversion into ops it has (rewriteOps:
// σ(x) = ½·tanh(x/2) + ½, exact and with a gradient everywhere), so torch.nn.SiLU and
// torch.nn.Sigmoid run. MaxPool converts, and its input gradient, which GoMLX takes
// with SelectAndScatterMax (absent from SimpleGo), is gradBuilder's fallback. Any other
// op is refused before the model is compiled, named with the PyTorch layer that
// exports it and the supported replacement (UnsupportedOp).

// convertedOps are the ops onnx-gomlx v0.3.4 converts (onnx/graph.go, convertNode).
var convertedOps = map[string]bool{}

func init() {
	for _, op := range strings.Fields(`Add Sub Mul Div Pow And Or Xor BitwiseAnd BitwiseOr BitwiseXor Equal Less
		LessOrEqual Greater GreaterOrEqual Sqrt Exp Log Erf Relu Abs Neg Sign Ceil Floor Identity Not BitwiseNot Tanh
		Sin Cos MatMul Clip Where Min Max Constant Gather GatherElements Shape Concat Softmax Cast Transpose Gemm
		Flatten DequantizeLinear QuantizeLinear MatMulInteger QLinearMatMul Squeeze Unsqueeze Slice Reshape ReduceMean
		ConstantOfShape Expand Tile Range CumSum LSTM Conv AveragePool MaxPool GlobalAveragePool BatchNormalization
		LayerNormalization Pad DynamicQuantizeLinear Split Trilu ScatterND If`) {
		convertedOps[op] = true
	}
}

// rewrittenOps are the ops rewriteOps turns into converted ones.
var rewrittenOps = map[string]bool{"Sigmoid": true}

// opAdvice maps an ONNX op the importer lacks to the PyTorch layers that export it and
// the supported replacement.
var opAdvice = map[string][2]string{
	"HardSigmoid":           {"torch.nn.Hardsigmoid / F.hardsigmoid", "use torch.nn.Sigmoid (supported) or Tanh"},
	"HardSwish":             {"torch.nn.Hardswish / F.hardswish", "use torch.nn.SiLU (supported) or ReLU"},
	"LeakyRelu":             {"torch.nn.LeakyReLU / F.leaky_relu", "use torch.nn.ReLU, SiLU or Tanh"},
	"PRelu":                 {"torch.nn.PReLU", "use torch.nn.ReLU, SiLU or Tanh"},
	"Elu":                   {"torch.nn.ELU / F.elu", "use torch.nn.SiLU (supported), ReLU or Tanh"},
	"Selu":                  {"torch.nn.SELU / F.selu", "use torch.nn.SiLU (supported), ReLU or Tanh"},
	"Celu":                  {"torch.nn.CELU / F.celu", "use torch.nn.SiLU (supported), ReLU or Tanh"},
	"Softplus":              {"torch.nn.Softplus / F.softplus (and torch.nn.Mish)", "use torch.nn.SiLU (supported), ReLU or Tanh"},
	"Mish":                  {"torch.nn.Mish / F.mish", "use torch.nn.SiLU (supported)"},
	"Gelu":                  {"torch.nn.GELU (exported at opset 20 and above)", "export at opset_version=13 (GELU then becomes Erf, supported), or use SiLU"},
	"LogSoftmax":            {"torch.nn.LogSoftmax / F.log_softmax", "return the raw logits f(x)[y]: log_softmax removes LSE_y f(x)[y], the log q(x) a JEM is judged on"},
	"ReduceSum":             {"torch.sum / x.sum(dim)", "use x.mean(dim) (ReduceMean, supported) times the count, or a matmul with ones"},
	"ReduceMax":             {"torch.amax / x.max(dim)", "use x.mean(dim) or F.avg_pool2d; elementwise torch.maximum is supported"},
	"ReduceMin":             {"torch.amin / x.min(dim)", "use x.mean(dim); elementwise torch.minimum is supported"},
	"ReduceLogSumExp":       {"torch.logsumexp", "return the logits: jemcheck takes LSE_y f(x)[y] itself"},
	"ReduceProd":            {"torch.prod", "use a sum of logs"},
	"GlobalMaxPool":         {"torch.nn.AdaptiveMaxPool2d(1) / F.adaptive_max_pool2d(x, 1)", "use torch.nn.AdaptiveAvgPool2d(1) (GlobalAveragePool, supported) or MaxPool2d with the full kernel"},
	"ArgMax":                {"torch.argmax", "return the logits; jemcheck takes the argmax"},
	"ConvTranspose":         {"torch.nn.ConvTranspose2d", "use torch.nn.Conv2d"},
	"Resize":                {"torch.nn.Upsample / F.interpolate", "leave it out of a classifier, or use a strided Conv2d"},
	"Upsample":              {"torch.nn.Upsample / F.interpolate", "leave it out of a classifier, or use a strided Conv2d"},
	"Dropout":               {"torch.nn.Dropout in training mode", "call net.eval() before torch.onnx.export"},
	"InstanceNormalization": {"torch.nn.InstanceNorm2d (and torch.nn.GroupNorm at older opsets)", "use torch.nn.BatchNorm2d (exported in eval mode) or LayerNorm"},
	"GroupNormalization":    {"torch.nn.GroupNorm", "use torch.nn.BatchNorm2d (exported in eval mode) or LayerNorm"},
	"LpNormalization":       {"F.normalize", "divide by a norm built from Mul, ReduceMean and Sqrt"},
	"Einsum":                {"torch.einsum", "use torch.matmul"},
	"Sum":                   {"torch.stack(...).sum(0) / sum() of tensors", "add the tensors with +"},
	"Mean":                  {"torch.stack(...).mean(0)", "add the tensors with + and divide"},
	"Loop":                  {"a Python loop over tensors traced by torch.jit.script", "unroll it (torch.onnx.export traces)"},
	"Scan":                  {"torch.nn.RNN / GRU in some exports", "use a convolutional classifier"},
	"GRU":                   {"torch.nn.GRU", "use a convolutional classifier"},
	"RNN":                   {"torch.nn.RNN", "use a convolutional classifier"},
	"Reciprocal":            {"torch.reciprocal / 1 / x", "write 1 / x as a Div by a constant tensor"},
	"Atan":                  {"torch.atan", "use Tanh"},
}

// UnsupportedOp is the message for an ONNX op the importer does not convert: the op,
// the PyTorch layer that exports it and the supported replacement where known.
func UnsupportedOp(op string) string {
	supported := "supported: Conv (torch.nn.Conv2d), ReLU, Tanh, Sigmoid and SiLU, AvgPool2d, MaxPool2d, Linear, BatchNorm2d (eval), Flatten/reshape, mean"
	if a, ok := opAdvice[op]; ok {
		return fmt.Sprintf("ONNX op %q (from %s) is not supported by the ONNX importer (onnx-gomlx v0.3.4): %s (%s)", op, a[0], a[1], supported)
	}
	return fmt.Sprintf("ONNX op %q is not supported by the ONNX importer (onnx-gomlx v0.3.4) (%s)", op, supported)
}

// checkOps refuses a graph that holds an op neither converted nor rewritten, naming
// the first such node and every such op.
func checkOps(m *onnx.Model) error {
	var bad []string
	first := ""
	for _, n := range m.Proto.Graph.Node {
		if convertedOps[n.OpType] || rewrittenOps[n.OpType] {
			continue
		}
		if !slices.Contains(bad, n.OpType) {
			bad = append(bad, n.OpType)
		}
		if first == "" {
			first = n.Name
		}
	}
	if len(bad) == 0 {
		return nil
	}
	msg := UnsupportedOp(bad[0]) + fmt.Sprintf(" (node %q)", first)
	if len(bad) > 1 {
		sort.Strings(bad[1:])
		msg += fmt.Sprintf("; also unsupported: %s", strings.Join(bad[1:], ", "))
	}
	return fmt.Errorf("%s", msg)
}

// newLike and newElem make a message of the (internal) type of x's or of s's elements.
func newLike[T any](_ *T) *T   { return new(T) }
func newElem[T any](_ []*T) *T { return new(T) }

// rewriteOps rewrites the ops the importer lacks but can express, in place, and says
// whether it changed the graph (the model is then parsed again from its new bytes):
// Sigmoid(x) = ½·tanh(½x) + ½, with a float32 constant ½ stored once.
func rewriteOps(m *onnx.Model) (bool, error) {
	g := m.Proto.Graph
	found := false
	for _, n := range g.Node {
		found = found || n.OpType == "Sigmoid"
	}
	if !found {
		return false, nil
	}
	half := "jemcheck.sigmoid.half"
	t := newElem(g.Initializer)
	t.Name, t.DataType, t.FloatData = half, 1, []float32{0.5} // FLOAT scalar
	g.Initializer = append(g.Initializer, t)
	nodes := g.Node[:0:0] // a new slice of the graph's node type
	for i, n := range g.Node {
		if n.OpType != "Sigmoid" {
			nodes = append(nodes, n)
			continue
		}
		if len(n.Input) != 1 || len(n.Output) != 1 {
			return false, fmt.Errorf("node %q (Sigmoid) has %d inputs and %d outputs, want 1 and 1", n.Name, len(n.Input), len(n.Output))
		}
		tmp := fmt.Sprintf("jemcheck.sigmoid.%d", i)
		step := func(op string, in []string, out string) {
			s := newLike(n)
			s.OpType, s.Name, s.Input, s.Output = op, n.Name+"/"+op, in, []string{out}
			nodes = append(nodes, s)
		}
		step("Mul", []string{n.Input[0], half}, tmp+".a")
		step("Tanh", []string{tmp + ".a"}, tmp+".b")
		step("Mul", []string{tmp + ".b", half}, tmp+".c")
		step("Add", []string{tmp + ".c", half}, n.Output[0])
	}
	g.Node = nodes
	return true, nil
}

// rewritten parses the model again after rewriteOps changed its graph.
func rewritten(m *onnx.Model) (*onnx.Model, error) {
	data, err := proto.Marshal(&m.Proto)
	if err != nil {
		return nil, err
	}
	return onnx.Parse(data)
}

// SelectAndScatterMax is the backend's, else a composition of ops SimpleGo has (the
// input gradient of max pooling, GoMLX's VJP of ReduceWindow max): the operand padded
// with −∞, each window's values stacked on a new axis (one strided Slice per window
// offset), the first maximum's offset by ArgMinMax (XLA's select keeps the first
// maximum too), and each offset's share of source placed back by an interior Pad and
// summed; the padding is then sliced off.
func (b gradBuilder) SelectAndScatterMax(operand, source backends.Op, window, strides []int, paddings [][2]int) (backends.Op, error) {
	if op, err := b.Builder.SelectAndScatterMax(operand, source, window, strides, paddings); err == nil {
		return op, nil
	}
	shape, err := b.OpShape(operand)
	if err != nil {
		return nil, err
	}
	src, err := b.OpShape(source)
	if err != nil {
		return nil, err
	}
	r := shape.Rank()
	if len(window) != r || (len(strides) != 0 && len(strides) != r) || (len(paddings) != 0 && len(paddings) != r) || src.Rank() != r {
		return nil, fmt.Errorf("cnn: SelectAndScatterMax of rank %d with window %v, strides %v, paddings %v", r, window, strides, paddings)
	}
	if len(strides) == 0 {
		strides = ones(r)
	}
	scalar := func(v float64) (backends.Op, error) {
		switch shape.DType {
		case dtypes.Float32:
			return b.Constant([]float32{float32(v)})
		case dtypes.Float64:
			return b.Constant([]float64{v})
		}
		return nil, fmt.Errorf("cnn: SelectAndScatterMax of %s has no fallback", shape.DType)
	}
	x := operand
	padded := slices.Clone(shape.Dimensions)
	if len(paddings) > 0 {
		inf, err := scalar(math.Inf(-1))
		if err != nil {
			return nil, err
		}
		cfg := make([]backends.PadAxis, r)
		for a, p := range paddings {
			cfg[a] = backends.PadAxis{Start: p[0], End: p[1]}
			padded[a] += p[0] + p[1]
		}
		if x, err = b.Pad(x, inf, cfg...); err != nil {
			return nil, err
		}
	}
	// Every window offset, row-major (the order XLA's select visits a window in).
	var offsets [][]int
	var walk func(a int, k []int)
	walk = func(a int, k []int) {
		if a == r {
			offsets = append(offsets, slices.Clone(k))
			return
		}
		for i := range window[a] {
			walk(a+1, append(k, i))
		}
	}
	walk(0, nil)
	limit := func(k []int) []int {
		l := make([]int, r)
		for a := range r {
			l[a] = k[a] + (src.Dimensions[a]-1)*strides[a] + 1
		}
		return l
	}
	stack := make([]backends.Op, len(offsets))
	one := append([]int{1}, src.Dimensions...)
	for w, k := range offsets {
		s, err := b.Slice(x, k, limit(k), strides)
		if err != nil {
			return nil, err
		}
		if stack[w], err = b.Reshape(s, one...); err != nil {
			return nil, err
		}
	}
	all, err := b.Concatenate(0, stack...)
	if err != nil {
		return nil, err
	}
	arg, err := b.ArgMinMax(all, 0, dtypes.Int32, false)
	if err != nil {
		return nil, err
	}
	zero, err := scalar(0)
	if err != nil {
		return nil, err
	}
	zeros, err := b.BroadcastInDim(zero, src, nil)
	if err != nil {
		return nil, err
	}
	var sum backends.Op
	for w, k := range offsets {
		idx, err := b.Constant([]int32{int32(w)})
		if err != nil {
			return nil, err
		}
		idxs, err := b.BroadcastInDim(idx, shapes.Make(dtypes.Int32, src.Dimensions...), nil)
		if err != nil {
			return nil, err
		}
		mask, err := b.Equal(arg, idxs)
		if err != nil {
			return nil, err
		}
		part, err := b.Where(mask, source, zeros)
		if err != nil {
			return nil, err
		}
		cfg := make([]backends.PadAxis, r)
		l := limit(k)
		for a := range r {
			cfg[a] = backends.PadAxis{Start: k[a], End: padded[a] - l[a], Interior: strides[a] - 1}
		}
		if part, err = b.Pad(part, zero, cfg...); err != nil {
			return nil, err
		}
		if sum == nil {
			sum = part
		} else if sum, err = b.Add(sum, part); err != nil {
			return nil, err
		}
	}
	if len(paddings) > 0 {
		starts, limits := make([]int, r), slices.Clone(padded)
		for a, p := range paddings {
			starts[a], limits[a] = p[0], padded[a]-p[1]
		}
		return b.Slice(sum, starts, limits, ones(r))
	}
	return sum, nil
}

package cnn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/onnx-gomlx/onnx"
)

// ONNXModel is a classifier loaded from an ONNX file with github.com/gomlx/onnx-gomlx,
// run on DefaultBackend. Its first input is the image batch ([n, ...], the batch axis
// first), its first output the logits [n, K]. Safe for concurrent use (calls are
// serialised).
type ONNXModel struct {
	mu      sync.Mutex
	model   *onnx.Model
	ctx     *context.Context
	backend backends.Backend
	exec    *context.Exec
	input   string
	// PerExample is the number of values of one input example (the product of the
	// input's non-batch dimensions).
	PerExample int
}

// LoadONNX reads an ONNX classifier (e.g. exported by torch.onnx.export).
func LoadONNX(path string) (*ONNXModel, error) {
	m, err := onnx.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cnn: reading ONNX %s: %w", path, err)
	}
	if len(m.InputsNames) == 0 || len(m.OutputsNames) == 0 {
		return nil, fmt.Errorf("cnn: ONNX %s has no inputs or no outputs", path)
	}
	dims := m.InputsShapes[0].Dimensions
	if len(dims) < 2 {
		return nil, fmt.Errorf("cnn: ONNX %s input %q has rank %d, want a batch axis and image axes", path, m.InputsNames[0], len(dims))
	}
	per := 1
	for _, d := range dims[1:] {
		if d <= 0 {
			return nil, fmt.Errorf("cnn: ONNX %s input %q has a dynamic non-batch dimension (%v)", path, m.InputsNames[0], dims)
		}
		per *= d
	}
	om := &ONNXModel{model: m, ctx: context.New(), input: m.InputsNames[0], PerExample: per}
	if err := m.VariablesToContext(om.ctx); err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s variables: %w", path, err)
	}
	b, err := newBackend(DefaultBackend)
	if err != nil {
		return nil, err
	}
	om.backend = b
	om.exec, err = context.NewExecAny(b, om.ctx, func(ctx *context.Context, x *graph.Node) *graph.Node {
		return m.CallGraph(ctx, x.Graph(), map[string]*graph.Node{om.input: x})[0]
	})
	if err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s: %w", path, err)
	}
	return om, nil
}

// Logits returns the model's first output on x (n examples of PerExample values each,
// laid out as the ONNX input, e.g. n×1×S×S), flattened (n×K for a classifier).
func (om *ONNXModel) Logits(x []float32, n int) ([]float32, error) {
	if n <= 0 || len(x) != n*om.PerExample {
		return nil, fmt.Errorf("cnn: ONNX input has %d values, want %d×%d", len(x), n, om.PerExample)
	}
	dims := append([]int{n}, om.model.InputsShapes[0].Dimensions[1:]...)
	om.mu.Lock()
	defer om.mu.Unlock()
	var out []*tensors.Tensor
	err := catch(func() error {
		var err error
		out, err = om.exec.Exec(tensors.FromFlatDataAndDimensions(slices.Clone(x), dims...))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cnn: running ONNX model: %w", err)
	}
	return tensors.MustCopyFlatData[float32](out[0]), nil
}

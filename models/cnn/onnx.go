package cnn

import (
	"fmt"
	"math"
	"os"
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
	energy  *context.Exec // LSE of the logits and its input gradient
	input   string
	// PerExample is the number of values of one input example (the product of the
	// input's non-batch dimensions).
	PerExample int
}

// LoadONNX reads an ONNX classifier (e.g. exported by torch.onnx.export) from a file.
func LoadONNX(path string) (*ONNXModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cnn: reading ONNX: %w", err)
	}
	return ParseONNX(data, path)
}

// ParseONNX reads an ONNX classifier from its bytes; name names it in errors.
func ParseONNX(data []byte, name string) (*ONNXModel, error) {
	var m *onnx.Model
	if err := catch(func() error {
		var err error
		m, err = onnx.Parse(data)
		return err
	}); err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s is not a readable ONNX model: %w", name, err)
	}
	if len(m.InputsNames) == 0 || len(m.OutputsNames) == 0 {
		return nil, fmt.Errorf("cnn: ONNX %s has no inputs or no outputs", name)
	}
	if err := checkDeclared(m); err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s: %w", name, err)
	}
	if err := checkOps(m); err != nil { // before anything is compiled: the op and its PyTorch layer
		return nil, fmt.Errorf("cnn: ONNX %s: %w", name, err)
	}
	if changed, err := rewriteOps(m); err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s: %w", name, err)
	} else if changed {
		if err := catch(func() error {
			var err error
			m, err = rewritten(m)
			return err
		}); err != nil {
			return nil, fmt.Errorf("cnn: ONNX %s: rewriting its Sigmoid nodes: %w", name, err)
		}
	}
	dims := m.InputsShapes[0].Dimensions
	if len(dims) < 2 {
		return nil, fmt.Errorf("cnn: ONNX %s input %q has rank %d, want a batch axis and image axes", name, m.InputsNames[0], len(dims))
	}
	per := 1
	for _, d := range dims[1:] {
		if d <= 0 {
			return nil, fmt.Errorf("cnn: ONNX %s input %q has a dynamic non-batch dimension (%v)", name, m.InputsNames[0], dims)
		}
		per *= d
	}
	om := &ONNXModel{model: m, ctx: context.New(), input: m.InputsNames[0], PerExample: per}
	if err := catch(func() error { return m.VariablesToContext(om.ctx) }); err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s variables: %w", name, err)
	}
	b, err := newBackend(DefaultBackend)
	if err != nil {
		return nil, err
	}
	b = gradBackend{b} // Reverse and Pad where the backend lacks them (the input gradient of Conv)
	om.backend = b
	err = catch(func() error {
		var err error
		om.exec, err = context.NewExecAny(b, om.ctx, func(ctx *context.Context, x *graph.Node) *graph.Node {
			return m.CallGraph(ctx, x.Graph(), map[string]*graph.Node{om.input: x})[0]
		})
		if err != nil {
			return err
		}
		// LSE_y f(x)[y] and, by autodiff through the ONNX graph, its input gradient.
		om.energy, err = context.NewExecAny(b, om.ctx, func(ctx *context.Context, x *graph.Node) (*graph.Node, *graph.Node) {
			xi := graph.Identity(graph.StopGradient(x)) // Gradient w.r.t. a StopGradient node is zero: wrap it
			logits := m.CallGraph(ctx, xi.Graph(), map[string]*graph.Node{om.input: xi})[0]
			n := x.Shape().Dimensions[0]
			lse := logSumExp(graph.Reshape(logits, n, -1))
			return lse, graph.Gradient(graph.ReduceAllSum(lse), xi)[0]
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cnn: ONNX %s: %w", name, err)
	}
	om.exec.SetMaxCache(onnxMaxCache)
	om.energy.SetMaxCache(onnxMaxCache)
	return om, nil
}

// onnxMaxCache is the batch sizes whose compiled graphs an ONNXModel keeps.
const onnxMaxCache = 16

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

// Energy returns LSE_y f(x)[y] for every example of x (n examples of PerExample values,
// laid out as the ONNX input) — the negative energy of the JEM density q(x) ∝ exp LSE_y
// f(x)[y] — and, if grad, its input gradient (n×PerExample, the same layout), by GoMLX
// autodiff through the ONNX graph. The model's output is read as [n, K] (any trailing
// axes flattened into K).
func (om *ONNXModel) Energy(x []float32, n int, grad bool) (lse, dx []float32, err error) {
	if n <= 0 || len(x) != n*om.PerExample {
		return nil, nil, fmt.Errorf("cnn: ONNX input has %d values, want %d×%d", len(x), n, om.PerExample)
	}
	if !grad {
		l, err := om.Logits(x, n)
		if err != nil {
			return nil, nil, err
		}
		k := len(l) / n
		lse = make([]float32, n)
		for i := range n {
			lse[i] = lse32(l[i*k : (i+1)*k])
		}
		return lse, nil, nil
	}
	dims := append([]int{n}, om.model.InputsShapes[0].Dimensions[1:]...)
	om.mu.Lock()
	defer om.mu.Unlock()
	var out []*tensors.Tensor
	err = catch(func() error {
		var err error
		out, err = om.energy.Exec(tensors.FromFlatDataAndDimensions(slices.Clone(x), dims...))
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cnn: ONNX input gradient: %w", err)
	}
	return tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1]), nil
}

// lse32 is log Σ exp v, in float64.
func lse32(v []float32) float32 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, float64(x))
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return float32(m)
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(float64(x) - m)
	}
	return float32(m + math.Log(s))
}

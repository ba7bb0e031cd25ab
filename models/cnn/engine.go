package cnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/jemcheck/jemcheck/models" // backend registration (SimpleGo; XLA with -tags xla) and defaults
)

// DefaultBackend is the GoMLX backend used when TrainOptions.Backend is "" and for Logits
// and Energy: models.DefaultBackend (SimpleGo, sequential executor; the parallel one can
// deadlock on DotGeneral, see /work/shared/research/gomlx.md).
const DefaultBackend = models.DefaultBackend

// newBackend opens a GoMLX backend configuration ("go", "go:ops_sequential", "xla:cpu",
// "xla:cuda", ...) with the models package's rules: unknown or not-compiled-in backends
// are errors, never panics.
func newBackend(config string) (b backends.Backend, err error) {
	if config == "" {
		config = DefaultBackend
	}
	name, _, _ := strings.Cut(config, ":")
	switch {
	case name == "":
		return nil, fmt.Errorf("cnn: empty backend name in %q", config)
	case slices.Contains(models.Backends(), name):
	case slices.Contains([]string{"xla", "stablehlo", "hlo", "shlo"}, name):
		return nil, fmt.Errorf("cnn: backend %s not compiled in; build with -tags xla", name)
	default:
		return nil, fmt.Errorf("cnn: unknown backend %q (compiled in: %s)", name, strings.Join(models.Backends(), ", "))
	}
	if name != "go" {
		devices.Lock()
		defer devices.Unlock()
		if b := devices.byConfig[config]; b != nil {
			return b, nil
		}
	}
	err = catch(func() error {
		var err error
		b, err = backends.NewWithConfig(config) // typed nil on error: test err, not b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cnn: backend %q unavailable: %w", config, err)
	}
	if name != "go" {
		if devices.byConfig == nil {
			devices.byConfig = map[string]backends.Backend{}
		}
		b = keptBackend{b}
		devices.byConfig[config] = b
	}
	return b, nil
}

// devices holds the device backends (every configuration but the pure-Go "go"), one
// per configuration for the process: a PJRT client owns its device, and a CUDA client
// takes most of the GPU's memory up front, so the runs of a block (trained in parallel)
// and the evaluation share one client instead of opening one each.
var devices struct {
	sync.Mutex
	byConfig map[string]backends.Backend
}

// keptBackend is a shared device backend: Finalize is a no-op (the client lives as
// long as the process).
type keptBackend struct{ backends.Backend }

func (keptBackend) Finalize() {}

// catch runs fn and turns a panic (GoMLX reports most errors by panicking) into an error.
func catch(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("gomlx: %w", e)
			} else {
				err = fmt.Errorf("gomlx: %v", r)
			}
		}
	}()
	return fn()
}

// Params are one run's parameters, host-side, in the order of Spec's layers: per conv
// layer the kernel [9, Cin, Cout] (row-major, the 9 taps of the 3×3 window row by row)
// and bias [Cout]; then (with dense:H) W [P, C, H], b [H], W [H, K], b [K], else W [P,
// C, K], b [K], where P is the pixel count after the last pooling (row-major) and C the
// last conv's channels.
type Params struct {
	Spec    Spec
	S, K    int
	Tensors [][]float32
}

// Shapes returns the dimensions of every tensor of Params, in order.
func (p Params) Shapes() [][]int { return p.Spec.layerShapes(p.S, p.K) }

// Init returns deterministic initial parameters for spec on S×S images with K classes:
// weights uniform in ±1/√fan_in (PyTorch's default bound), biases zero, drawn from a PCG
// stream seeded by seed. Equal seeds give bit-identical parameters.
func Init(spec Spec, S, K int, seed uint64) (Params, error) {
	if err := spec.Check(S, K); err != nil {
		return Params{}, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x636e6e2d696e6974)) // "cnn-init"
	p := Params{Spec: spec, S: S, K: K}
	for i, dims := range spec.layerShapes(S, K) {
		t := make([]float32, prod(dims))
		if i%2 == 0 { // weights; fan_in = all axes but the last
			bound := 1 / math.Sqrt(float64(prod(dims[:len(dims)-1])))
			for j := range t {
				t[j] = float32((2*rng.Float64() - 1) * bound)
			}
		}
		p.Tensors = append(p.Tensors, t)
	}
	return p, nil
}

func (p Params) check() error {
	if err := p.Spec.Check(p.S, p.K); err != nil {
		return err
	}
	sh := p.Shapes()
	if len(p.Tensors) != len(sh) {
		return fmt.Errorf("cnn: params have %d tensors, %s needs %d", len(p.Tensors), p.Spec, len(sh))
	}
	for i, d := range sh {
		if len(p.Tensors[i]) != prod(d) {
			return fmt.Errorf("cnn: params tensor %d has %d values, want %d (%v)", i, len(p.Tensors[i]), prod(d), d)
		}
	}
	return nil
}

func (p Params) toTensors() []*tensors.Tensor {
	out := make([]*tensors.Tensor, len(p.Tensors))
	for i, d := range p.Shapes() {
		out[i] = tensors.FromFlatDataAndDimensions(slices.Clone(p.Tensors[i]), d...)
	}
	return out
}

func paramNodes(g *graph.Graph, sh [][]int, prefix string) []*graph.Node {
	out := make([]*graph.Node, len(sh))
	for i, d := range sh {
		out[i] = graph.Parameter(g, fmt.Sprintf("%s%d", prefix, i), shapes.Make(dtypes.Float32, d...))
	}
	return out
}

// evaluators run the evaluation graphs (Logits, Energy), one per backend
// configuration, each one call at a time.
var evaluators struct {
	sync.Mutex
	byBackend map[string]*evaluatorState
}

type evaluatorState struct {
	sync.Mutex
	backend backends.Backend
	graphs  map[evalKey]*graph.Graph
}

// evaluatorOn is the evaluator of a backend configuration ("" = DefaultBackend), opened
// on first use and kept for the process (a backend holds its device and compiled graphs).
func evaluatorOn(config string) (*evaluatorState, error) {
	if config == "" {
		config = DefaultBackend
	}
	evaluators.Lock()
	defer evaluators.Unlock()
	if e := evaluators.byBackend[config]; e != nil {
		return e, nil
	}
	b, err := newBackend(config)
	if err != nil {
		return nil, err
	}
	if evaluators.byBackend == nil {
		evaluators.byBackend = map[string]*evaluatorState{}
	}
	e := &evaluatorState{backend: b, graphs: map[evalKey]*graph.Graph{}}
	evaluators.byBackend[config] = e
	return e, nil
}

type evalKey struct {
	spec     string
	S, K, n  int
	kind     int // evalLogits, evalEnergy, evalEnergyGrad, evalEnergyAutodiff
	autodiff bool
}

const (
	evalLogits = iota
	evalEnergy
	evalEnergyGrad
)

// evaluate runs the evaluation graph of the given kind on x (n×S·S) on a backend
// configuration ("" = DefaultBackend).
func evaluate(backend string, p Params, x []float32, n, kind int, autodiff bool) ([]*tensors.Tensor, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	D := p.S * p.S
	if n <= 0 || len(x) != n*D {
		return nil, fmt.Errorf("cnn: x has %d values, want n·S² = %d·%d", len(x), n, D)
	}
	evaluator, err := evaluatorOn(backend)
	if err != nil {
		return nil, err
	}
	evaluator.Lock()
	defer evaluator.Unlock()
	key := evalKey{p.Spec.String(), p.S, p.K, n, kind, autodiff}
	g := evaluator.graphs[key]
	if g == nil {
		if len(evaluator.graphs) >= 64 {
			for k, old := range evaluator.graphs {
				_ = catch(func() error { old.Finalize(); return nil })
				delete(evaluator.graphs, k)
			}
		}
		g = graph.NewGraph(evaluator.backend, fmt.Sprintf("cnn_eval_%d", kind))
		nt := newNet(p.Spec, p.S, p.K)
		if err := catch(func() error { buildEval(g, nt, n, kind, autodiff); return nil }); err != nil {
			return nil, fmt.Errorf("cnn: building evaluation graph: %w", err)
		}
		evaluator.graphs[key] = g
	}
	inputs := make([]any, 0, len(p.Tensors)+1)
	for _, t := range p.toTensors() {
		inputs = append(inputs, t)
	}
	inputs = append(inputs, tensors.FromFlatDataAndDimensions(slices.Clone(x), n, D))
	var outs []*tensors.Tensor
	err = catch(func() error { outs = g.Run(inputs...); return nil })
	return outs, err
}

func buildEval(g *graph.Graph, nt *net, n, kind int, autodiff bool) {
	p := paramNodes(g, nt.sp.layerShapes(nt.S, nt.K), "p")
	x := graph.Parameter(g, "x", shapes.Make(dtypes.Float32, n, nt.S*nt.S))
	switch kind {
	case evalLogits:
		logits, _ := nt.forward(p, x)
		g.Compile(logits)
	case evalEnergy:
		logits, _ := nt.forward(p, x)
		g.Compile(logSumExp(logits))
	default:
		lse, dx := nt.lseGrad(p, x, autodiff)
		g.Compile(lse, dx)
	}
}

// lseGrad returns LSE_y f(x)_y [N] and its input gradient [N, D], by the hand backward
// pass or by GoMLX autodiff.
func (n *net) lseGrad(p []*graph.Node, x *graph.Node, autodiff bool) (lse, dx *graph.Node) {
	if autodiff {
		xi := graph.Identity(graph.StopGradient(x)) // Gradient w.r.t. a StopGradient node is zero: wrap it
		logits, _ := n.forward(p, xi)
		lse = logSumExp(logits)
		return lse, graph.Gradient(graph.ReduceAllSum(lse), xi)[0]
	}
	logits, ac := n.forward(p, x)
	_, dx = n.backward(p, ac, graph.Softmax(logits, -1), false, true)
	return logSumExp(logits), dx
}

// Logits returns the n×K logits of the model on x (n×S·S, row-major images), computed on
// DefaultBackend.
func Logits(p Params, x []float32, n int) ([]float32, error) { return LogitsOn("", p, x, n) }

// LogitsOn is Logits on a backend configuration ("" = DefaultBackend, "xla:cuda", ...).
func LogitsOn(backend string, p Params, x []float32, n int) ([]float32, error) {
	outs, err := evaluate(backend, p, x, n, evalLogits, false)
	if err != nil {
		return nil, err
	}
	return tensors.MustCopyFlatData[float32](outs[0]), nil
}

// Energy returns LSE_y f(x)_y for every image of x (n×S·S) — the negative energy of the
// JEM density p(x) ∝ exp(LSE_y f(x)_y) — and, if grad, its input gradient (n×S·S), from
// the hand-written backward pass (checked against GoMLX autodiff and finite differences
// in the tests), computed on DefaultBackend.
func Energy(p Params, x []float32, n int, grad bool) (lse, dx []float32, err error) {
	return EnergyOn("", p, x, n, grad)
}

// EnergyOn is Energy on a backend configuration ("" = DefaultBackend, "xla:cuda", ...).
func EnergyOn(backend string, p Params, x []float32, n int, grad bool) (lse, dx []float32, err error) {
	kind := evalEnergy
	if grad {
		kind = evalEnergyGrad
	}
	outs, err := evaluate(backend, p, x, n, kind, false)
	if err != nil {
		return nil, nil, err
	}
	lse = tensors.MustCopyFlatData[float32](outs[0])
	if grad {
		dx = tensors.MustCopyFlatData[float32](outs[1])
	}
	return lse, dx, nil
}

// energyAutodiff is Energy with grad, the gradient by GoMLX autodiff (tests).
func energyAutodiff(p Params, x []float32, n int) (lse, dx []float32, err error) {
	outs, err := evaluate("", p, x, n, evalEnergyGrad, true)
	if err != nil {
		return nil, nil, err
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1]), nil
}

package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // the pure-Go backend, always compiled in
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// DefaultBackend is the backend configuration used when NewTrainer gets "": the pure-Go
// SimpleGo backend executing ops sequentially. The research measured it about 2x faster
// than the parallel executor for tiny graphs, and the parallel executor can deadlock.
// Several Trainers in separate goroutines use several cores.
const DefaultBackend = "go:ops_sequential"

// Defaults of the tunables, chosen with BenchmarkTrain and BenchmarkUnroll (2x2 linear
// sweep, one core): runs per CPU-second rise from ~37k at 256 runs per graph to ~50k at
// 1024 and ~55k at 4096, flat beyond; unrolling 25 steps per call is within noise of 300.
const (
	// DefaultRunsPerBatch is the largest number of runs stacked into one GoMLX graph
	// unless SetRunsPerBatch says otherwise; longer Train calls are split into batches
	// of this size.
	DefaultRunsPerBatch = 4096
	// defaultUnrollFast is the number of Adam steps unrolled per graph call on the fast path.
	defaultUnrollFast = 25
	// defaultUnrollGeneral is the same for the tensor (MLP) path.
	defaultUnrollGeneral = 5
	// maxCachedGraphs bounds the compiled-graph cache; it is cleared when full.
	maxCachedGraphs = 64
)

// Backends returns the names of the GoMLX backends compiled into this binary, sorted.
// "go" (SimpleGo) is always present; "xla" (and its aliases) only with -tags xla.
func Backends() []string {
	names := backends.List()
	slices.Sort(names)
	return names
}

// Trainer trains batches of runs and caches the compiled graphs per (shape, batch size,
// px mode, unroll). A Trainer is safe for use by one goroutine at a time.
type Trainer struct {
	backend backends.Backend // GoMLX; nil for BackendKernel
	config  string
	kernel  kernelUse
	closed  bool
	cache   map[any]*graph.Graph

	// Tunables (unexported; tests and benchmarks adjust them).
	runsPerBatch  int  // max runs per graph
	unrollFast    int  // steps per call, fast path
	unrollGeneral int  // steps per call, tensor path
	noFast        bool // force the general (tensor) path (tests)
	fullAutodiff  bool // on the general path, autodiff to the parameters, no hand backprop (tests)
}

// Backend names beside the GoMLX configurations.
const (
	// BackendKernel trains with the fused float32 CPU kernels (package models/kernel)
	// only; a shape they do not cover is an error.
	BackendKernel = "kernel"
	// BackendAuto (the empty string, the default) is the fastest correct path on CPU:
	// the fused kernels where they cover the model, GoMLX on DefaultBackend otherwise.
	BackendAuto = ""
)

// NewTrainer creates a Trainer. backend is "" (BackendAuto: the fused CPU kernels
// where they cover the model, GoMLX on DefaultBackend otherwise), "kernel" (the fused
// CPU kernels only) or a GoMLX backend configuration ("<name>[:<options>]", e.g. "go"
// for SimpleGo, "go:ops_sequential", "xla:cpu" or "xla:cuda"), which trains every
// model with GoMLX. Unknown or unavailable backends give an error, never a panic.
func NewTrainer(backend string) (tr *Trainer, err error) {
	use, gomlx := kernelAuto, backend
	switch backend {
	case BackendAuto:
		gomlx = DefaultBackend
	case BackendKernel:
		use, gomlx = kernelOnly, ""
	default:
		use = kernelOff
	}
	tr = &Trainer{
		config:        backend,
		kernel:        use,
		cache:         make(map[any]*graph.Graph),
		runsPerBatch:  DefaultRunsPerBatch,
		unrollFast:    defaultUnrollFast,
		unrollGeneral: defaultUnrollGeneral,
	}
	if gomlx == "" {
		return tr, nil
	}
	name, _, _ := strings.Cut(gomlx, ":")
	switch {
	case name == "":
		return nil, fmt.Errorf("models: empty backend name in %q", gomlx)
	case slices.Contains(Backends(), name):
	case !xlaCompiledIn && slices.Contains([]string{"xla", "stablehlo", "hlo", "shlo"}, name):
		return nil, fmt.Errorf("models: backend %s not compiled in; build with -tags xla", name)
	default:
		return nil, fmt.Errorf("models: unknown backend %q (compiled in: %s, %q)", name, strings.Join(Backends(), ", "), BackendKernel)
	}
	var b backends.Backend
	err = catch(func() error {
		var err error
		b, err = backends.NewWithConfig(gomlx) // typed-nil on error: test err, not b.
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("models: backend %q unavailable: %w", gomlx, err)
	}
	tr.backend = b
	return tr, nil
}

// CheckBackend reports whether a Trainer can be created on backend in this process
// (the backend is compiled in, its plugin loads, its options parse), without training.
func CheckBackend(backend string) error {
	tr, err := NewTrainer(backend)
	if err != nil {
		return err
	}
	tr.Close()
	return nil
}

// SetRunsPerBatch sets the largest number of runs stacked into one GoMLX graph (n > 0):
// the pipelines pass --train_batch, so that flag alone caps a graph.
func (t *Trainer) SetRunsPerBatch(n int) {
	if n > 0 {
		t.runsPerBatch = n
	}
}

// Backend returns the backend configuration the Trainer was created with ("" is
// BackendAuto).
func (t *Trainer) Backend() string { return t.config }

// Close releases the compiled graphs and the backend. The Trainer is unusable afterwards.
func (t *Trainer) Close() {
	if t == nil || t.closed {
		return
	}
	t.closed = true
	if t.backend == nil {
		return
	}
	t.clearCache()
	b := t.backend
	t.backend = nil
	_ = catch(func() error { b.Finalize(); return nil })
}

func (t *Trainer) clearCache() {
	for k, g := range t.cache {
		_ = catch(func() error { g.Finalize(); return nil })
		delete(t.cache, k)
	}
}

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

// Train trains every run for shape.Steps Adam steps and returns one Outcome per run, in
// order. Models the fused CPU kernels cover go to them (unless the Trainer is on a
// GoMLX backend); the rest to GoMLX. A call with any run that has a PCD sampler
// (Run.PCD) trains entirely on the kernels, and is an error on a GoMLX backend or for a
// model they do not cover. On GoMLX, runs are grouped by px weight (0, 1, other) and stacked into graphs of at most
// DefaultRunsPerBatch runs; a smaller last batch is padded with inert runs (learning
// rate 0) to a size bucket so that few distinct graphs get compiled. The context is
// checked between graph calls.
func (t *Trainer) Train(ctx context.Context, shape Shape, runs []Run) ([]Outcome, error) {
	if t == nil || t.closed {
		return nil, errors.New("models: Train on a closed or nil Trainer")
	}
	if err := shape.Validate(); err != nil {
		return nil, err
	}
	if err := validateRuns(shape, runs); err != nil {
		return nil, err
	}
	hidden, _ := ParseModel(shape.Model)
	if hasPCD(runs) { // the GoMLX paths have no sampler: the kernel or an error
		if err := t.pcdKernel(shape, hidden); err != nil {
			return nil, err
		}
		return t.trainKernel(ctx, shape, hidden, runs)
	}
	if t.useKernel(shape, hidden) {
		return t.trainKernel(ctx, shape, hidden, runs)
	}
	if t.backend == nil {
		return nil, fmt.Errorf("models: backend %q: the fused CPU kernels do not cover %s", BackendKernel, shape)
	}
	out := make([]Outcome, len(runs))
	// Group the runs by px mode (baseline, JEM, other weights): a mode-pure graph skips
	// the softmax it does not need. Results do not depend on the grouping.
	for _, idx := range groupByMode(runs) {
		for start := 0; start < len(idx); start += t.runsPerBatch {
			part := idx[start:min(start+t.runsPerBatch, len(idx))]
			batch := make([]Run, len(part))
			for i, k := range part {
				batch[i] = runs[k]
			}
			var res []Outcome
			err := catch(func() error {
				var err error
				res, err = t.trainBatch(ctx, shape, hidden, batch)
				return err
			})
			if err != nil {
				return nil, err
			}
			for i, k := range part {
				out[k] = res[i]
			}
		}
	}
	return out, nil
}

// groupByMode returns the indices of the runs with PxWeight 0, 1 and anything else
// (empty groups omitted), each in input order.
func groupByMode(runs []Run) [][]int {
	var groups [3][]int
	for i := range runs {
		m := pxModeOf(runs[i : i+1])
		groups[m] = append(groups[m], i)
	}
	var out [][]int
	for _, g := range groups {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// bucketSize rounds n up so that few distinct graph sizes are compiled: powers of two up
// to 64, then multiples of an eighth of the next power of two (at most 12.5% padding),
// never above limit (n <= limit).
func bucketSize(n, limit int) int {
	p := 1
	for p < n {
		p *= 2
	}
	if p <= 64 {
		return min(p, max(limit, n))
	}
	step := p / 8
	return min((n+step-1)/step*step, max(limit, n))
}

// batchState is the host-side state of one batch of R (padded) runs.
type batchState struct {
	shape    Shape
	ls       []layer
	R        int
	runs     []Run       // padded
	theta    [][]float32 // per run, canonical layout (W row-major then b, per layer)
	diverged []bool
	chat     [][]float32 // per run normalised counts (full batch: Counts; minibatch: Samples histogram)
	lr, w    []float32
	mode     pxMode
	samplers []*sampler // minibatch only
}

// pxModeOf classifies the px weights of the real runs.
func pxModeOf(runs []Run) pxMode {
	ce, jem := true, true
	for _, r := range runs {
		ce = ce && r.PxWeight == 0
		jem = jem && r.PxWeight == 1
	}
	switch {
	case ce:
		return pxCE
	case jem:
		return pxJEM
	}
	return pxMix
}

func (t *Trainer) trainBatch(ctx context.Context, shape Shape, hidden []int, batch []Run) ([]Outcome, error) {
	if hasPCD(batch) { // Train routes these to the kernel; never trained in a graph
		return nil, errors.New("models: pcd trains on the fused CPU kernels only; use --backend=kernel or the default")
	}
	n := len(batch)
	R := bucketSize(n, t.runsPerBatch)
	X, K := shape.XValues, shape.Classes
	XK := X * K
	st := &batchState{shape: shape, ls: layerDims(shape, hidden), R: R, mode: pxModeOf(batch)}
	st.runs = append(slices.Clone(batch), make([]Run, R-n)...)
	dummyW := 0.0
	if st.mode == pxJEM {
		dummyW = 1
	}
	st.theta = make([][]float32, R)
	st.diverged = make([]bool, R)
	st.chat = make([][]float32, R)
	st.lr = make([]float32, R)
	st.w = make([]float32, R)
	if shape.BatchSize > 0 {
		st.samplers = make([]*sampler, R)
	}
	for i := range R {
		r := &st.runs[i]
		if i >= n { // inert padding run: uniform counts, lr 0, parameters 0.
			r.PxWeight = dummyW
			st.theta[i] = make([]float32, numParams(st.ls))
			c := make([]float32, XK)
			for j := range c {
				c[j] = 1 / float32(XK)
			}
			st.chat[i] = c
		} else {
			st.theta[i] = initTheta(r.Seed, st.ls)
			st.lr[i] = float32(r.LR)
			if shape.BatchSize > 0 && len(r.Samples) > 0 {
				st.chat[i] = histogram(r.Samples, XK)
				st.samplers[i] = newSampler(r.Samples, r.Seed)
			} else {
				st.chat[i] = normalise(r.Counts) // full batch (also a minibatch-shape run without Samples)
			}
		}
		st.w[i] = float32(r.PxWeight)
	}

	var lay layout
	if len(hidden) == 0 && XK <= fastMaxCells && !t.noFast {
		lay = newFastLayout(t, st)
	} else {
		lay = newGeneralLayout(t, st)
	}
	if err := t.run(ctx, st, lay); err != nil {
		return nil, err
	}
	logits, loss, err := t.evaluate(st)
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, n)
	for i := range n {
		lg := make([]float64, XK)
		for j := range XK {
			lg[j] = float64(logits[i*XK+j])
		}
		l := float64(loss[i])
		out[i] = Outcome{Logits: lg, Loss: l, Diverged: st.diverged[i] || math.IsNaN(l) || math.IsInf(l, 0)}
	}
	return out, nil
}

// chunks splits steps into graph calls of at most u steps.
func chunks(steps, u int) []int {
	var out []int
	for steps > 0 {
		c := min(u, steps)
		out = append(out, c)
		steps -= c
	}
	return out
}

// stepScalars returns the 2u scalar inputs for Adam steps t0+1..t0+u, in the graphs'
// parameter order: lrScale_0, epsT_0, lrScale_1, epsT_1, ...
func stepScalars(t0, u int) []any {
	out := make([]any, 0, 2*u)
	for i := range u {
		a, b := adamScalars(t0 + i + 1)
		out = append(out, float32(a), float32(b))
	}
	return out
}

// graphFor returns the cached compiled graph for key, building it with build if needed.
func (t *Trainer) graphFor(key any, name string, build func(g *graph.Graph)) (*graph.Graph, error) {
	if g, ok := t.cache[key]; ok {
		return g, nil
	}
	if len(t.cache) >= maxCachedGraphs {
		t.clearCache()
	}
	g := graph.NewGraph(t.backend, name)
	if err := catch(func() error { build(g); return nil }); err != nil {
		return nil, fmt.Errorf("models: building graph %s: %w", name, err)
	}
	t.cache[key] = g
	return g, nil
}

// runGraph executes g, turning panics into errors.
func runGraph(g *graph.Graph, inputs []any) (outs []*tensors.Tensor, err error) {
	err = catch(func() error {
		outs = g.Run(inputs...)
		return nil
	})
	return
}

// donate wraps state tensors from a previous call so the backend may reuse their buffers.
func (t *Trainer) donate(ts []*tensors.Tensor) ([]any, error) {
	out := make([]any, len(ts))
	for i, x := range ts {
		d, err := graph.DonateTensorBuffer(x, t.backend, 0)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func finalizeAll(ts []*tensors.Tensor) {
	for _, x := range ts {
		if x != nil {
			_ = x.FinalizeAll()
		}
	}
}

func appendTensors(dst []any, ts []*tensors.Tensor) []any {
	for _, x := range ts {
		dst = append(dst, x)
	}
	return dst
}

// layout is what differs between the split-form fast path and the tensor (general) path:
// how the state and the cell weights are laid out as tensors, and which graph trains them.
// Every graph takes the inputs state, fixed, step, step scalars (in that order) and
// returns the next state.
type layout interface {
	// unroll is the number of Adam steps per graph call.
	unroll() int
	// graph returns the compiled training graph for u steps.
	graph(u int) (*graph.Graph, error)
	// initState returns the initial state: theta, m, v (zero) and the diverged flags.
	initState() []*tensors.Tensor
	// fixed returns the inputs shared by every call: lr, w and the full-batch cell weights.
	fixed() []*tensors.Tensor
	// stepInputs returns one call's minibatch cell weights for u steps (nil on full batch).
	stepInputs(u int) []*tensors.Tensor
	// readBack copies theta and the diverged flags from the final state into the batch.
	readBack(state []*tensors.Tensor)
}

// run trains st for st.shape.Steps Adam steps in calls of l.unroll() steps. It owns
// every tensor it creates: the fixed inputs and the current state are released by the
// deferred finalise on every return path, step inputs right after their call.
func (t *Trainer) run(ctx context.Context, st *batchState, l layout) error {
	fixed := l.fixed()
	defer finalizeAll(fixed)
	state := l.initState()
	defer func() { finalizeAll(state) }()

	t0 := 0
	for _, u := range chunks(st.shape.Steps, l.unroll()) {
		if err := ctx.Err(); err != nil {
			return err
		}
		g, err := l.graph(u)
		if err != nil {
			return err
		}
		var inputs []any
		if t0 == 0 { // the initial host tensors: passed as they are, released below.
			inputs = appendTensors(nil, state)
		} else if inputs, err = t.donate(state); err != nil { // the previous call's outputs.
			return err
		}
		inputs = appendTensors(inputs, fixed)
		step := l.stepInputs(u)
		inputs = appendTensors(inputs, step)
		inputs = append(inputs, stepScalars(t0, u)...)
		outs, err := runGraph(g, inputs)
		finalizeAll(step)
		if err != nil {
			return err
		}
		finalizeAll(state) // donated tensors hold nothing any more; frees the initial ones.
		state = outs
		t0 += u
	}
	l.readBack(state)
	return nil
}

// evaluate computes the final logits [R*X*K] and per-run loss [R] on st.chat.
func (t *Trainer) evaluate(st *batchState) (logits, loss []float32, err error) {
	X, K, R := st.shape.XValues, st.shape.Classes, st.R
	onehot := st.shape.Encoding == EncodingOneHot
	key := generalKey{X: X, K: K, onehot: onehot, model: st.shape.Model, R: R, eval: true}
	g, err := t.graphFor(key, fmt.Sprintf("eval_%dx%d_%s_R%d", X, K, st.shape.Model, R),
		func(g *graph.Graph) { buildEval(g, key, st.ls) })
	if err != nil {
		return nil, nil, err
	}
	ins := packTensor(st.theta, st.ls)
	ins = append(ins, countsTensor(st.chat, X, K), tensors.FromFlatDataAndDimensions(st.w, R))
	inputs := make([]any, len(ins))
	for i, x := range ins {
		inputs[i] = x
	}
	outs, err := runGraph(g, inputs)
	finalizeAll(ins)
	if err != nil {
		return nil, nil, err
	}
	logits = tensors.MustCopyFlatData[float32](outs[0])
	loss = tensors.MustCopyFlatData[float32](outs[1])
	finalizeAll(outs)
	return logits, loss, nil
}

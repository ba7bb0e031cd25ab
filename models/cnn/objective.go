package cnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Objective is a method's log q(x) term on the CNN: the CNN trainer's one step
// contract, the graph counterpart of models/kernel.Objective. A step evaluates the
// model's ℓ(x) = LSE_y f(x)[y] on the minibatch's B data lanes and on the term's own
// lanes (negatives, noise draws, sampler states), and the term is a scalar function of
// those ℓ (and, for a score-based term, of input gradients it takes itself through
// StepGraph.LSEGrad). The trainer adds the data's cross-entropy and PxWeight times the
// term, differentiates it (the hand backward pass through every lane at once, or GoMLX
// autodiff), and takes the Adam step of the network's parameters and the term's own
// scalars, with the divergence guard and the observation cadence shared by every
// method. A nil Objective is cross-entropy alone (the baseline).
//
// An Objective is a method's settings, safe to share: Begin makes each run's Term.
// The methods' objectives are SGLD (the paper's JEM), ED, DSM and NCE; methods/<name>
// sets one on TrainOptions.Objective from a point's options.
type Objective interface {
	// Name labels the term in errors and statistics ("<name>_loss").
	Name() string
	// GradEvals is the forward+backward passes a step makes per data point beyond the
	// data's own (SGLD's steps, ED's negatives, NCE's noise draws), the protocol's cost.
	GradEvals() int64
	// Check refuses settings the objective cannot run with, given the run's options.
	Check(o TrainOptions) error
	// Begin starts one run on its training draws: it may fit what it needs to them,
	// draw host-side state from r.Host and evaluate the initial model (Run.Eval).
	Begin(r *Run) (Term, error)
}

// Term is one run's log q(x) term (Objective.Begin). Its graph methods are called once,
// when the run's training graph is built; Feed and After at every step.
type Term interface {
	// Own is the initial values of the term's own scalar parameters (nil: none),
	// trained by Adam with the network's; StepGraph.Own has their nodes.
	Own() []float32
	// Lanes builds the step's extra lanes [L, D] (nil: none). They are constants of
	// the step: no gradient flows through them into the parameters.
	Lanes(s *StepGraph) *Node
	// Loss builds the term, a scalar, from ℓ of the data lanes [B] and of the extra
	// lanes [L] (nil without lanes).
	Loss(s *StepGraph, ld, ln *Node) *Node
	// Feed is the values of the step's host inputs (StepGraph.Input, in order), called
	// after the step's minibatch is drawn; nil when it declared none.
	Feed() []*tensors.Tensor
	// After reads the values of the nodes the term gave StepGraph.Output after a step
	// that did not diverge.
	After(outs []*tensors.Tensor)
	// End writes the term's diagnostics into st.MethodStats, given the final values of
	// its own parameters.
	End(own []float32, st *Stats)
}

// Run is what Objective.Begin sees of a run.
type Run struct {
	Data  Data
	Batch int // B, the minibatch's data points
	// Host is the run's host-side stream (minibatches, buffers, restarts): draws from
	// it in Begin come before the first epoch's shuffle.
	Host *rand.Rand

	backend  backends.Backend
	nt       *net
	params   []*tensors.Tensor // the network's initial parameters
	rng      *tensors.Tensor   // the graph's RNG state, advanced by Eval
	autodiff bool
}

// Eval builds and runs a graph on the run's initial parameters: build returns the
// nodes to compute (it may draw from the graph's RNG, whose state the run keeps).
func (r *Run) Eval(name string, build func(s *StepGraph) []*Node) ([]*tensors.Tensor, error) {
	g := NewGraph(r.backend, "cnn_"+name)
	defer func() { _ = catch(func() error { g.Finalize(); return nil }) }()
	var outs []*tensors.Tensor
	err := catch(func() error {
		s := &StepGraph{G: g, D: r.nt.S * r.nt.S, K: r.nt.K, nt: r.nt, autodiff: r.autodiff}
		s.p = paramNodes(g, r.nt.sp.layerShapes(r.nt.S, r.nt.K), "p")
		s.rng = Parameter(g, "rng", RNGStateForGraph(g).Shape())
		res := build(s)
		g.Compile(append(res, s.rng)...)
		in := make([]any, 0, len(r.params)+1)
		for _, t := range r.params {
			in = append(in, t)
		}
		outs = g.Run(append(in, r.rng)...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cnn: %s: %w", name, err)
	}
	r.rng = outs[len(outs)-1]
	return outs[:len(outs)-1], nil
}

// StepGraph is what a Term builds its part of a graph with.
type StepGraph struct {
	G *Graph
	// X is the minibatch [B, D] (DataNoise added); nil in Run.Eval.
	X       *Node
	B, D, K int
	// Own are the term's own scalar parameters (Term.Own).
	Own []*Node

	nt       *net
	p        []*Node // the network's parameters
	rng      *Node
	autodiff bool
	inputs   int     // host inputs declared
	outputs  []*Node // Output's nodes
	direct   bool    // Loss took input gradients: its parameter gradient is autodiff's
	inLoss   bool
}

// Normal draws standard normal values of the given dimensions from the run's graph RNG.
func (s *StepGraph) Normal(dims ...int) *Node {
	var z *Node
	s.rng, z = RandomNormal(s.rng, shapes.Make(dtypes.Float32, dims...))
	return z
}

// LSE is ℓ at the rows of x [n, D], [n], by its own forward pass.
func (s *StepGraph) LSE(x *Node) *Node {
	logits, _ := s.nt.forward(s.p, x)
	if s.inLoss {
		s.direct = true
	}
	return logSumExp(logits)
}

// LSEGrad is ℓ at the rows of x [n, D] and its input gradient ∇x ℓ [n, D] (the hand
// backward pass, or GoMLX autodiff with TrainOptions.Autodiff). Taken in Loss, the
// term's gradient in the parameters goes through it (double backpropagation).
func (s *StepGraph) LSEGrad(x *Node) (lse, dx *Node) {
	if s.inLoss {
		s.direct = true
	}
	return s.nt.lseGrad(s.p, x, s.autodiff)
}

// Input declares a host input of the given dimensions, fed by Term.Feed at each step.
func (s *StepGraph) Input(dims ...int) *Node {
	s.inputs++
	return Parameter(s.G, fmt.Sprintf("in%d", s.inputs), shapes.Make(dtypes.Float32, dims...))
}

// Output asks for n's value after each step (Term.After).
func (s *StepGraph) Output(n *Node) { s.outputs = append(s.outputs, n) }

// termStats is a term's mean over the last tenth of the steps (at least one; NaN if
// none), as "<name>_loss".
func termStats(name string, term []float32) map[string]float64 {
	v := math.NaN()
	if n := len(term); n > 0 {
		k := max(1, n/10)
		v = 0
		for _, t := range term[n-k:] {
			v += float64(t)
		}
		v /= float64(k)
	}
	return map[string]float64{name + "_loss": v}
}

// termBase is a Term's defaults, embedded by the terms that need no more: no own
// scalars, lanes, host inputs, outputs or diagnostics.
type termBase struct{}

func (termBase) Own() []float32               { return nil }
func (termBase) Feed() []*tensors.Tensor      { return nil }
func (termBase) After(outs []*tensors.Tensor) {}
func (termBase) Lanes(s *StepGraph) *Node     { return nil }
func (termBase) End(own []float32, st *Stats) {}

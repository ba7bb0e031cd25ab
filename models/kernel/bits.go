package kernel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/prob"
)

// # Binary tables in D dimensions
//
// A binary task's x is a state of {0,1}^D, numbered 0..2^D−1 (bit d of the number is
// coordinate d), its model a tanh MLP D-H…-K on the bits. TrainBits trains runs of one
// SpecBits with the float32 Adam of the 2-D kernels, with one of three losses:
//
//   - Baseline (neither Exact nor Objective): cross-entropy on minibatches of the
//     draws (PxWeight unused).
//   - Exact JEM (SpecBits.Exact): the cross-entropy plus PxWeight·(−log q(x)), whose
//     log Z is enumerated over all 2^D·K cells every step (in chunks of bitsChunk
//     states, so the memory does not grow with D) and its gradient E_q[∇f] exact.
//   - A method's Objective (SpecBits.Objective, bits_objective.go) on binary lanes: the
//     recipes of methods/pcd (persistent Metropolis–Hastings chains, uniform or
//     Gibbs-with-Gradients proposals: bits_gwg.go), ed, nce, snl, ….

// MaxBitsD is the largest dimension of a binary table: 2^20 states.
const MaxBitsD = 20

// bitsChunk is the number of states enumerated at a time.
const bitsChunk = 1024

// SpecBits is the model and schedule shared by the runs of one TrainBits call.
type SpecBits struct {
	D, K   int
	Hidden []int
	// Exact trains exact JEM: log Z by enumeration, PxWeight times −log q(x). A spec
	// with neither Exact nor Objective trains the cross-entropy alone (the baseline).
	Exact    bool
	Steps    int
	Batch    int     // draws per step (a positive multiple of 16)
	PxWeight float32 // weight of −log q(x) (exact JEM) or of an objective's loss

	// Objective, if set, is the run's method (Exact is then ignored): a step contract
	// objective (kernel.Objective) on binary lanes, one per goroutine (bits_objective.go).
	Objective func() Objective
	// ObserveEvery calls RunBits.Observe every this many steps (0: never).
	ObserveEvery int
}

// RunBits is one run of a TrainBits call.
type RunBits struct {
	Seed  uint64
	Theta []float32 // initial parameters (InitMLPBits)
	LR    float32
	X     []uint32 // the draws' states
	Y     []int32  // their classes
	// Observe, if set, is called with the step and the current parameters (valid during
	// the call only) every SpecBits.ObserveEvery steps, and not after a divergence.
	Observe func(step int, theta []float32)
}

// observe calls the run's Observe at its cadence.
func (r *RunBits) observe(spec SpecBits, step int, theta []float32) {
	if r.Observe != nil && spec.ObserveEvery > 0 && step%spec.ObserveEvery == 0 {
		r.Observe(step, theta)
	}
}

// ResultBits is a trained run.
type ResultBits struct {
	Theta        []float32
	Loss         float32
	Diverged     bool
	DivergedStep int
	Buffer       []uint32 // an objective's final chains (pcd's buffer), as state numbers
	Accept       float64  // an objective's mean acceptance (pcd: Metropolis–Hastings')
	CPUSeconds   float64  // the run's own thread CPU time (NaN where unknown)
	// Extra are an Objective's own parameters at the end, Stats its diagnostics by name
	// (Result2D's, from the objective's End).
	Extra []float32
	Stats map[string]float64
}

func layersBits(d int, hidden []int, k int) []dims {
	in := d
	var ls []dims
	for _, h := range hidden {
		ls = append(ls, dims{in, h})
		in = h
	}
	return append(ls, dims{in, k})
}

// NumParamsBits is the number of parameters of the MLP D-hidden…-K.
func NumParamsBits(d int, hidden []int, k int) int {
	n := 0
	for _, l := range layersBits(d, hidden, k) {
		n += l.in*l.out + l.out
	}
	return n
}

// InitMLPBits draws a run's initial parameters for the MLP D-hidden…-K (InitTheta).
func InitMLPBits(seed uint64, d int, hidden []int, k int) []float32 {
	ls := layersBits(d, hidden, k)
	layers := make([][2]int, len(ls))
	for i, l := range ls {
		layers[i] = [2]int{l.in, l.out}
	}
	return InitTheta(seed, layers)
}

// Validate checks a spec.
func (s SpecBits) Validate() error {
	switch {
	case s.D < 1 || s.D > MaxBitsD:
		return fmt.Errorf("kernel: D must be in [1, %d], got %d", MaxBitsD, s.D)
	case s.K < 2:
		return fmt.Errorf("kernel: K must be >= 2, got %d", s.K)
	case s.Steps < 0 || s.Batch < VW || s.Batch%VW != 0 || s.Batch > 4096:
		return fmt.Errorf("kernel: binary spec needs Steps >= 0 and Batch a multiple of 16 in [16, 4096], got %d, %d", s.Steps, s.Batch)
	case !(s.PxWeight >= 0) || math.IsInf(float64(s.PxWeight), 0):
		return fmt.Errorf("kernel: PxWeight must be finite and >= 0, got %v", s.PxWeight)
	}
	for _, h := range s.Hidden {
		if h < 1 || h > 256 {
			return fmt.Errorf("kernel: hidden widths must be in [1, 256], got %v", s.Hidden)
		}
	}
	if s.Objective != nil {
		return s.validateObjective()
	}
	return nil
}

// TrainBits trains every run for spec.Steps steps, spread over GOMAXPROCS goroutines;
// a run's result depends only on its own RunBits and the spec.
func TrainBits(ctx context.Context, spec SpecBits, runs []RunBits) ([]ResultBits, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	np := NumParamsBits(spec.D, spec.Hidden, spec.K)
	for i, r := range runs {
		if len(r.Theta) != np {
			return nil, fmt.Errorf("kernel: run %d: len(Theta)=%d, want %d", i, len(r.Theta), np)
		}
		if len(r.Y) == 0 || len(r.X) != len(r.Y) {
			return nil, fmt.Errorf("kernel: run %d: needs draws (len X, Y = %d, %d)", i, len(r.X), len(r.Y))
		}
		for j := range r.Y {
			if r.Y[j] < 0 || int(r.Y[j]) >= spec.K || r.X[j] >= 1<<spec.D {
				return nil, fmt.Errorf("kernel: run %d: draw %d (x %d, y %d) is outside 2^%d states and %d classes", i, j, r.X[j], r.Y[j], spec.D, spec.K)
			}
		}
	}
	return trainRuns(ctx, len(runs), func() *trainerBits { return newTrainerBits(spec) },
		func(t *trainerBits, i int) ResultBits { return t.train(&runs[i]) },
		func(r *ResultBits, s float64) { r.CPUSeconds = s })
}

// BitsLogits are the logits f(x)[y] of every state, row-major [2^D][K] (the states
// enumerated in chunks).
func BitsLogits(d int, hidden []int, k int, theta []float32) ([]float64, error) {
	if d < 1 || d > MaxBitsD {
		return nil, fmt.Errorf("kernel: D must be in [1, %d], got %d", MaxBitsD, d)
	}
	if np := NumParamsBits(d, hidden, k); len(theta) != np {
		return nil, fmt.Errorf("kernel: len(theta)=%d, want %d", len(theta), np)
	}
	n := 1 << d
	P := min(bitsChunk, roundVW(n))
	net := newMLP(layersBits(d, hidden, k), P)
	x := make([]float32, d*P)
	out := make([]float64, n*k)
	for lo := 0; lo < n; lo += P {
		hi := min(n, lo+P)
		statesLanes(x, d, P, lo, hi)
		net.forward(theta, x, P)
		for p := range hi - lo {
			for y := range k {
				out[(lo+p)*k+y] = float64(net.f[y*P+p])
			}
		}
	}
	return out, nil
}

func roundVW(n int) int { return (n + VW - 1) / VW * VW }

// statesLanes writes states lo..hi−1 as bits into the lanes of x [D][P] (the lanes
// after hi−lo repeat state lo: their weight is zero wherever they are used).
// Row by row (bit j of every lane, then bit j+1), and from bit 4 on in runs of 2^j equal
// values filled by copying: lane by lane, each write P floats from the last, it was 35%
// of an exact jem step at D = 20.
func statesLanes(x []float32, d, P, lo, hi int) {
	n := max(0, min(P, hi-lo)) // the lanes with states of their own
	for j := range d {
		row := x[j*P : (j+1)*P]
		if r := 1 << j; r < 16 {
			for p := range n {
				row[p] = float32(((lo + p) >> j) & 1)
			}
		} else {
			for p := 0; p < n; {
				s := lo + p
				end := min(n, p+r-(s&(r-1)))
				fill32(row[p:end], float32((s>>j)&1))
				p = end
			}
		}
		fill32(row[n:], float32((lo>>j)&1))
	}
}

// fill32 sets every element of a to v (by doubling copies: memmove's speed on long runs).
func fill32(a []float32, v float32) {
	if len(a) == 0 {
		return
	}
	a[0] = v
	for k := 1; k < len(a); k *= 2 {
		copy(a[k:], a[:k])
	}
}

// setLane writes state s into lane p of x [D][P].
func setLane(x []float32, d, P, p int, s uint32) {
	for j := range d {
		x[j*P+p] = float32((s >> j) & 1)
	}
}

type trainerBits struct {
	spec       SpecBits
	net        *mlp2d
	B, P, K, D int
	x          []float32 // [D][P]: data lanes 0..B, then an objective's lanes
	yd         []int32
	delta      []float32 // [K][P]
	coef       []float32 // an objective's dL/dℓ per lane
	e          []float32 // per-lane LSE
	theta      []float32
	m, v, snap []float32
	order      []int32
	pos        int
	dataRng    *rand.Rand
	bufRng     *rand.Rand

	// exact JEM's enumeration (enet: C lanes)
	ex     []float32 // [D][C] states
	edelta []float32 // [K][C]
	enet   *mlp2d
	grad   []float32 // w·∇θ log Z, accumulated over the chunks

	// an Objective's run (bits_objective.go)
	obj      Objective
	st       Step        // what the objective sees
	data     [][]float32 // the run's draws by bit [D][N], 0/1
	xm, xv   []float32   // Adam's moments of the objective's parameters
	noiseRng *rand.Rand
}

func newTrainerBits(spec SpecBits) *trainerBits {
	B, K, D := spec.Batch, spec.K, spec.D
	t := &trainerBits{spec: spec, B: B, K: K, D: D}
	if spec.Objective != nil {
		t.newObjective()
	} else {
		t.P = B
	}
	ls := layersBits(D, spec.Hidden, K)
	t.net = newMLP(ls, t.P)
	np := t.net.np
	t.x = make([]float32, D*t.P)
	t.yd = make([]int32, B)
	t.delta = make([]float32, K*t.P)
	t.coef = make([]float32, t.P)
	t.e = make([]float32, t.P)
	t.theta, t.m, t.v = make([]float32, np), make([]float32, np), make([]float32, np)
	t.snap = make([]float32, 3*np)
	if t.obj == nil && spec.Exact {
		c := min(bitsChunk, roundVW(1<<D))
		t.ex = make([]float32, D*c)
		t.enet = newMLP(ls, c)
		t.edelta = make([]float32, K*c)
		t.grad = make([]float32, np)
	}
	return t
}

func (t *trainerBits) batch(r *RunBits) {
	B, P := t.B, t.P
	n := len(r.Y)
	for p := range B {
		if t.pos == n {
			t.pos = 0
			t.dataRng.Shuffle(n, func(i, j int) { t.order[i], t.order[j] = t.order[j], t.order[i] })
		}
		j := t.order[t.pos]
		t.pos++
		setLane(t.x, t.D, P, p, r.X[j])
		t.yd[p] = r.Y[j]
	}
}

// lseLanes writes LSE_y f into t.e for the lanes of the last forward of net.
func lseLanes(net *mlp2d, e []float32, K, P int) {
	for p := range P {
		e[p] = lse32(net.f, p, K, P)
	}
}

// lossGrad computes the loss of the data and t.delta after the forward pass on t.x:
// the baseline's cross-entropy, or exact JEM's data terms (the cross-entropy less
// PxWeight·mean LSE_y f; train adds PxWeight·log Z).
func (t *trainerBits) lossGrad() float32 {
	B, P, K := t.B, t.P, t.K
	w := t.spec.PxWeight
	if !t.spec.Exact {
		w = 0
	}
	f, s := t.net.f[:K*P], t.net.s[:K*P]
	invB := 1 / float32(B)
	vSoftmax(s, f, K, P)
	lseLanes(t.net, t.e, K, P)
	var loss float32
	for p := range B {
		loss += (t.e[p] - f[int(t.yd[p])*P+p] - w*t.e[p]) * invB
		for y := range K {
			t.delta[y*P+p] = s[y*P+p] * ((1 - w) * invB)
		}
		t.delta[int(t.yd[p])*P+p] -= invB
	}
	return loss
}

// logZ enumerates every state: the exact log Z = log Σ_x Σ_y exp f(x)[y], and, when
// grad, adds w·E_q[∇θ f] (the gradient of w·log Z) into t.grad.
func (t *trainerBits) logZ(theta []float32, w float32, grad bool) float64 {
	D, K := t.D, t.K
	n := 1 << D
	C := len(t.ex) / D
	net, e := t.enet, t.edelta
	// Pass 1: each chunk's maximum and sum, combined in float64.
	mx := math.Inf(-1)
	var z float64
	for lo := 0; lo < n; lo += C {
		hi := min(n, lo+C)
		statesLanes(t.ex, D, C, lo, hi)
		net.forward(theta, t.ex, C)
		cm := float32(math.Inf(-1))
		for y := range K {
			for _, v := range net.f[y*C : y*C+hi-lo] {
				cm = max(cm, v)
			}
		}
		for i, v := range net.f[:K*C] {
			e[i] = v - cm
		}
		vExp(e, e)
		var cs float32
		for y := range K {
			for _, v := range e[y*C : y*C+hi-lo] {
				cs += v
			}
		}
		ClearUpper()
		if c := float64(cm); c > mx {
			z = z*math.Exp(mx-c) + float64(cs)
			mx = c
		} else {
			z += float64(cs) * math.Exp(c-mx)
		}
	}
	lz := mx + math.Log(z)
	if !grad {
		return lz
	}
	// Pass 2: back-propagate w·q(x,y) = w·exp(f − log Z), chunk by chunk.
	l32 := float32(lz)
	for lo := 0; lo < n; lo += C {
		hi := min(n, lo+C)
		statesLanes(t.ex, D, C, lo, hi)
		net.forward(theta, t.ex, C)
		for i, v := range net.f[:K*C] {
			e[i] = v - l32
		}
		vExp(e, e)
		for y := range K {
			row := e[y*C : (y+1)*C]
			for p := range row {
				if p < hi-lo {
					row[p] *= w
				} else {
					row[p] = 0
				}
			}
		}
		net.backward(theta, e, C, true, nil)
		vAdd(t.grad, t.grad, net.g)
	}
	return lz
}

func (t *trainerBits) train(r *RunBits) ResultBits {
	spec := t.spec
	np := t.net.np
	clear(t.theta)
	copy(t.theta, r.Theta)
	clear(t.m)
	clear(t.v)
	t.dataRng = prob.NewRand(prob.Seed(r.Seed, tagData))
	t.bufRng = prob.NewRand(prob.Seed(r.Seed, tagBuf))
	n := len(r.Y)
	if cap(t.order) < n {
		t.order = make([]int32, n)
	}
	t.order = t.order[:n]
	for i := range t.order {
		t.order[i] = int32(i)
	}
	t.pos = n
	if t.obj != nil {
		return t.trainObjective(r)
	}
	res := ResultBits{}
	const maxE = 1e6
	for step := 1; step <= spec.Steps; step++ {
		t.batch(r)
		t.net.forward(t.theta, t.x, t.P)
		loss := t.lossGrad()
		var lz float64
		if spec.Exact && spec.PxWeight > 0 {
			clear(t.grad)
			lz = t.logZ(t.theta, spec.PxWeight, true)
			loss += spec.PxWeight * float32(lz)
		}
		if !finite32(loss) || abs32(loss) > maxE {
			res.Diverged, res.DivergedStep = true, step
			break
		}
		t.net.backward(t.theta, t.delta, t.P, true, nil)
		if spec.Exact && spec.PxWeight > 0 {
			vAdd(t.net.g, t.net.g, t.grad)
		}
		copy(t.snap[:np], t.theta)
		copy(t.snap[np:2*np], t.m)
		copy(t.snap[2*np:], t.v)
		lrScale, epsT := AdamScalars(step)
		vAdamFlat(t.theta, t.m, t.v, t.net.g, r.LR*float32(lrScale), float32(epsT))
		if !allFinite(t.theta) || !allFinite(t.m) || !allFinite(t.v) {
			copy(t.theta, t.snap[:np])
			copy(t.m, t.snap[np:2*np])
			copy(t.v, t.snap[2*np:])
			res.Diverged, res.DivergedStep = true, step
			break
		}
		res.Loss = loss
		r.observe(spec, step, t.theta[:len(r.Theta)])
	}
	res.Theta = append([]float32(nil), t.theta[:len(r.Theta)]...)
	return res
}

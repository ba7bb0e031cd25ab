package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/prob"
)

// Complete training loops for the continuous 2-D tasks of issue 9 (prob.Task2D): an MLP
// 2-H1-…-Hn-K with tanh hidden layers (none: the linear model), Adam, one of three
// losses, over a block of runs whose randomness comes from each run's own seed only.
//
//   - Baseline (a spec with neither Exact nor Objective): cross-entropy on minibatches
//     of the run's draws (PxWeight unused).
//   - Exact JEM (Spec2D.Exact): CE + PxWeight·(log Z − mean LSE_y f(x) over the data),
//     with log Z = LSE over the training grid's cells and classes of f(x_c)[y] + log(cell
//     area): the joint negative log-likelihood of the model normalised on the grid. The
//     training grid is TrainGrid cells per side over the box (64: the evaluation grid
//     itself; coarser: cheaper), optionally shifted by a uniform random offset per step
//     (ShiftGrid), which makes the Riemann sum Z an unbiased estimate of ∫_box.
//     With Run2D.Fresh the minibatches are fresh draws from the truth: the oracle.
//   - A method's Objective (Spec2D.Objective, objective.go): CE + PxWeight times the
//     objective's loss on the lanes it fills (the recipes of methods/sgld, mala,
//     jarzynski, shortrun, ed, nce, tre, dsm, snl, drl).
//
// Points are the vector lanes (as in SGLD.Step, whose primitives these loops reuse and
// whose results they reproduce bit for bit for 2 hidden layers): one run is trained at
// a time per goroutine, all its steps, then the next run, so a run's state (parameters,
// moments, an objective's buffers) stays in cache and its result cannot depend on its
// block-mates.
//
// The divergence guard: a step whose loss is non-finite or whose |loss|, |mean LSE f| on
// the data or |mean LSE f| on the other lanes exceeds MaxEnergy (finite blow-ups, the
// SGLD probe's pitfall 6), or after which a parameter or Adam moment is non-finite, is
// not applied; the run is frozen at its last good state with DivergedStep = that step.

// SGLDOptions are the settings of SGLD's sampler (SGLDSteps; methods/sgld's objective),
// the official names in brackets.
type SGLDOptions struct {
	Steps  int     // SGLD steps per training step (n_steps)
	LR     float32 // step on ∇x LSE_y f(x) (sgld_lr)
	Std    float32 // noise standard deviation (sgld_std)
	Buffer int     // replay buffer size per run (buffer_size)
	Reinit float32 // per-sample probability of a uniform restart on the box (reinit_freq)
	Clamp  bool    // clamp the chains to the box after every SGLD step
	// Informative starts the buffer and its restarts from a class-wise Gaussian fitted
	// to the run's training draws (a class by its frequency, then a draw of its
	// Gaussian) instead of uniform noise on the box: JEM++'s informative initialisation
	// (Yang & Ji, ICCV 2021).
	Informative bool
}

// DefaultMaxEnergy is the divergence guard's default threshold on |loss| and |mean LSE f|.
const DefaultMaxEnergy = 1e3

// Spec2D is the model, loss and schedule shared by the runs of a Train2D call.
type Spec2D struct {
	Hidden []int // tanh hidden widths (0 to 4 layers of 1 to 256)
	K      int   // classes
	// Exact trains exact JEM: the model's own log Z on the training grid (TrainGrid,
	// ShiftGrid), PxWeight times it. A spec with neither Exact nor Objective trains the
	// cross-entropy alone (the baseline).
	Exact     bool
	Steps     int     // Adam steps
	Batch     int     // data points per step: a positive multiple of 16
	PxWeight  float32 // weight of the log q(x) term (exact JEM, an objective's loss)
	Box       float32 // the box [−Box, Box]²: exact JEM's grid, an objective's Step.Box
	TrainGrid int     // exact JEM: training grid cells per side, a multiple of 4 (0: 64)
	ShiftGrid bool    // exact JEM: shift the training grid by a uniform random offset per step
	// Objective makes the objective of a method that lives in its own package (one per
	// goroutine); Exact is then ignored.
	Objective func() Objective
	MaxEnergy float32 // divergence threshold (0: DefaultMaxEnergy)
	// KeepBuffer: the method keeps each run's final negatives (its objective's End
	// returns them in Result2D.Buffer), which the block tasks then measure.
	KeepBuffer   bool
	ObserveEvery int // call Run2D.Observe every this many steps (0: never)
	// Decay is the share of the steps, at the end, over which the Adam learning rate
	// falls linearly to 0 (0: a constant rate; 0.5: constant for the first half, then
	// linear to 0 at the last step). The exact references train with it so that their
	// last iterate converges instead of hovering at the constant rate's noise floor.
	Decay float32
}

// decayScale is the learning rate's factor at step (1-based) under spec.Decay.
func (s Spec2D) decayScale(step int) float64 {
	if s.Decay <= 0 {
		return 1
	}
	span := float64(s.Decay) * float64(s.Steps)
	left := float64(s.Steps - step + 1) // steps left, this one included
	return min(1, left/span)
}

// Run2D is one run of a Train2D call.
type Run2D struct {
	Seed   uint64    // every random draw of the run (minibatch order, grid shifts, an objective's Rng and Noise)
	Theta  []float32 // initial parameters, canonical layout (InitMLP2D)
	LR     float32   // Adam learning rate
	X0, X1 []float32 // the run's N draws
	Y      []int32
	// Fresh, if set, fills every minibatch with fresh draws from the truth using the
	// run's data RNG (the oracle); X0, X1, Y are then unused.
	Fresh func(rng *rand.Rand, x0, x1 []float32, y []int32)
	// Observe, if set, is called with the step and the current parameters (valid during
	// the call only) every Spec2D.ObserveEvery steps, and not after a divergence.
	Observe func(step int, theta []float32)
}

// Result2D is a trained run.
type Result2D struct {
	Theta        []float32 // final parameters (the last good state if Diverged)
	Loss         float32   // the loss of the last step applied
	Diverged     bool
	DivergedStep int // the step whose guard fired (1-based), 0 if none
	// Buffer is an objective's final negatives [n][D] (sgld and mala with KeepBuffer:
	// the replay buffer), InBox the share of them inside the box; set by its End.
	Buffer []float32
	InBox  float64
	// StepSize is the final Langevin step η of mala and jarzynski (adapted), Accept the
	// mean acceptance (mala) or mean min(1, ratio) (jarzynski) over the steps, and
	// Resamples the number of jarzynski resamplings, set by their objectives' End; 0
	// for the other methods.
	StepSize  float64
	Accept    float64
	Resamples int
	// CPUSeconds is the run's own CPU time (its thread's, where the OS tells: Linux;
	// NaN elsewhere), observation callbacks included.
	CPUSeconds float64
	// Extra are an Objective's own parameters at the end, Stats its diagnostics
	// (e.g. a learned log Z), by name.
	Extra []float32
	Stats map[string]float64
}

// layers2D returns the (in, out) shapes of the MLP 2-hidden…-K.
func layers2D(hidden []int, k int) []dims { return layersIn(2, hidden, k) }

// layersIn returns the (in, out) shapes of the MLP in-hidden…-K.
func layersIn(in int, hidden []int, k int) []dims {
	var ls []dims
	for _, h := range hidden {
		ls = append(ls, dims{in, h})
		in = h
	}
	return append(ls, dims{in, k})
}

// NumParams2D is the number of parameters of the MLP 2-hidden…-K.
func NumParams2D(hidden []int, k int) int {
	n := 0
	for _, l := range layers2D(hidden, k) {
		n += l.in*l.out + l.out
	}
	return n
}

// InitMLP2D draws a run's initial parameters for the MLP 2-hidden…-K (InitTheta).
func InitMLP2D(seed uint64, hidden []int, k int) []float32 {
	ls := layers2D(hidden, k)
	layers := make([][2]int, len(ls))
	for i, l := range ls {
		layers[i] = [2]int{l.in, l.out}
	}
	return InitTheta(seed, layers)
}

// InitTheta draws one run's parameters from its seed, the project's one convention
// (package models trains with it too): uniform(−1, 1) weights and biases for the linear
// model (one layer), Glorot-uniform weights uniform(−a, a), a = sqrt(6/(in+out)), and
// zero biases for an MLP; canonical layout, per layer W row-major [in][out], then b.
// layers are the (in, out) sizes of the dense layers.
func InitTheta(seed uint64, layers [][2]int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := 0
	for _, l := range layers {
		n += l[0]*l[1] + l[1]
	}
	theta := make([]float32, 0, n)
	linear := len(layers) == 1
	for _, l := range layers {
		a := 1.0
		if !linear {
			a = math.Sqrt(6 / float64(l[0]+l[1]))
		}
		for range l[0] * l[1] {
			theta = append(theta, float32((rng.Float64()*2-1)*a))
		}
		for range l[1] {
			if linear {
				theta = append(theta, float32(rng.Float64()*2-1))
			} else {
				theta = append(theta, 0)
			}
		}
	}
	return theta
}

func (s Spec2D) trainGrid() int {
	if s.TrainGrid == 0 {
		return 64
	}
	return s.TrainGrid
}

func (s Spec2D) maxEnergy() float32 {
	if s.MaxEnergy == 0 {
		return DefaultMaxEnergy
	}
	return s.MaxEnergy
}

// Validate reports the first problem with the spec, or nil: what Train2D checks
// before it trains.
func (s Spec2D) Validate() error { return s.validate(2) }

// validate checks the spec.
func (s Spec2D) validate(D int) error {
	if len(s.Hidden) > 4 || s.K < 2 || s.K > 256 {
		return fmt.Errorf("kernel: 2-D spec needs at most 4 hidden layers and 2 <= K <= 256, got %v, K=%d", s.Hidden, s.K)
	}
	for _, h := range s.Hidden {
		if h < 1 || h > 256 {
			return fmt.Errorf("kernel: hidden width %d not in [1, 256]", h)
		}
	}
	if s.Steps < 0 || s.Batch < VW || s.Batch%VW != 0 || s.Batch > 4096 {
		return fmt.Errorf("kernel: 2-D spec needs Steps >= 0 and Batch a multiple of 16 in [16, 4096], got %d, %d", s.Steps, s.Batch)
	}
	if !(s.Decay >= 0 && s.Decay <= 1) {
		return fmt.Errorf("kernel: 2-D spec needs Decay in [0, 1], got %g", s.Decay)
	}
	if !(s.Box > 0) || math.IsInf(float64(s.Box), 0) || math.IsNaN(float64(s.PxWeight)) || math.IsInf(float64(s.PxWeight), 0) {
		return fmt.Errorf("kernel: 2-D spec needs a finite Box > 0 and a finite PxWeight, got %g, %g", s.Box, s.PxWeight)
	}
	if !(s.MaxEnergy >= 0) {
		return fmt.Errorf("kernel: MaxEnergy must be >= 0, got %g", s.MaxEnergy)
	}
	if s.Objective != nil {
		return s.validateObjective(D)
	}
	if g := s.trainGrid(); s.Exact && (g < 4 || g%4 != 0 || g > 256) {
		return fmt.Errorf("kernel: TrainGrid must be a multiple of 4 in [4, 256], got %d", g)
	}
	return nil
}

// Train2D trains every run for spec.Steps steps and returns one Result2D per run, in
// order. Runs are spread over GOMAXPROCS goroutines; a run's result depends only on
// its own Run2D and the spec (and not on the build: portable or vector). The context is
// checked between runs.
func Train2D(ctx context.Context, spec Spec2D, runs []Run2D) ([]Result2D, error) {
	if err := spec.validate(2); err != nil {
		return nil, err
	}
	np := NumParams2D(spec.Hidden, spec.K)
	for i, r := range runs {
		if len(r.Theta) != np {
			return nil, fmt.Errorf("kernel: run %d: len(Theta)=%d, want %d", i, len(r.Theta), np)
		}
		if r.Fresh == nil && (len(r.Y) == 0 || len(r.X0) != len(r.Y) || len(r.X1) != len(r.Y)) {
			return nil, fmt.Errorf("kernel: run %d: needs draws (len X0, X1, Y = %d, %d, %d) or Fresh", i, len(r.X0), len(r.X1), len(r.Y))
		}
		for j, y := range r.Y {
			if y < 0 || int(y) >= spec.K {
				return nil, fmt.Errorf("kernel: run %d: draw %d has class %d, want [0, %d)", i, j, y, spec.K)
			}
		}
	}
	return trainRuns(ctx, len(runs), func() *trainer2D { return newTrainer2D(spec) },
		func(t *trainer2D, i int) Result2D { return t.train(&runs[i]) }, setCPU2D)
}

func setCPU2D(r *Result2D, s float64) { r.CPUSeconds = s }

// mlp2d is the forward and backward passes of the MLP on P points (lanes), P a
// multiple of VW, arrays [features][P].
type mlp2d struct {
	ls   []dims
	off  []int // offset of each layer's W; b follows at off+in*out
	np   int   // parameters, padded to a multiple of VW
	acts [][]float32
	f, s []float32
	d    [2][]float32
	g    []float32
	xin  []float32
}

func newMLP2D(hidden []int, k, pmax int) *mlp2d { return newMLP(layers2D(hidden, k), pmax) }

// newMLP is the MLP of dense layers ls (tanh between them) on up to pmax lanes; its
// input is ls[0].in features [in][P].
func newMLP(ls []dims, pmax int) *mlp2d {
	k := ls[len(ls)-1].out
	n := &mlp2d{ls: ls}
	o, wmax := 0, k
	for _, l := range ls {
		n.off = append(n.off, o)
		o += l.in*l.out + l.out
		wmax = max(wmax, l.out)
	}
	n.np = (o + VW - 1) / VW * VW
	n.acts = make([][]float32, len(ls))
	for l := 1; l < len(ls); l++ {
		n.acts[l] = make([]float32, ls[l].in*pmax)
	}
	n.f, n.s = make([]float32, k*pmax), make([]float32, k*pmax)
	n.d = [2][]float32{make([]float32, wmax*pmax), make([]float32, wmax*pmax)}
	n.g = make([]float32, n.np)
	return n
}

func (n *mlp2d) wb(theta []float32, l int) (W, b []float32) {
	d := n.ls[l]
	o := n.off[l]
	return theta[o : o+d.in*d.out], theta[o+d.in*d.out : o+d.in*d.out+d.out]
}

// forward computes the logits n.f [K][P] of the points x [2][P].
func (n *mlp2d) forward(theta, x []float32, P int) {
	n.xin = x
	h := x
	last := len(n.ls) - 1
	for l, d := range n.ls {
		W, b := n.wb(theta, l)
		var z []float32
		if l == last {
			z = n.f[:d.out*P]
		} else {
			z = n.acts[l+1][:d.out*P]
		}
		vGemmFwd(z, W, b, h, d.in, d.out, P)
		if l < last {
			vTanh(z, z)
		}
		h = z
	}
}

// backward back-propagates delta = dL/df [K][P] from the last forward: into the
// parameter gradient n.g (cleared first) if param, and into dx [2][P] if dx != nil.
func (n *mlp2d) backward(theta, delta []float32, P int, param bool, dx []float32) {
	if param {
		clear(n.g)
	}
	nb := 0
	for l := len(n.ls) - 1; l >= 0; l-- {
		d := n.ls[l]
		W, _ := n.wb(theta, l)
		hin := n.xin
		if l > 0 {
			hin = n.acts[l]
		}
		if param {
			gW, gb := n.wb(n.g, l)
			vGemmGradW(gW, hin, delta, d.in, d.out, P)
			vSumP(gb, delta, d.out, P)
		}
		if l > 0 {
			next := n.d[nb][:d.in*P]
			vGemmBackInTanh(next, W, delta, n.acts[l][:d.in*P], d.in, d.out, P)
			delta, nb = next, 1-nb
		} else if dx != nil {
			vGemmBackIn(dx[:d.in*P], W, delta, d.in, d.out, P)
		}
	}
}

// inputGrad computes dx [2][P] = ∇x LSE_y f(x) for the points x [2][P].
func (n *mlp2d) inputGrad(theta, x, dx []float32, P, K int) {
	n.forward(theta, x, P)
	s := n.s[:K*P]
	vSoftmax(s, n.f[:K*P], K, P)
	n.backward(theta, s, P, false, dx)
}

// lse32 is LSE_y of the logits of point p (f [K][P]).
func lse32(f []float32, p, K, P int) float32 {
	mx := f[p]
	for y := 1; y < K; y++ {
		mx = max(mx, f[y*P+p])
	}
	var sum float32
	for y := range K {
		sum += Exp32(f[y*P+p] - mx)
	}
	return mx + Log32(sum)
}

// trainer2D is one goroutine's scratch space.
type trainer2D struct {
	spec         Spec2D
	net          *mlp2d
	B, P, K      int
	gt           int       // exact JEM training grid per side
	x            []float32 // [2][P]: data, then an objective's lanes or grid nodes
	yd           []int32
	delta        []float32 // [K][P]
	tmp          []float32 // exact JEM: exp(f − max) on the grid lanes
	theta, m, v  []float32
	snap         []float32
	order        []int32 // data order for minibatches
	pos          int
	fx0, fx1     []float32 // Fresh draws
	dataRng      *rand.Rand
	bufRng       *rand.Rand
	noiseRng     *rand.Rand
	lseD, lseNeg float32

	obj    Objective // Spec2D.Objective's
	st     Step
	lse    []float32 // every lane's LSE, for the objective
	coef   []float32 // the objective's dL/dℓ per lane
	xm, xv []float32 // Adam's moments of the objective's parameters
}

func newTrainer2D(spec Spec2D) *trainer2D {
	B, K := spec.Batch, spec.K
	t := &trainer2D{spec: spec, B: B, K: K}
	switch {
	case spec.Objective != nil:
		t.obj = spec.Objective()
		t.P = t.obj.Lanes(B, 2)
		t.coef, t.lse = make([]float32, t.P), make([]float32, t.P)
		n := t.obj.Params()
		t.st.Extra, t.st.ExtraGrad, t.xm, t.xv = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	case spec.Exact:
		t.gt = spec.trainGrid()
		t.P = B + t.gt*t.gt
	default:
		t.P = B
	}
	t.net = newMLP2D(spec.Hidden, K, t.P)
	np := t.net.np
	t.x = make([]float32, 2*t.P)
	t.yd = make([]int32, B)
	t.delta = make([]float32, K*t.P)
	t.tmp = make([]float32, K*t.P)
	t.theta, t.m, t.v, t.snap = make([]float32, np), make([]float32, np), make([]float32, np), make([]float32, 3*np)
	t.fx0, t.fx1 = make([]float32, B), make([]float32, B)
	return t
}

// Seed tags of a run's random streams.
const (
	tagData  = 0x64617461 // "data"
	tagBuf   = 0x62756666 // "buff"
	tagNoise = 0x6e6f6973 // "nois"
)

// batch fills the data part of t.x and t.yd with the next minibatch: the run's draws in
// a random order reshuffled every epoch, taken B at a time across epoch boundaries; or
// fresh draws.
func (t *trainer2D) batch(r *Run2D) {
	B, P := t.B, t.P
	if r.Fresh != nil {
		r.Fresh(t.dataRng, t.fx0, t.fx1, t.yd)
		copy(t.x[:B], t.fx0)
		copy(t.x[P:P+B], t.fx1)
		return
	}
	n := len(r.Y)
	for p := range B {
		if t.pos == n {
			t.pos = 0
			t.dataRng.Shuffle(n, func(i, j int) { t.order[i], t.order[j] = t.order[j], t.order[i] })
		}
		j := t.order[t.pos]
		t.pos++
		t.x[p], t.x[P+p], t.yd[p] = r.X0[j], r.X1[j], r.Y[j]
	}
}

// gridNodes writes the exact-JEM training grid (shifted by a uniform offset if
// ShiftGrid, wrapping within the box) into t.x after the data.
func (t *trainer2D) gridNodes() {
	B, P, G := t.B, t.P, t.gt
	box := float64(t.spec.Box)
	h := 2 * box / float64(G)
	u0, u1 := 0.5, 0.5
	if t.spec.ShiftGrid {
		u0, u1 = t.bufRng.Float64(), t.bufRng.Float64()
	}
	for i := range G {
		c0 := float32(-box + (float64(i)+u0)*h)
		for j := range G {
			c := B + i*G + j
			t.x[c] = c0
			t.x[P+c] = float32(-box + (float64(j)+u1)*h)
		}
	}
}

// lossGrad computes the loss and t.delta = dL/df after the forward pass on t.x: the
// baseline's cross-entropy, or exact JEM's with PxWeight·log Z over the grid lanes.
func (t *trainer2D) lossGrad() float32 {
	B, P, K := t.B, t.P, t.K
	w := t.spec.PxWeight
	f, s := t.net.f[:K*P], t.net.s[:K*P]
	invB := 1 / float32(B)
	var loss, sumD float32
	vSoftmax(s, f, K, P)
	if !t.spec.Exact {
		loss, sumD = ceGrad(f, s, t.delta, t.yd, B, P, K, invB)
		t.lseD, t.lseNeg = sumD*invB, 0
		return loss
	}
	loss, sumD = jemDataGrad(f, s, t.delta, t.yd, B, P, K, invB, w)
	// log Z over the grid's cells and classes; dL/df = w·softmax over all of them.
	n := P - B
	mx := f[B]
	for y := range K {
		for _, v := range f[y*P+B : (y+1)*P] {
			mx = max(mx, v)
		}
	}
	var z float64
	for y := range K {
		e := t.tmp[y*P+B : (y+1)*P]
		for i, v := range f[y*P+B : (y+1)*P] {
			e[i] = v - mx
		}
		vExp(e, e)
		var zs float32
		for _, v := range e {
			zs += v
		}
		z += float64(zs)
	}
	h := 2 * float64(t.spec.Box) / float64(t.gt)
	logZ := float64(mx) + math.Log(z) + math.Log(h*h)
	loss += w * float32(logZ)
	sc := w / float32(z)
	for y := range K {
		e, d := t.tmp[y*P+B:(y+1)*P], t.delta[y*P+B:(y+1)*P]
		for i := range n {
			d[i] = e[i] * sc
		}
	}
	t.lseD, t.lseNeg = sumD*invB, 0
	return loss
}

func finite32(x float32) bool { return x-x == 0 }

// train runs one run to the end.
func (t *trainer2D) train(r *Run2D) Result2D {
	spec := t.spec
	np := t.net.np
	clear(t.theta)
	copy(t.theta, r.Theta)
	clear(t.m)
	clear(t.v)
	t.dataRng = prob.NewRand(prob.Seed(r.Seed, tagData))
	t.bufRng = prob.NewRand(prob.Seed(r.Seed, tagBuf))
	t.noiseRng = prob.NewRand(prob.Seed(r.Seed, tagNoise))
	if r.Fresh == nil {
		n := len(r.Y)
		if cap(t.order) < n {
			t.order = make([]int32, n)
		}
		t.order = t.order[:n]
		for i := range t.order {
			t.order[i] = int32(i)
		}
		t.pos = n // shuffle before the first batch
	}
	if t.obj != nil {
		var data [][]float32
		if r.Fresh == nil {
			data = [][]float32{r.X0, r.X1}
		}
		t.st = Step{B: t.B, P: t.P, Dim: 2, Box: spec.Box, X: t.x, Y: t.yd, Rng: t.bufRng, Noise: t.noiseRng,
			Extra: t.st.Extra, ExtraGrad: t.st.ExtraGrad, LSE: t.energy, Data: data, DataY: r.Y}
		clear(t.st.Extra)
		clear(t.xm)
		clear(t.xv)
		t.obj.Begin(&t.st)
	}
	res := Result2D{}
	maxE := spec.maxEnergy()
	for step := 1; step <= spec.Steps; step++ {
		t.batch(r)
		switch {
		case t.obj != nil:
			t.st.Step = step
			t.obj.Fill(&t.st)
		case spec.Exact:
			t.gridNodes()
		}
		t.net.forward(t.theta, t.x, t.P)
		var loss float32
		if t.obj != nil {
			loss = t.objLoss()
		} else {
			loss = t.lossGrad()
		}
		if !finite32(loss) || abs32(loss) > maxE || abs32(t.lseD) > maxE || abs32(t.lseNeg) > maxE {
			res.Diverged, res.DivergedStep = true, step
			break
		}
		t.net.backward(t.theta, t.delta, t.P, true, nil)
		copy(t.snap[:np], t.theta)
		copy(t.snap[np:2*np], t.m)
		copy(t.snap[2*np:], t.v)
		lrScale, epsT := AdamScalars(step)
		vAdamFlat(t.theta, t.m, t.v, t.net.g, r.LR*float32(lrScale*spec.decayScale(step)), float32(epsT))
		if t.obj != nil {
			t.adamExtra(r.LR*float32(lrScale*spec.decayScale(step)), float32(epsT))
		}
		if !allFinite(t.theta) || !allFinite(t.m) || !allFinite(t.v) {
			copy(t.theta, t.snap[:np])
			copy(t.m, t.snap[np:2*np])
			copy(t.v, t.snap[2*np:])
			res.Diverged, res.DivergedStep = true, step
			break
		}
		res.Loss = loss
		if r.Observe != nil && spec.ObserveEvery > 0 && step%spec.ObserveEvery == 0 {
			r.Observe(step, t.theta[:len(r.Theta)])
		}
	}
	res.Theta = append([]float32(nil), t.theta[:len(r.Theta)]...)
	if t.obj != nil {
		t.obj.End(&t.st, &res)
		res.Extra = append([]float32(nil), t.st.Extra...)
	}
	return res
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func allFinite(a []float32) bool { return vAllFinite(a) }

// CellLogits is the model's log cell masses per unit area on the grid: for cell (i, j)
// and class y, log Σ_a Σ_b w_a w_b exp f(x_ab)[y] over the prob.CellRule nodes x_ab of
// the cell, so that its softmax over cells and classes is the model's q(cell, y) given
// x in the box, computed as the truth's cell masses are (issue 19: a model whose
// density is the truth's scores the resolution floor, not the centre's error).
// Row-major [G²][K], in float64.
func CellLogits(hidden []int, k int, theta []float32, G int, box float64) ([]float64, error) {
	return cellRule(hidden, k, theta, G, box, func(vals, out, w []float64) {
		// per cell and class m = max f, then every exp(f − m) of the row at once
		// (prob.ExpTo: math.Exp's bits, in vector lanes), then m + log Σ w_a w_b exp(f − m)
		// in the scalar sum's order
		S := len(w)
		nodes := S * S
		ms := out // the maxima, overwritten by the results below
		for c := range out {
			m := math.Inf(-1)
			for _, v := range vals[c*nodes : (c+1)*nodes] {
				m = max(m, v)
			}
			ms[c] = m
			for a := range vals[c*nodes : (c+1)*nodes] {
				vals[c*nodes+a] -= m
			}
		}
		prob.ExpTo(vals, vals)
		sums := vals[:len(out)] // sum c overwrites node c, of a cell-class ≤ c already summed
		for c := range out {
			e := vals[c*nodes : (c+1)*nodes]
			s := 0.0
			for a := range S {
				for b := range S {
					s += w[a] * w[b] * e[a*S+b]
				}
			}
			sums[c] = s
		}
		prob.LogTo(sums, sums) // math.Log's bits, in vector lanes
		for c := range out {
			out[c] = ms[c] + sums[c]
		}
	})
}

// CellMeanLogits is the model's mean logit over each cell by the same rule: for cell
// (i, j) and class y, Σ_a Σ_b w_a w_b f(x_ab)[y] (≤ CellLogits's log mean of exp f, by
// Jensen). Row-major [G²][K], in float64.
func CellMeanLogits(hidden []int, k int, theta []float32, G int, box float64) ([]float64, error) {
	return cellRule(hidden, k, theta, G, box, func(vals, out, w []float64) {
		S := len(w)
		for c := range out {
			f := vals[c*S*S : (c+1)*S*S]
			s := 0.0
			for a := range S {
				for b := range S {
					s += w[a] * w[b] * f[a*S+b]
				}
			}
			out[c] = s
		}
	})
}

// cellRule reduces the model's logits at every cell's prob.CellRule nodes with
// reduce(f, the rule's weights), f[a·S+b] the logit at node (a, b) (one buffer for
// every cell: nothing is allocated per cell).
func cellRule(hidden []int, k int, theta []float32, G int, box float64, reduce func(vals, out, w []float64)) ([]float64, error) {
	off, w := prob.CellRule()
	S := len(off)
	h := 2 * box / float64(G)
	n := G * S // nodes per axis
	coords := make([]float64, n)
	for i := range G {
		for a, o := range off {
			coords[i*S+a] = -box + (float64(i)+o)*h
		}
	}
	f, err := PointLogits(hidden, k, theta, n, func(p int) (float64, float64) { return coords[p/n], coords[p%n] })
	if err != nil {
		return nil, err
	}
	out := make([]float64, G*G*k)
	vals := make([]float64, G*k*S*S) // a row of cells: [cell j][class y][node a·S+b]
	for i := range G {
		// after the model's vector code, and again every row: an asynchronous
		// preemption restores the vector registers and leaves the upper state dirty
		// (see package avx), which slows the scalar exp and log here 20–100×
		ClearUpper()
		for j := range G {
			for y := range k {
				c := (j*k + y) * S * S
				for a := range S {
					for b := range S {
						vals[c+a*S+b] = f[((i*S+a)*n+j*S+b)*k+y]
					}
				}
			}
		}
		reduce(vals, out[i*G*k:(i+1)*G*k], w)
	}
	return out, nil
}

// PointLogits evaluates the model at the n² points at(p), p in [0, n²), and returns
// f(x_p)[y] row-major [n²][K] in float64.
func PointLogits(hidden []int, k int, theta []float32, n int, at func(p int) (x0, x1 float64)) ([]float64, error) {
	if n < 1 || len(theta) != NumParams2D(hidden, k) || k < 2 {
		return nil, errors.New("kernel: PointLogits: bad grid, K or parameter count")
	}
	const chunk = pointChunk
	total := n * n
	net := newMLP2D(hidden, k, chunk)
	th := make([]float32, net.np)
	copy(th, theta)
	x := make([]float32, 2*chunk)
	out := make([]float64, total*k)
	for lo := 0; lo < total; lo += chunk {
		m := min(chunk, total-lo)
		P := (m + VW - 1) / VW * VW
		clear(x)
		for c := range m {
			a, b := at(lo + c)
			x[c], x[P+c] = float32(a), float32(b)
		}
		net.forward(th, x[:2*P], P)
		for c := range m {
			for y := range k {
				out[(lo+c)*k+y] = float64(net.f[y*P+c])
			}
		}
	}
	return out, nil
}

// GridLogits evaluates the model at the G² cell centres of the grid (the points of the
// promises and the figures; the grid joint is CellLogits's).
func GridLogits(hidden []int, k int, theta []float32, G int, box float64) ([]float64, error) {
	h := 2 * box / float64(G)
	return PointLogits(hidden, k, theta, G, func(p int) (float64, float64) {
		return -box + (float64(p/G)+0.5)*h, -box + (float64(p%G)+0.5)*h
	})
}

// energy is the objective's view of the model (Step.LSE): e[p] = LSE_y f(x_p)[y] at
// the points x [2][P] and, when grad is not nil, grad [2][P] = ∇x LSE_y f(x_p).
func (t *trainer2D) energy(x []float32, P int, e, grad []float32) {
	K := t.K
	t.net.forward(t.theta, x, P)
	f := t.net.f[:K*P]
	if grad == nil {
		vSoftmaxLSE(nil, e[:P], f, K, P) // e[p] = lse32(f, p, K, P)
		return
	}
	s := t.net.s[:K*P]
	vSoftmaxLSE(s, e[:P], f, K, P)
	t.net.backward(t.theta, s, P, false, grad)
}

// ceGrad is baseline's loss on the data lanes p < B of F (K classes × P lanes, softmax
// s): the mean cross-entropy, with dL/dF into delta, and the sum of the lanes' log-sum-exp
// (the 2-D and block-additive trainers' shared data term).
func ceGrad(f, s, delta []float32, yd []int32, B, P, K int, invB float32) (loss, sumD float32) {
	for p := range B {
		l := lse32(f, p, K, P)
		sumD += l
		loss += (l - f[int(yd[p])*P+p]) * invB
		for y := range K {
			delta[y*P+p] = s[y*P+p] * invB
		}
		delta[int(yd[p])*P+p] -= invB
	}
	return loss, sumD
}

// jemDataGrad is exact JEM's loss on the data lanes before its log Z: the mean of
// −log q(y|x) − w·log Σ_y exp f, with dL/dF into delta, and the lanes' log-sum-exp sum.
func jemDataGrad(f, s, delta []float32, yd []int32, B, P, K int, invB, w float32) (loss, sumD float32) {
	for p := range B {
		l := lse32(f, p, K, P)
		sumD += l
		loss += (l - f[int(yd[p])*P+p] - w*l) * invB
		for y := range K {
			delta[y*P+p] = s[y*P+p] * ((1 - w) * invB)
		}
		delta[int(yd[p])*P+p] -= invB
	}
	return loss, sumD
}

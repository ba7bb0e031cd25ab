package cnn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Data is a labelled image set: X holds n = len(Y) row-major S×S images (n×S·S, values
// of order 1; the SGLD buffer starts uniform in [-1, 1]), Y their classes in [0, K).
type Data struct {
	X    []float32
	Y    []int
	S, K int
}

// Method is a training objective.
type Method string

// Methods.
const (
	// Baseline is cross-entropy only.
	Baseline Method = "baseline"
	// JEMSGLD is cross-entropy plus the JEM log q(x) term (Grathwohl et al. 2020):
	// mean LSE f(x̃) − mean LSE f(x) with negatives x̃ from a replay buffer refined by SGLD.
	JEMSGLD Method = "jem-sgld"
	// ED, DSM and NCE (recipes.go) are cross-entropy plus PxWeight times a sampler-free
	// loss on LSE f.
)

// SGLDOptions are the JEM sampler's settings; zero fields take the JEM paper's defaults
// (wgrathwohl/JEM train_wrn_ebm.py): x ← x + LR·∇x LSE_y f(x)_y + Std·ξ for Steps steps,
// from a replay buffer of BufferSize images, each batch entry re-initialised uniform in
// [-1, 1] with probability ReinitFreq.
type SGLDOptions struct {
	Steps      int     // 20
	LR         float64 // 1
	Std        float64 // 0.01
	ReinitFreq float64 // 0.05
	BufferSize int     // 10000
	// Informative starts the buffer and its restarts from a class-wise Gaussian fitted to
	// the training draws (a class by its frequency, then a draw with that class's mean
	// and covariance) instead of uniform noise on [-1, 1]: JEM++'s informative
	// initialisation (Yang & Ji, ICCV 2021; sgld_preset=jempp).
	Informative bool
}

// TrainOptions configure Train. Zero fields take the defaults noted.
type TrainOptions struct {
	Method Method  // Baseline (default), JEMSGLD, ED, DSM or NCE
	Steps  int     // Adam steps (required, > 0)
	Batch  int     // minibatch size, 64 (capped at the data size)
	LR     float64 // Adam learning rate, 1e-3
	Seed   uint64  // initialisation, minibatches, buffer, SGLD noise
	SGLD   SGLDOptions
	ED     EDOptions  // ED's settings
	DSM    DSMOptions // DSM's settings
	NCE    NCEOptions // NCE's settings
	// PxWeight weights the recipes' log q(x) term (ED, DSM, NCE), 1. JEMSGLD's term has
	// weight 1 always.
	PxWeight float64
	// DataNoise is the std of Gaussian noise added to every data minibatch (JEM: 0.03;
	// default 0).
	DataNoise float64
	// EnergyL2 weights an L2 penalty mean(LSE f(x)²) on data and samples (Grathwohl's
	// stabiliser, 0.1 suggested; default 0).
	EnergyL2 float64
	// Backend is the GoMLX backend ("" = DefaultBackend; "go", "xla:cpu", "xla:cuda" where
	// compiled in with -tags xla).
	Backend string
	// Autodiff takes every gradient (parameters and SGLD's input gradient) from GoMLX
	// autodiff instead of the hand-written backward pass (same values, slower on SimpleGo).
	Autodiff bool
	// Init, if non-nil, starts from these parameters instead of Init(spec, S, K, Seed).
	Init *Params
	// Observe, where set, is called with the parameters after every ObserveEvery-th step
	// and after the last step (the protocol's checks: tasks/images selects a run's
	// iterate on its held-out draws with it). Not after a diverged step, whose update is
	// discarded. ObserveEvery <= 0 observes the last step only.
	Observe      func(step int, p Params)
	ObserveEvery int
}

// GradEvalsPerStep is the forward+backward passes one training step makes per data
// point (the protocol's cost axis): 1 for the baseline and the recipes' data term,
// plus jem-sgld's SGLD steps, ED's negatives, or NCE's ν noise draws.
func (o TrainOptions) GradEvalsPerStep() int64 {
	o.defaults()
	switch o.Method {
	case JEMSGLD:
		return 1 + int64(o.SGLD.Steps)
	case ED:
		return 1 + int64(o.ED.M)
	case NCE:
		return 1 + int64(o.NCE.Nu)
	}
	return 1
}

// Stats report a training run.
type Stats struct {
	Steps        int       // Adam steps taken (Steps, or fewer after divergence or cancellation)
	Loss         []float32 // total loss per step
	CE           []float32 // cross-entropy part per step
	Diverged     bool      // a non-finite or huge (|loss| > 1e8, JEM's guard) loss stopped training
	DivergedStep int       // the 1-based step that diverged; its update is discarded
	Backend      string
	Seconds      float64 // wall time, graph building and compilation included
	// Term is the recipe's log q(x) term per step (ED, DSM, NCE; nil otherwise), before
	// PxWeight.
	Term []float32
	// MethodStats are what the recipe reports of itself (nil for Baseline and JEMSGLD):
	// "ed_loss", "dsm_loss", "nce_loss" (the term averaged over the last tenth of the
	// steps); nce's "log_z_learned" (the final c), "log_z_init" (c's start) and
	// "log_z_is" (log mean exp(ℓ(y) − log pn(y)) over the last step's noise draws y: an
	// importance-sampling estimate of log Z_θ under the noise, biased low), and
	// "nce_ridge" (the ridge added to the fitted covariance, 0 if none).
	MethodStats map[string]float64
}

const divergeLimit = 1e8

func (o *TrainOptions) defaults() {
	if o.Method == "" {
		o.Method = Baseline
	}
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.LR == 0 {
		o.LR = 1e-3
	}
	s := &o.SGLD
	if s.Steps == 0 {
		s.Steps = 20
	}
	if s.LR == 0 {
		s.LR = 1
	}
	if s.Std == 0 {
		s.Std = 0.01
	}
	if s.ReinitFreq == 0 {
		s.ReinitFreq = 0.05
	}
	if s.BufferSize == 0 {
		s.BufferSize = 10000
	}
	if o.Backend == "" {
		o.Backend = DefaultBackend
	}
	o.recipeDefaults()
}

func (o TrainOptions) validate() error {
	switch {
	case o.Method != Baseline && o.Method != JEMSGLD && !o.Method.recipe():
		return fmt.Errorf("cnn: unknown method %q (want %q, %q, %q, %q or %q)", o.Method, Baseline, JEMSGLD, ED, DSM, NCE)
	case o.Steps <= 0:
		return fmt.Errorf("cnn: Steps must be positive, got %d", o.Steps)
	case o.LR < 0 || math.IsNaN(o.LR):
		return fmt.Errorf("cnn: bad learning rate %g", o.LR)
	case o.SGLD.Steps < 0 || o.SGLD.BufferSize < 0 || o.SGLD.ReinitFreq < 0 || o.SGLD.ReinitFreq > 1 || o.SGLD.Std < 0:
		return fmt.Errorf("cnn: bad SGLD options %+v", o.SGLD)
	case o.DataNoise < 0 || o.EnergyL2 < 0:
		return fmt.Errorf("cnn: DataNoise and EnergyL2 must be >= 0")
	}
	return o.validateRecipe()
}

func (d Data) check() error {
	n := len(d.Y)
	if err := (Spec{Convs: []int{1}}).Check(2, d.K); d.K < 2 || err != nil {
		return fmt.Errorf("cnn: data needs K >= 2 classes, got %d", d.K)
	}
	if n == 0 || d.S <= 0 || len(d.X) != n*d.S*d.S {
		return fmt.Errorf("cnn: data X has %d values for %d labels of %d×%d images", len(d.X), n, d.S, d.S)
	}
	for i, y := range d.Y {
		if y < 0 || y >= d.K {
			return fmt.Errorf("cnn: label %d of example %d outside [0, %d)", y, i, d.K)
		}
	}
	return nil
}

// trainKey identifies what a training graph depends on.
type trainKey struct {
	method         Method
	N, sgldSteps   int
	sgldLR, sgldSD float64
	noise, l2      float64
	autodiff       bool
	// the recipes' settings
	pxW float64
	ed  EDOptions
	dsm DSMOptions
	nce NCEOptions
}

// buildTrain builds one training step. Inputs: params, Adam m, v (each len(sh), and for
// NCE one more, the scalar c), lrT and epsT (scalars), x [N, D], y [N] int32, rng state,
// and for JEM the buffer samples x0 [N, D]. Outputs: params', m', v', loss, ce, rng', and
// for JEM the refined samples [N, D], for a recipe its term and nce's log Z estimate.
func buildTrain(g *Graph, nt *net, k trainKey, noise *gaussNoise) {
	sh := nt.sp.layerShapes(nt.S, nt.K)
	if k.method == NCE {
		sh = append(sh, []int{}) // c
	}
	np := len(sh)
	p := paramNodes(g, sh, "p")
	m := paramNodes(g, sh, "m")
	v := paramNodes(g, sh, "v")
	f32 := dtypes.Float32
	lrT := Parameter(g, "lrT", shapes.Make(f32))
	epsT := Parameter(g, "epsT", shapes.Make(f32))
	N, D := k.N, nt.S*nt.S
	x := Parameter(g, "x", shapes.Make(f32, N, D))
	y := Parameter(g, "y", shapes.Make(dtypes.Int32, N))
	rng := Parameter(g, "rng", RNGStateForGraph(g).Shape())
	var x0 *Node
	if k.method == JEMSGLD {
		x0 = Parameter(g, "x0", shapes.Make(f32, N, D))
	}
	if k.noise > 0 {
		var eps *Node
		rng, eps = RandomNormal(rng, x.Shape())
		x = Add(x, MulScalar(eps, k.noise))
	}
	onehot := OneHot(y, nt.K, f32)
	invN := 1 / float64(N)
	ceOf := func(logits *Node) *Node {
		return MulScalar(ReduceAllSum(Sub(logSumExp(logits), ReduceSum(Mul(logits, onehot), -1))), invN)
	}

	var loss, ce *Node
	var grads []*Node
	var xs *Node
	var extra []*Node
	if k.method.recipe() {
		r := buildRecipe(nt, k, noise, p, x, onehot, rng)
		loss, ce, grads, rng = r.loss, r.ce, r.grads, r.rng
		logZ := r.logZIS
		if logZ == nil {
			logZ = ScalarZero(g, f32)
		}
		extra = []*Node{r.term, logZ}
	} else if k.method == Baseline {
		logits, ac := nt.forward(p, x)
		ce = ceOf(logits)
		loss = ce
		if k.autodiff {
			grads = Gradient(loss, p...)
		} else {
			grads, _ = nt.backward(p, ac, MulScalar(Sub(Softmax(logits, -1), onehot), invN), true, false)
		}
	} else {
		xs = x0
		for range k.sgldSteps { // unrolled: GoMLX v0.26 has no While op
			_, dx := nt.lseGrad(p, xs, k.autodiff)
			var xi *Node
			rng, xi = RandomNormal(rng, xs.Shape())
			xs = Add(Add(xs, MulScalar(dx, k.sgldLR)), MulScalar(xi, k.sgldSD))
		}
		xs = StopGradient(xs)
		if k.autodiff {
			ld, _ := nt.forward(p, x)
			ls, _ := nt.forward(p, xs)
			ce = ceOf(ld)
			lseD, lseS := logSumExp(ld), logSumExp(ls)
			loss = Add(ce, MulScalar(Sub(ReduceAllSum(lseS), ReduceAllSum(lseD)), invN))
			if k.l2 > 0 {
				loss = Add(loss, MulScalar(Add(ReduceAllSum(Square(lseD)), ReduceAllSum(Square(lseS))), k.l2*invN))
			}
			grads = Gradient(loss, p...)
		} else {
			// One forward/backward over data and samples together ([2N, ...]).
			logits, ac := nt.forward(p, Concatenate([]*Node{x, xs}, 0))
			ld := Slice(logits, AxisRange(0, N))
			ls := Slice(logits, AxisRange(N, 2*N))
			sd, ss := Softmax(ld, -1), Softmax(ls, -1)
			lseD, lseS := logSumExp(ld), logSumExp(ls)
			ce = ceOf(ld)
			loss = Add(ce, MulScalar(Sub(ReduceAllSum(lseS), ReduceAllSum(lseD)), invN))
			dd := Sub(Sub(sd, onehot), sd) // CE − LSE(data)
			ds := ss
			if k.l2 > 0 {
				loss = Add(loss, MulScalar(Add(ReduceAllSum(Square(lseD)), ReduceAllSum(Square(lseS))), k.l2*invN))
				dd = Add(dd, Mul(sd, MulScalar(InsertAxes(lseD, -1), 2*k.l2)))
				ds = Add(ds, Mul(ss, MulScalar(InsertAxes(lseS, -1), 2*k.l2)))
			}
			grads, _ = nt.backward(p, ac, MulScalar(Concatenate([]*Node{dd, ds}, 0), invN), true, false)
		}
	}
	outs := make([]*Node, 0, 3*np+4)
	newM, newV := make([]*Node, np), make([]*Node, np)
	for j := range np { // Adam with scaled moments, as models/adam.go
		newM[j] = Add(MulScalar(m[j], adamBeta1), grads[j])
		newV[j] = Add(MulScalar(v[j], adamBeta2), Mul(grads[j], grads[j]))
		outs = append(outs, Sub(p[j], Div(Mul(lrT, newM[j]), Add(Sqrt(newV[j]), epsT))))
	}
	outs = append(outs, newM...)
	outs = append(outs, newV...)
	outs = append(outs, loss, ce, rng)
	if xs != nil {
		outs = append(outs, xs)
	}
	outs = append(outs, extra...)
	g.Compile(outs...)
}

const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// adamScalars returns lr·lrScale(t) and epsT(t) for step t >= 1 (models/adam.go's form:
// moments scaled by 1/(1-β), algebraically the bias-corrected textbook update).
func adamScalars(lr float64, t int) (lrT, epsT float32) {
	bc1 := 1 - math.Pow(adamBeta1, float64(t))
	sq2 := math.Sqrt(1 - math.Pow(adamBeta2, float64(t)))
	sqB2 := math.Sqrt(1 - adamBeta2)
	return float32(lr * (1 - adamBeta1) * sq2 / (bc1 * sqB2)), float32(adamEps * sq2 / sqB2)
}

// Train trains one run of spec on data with Adam and returns its parameters (those of
// the last finite step if training diverged) and statistics. Divergence (a non-finite
// loss or |loss| > 1e8) stops training and is reported in Stats, not as an error;
// errors are bad arguments, an unavailable backend, a GoMLX failure or ctx's
// cancellation (then the parameters so far come back too). Runs are independent and
// deterministic given opts.Seed: call Train from several goroutines to train several
// runs (each call has its own backend and graph).
func Train(ctx context.Context, spec Spec, data Data, opts TrainOptions) (Params, Stats, error) {
	start := time.Now()
	opts.defaults()
	if err := opts.validate(); err != nil {
		return Params{}, Stats{}, err
	}
	if err := data.check(); err != nil {
		return Params{}, Stats{}, err
	}
	S, K := data.S, data.K
	if err := spec.Check(S, K); err != nil {
		return Params{}, Stats{}, err
	}
	params := opts.Init
	if params == nil {
		p, err := Init(spec, S, K, opts.Seed)
		if err != nil {
			return Params{}, Stats{}, err
		}
		params = &p
	} else if err := params.check(); err != nil || params.Spec.String() != spec.String() || params.S != S || params.K != K {
		return Params{}, Stats{}, fmt.Errorf("cnn: TrainOptions.Init does not match %s on %d×%d, K=%d (%v)", spec, S, K, K, err)
	}
	backend, err := newBackend(opts.Backend)
	if err != nil {
		return Params{}, Stats{}, err
	}
	defer func() { _ = catch(func() error { backend.Finalize(); return nil }) }()

	n, D := len(data.Y), S*S
	N := min(opts.Batch, n)
	key := trainKey{method: opts.Method, N: N, noise: opts.DataNoise, l2: opts.EnergyL2, autodiff: opts.Autodiff}
	if opts.Method == JEMSGLD {
		key.sgldSteps, key.sgldLR, key.sgldSD = opts.SGLD.Steps, opts.SGLD.LR, opts.SGLD.Std
	}
	var noise *gaussNoise
	if opts.Method.recipe() {
		key.pxW, key.ed, key.dsm, key.nce = opts.PxWeight, opts.ED, opts.DSM, opts.NCE
		if opts.Method == NCE {
			gn, err := fitGauss(data.X, n, D, opts.NCE.Inflate)
			if err != nil {
				return Params{}, Stats{}, err
			}
			noise = &gn
		}
	}
	nt := newNet(spec, S, K)
	g := NewGraph(backend, "cnn_train")
	defer func() { _ = catch(func() error { g.Finalize(); return nil }) }()
	if err := catch(func() error { buildTrain(g, nt, key, noise); return nil }); err != nil {
		return Params{}, Stats{}, fmt.Errorf("cnn: building training graph: %w", err)
	}

	sh := spec.layerShapes(S, K)
	np := len(sh) // the network's parameters; nce's c follows them in the state
	rngState, err := RNGStateFromSeed(int64(opts.Seed ^ 0x9e3779b97f4a7c15))
	if err != nil {
		return Params{}, Stats{}, fmt.Errorf("cnn: %w", err)
	}
	state := params.toTensors() // params, m, v
	var c0 float32
	if opts.Method == NCE {
		sh = append(sh, []int{})
		if c0, rngState, err = nceInit(backend, nt, noise, state, rngState, opts.NCE.Nu*N); err != nil {
			return Params{}, Stats{}, err
		}
		state = append(state, tensors.FromScalar(c0))
	}
	na := len(sh)
	for range 2 {
		for _, d := range sh {
			state = append(state, tensors.FromShape(shapes.Make(dtypes.Float32, d...)))
		}
	}
	host := rand.New(rand.NewPCG(opts.Seed, 0x636e6e2d7472616e)) // minibatches and buffer
	var buffer []float32
	restart := func(row []float32) { // a fresh chain start: uniform on [-1, 1], or informative
		for k := range row {
			row[k] = float32(2*host.Float64() - 1)
		}
	}
	if opts.Method == JEMSGLD && opts.SGLD.Informative {
		cs, err := newClassStart(data)
		if err != nil {
			return Params{}, Stats{}, fmt.Errorf("cnn: %w", err)
		}
		restart = func(row []float32) { cs.draw(host, row) }
	}
	if opts.Method == JEMSGLD {
		buffer = make([]float32, opts.SGLD.BufferSize*D)
		for i := 0; i < len(buffer); i += D {
			restart(buffer[i : i+D])
		}
	}
	perm := host.Perm(n)
	pos := 0
	xb, yb := make([]float32, N*D), make([]int32, N)
	x0, bidx := make([]float32, N*D), make([]int, N)
	st := Stats{Backend: opts.Backend}
	logZIS := math.NaN()
	for step := 1; step <= opts.Steps; step++ {
		if err := ctx.Err(); err != nil {
			st.Seconds = time.Since(start).Seconds()
			return readParams(*params, state[:np]), st, err
		}
		for i := range N {
			if pos == n {
				perm, pos = host.Perm(n), 0
			}
			j := perm[pos]
			pos++
			copy(xb[i*D:(i+1)*D], data.X[j*D:(j+1)*D])
			yb[i] = int32(data.Y[j])
		}
		lrT, epsT := adamScalars(opts.LR, step)
		inputs := make([]any, 0, 3*na+6)
		for _, t := range state {
			inputs = append(inputs, t)
		}
		inputs = append(inputs, lrT, epsT, tensors.FromFlatDataAndDimensions(slices.Clone(xb), N, D),
			tensors.FromFlatDataAndDimensions(slices.Clone(yb), N), rngState)
		if opts.Method == JEMSGLD {
			B := opts.SGLD.BufferSize
			for i := range N {
				row := x0[i*D : (i+1)*D]
				if B == 0 || host.Float64() < opts.SGLD.ReinitFreq {
					bidx[i] = -1
					restart(row)
					continue
				}
				bidx[i] = host.IntN(B)
				copy(row, buffer[bidx[i]*D:(bidx[i]+1)*D])
			}
			// A re-initialised entry goes back to a random buffer slot.
			for i := range N {
				if bidx[i] < 0 && B > 0 {
					bidx[i] = host.IntN(B)
				}
			}
			inputs = append(inputs, tensors.FromFlatDataAndDimensions(slices.Clone(x0), N, D))
		}
		var outs []*tensors.Tensor
		if err := catch(func() error { outs = g.Run(inputs...); return nil }); err != nil {
			st.Seconds = time.Since(start).Seconds()
			return readParams(*params, state[:np]), st, fmt.Errorf("cnn: training step %d: %w", step, err)
		}
		loss := tensors.MustCopyFlatData[float32](outs[3*na])[0]
		ce := tensors.MustCopyFlatData[float32](outs[3*na+1])[0]
		if math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0) || math.Abs(float64(loss)) > divergeLimit {
			st.Diverged, st.DivergedStep = true, step
			break
		}
		st.Steps = step
		st.Loss, st.CE = append(st.Loss, loss), append(st.CE, ce)
		for _, t := range state {
			_ = t.FinalizeAll()
		}
		state = outs[:3*na]
		rngState = outs[3*na+2]
		if opts.Method.recipe() {
			st.Term = append(st.Term, tensors.MustCopyFlatData[float32](outs[3*na+3])[0])
			logZIS = float64(tensors.MustCopyFlatData[float32](outs[3*na+4])[0])
		}
		if opts.Method == JEMSGLD && opts.SGLD.BufferSize > 0 {
			xs := tensors.MustCopyFlatData[float32](outs[3*na+3])
			for i := range N {
				copy(buffer[bidx[i]*D:(bidx[i]+1)*D], xs[i*D:(i+1)*D])
			}
		}
		if opts.Observe != nil && (step == opts.Steps || (opts.ObserveEvery > 0 && step%opts.ObserveEvery == 0)) {
			opts.Observe(step, readParams(*params, state[:np]))
		}
	}
	st.Seconds = time.Since(start).Seconds()
	if opts.Method.recipe() {
		st.MethodStats = recipeStats(opts.Method, st.Term)
		if opts.Method == NCE {
			st.MethodStats["log_z_learned"] = float64(tensors.MustCopyFlatData[float32](state[np])[0])
			st.MethodStats["log_z_init"] = float64(c0)
			st.MethodStats["log_z_is"] = logZIS
			st.MethodStats["nce_ridge"] = noise.ridge
		}
	}
	return readParams(*params, state[:np]), st, nil
}

// recipeStats has the recipe's term averaged over the last tenth of the steps (at least
// one; NaN if none), as "<method>_loss".
func recipeStats(m Method, term []float32) map[string]float64 {
	v := math.NaN()
	if n := len(term); n > 0 {
		k := max(1, n/10)
		v = 0
		for _, t := range term[n-k:] {
			v += float64(t)
		}
		v /= float64(k)
	}
	return map[string]float64{string(m) + "_loss": v}
}

// nceInit runs buildNCEInit once: c's start at the parameters (the first tensors of
// state) from n noise draws, and the rng state after them.
func nceInit(backend backends.Backend, nt *net, noise *gaussNoise, state []*tensors.Tensor, rng *tensors.Tensor, n int) (float32, *tensors.Tensor, error) {
	g := NewGraph(backend, "cnn_nce_init")
	defer func() { _ = catch(func() error { g.Finalize(); return nil }) }()
	np := len(nt.sp.layerShapes(nt.S, nt.K))
	var outs []*tensors.Tensor
	err := catch(func() error {
		buildNCEInit(g, nt, noise, n)
		in := make([]any, 0, np+1)
		for _, t := range state[:np] {
			in = append(in, t)
		}
		outs = g.Run(append(in, rng)...)
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("cnn: nce's log Z start: %w", err)
	}
	c0 := tensors.MustCopyFlatData[float32](outs[0])[0]
	if math.IsNaN(float64(c0)) || math.IsInf(float64(c0), 0) {
		return 0, nil, fmt.Errorf("cnn: nce's log Z start is %v: the initial model's energies overflow under the noise", c0)
	}
	return c0, outs[1], nil
}

func readParams(like Params, ts []*tensors.Tensor) Params {
	out := Params{Spec: like.Spec, S: like.S, K: like.K, Tensors: make([][]float32, len(ts))}
	for i, t := range ts {
		out.Tensors[i] = tensors.MustCopyFlatData[float32](t)
	}
	return out
}

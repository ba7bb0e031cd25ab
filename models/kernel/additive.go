package kernel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The block-additive model of the block tasks (issue 22, item 2; prob.BlocksSpec): on
// x ∈ ℝ^{2B}, x = (x_0, …, x_{B−1}) with x_b ∈ ℝ², the logits are
//
//	f(x)[y] = Σ_b g_b(x_b)[y],
//
// one tanh MLP g_b: 2-H…-K per block (the 2-D kernels' MLP, mlp2d). exp f factorises
// over the blocks given y, so the model's normaliser on the box is a product of 2-D
// integrals: Z = Σ_y Π_b Z_{b,y}, Z_{b,y} = ∫ exp g_b(x_b)[y] dx_b.
//
// TrainAdditive trains it with the 2-D kernels' three losses, as Train2D:
//
//   - Baseline (neither Exact nor Objective): cross-entropy of softmax_y f(x) on
//     minibatches of the run's draws.
//   - Exact JEM (Spec2D.Exact): CE + PxWeight·(log Z − mean LSE_y f(x) over the data),
//     each Z_{b,y} the Riemann sum of exp g_b[y] over block b's own training grid
//     (TrainGrid per side, shifted per step and block by a uniform offset with
//     ShiftGrid). Its gradient is exact for that Z: ∂log Z/∂θ_b = Σ_y w_y
//     E_{q_b(·|y)}[∇θ_b g_b[y]], w_y = Π_b Z_{b,y}/Z and q_b(·|y) ∝ exp g_b[y] over the
//     block's grid nodes.
//   - A method's Objective (Spec2D.Objective) on lanes of all 2B coordinates (begin,
//     energy; objLoss in objective.go).
//
// With one block every loss is Train2D's computation step for step, with the same
// random streams: TrainAdditive of one block returns Train2D's parameters bit for bit
// (TestAdditiveOneBlockIsTrain2D), so a block task of one block trains exactly as its
// 2-D task.
//
// Parameters: block b's MLP in InitMLP2D's canonical layout, the blocks concatenated
// (NumParamsAdditive); the draws X are N×2B row-major (draw i's block b at
// X[i·2B+2b], X[i·2B+2b+1]).

// SpecAdditive is the additive model, loss and schedule of a TrainAdditive call: a
// Spec2D (the per-block MLP, K, the baseline, exact JEM or an Objective) and the number
// of blocks.
type SpecAdditive struct {
	Spec2D
	Blocks int
}

// MaxAdditiveBlocks is the most blocks of an additive model.
const MaxAdditiveBlocks = 32

// Validate reports the first problem with the spec, or nil.
func (s SpecAdditive) Validate() error {
	if s.Blocks < 1 || s.Blocks > MaxAdditiveBlocks {
		return fmt.Errorf("kernel: additive model needs 1 to %d blocks, got %d", MaxAdditiveBlocks, s.Blocks)
	}
	return s.Spec2D.validate(2 * s.Blocks)
}

// NumParamsAdditive is the number of parameters of the additive model: blocks MLPs
// 2-hidden…-K.
func NumParamsAdditive(hidden []int, k, blocks int) int { return blocks * NumParams2D(hidden, k) }

// InitAdditive draws a run's initial parameters: block 0 is InitMLP2D(seed) (a block
// task of one block starts where its 2-D task does), block b ≥ 1 InitMLP2D of
// prob.Seed(seed, b).
func InitAdditive(seed uint64, hidden []int, k, blocks int) []float32 {
	out := InitMLP2D(seed, hidden, k)
	for b := 1; b < blocks; b++ {
		out = append(out, InitMLP2D(prob.Seed(seed, uint64(b)), hidden, k)...)
	}
	return out
}

// RunAdditive is one run of a TrainAdditive call.
type RunAdditive struct {
	Seed  uint64    // every random draw of the run (minibatch order, grid shifts, an objective's Rng and Noise)
	Theta []float32 // initial parameters (InitAdditive)
	LR    float32   // Adam learning rate
	X     []float32 // the run's N draws, N×2B row-major
	Y     []int32
	// Observe, if set, is called with the step and the current parameters (valid during
	// the call only) every ObserveEvery steps, and not after a divergence.
	Observe func(step int, theta []float32)
}

// AdditiveCellLogits is the additive model's cell logits per block: block b's
// CellLogits on the G×G grid over the box, [G²][K] each.
func AdditiveCellLogits(hidden []int, k, blocks int, theta []float32, G int, box float64) ([][]float64, error) {
	return perBlock(hidden, k, blocks, theta, G, box, CellLogits)
}

// AdditiveCellMeanLogits is the additive model's mean logits over the cells per block:
// block b's CellMeanLogits, [G²][K] each.
func AdditiveCellMeanLogits(hidden []int, k, blocks int, theta []float32, G int, box float64) ([][]float64, error) {
	return perBlock(hidden, k, blocks, theta, G, box, CellMeanLogits)
}

// perBlock applies a 2-D model's grid function to every block's MLP.
func perBlock(hidden []int, k, blocks int, theta []float32, G int, box float64,
	fn func(hidden []int, k int, theta []float32, G int, box float64) ([]float64, error)) ([][]float64, error) {
	np := NumParams2D(hidden, k)
	if len(theta) != blocks*np {
		return nil, fmt.Errorf("kernel: additive model: len(theta) = %d, want %d blocks × %d", len(theta), blocks, np)
	}
	out := make([][]float64, blocks)
	for b := range blocks {
		l, err := fn(hidden, k, theta[b*np:(b+1)*np], G, box)
		if err != nil {
			return nil, err
		}
		out[b] = l
	}
	return out, nil
}

// TrainAdditive trains every run for spec.Steps steps and returns one Result2D per run
// (an objective's Buffer [n][2B]), in order, the runs spread over GOMAXPROCS goroutines
// as Train2D's.
func TrainAdditive(ctx context.Context, spec SpecAdditive, runs []RunAdditive) ([]Result2D, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkRunsD(runs, NumParamsAdditive(spec.Hidden, spec.K, spec.Blocks), 2*spec.Blocks, spec.K); err != nil {
		return nil, err
	}
	return trainRuns(ctx, len(runs), func() *trainerAdd { return newTrainerAdd(spec) },
		func(t *trainerAdd, i int) Result2D { return t.train(&runs[i]) }, setCPU2D)
}

// checkRunsD checks runs of np parameters and draws X of d coordinates each.
func checkRunsD(runs []RunAdditive, np, d, k int) error {
	for i, r := range runs {
		if len(r.Theta) != np {
			return fmt.Errorf("kernel: run %d: len(Theta)=%d, want %d", i, len(r.Theta), np)
		}
		if len(r.Y) == 0 || len(r.X) != d*len(r.Y) {
			return fmt.Errorf("kernel: run %d: needs draws (len X = %d, want %d × %d draws)", i, len(r.X), d, len(r.Y))
		}
		for j, y := range r.Y {
			if y < 0 || int(y) >= k {
				return fmt.Errorf("kernel: run %d: draw %d has class %d, want [0, %d)", i, j, y, k)
			}
		}
	}
	return nil
}

// trainerAdd is one goroutine's scratch space for the additive model, and for the joint
// model (TrainJoint): one net on all d = 2nb coordinates. Net i reads the coordinates
// [i·win, (i+1)·win) of a point: win = 2 (one net per block) or d (the joint net).
type trainerAdd struct {
	spec     Spec2D
	nb       int // blocks: d = 2nb coordinates a point
	win      int // coordinates a net reads
	B, P, K  int
	gt       int
	np, npad int // parameters of one block, and padded to a multiple of VW
	nets     []lanesNet
	exactZ   zExact      // exact JEM with the model's own exact log Z (the MFA model), else nil
	x        [][]float32 // per net [win][P]: data, then an objective's lanes or grid nodes
	F, s     []float32   // [K][P]: Σ_b g_b, its softmax
	delta    []float32   // [K][P]: dL/dF
	deltaB   []float32   // [K][P]: exact JEM: block b's dL/dg_b (data lanes dL/dF, grid lanes its own)
	tmp      [][]float32 // exact JEM: per block [K][P] exp(g_b − max) on its grid lanes
	zsc      []float32   // exact JEM: per block and class, the scale of its grid lanes' log Z gradient
	lzb, ly  []float64   // exact JEM: log Z_{b,y}; Σ_b log Z_{b,y}
	yd       []int32
	theta    []float32 // [nb][npad]
	m, v, g  []float32
	snap     []float32
	obs      []float32 // the unpadded parameters for Observe and the result
	order    []int32
	pos      int
	dataRng  *rand.Rand
	bufRng   *rand.Rand
	noiseRng *rand.Rand
	lseD     float32
	lseNeg   float32

	X      []float32   // all lanes [d][P]: the nets' x are its windows
	obj    Objective   // Spec2D.Objective's
	st     Step        // what the objective sees
	data   [][]float32 // the run's draws by coordinate, for st.Data
	lse    []float32   // every lane's LSE, for the objective
	coef   []float32   // the objective's dL/dℓ per lane
	xm, xv []float32   // Adam's moments of the objective's parameters
}

func newTrainerAdd(spec SpecAdditive) *trainerAdd {
	return newTrainerD(spec.Spec2D, spec.Blocks, 2, layers2D(spec.Hidden, spec.K))
}

// lanesNet is a model the D-coordinate trainer runs on lanes [win][P]: the tanh MLP
// (mlp2d) or the MFA model (mfaNet).
type lanesNet interface {
	// forward computes the logits [K][P] (logits()) of the points x [win][P].
	forward(theta, x []float32, P int)
	// backward back-propagates dL/df [K][P] from the last forward into the parameter
	// gradient (cleared first) if param, and into dx [win][P] if dx != nil.
	backward(theta, delta []float32, P int, param bool, dx []float32)
	logits() []float32
	setGrad(g []float32)
	padded() int // parameters, padded to a multiple of VW
}

// zExact is a model whose log Z is exact (the MFA model): exact JEM trains it with it.
type zExact interface {
	// logZ returns log Z at theta and, when g is not nil, adds w·∂log Z/∂θ to g.
	logZ(theta, g []float32, w float32) float64
}

func (n *mlp2d) logits() []float32   { return n.f }
func (n *mlp2d) setGrad(g []float32) { n.g = g }
func (n *mlp2d) padded() int         { return n.np }

// newTrainerD is the trainer of nets of layers ls (input win coordinates) over points
// of 2nb coordinates: nb nets of win = 2 (additive) or one of win = 2nb (joint).
func newTrainerD(spec Spec2D, nb, win int, ls []dims) *trainerAdd {
	np := 0
	for _, l := range ls {
		np += l.in*l.out + l.out
	}
	return newTrainerNets(spec, nb, win, np, func(P int) lanesNet { return newMLP(ls, P) })
}

// newTrainerNets is the trainer of 2nb/win nets (np parameters each, made by newNet
// for P lanes) over points of 2nb coordinates, net i reading coordinates
// [i·win, (i+1)·win).
func newTrainerNets(spec Spec2D, nb, win, np int, newNet func(P int) lanesNet) *trainerAdd {
	B, K := spec.Batch, spec.K
	nnets := 2 * nb / win
	t := &trainerAdd{spec: spec, nb: nb, win: win, B: B, K: K, np: np}
	exactZ := false
	if spec.Objective == nil && spec.Exact {
		if z, ok := newNet(VW).(zExact); ok {
			exactZ = z != nil
		}
	}
	switch {
	case spec.Objective != nil:
		t.obj = spec.Objective()
		t.P = t.obj.Lanes(B, 2*nb)
		t.coef, t.lse = make([]float32, t.P), make([]float32, t.P)
		n := t.obj.Params()
		t.st.Extra, t.st.ExtraGrad, t.xm, t.xv = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	case spec.Exact && !exactZ:
		t.gt = spec.trainGrid()
		t.P = B + t.gt*t.gt
		t.deltaB = make([]float32, K*t.P)
		t.tmp = make([][]float32, nnets)
		for b := range t.tmp {
			t.tmp[b] = make([]float32, K*t.P)
		}
	default:
		t.P = B
	}
	t.nets = make([]lanesNet, nnets)
	t.x = make([][]float32, nnets)
	t.X = make([]float32, 2*nb*t.P)
	for b := range nnets {
		t.nets[b] = newNet(t.P)
		t.x[b] = t.X[b*win*t.P : (b+1)*win*t.P]
	}
	if exactZ {
		t.exactZ = t.nets[0].(zExact)
	}
	t.npad = t.nets[0].padded()
	n := nnets * t.npad
	t.theta, t.m, t.v, t.g, t.snap = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, 3*n)
	for b, net := range t.nets { // each block's gradient is its slice of the run's
		net.setGrad(t.g[b*t.npad : (b+1)*t.npad])
	}
	t.obs = make([]float32, nnets*t.np)
	t.F, t.s, t.delta = make([]float32, K*t.P), make([]float32, K*t.P), make([]float32, K*t.P)
	t.yd = make([]int32, B)
	return t
}

// th is block b's parameters (padded).
func (t *trainerAdd) th(b int) []float32 { return t.theta[b*t.npad : (b+1)*t.npad] }

// params copies the unpadded parameters into t.obs.
func (t *trainerAdd) params() []float32 {
	for b := range t.nets {
		copy(t.obs[b*t.np:(b+1)*t.np], t.theta[b*t.npad:])
	}
	return t.obs
}

// batch fills the data lanes of every block and t.yd with the next minibatch (Train2D's
// order: reshuffled every epoch, B at a time across epoch boundaries).
func (t *trainerAdd) batch(r *RunAdditive) {
	B, P, d := t.B, t.P, 2*t.nb
	n := len(r.Y)
	for p := range B {
		if t.pos == n {
			t.pos = 0
			t.dataRng.Shuffle(n, func(i, j int) { t.order[i], t.order[j] = t.order[j], t.order[i] })
		}
		j := int(t.order[t.pos])
		t.pos++
		for b, x := range t.x {
			for c := range t.win {
				x[c*P+p] = r.X[j*d+b*t.win+c]
			}
		}
		t.yd[p] = r.Y[j]
	}
}

// sumLogits sets t.F [K][P] = Σ_b g_b over the first P lanes of the nets' last forward.
func (t *trainerAdd) sumLogits(P int) {
	K := t.K
	F := t.F[:K*P]
	copy(F, t.nets[0].logits()[:K*P])
	for b := 1; b < len(t.nets); b++ {
		vAdd(F, F, t.nets[b].logits()[:K*P])
	}
}

// SGLDSteps runs o.Steps SGLD steps x += LR·dx + Std·ε (clamped to [−box, box] with
// o.Clamp) on the chains x in place, grad() setting dx = ∇x LSE_y f at x before each
// step, the noise ε (scratch of len(x)) from rng: the sampler of sgld's objective
// (methods/sgld), in any number of coordinates.
func SGLDSteps(o SGLDOptions, box float32, x, dx, noise []float32, rng *rand.Rand, grad func()) {
	for range o.Steps {
		grad()
		for i := range noise {
			noise[i] = float32(rng.NormFloat64())
		}
		vScaleAdd(x, dx, o.LR, x)
		vScaleAdd(x, noise, o.Std, x)
		if o.Clamp {
			for i, v := range x {
				x[i] = min(box, max(-box, v))
			}
		}
	}
}

// gridNodes writes every block's exact-JEM training grid (shifted by its own uniform
// offset per step if ShiftGrid) into its lanes after the data.
func (t *trainerAdd) gridNodes() {
	B, P, G := t.B, t.P, t.gt
	box := float64(t.spec.Box)
	h := 2 * box / float64(G)
	for _, x := range t.x {
		u0, u1 := 0.5, 0.5
		if t.spec.ShiftGrid {
			u0, u1 = t.bufRng.Float64(), t.bufRng.Float64()
		}
		for i := range G {
			c0 := float32(-box + (float64(i)+u0)*h)
			for j := range G {
				c := B + i*G + j
				x[c] = c0
				x[P+c] = float32(-box + (float64(j)+u1)*h)
			}
		}
	}
}

// lossGrad computes the loss and t.delta = dL/dF on the data lanes after the forward
// passes, exactly as Train2D's lossGrad: the baseline's cross-entropy, or exact JEM's
// data terms plus PxWeight·log Z (logZ), whose gradient on each block's grid lanes
// backward applies.
func (t *trainerAdd) lossGrad() float32 {
	B, P, K := t.B, t.P, t.K
	w := t.spec.PxWeight
	f, s := t.F[:K*P], t.s[:K*P]
	invB := 1 / float32(B)
	var loss, sumD float32
	vSoftmax(s, f, K, P)
	if t.spec.Exact {
		loss, sumD = jemDataGrad(f, s, t.delta, t.yd, B, P, K, invB, w)
		if t.exactZ == nil {
			loss += w * float32(t.logZ())
		} else {
			loss += w * float32(t.exactZ.logZ(t.th(0), nil, 0))
		}
	} else {
		loss, sumD = ceGrad(f, s, t.delta, t.yd, B, P, K, invB)
	}
	t.lseD = sumD * invB
	t.lseNeg = 0
	return loss
}

// logZ computes, for exact JEM, each block's exp(g_b − m_b) on its grid lanes (t.tmp),
// the scales of the log Z gradient per block and class (into t.zsc) and returns log Z
// on the training grids: log Σ_y Π_b Z_{b,y}, Z_{b,y} = h²·Σ_c exp g_b(c)[y]. With one
// block it is Train2D's computation exactly.
func (t *trainerAdd) logZ() float64 {
	B, P, K := t.B, t.P, t.K
	w := t.spec.PxWeight
	h := 2 * float64(t.spec.Box) / float64(t.gt)
	if len(t.zsc) != t.nb*K {
		t.zsc = make([]float32, t.nb*K)
		t.lzb = make([]float64, t.nb*K)
		t.ly = make([]float64, K)
	}
	var logZ1, z1 float64
	for b, net := range t.nets {
		f := net.logits()[:K*P]
		mx := f[B]
		for y := range K {
			for _, v := range f[y*P+B : (y+1)*P] {
				mx = max(mx, v)
			}
		}
		var z float64
		for y := range K {
			e := t.tmp[b][y*P+B : (y+1)*P]
			for i, v := range f[y*P+B : (y+1)*P] {
				e[i] = v - mx
			}
			vExp(e, e)
			var zs float32
			for _, v := range e {
				zs += v
			}
			z += float64(zs)
			t.lzb[b*K+y] = float64(mx) + math.Log(float64(zs)) + math.Log(h*h)
			t.zsc[b*K+y] = zs // replaced by the scale below
		}
		logZ1, z1 = float64(mx)+math.Log(z)+math.Log(h*h), z
	}
	if t.nb == 1 { // Train2D's: dL/dg = w·exp(g − mx)/z over all the grid's cells and classes
		sc := w / float32(z1)
		for y := range K {
			t.zsc[y] = sc
		}
		return logZ1
	}
	for y := range K {
		s := 0.0
		for b := range t.nb {
			s += t.lzb[b*K+y]
		}
		t.ly[y] = s
	}
	logZ := prob.LogSumExp(t.ly)
	for b := range t.nb {
		for y := range K {
			// w·w_y/zs_{b,y}, w_y = Π_b Z_{b,y}/Z: block b's share of class y's gradient
			t.zsc[b*K+y] = float32(float64(w) * math.Exp(t.ly[y]-logZ) / float64(t.zsc[b*K+y]))
		}
	}
	return logZ
}

// backward accumulates every block's parameter gradient from t.delta (and, for exact
// JEM, its grid lanes' log Z term).
func (t *trainerAdd) backward() {
	B, P, K := t.B, t.P, t.K
	for b, net := range t.nets {
		d := t.delta
		if t.obj == nil && t.spec.Exact && t.exactZ == nil {
			d = t.deltaB
			for y := range K {
				copy(d[y*P:y*P+B], t.delta[y*P:y*P+B])
				sc := t.zsc[b*K+y]
				e, dd := t.tmp[b][y*P+B:(y+1)*P], d[y*P+B:(y+1)*P]
				for i := range dd {
					dd[i] = e[i] * sc
				}
			}
		}
		net.backward(t.th(b), d, P, true, nil)
	}
	if t.exactZ != nil { // after backward cleared and filled the gradient
		t.exactZ.logZ(t.th(0), t.g[:t.npad], t.spec.PxWeight)
	}
}

// energy is the objective's view of the model (Step.LSE): e[i] = LSE_y f(x_i)[y] at n
// points x [d][n] and, when grad is not nil, grad [d][n] = ∇x LSE_y f(x_i).
func (t *trainerAdd) energy(x []float32, n int, e, grad []float32) {
	K, w := t.K, t.win
	for b, net := range t.nets {
		net.forward(t.th(b), x[b*w*n:(b+1)*w*n], n)
	}
	t.sumLogits(n)
	F := t.F[:K*n]
	if grad == nil {
		vSoftmaxLSE(nil, e[:n], F, K, n)
		return
	}
	s := t.s[:K*n]
	vSoftmaxLSE(s, e[:n], F, K, n)
	for b, net := range t.nets {
		net.backward(t.th(b), s, n, false, grad[b*w*n:(b+1)*w*n])
	}
}

// begin starts an objective's run: its view of the run (the draws by coordinate) and
// its parameters reset.
func (t *trainerAdd) begin(r *RunAdditive) {
	d, n := 2*t.nb, len(r.Y)
	if len(t.data) != d || cap(t.data[0]) < n {
		t.data = make([][]float32, d)
		for c := range t.data {
			t.data[c] = make([]float32, n)
		}
	}
	for c := range t.data {
		t.data[c] = t.data[c][:n]
		for i := range n {
			t.data[c][i] = r.X[i*d+c]
		}
	}
	t.st = Step{B: t.B, P: t.P, Dim: d, Box: t.spec.Box, X: t.X, Y: t.yd, Rng: t.bufRng, Noise: t.noiseRng,
		Extra: t.st.Extra, ExtraGrad: t.st.ExtraGrad, LSE: t.energy, Data: t.data, DataY: r.Y}
	clear(t.st.Extra)
	clear(t.xm)
	clear(t.xv)
	t.obj.Begin(&t.st)
}

// train runs one run to the end.
func (t *trainerAdd) train(r *RunAdditive) Result2D {
	spec := t.spec
	n := len(t.theta)
	clear(t.theta)
	clear(t.m)
	clear(t.v)
	for b := range t.nets {
		copy(t.theta[b*t.npad:b*t.npad+t.np], r.Theta[b*t.np:(b+1)*t.np])
	}
	t.dataRng = prob.NewRand(prob.Seed(r.Seed, tagData))
	t.bufRng = prob.NewRand(prob.Seed(r.Seed, tagBuf))
	t.noiseRng = prob.NewRand(prob.Seed(r.Seed, tagNoise))
	ny := len(r.Y)
	if cap(t.order) < ny {
		t.order = make([]int32, ny)
	}
	t.order = t.order[:ny]
	for i := range t.order {
		t.order[i] = int32(i)
	}
	t.pos = ny // shuffle before the first batch
	if t.obj != nil {
		t.begin(r)
	}
	res := Result2D{}
	maxE := spec.maxEnergy()
	for step := 1; step <= spec.Steps; step++ {
		t.batch(r)
		switch {
		case t.obj != nil:
			t.st.Step = step
			t.obj.Fill(&t.st)
		case spec.Exact && t.exactZ == nil:
			t.gridNodes()
		}
		for b, net := range t.nets {
			net.forward(t.th(b), t.x[b], t.P)
		}
		t.sumLogits(t.P)
		var loss float32
		if t.obj != nil {
			loss, t.lseD, t.lseNeg = objLoss(t.obj, &t.st, t.F[:t.K*t.P], t.s[:t.K*t.P], t.delta, t.lse, t.coef, t.spec.PxWeight)
		} else {
			loss = t.lossGrad()
		}
		if !finite32(loss) || abs32(loss) > maxE || abs32(t.lseD) > maxE || abs32(t.lseNeg) > maxE {
			res.Diverged, res.DivergedStep = true, step
			break
		}
		t.backward()
		copy(t.snap[:n], t.theta)
		copy(t.snap[n:2*n], t.m)
		copy(t.snap[2*n:], t.v)
		lrScale, epsT := AdamScalars(step)
		vAdamFlat(t.theta, t.m, t.v, t.g, r.LR*float32(lrScale*spec.decayScale(step)), float32(epsT))
		if t.obj != nil {
			gAdamFlat(t.st.Extra, t.xm, t.xv, t.st.ExtraGrad, r.LR*float32(lrScale*spec.decayScale(step)), float32(epsT))
		}
		if !allFinite(t.theta) || !allFinite(t.m) || !allFinite(t.v) {
			copy(t.theta, t.snap[:n])
			copy(t.m, t.snap[n:2*n])
			copy(t.v, t.snap[2*n:])
			res.Diverged, res.DivergedStep = true, step
			break
		}
		res.Loss = loss
		if r.Observe != nil && spec.ObserveEvery > 0 && step%spec.ObserveEvery == 0 {
			r.Observe(step, t.params())
		}
	}
	res.Theta = append([]float32(nil), t.params()...)
	if t.obj != nil {
		t.obj.End(&t.st, &res)
		res.Extra = append([]float32(nil), t.st.Extra...)
	}
	return res
}

// AdditivePointLSE is LSE_y Σ_b g_b(x_b)[y] of the additive model at n points x
// [n][2·blocks] (float64 out; the model in float32 as trained).
func AdditivePointLSE(hidden []int, k, blocks int, theta []float32, x []float64, n int) ([]float64, error) {
	l, err := AdditivePointLogits(hidden, k, blocks, theta, x, n)
	if err != nil {
		return nil, err
	}
	return RowLSE(l, k), nil
}

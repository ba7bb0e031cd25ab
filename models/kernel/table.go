package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Adam's constants (models/adam.go).
const (
	beta1   = 0.9
	beta2   = 0.999
	adamEps = 1e-8
)

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// AdamScalars returns lrScale(t) and epsT(t) of the scaled-moment Adam for step t >= 1
// (models/adam.go): theta -= lr·lrScale·m' / (sqrt(v') + epsT).
func AdamScalars(t int) (lrScale, epsT float64) {
	bc1 := 1 - math.Pow(beta1, float64(t))
	sq2 := math.Sqrt(1 - math.Pow(beta2, float64(t)))
	sqB2 := math.Sqrt(1 - beta2)
	return (1 - beta1) * sq2 / (bc1 * sqB2), adamEps * sq2 / sqB2
}

// Spec is the model and schedule shared by the runs of one Train call: a table of
// X·K cells, x encoded as a scalar or one-hot, tanh hidden layers of the given widths
// (none: the linear model), Steps Adam steps, a divergence check every CheckEvery steps.
type Spec struct {
	X, K       int
	OneHot     bool
	Hidden     []int
	Steps      int
	CheckEvery int
}

// Run is one run of a Train call.
type Run struct {
	Theta    []float32        // initial parameters, canonical layout (per layer W row-major [in][out], then b)
	LR       float32          // Adam learning rate
	PxWeight float32          // 0 = cross-entropy, 1 = JEM joint NLL, w = CE + w·JEM term
	Cells    []float32        // normalised cell weights [X·K]: full-batch training and the final loss
	Next     func() []float32 // minibatch: the next step's normalised cell weights; nil = full batch on Cells
	PCD      *PCD             // the log-Z gradient's sampler (pcd.go); nil = exact
}

// Result is a trained run.
type Result struct {
	Theta     []float32 // final parameters (the last finite state checked if Diverged)
	Logits    []float32 // f(x)[y], row-major [X][K]
	Loss      float32   // loss on Cells at Theta
	Diverged  bool      // the parameters or Adam moments went non-finite
	Buffer    []int32   // PCD runs: the final replay buffer (pcd) or the last step's negatives (pcd-exact)
	AvgLogits []float32 // PCD runs with AverageLast > 0: f(x)[y] at the averaged parameters, row-major [X][K] (nil if the run diverged)
}

type dims struct{ in, out int }

func (s Spec) layers() []dims {
	in := 1
	if s.OneHot {
		in = s.X
	}
	var ls []dims
	for _, h := range s.Hidden {
		ls = append(ls, dims{in, h})
		in = h
	}
	return append(ls, dims{in, s.K})
}

// NumParams is the number of scalar parameters per run.
func (s Spec) NumParams() int {
	n := 0
	for _, l := range s.layers() {
		n += l.in*l.out + l.out
	}
	return n
}

// Covers reports whether the table kernel trains this model: at most 4 hidden layers of
// width at most 256, at most 4096 cells, at most 65536 parameters per run.
func Covers(X, K int, oneHot bool, hidden []int) bool {
	if len(hidden) > 4 || X*K > 4096 || X < 1 || K < 2 {
		return false
	}
	for _, h := range hidden {
		if h < 1 || h > 256 {
			return false
		}
	}
	return Spec{X: X, K: K, OneHot: oneHot, Hidden: hidden}.NumParams() <= 1<<16
}

// lanesFor picks the runs per block: a multiple of VW, at most 256, small enough that a
// parameter-sized array of the block stays within 16 KiB when that allows 16 lanes, and
// no larger than the (rounded-up) number of runs.
func lanesFor(P, n int) int {
	L := VW
	for L < 256 && 2*L*P <= 4096 {
		L *= 2
	}
	need := (n + VW - 1) / VW * VW
	return max(VW, min(L, need))
}

// groupPCD is the group (after the three px modes) of the runs with a PCD sampler:
// they are trained in blocks of their own, in mix mode.
const groupPCD = 3

// mode specialises a block on its px weights.
type mode int

const (
	modeCE mode = iota
	modeJEM
	modeMix
)

func modeOf(w float32) mode {
	switch w {
	case 0:
		return modeCE
	case 1:
		return modeJEM
	}
	return modeMix
}

// Train trains every run for spec.Steps Adam steps with the fused table kernel and
// returns one Result per run, in order. Runs are grouped by px mode (0, 1, other; runs
// with a PCD sampler form a fourth group, see pcd.go) and trained in blocks of L lanes;
// a run's result depends only on its own Run (every operation is per lane), never on
// its block-mates, and not on the build (portable or vector). The context is checked
// between blocks.
func Train(ctx context.Context, spec Spec, runs []Run) ([]Result, error) {
	if spec.X < 1 || spec.K < 2 || spec.Steps < 0 {
		return nil, fmt.Errorf("kernel: bad spec %+v", spec)
	}
	if !Covers(spec.X, spec.K, spec.OneHot, spec.Hidden) {
		return nil, errors.New("kernel: model not covered by the table kernel")
	}
	P, XK := spec.NumParams(), spec.X*spec.K
	for i, r := range runs {
		if len(r.Theta) != P || len(r.Cells) != XK {
			return nil, fmt.Errorf("kernel: run %d: len(Theta)=%d (want %d), len(Cells)=%d (want %d)", i, len(r.Theta), P, len(r.Cells), XK)
		}
	}
	if err := validatePCD(runs); err != nil {
		return nil, err
	}
	out := make([]Result, len(runs))
	var groups [4][]int
	for i, r := range runs {
		m := int(modeOf(r.PxWeight))
		if r.PCD != nil {
			m = groupPCD
		}
		groups[m] = append(groups[m], i)
	}
	for m, idx := range groups {
		if len(idx) == 0 {
			continue
		}
		var b *block
		if m == groupPCD {
			b = newBlock(spec, lanesFor(P, len(idx)), modeMix)
			b.pcd = newPCDBlock(spec.X, b.L)
		} else {
			b = newBlock(spec, lanesFor(P, len(idx)), mode(m))
		}
		for lo := 0; lo < len(idx); lo += b.L {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			part := idx[lo:min(lo+b.L, len(idx))]
			b.load(runs, part)
			b.train()
			b.store(out, part)
		}
	}
	return out, nil
}

// block is the state of L runs, every array lane-major ([j*L + l]).
type block struct {
	spec   Spec
	ls     []dims
	off    []int // parameter offset (in vectors) of each layer's W; b follows at off+in*out
	L, P   int
	X, K   int
	mode   mode
	mini   bool
	next   []func() []float32
	n      int // real lanes
	theta  []float32
	m, v   []float32
	g      []float32
	snap   []float32 // theta, m, v at the last check
	div    []bool
	lr     []float32
	lrT    []float32
	w      []float32 // px weight per lane
	c      []float32 // cell weights [XK]
	rw     []float32 // row weights [X]: ĉ(x) (CE) or (1-w)ĉ(x) (mix)
	acts   [][]float32
	f      []float32 // logits [XK]
	s, q   []float32 // local and global softmax [XK]
	gf     []float32 // dL/df [XK]
	d1, d2 []float32 // deltas [X·max width]
	cells  []float32 // eval: per-lane cells, lane-major
	pcd    *pcdBlock // the samplers of a PCD block (pcd.go); nil otherwise
}

func newBlock(spec Spec, L int, m mode) *block {
	ls := spec.layers()
	b := &block{spec: spec, ls: ls, L: L, X: spec.X, K: spec.K, mode: m}
	P, wmax := 0, spec.K
	for _, l := range ls {
		b.off = append(b.off, P)
		P += l.in*l.out + l.out
		wmax = max(wmax, l.out)
	}
	b.P = P
	XK := spec.X * spec.K
	mk := func(n int) []float32 { return make([]float32, n*L) }
	b.theta, b.m, b.v, b.g, b.snap = mk(P), mk(P), mk(P), mk(P), mk(3*P)
	b.div = make([]bool, L)
	b.next = make([]func() []float32, L)
	b.lr, b.lrT, b.w = mk(1), mk(1), mk(1)
	b.c, b.rw = mk(XK), mk(spec.X)
	b.acts = make([][]float32, len(ls))
	for l := 1; l < len(ls); l++ {
		b.acts[l] = mk(spec.X * ls[l].in)
	}
	b.f, b.s, b.q, b.gf = mk(XK), mk(XK), mk(XK), mk(XK)
	b.d1, b.d2 = mk(spec.X*wmax), mk(spec.X*wmax)
	b.cells = mk(XK)
	return b
}

// load fills the block's lanes with runs[part[i]] (lane i) and pads the rest with
// inert lanes: zero parameters, learning rate 0, uniform cells, the block's px weight.
func (b *block) load(runs []Run, part []int) {
	L, P, XK := b.L, b.P, b.X*b.K
	b.n = len(part)
	clear(b.m)
	clear(b.v)
	clear(b.div)
	b.mini = false
	padW := float32(0)
	if b.mode == modeJEM {
		padW = 1
	}
	for l := range L {
		var r Run
		if l < len(part) {
			r = runs[part[l]]
		} else {
			r = Run{PxWeight: padW}
		}
		for j := range P {
			t := float32(0)
			if r.Theta != nil {
				t = r.Theta[j]
			}
			b.theta[j*L+l] = t
		}
		for j := range XK {
			c := 1 / float32(XK)
			if r.Cells != nil {
				c = r.Cells[j]
			}
			b.cells[j*L+l] = c
		}
		b.lr[l], b.w[l], b.next[l] = r.LR, r.PxWeight, r.Next
		b.mini = b.mini || r.Next != nil
	}
	copy(b.c, b.cells)
	b.rowWeights()
	if b.pcd != nil {
		b.loadPCD(runs, part)
	}
}

// rowWeights recomputes rw from the cell weights c (and w in mix mode).
func (b *block) rowWeights() {
	if b.mode == modeJEM {
		return
	}
	L, K := b.L, b.K
	for x := range b.X {
		vRowSum(b.rw[x*L:(x+1)*L], b.c[x*K*L:(x+1)*K*L], K, L)
		if b.mode == modeMix {
			rw := b.rw[x*L : (x+1)*L]
			for l := range L {
				rw[l] = (1 - b.w[l]) * rw[l]
			}
		}
	}
}

// minibatch loads the next step's cell weights of the lanes that train on minibatches.
func (b *block) minibatch() {
	L := b.L
	for l, next := range b.next {
		if next == nil {
			continue
		}
		h := next()
		for j, v := range h {
			b.c[j*L+l] = v
		}
	}
	b.rowWeights()
}

// forward computes the logits b.f from b.theta, keeping the hidden activations.
func (b *block) forward() {
	L, X := b.L, b.X
	nl := len(b.ls)
	for li, d := range b.ls {
		W := b.theta[b.off[li]*L : (b.off[li]+d.in*d.out)*L]
		bias := b.theta[(b.off[li]+d.in*d.out)*L : (b.off[li]+d.in*d.out+d.out)*L]
		var z []float32
		if li == nl-1 {
			z = b.f
		} else {
			z = b.acts[li+1]
		}
		n := d.out * L
		switch {
		case li == 0 && b.spec.OneHot: // one-hot(x)·W selects row x of W.
			for x := range X {
				vAdd(z[x*n:(x+1)*n], W[x*n:(x+1)*n], bias)
			}
		case li == 0: // scalar x: x·W[0] + b
			for x := range X {
				vScaleAdd(z[x*n:(x+1)*n], W, float32(x), bias)
			}
		default:
			vMMForward(z, b.acts[li], W, bias, X, d.in, d.out, L)
		}
		if li < nl-1 {
			vTanh(z[:X*n], z[:X*n])
		}
	}
}

// lossGrad computes b.gf = dL/df from b.f and the cell weights:
// (1-w)ĉ(x) softmax_y f(x) - ĉ + w softmax_{x,y} f.
func (b *block) lossGrad() {
	if b.pcd != nil {
		b.pcdLossGrad()
		return
	}
	L, K, XK := b.L, b.K, b.X*b.K
	if b.mode != modeCE {
		vSoftmax(b.q, b.f, XK, L)
	}
	if b.mode == modeJEM {
		vSub(b.gf, b.q, b.c)
		return
	}
	for x := range b.X {
		r := x * K * L
		vSoftmax(b.s[r:r+K*L], b.f[r:r+K*L], K, L)
		if b.mode == modeCE {
			vGradCE(b.gf[r:], b.s[r:], b.c[r:], b.rw[x*L:], K, L)
		} else {
			vGradMix(b.gf[r:], b.s[r:], b.q[r:], b.c[r:], b.rw[x*L:], b.w, K, L)
		}
	}
}

// backward back-propagates b.gf to the parameter gradients b.g.
func (b *block) backward() {
	L, X := b.L, b.X
	delta, bufs, nb := b.gf, [2][]float32{b.d1, b.d2}, 0
	for li := len(b.ls) - 1; li >= 0; li-- {
		d := b.ls[li]
		wo := b.off[li] * L
		bo := (b.off[li] + d.in*d.out) * L
		vSumX(b.g[bo:bo+d.out*L], delta, X, d.out, L, false)
		switch {
		case li == 0 && b.spec.OneHot:
			copy(b.g[wo:wo+X*d.out*L], delta[:X*d.out*L])
		case li == 0:
			vSumX(b.g[wo:wo+d.out*L], delta, X, d.out, L, true)
		default:
			vMMGradW(b.g[wo:], b.acts[li], delta, X, d.in, d.out, L)
			next := bufs[nb][:X*d.in*L]
			vMMBackTanh(next, delta, b.theta[wo:], b.acts[li], X, d.in, d.out, L)
			delta, nb = next, 1-nb
		}
	}
}

// train runs the Adam steps with the divergence guard.
func (b *block) train() {
	L := b.L
	b.checkpoint()
	for t := 1; t <= b.spec.Steps; t++ {
		if b.mini {
			b.minibatch()
		}
		b.forward()
		b.lossGrad()
		b.backward()
		lrScale, epsT := AdamScalars(t)
		ls := float32(lrScale)
		for l := range L {
			b.lrT[l] = b.lr[l] * ls
		}
		vAdam(b.theta, b.m, b.v, b.g, b.lrT, float32(epsT), L)
		if b.pcd != nil && b.pcd.avg {
			b.pcdAccumulate(t)
		}
		if t%b.spec.CheckEvery == 0 || t == b.spec.Steps {
			b.guard()
			b.checkpoint()
		}
	}
}

// checkpoint saves theta, m and v.
func (b *block) checkpoint() {
	n := b.P * b.L
	copy(b.snap[:n], b.theta)
	copy(b.snap[n:2*n], b.m)
	copy(b.snap[2*n:], b.v)
}

// guard restores every lane that went non-finite since the last checkpoint (or had
// diverged before) to its checkpoint, and flags it.
func (b *block) guard() {
	L, n := b.L, b.P*b.L
	var bad [256]bool
	for _, a := range [][]float32{b.theta, b.m, b.v} {
		for i, x := range a {
			if x-x != 0 { // NaN or ±Inf
				bad[i%L] = true
			}
		}
	}
	for l := range L {
		if !bad[l] && !b.div[l] {
			continue
		}
		b.div[l] = true
		for j := range b.P {
			i := j*L + l
			b.theta[i], b.m[i], b.v[i] = b.snap[i], b.snap[n+i], b.snap[2*n+i]
		}
	}
}

// store evaluates the real lanes (logits and loss on their Cells) into out.
func (b *block) store(out []Result, part []int) {
	L, X, K, XK := b.L, b.X, b.K, b.X*b.K
	b.forward()
	for i, k := range part {
		th := make([]float32, b.P)
		for j := range th {
			th[j] = b.theta[j*L+i]
		}
		f := make([]float32, XK)
		c := make([]float32, XK)
		for j := range f {
			f[j] = b.f[j*L+i]
			c[j] = b.cells[j*L+i]
		}
		out[k] = Result{Theta: th, Logits: f, Loss: Loss(f, c, X, K, b.w[i]), Diverged: b.div[i]}
		if b.pcd != nil {
			out[k].Buffer = b.pcdBuffer(i)
		}
	}
	if b.pcd != nil {
		b.pcdAvgLogits(out, part)
	}
}

// Loss is the per-run loss of logits f on normalised cell weights c (both [X·K]) with px
// weight w, in float32 (models.go: CE + w·JEMterm).
func Loss(f, c []float32, X, K int, w float32) float32 {
	lse := func(v []float32) float32 {
		mx := v[0]
		for _, a := range v[1:] {
			if a > mx {
				mx = a
			}
		}
		var s float32
		for _, a := range v {
			s += Exp32(a - mx)
		}
		return mx + Log32(s)
	}
	var rowLSE, cf float32
	for x := range X {
		var rw float32
		for y := range K {
			rw += c[x*K+y]
			cf += float32(c[x*K+y] * f[x*K+y])
		}
		rowLSE += float32(rw * lse(f[x*K:(x+1)*K]))
	}
	ce := rowLSE - cf
	jem := -rowLSE + lse(f)
	return ce + float32(w*jem)
}

package tre

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/nce"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Name is the method's name.
const Name = "tre"

// Options are tre's settings (grid axes tre_m, tre_noise, tre_inflate).
type Options struct {
	M       int     `opt:"tre_m" doc:"bridges between data and noise (waymarks 0..m; lanes per step = batch × (m + 1))" label:"TRE bridges m" range:"[1,32]"`
	Noise   string  `opt:"tre_noise" doc:"noise distribution, the last waymark: gaussian (mean and covariance of the run's training draws, times tre_inflate) or uniform (on the task's box)" label:"TRE noise" enum:"gaussian,uniform"`
	Inflate float64 `opt:"tre_inflate" doc:"factor on the fitted Gaussian noise's covariance (tre_noise=gaussian)" label:"TRE noise inflation" range:"(0,100]"`
}

// Defaults are tre's defaults: 4 bridges, the Gaussian of the data's mean and
// covariance (doc.go).
var Defaults = Options{M: 4, Noise: nce.NoiseGaussian, Inflate: 1}

func init() {
	methods.Register(methods.Method{Name: Name, Order: 21, Sampler: true, KernelOnly: true,
		Source:   "Rhodes, Xu & Gutmann, NeurIPS 2020",
		Doc:      "telescoping ratio estimation: logistic losses between consecutive waymarks from the data to noise, the bridges' log ratios shares of one energy's (Rhodes, Xu & Gutmann, NeurIPS 2020; adapted to a single energy model)",
		Defaults: Defaults,
		Hooks:    []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D)}})
}

// spec2D is the hook tasks/plane and tasks/blocks call: it sets tre's objective on the
// spec (the plane's MLP, or a block task's additive or joint model in D = 2B).
var spec2D = methods.Objective(func(o Options) kernel.Objective { return New(o) }, Options.check)

func (o Options) check() error {
	switch {
	case o.M < 1 || o.M > 32:
		return fmt.Errorf("tre_m must be in [1, 32], got %d", o.M)
	case o.Noise != nce.NoiseGaussian && o.Noise != nce.NoiseUniform:
		return fmt.Errorf("tre_noise: unknown noise %q (known: gaussian, uniform)", o.Noise)
	case !(o.Inflate > 0) || math.IsInf(o.Inflate, 0):
		return fmt.Errorf("tre_inflate must be a finite number > 0, got %v", o.Inflate)
	}
	return nil
}

// Alpha is waymark k's noise coefficient α_k = k/m.
func Alpha(k, m int) float64 { return float64(k) / float64(m) }

// Objective is tre as a kernel.Objective in ℝ^D (st.Dim). Lanes kB..(k+1)B hold waymark k, k = 0..m:
// waymark 0 the data, m the noise ε, and in between x_k = √(1−α_k²)·x_0 + α_k·ε with
// one ε per data point. Its 2m parameters (Extra): c, the learned log normaliser;
// θ_0..θ_{m−1}, the bridges' shares a = softmax(θ); d_0..d_{m−2}, the bridges'
// offsets (d_{m−1} = −Σ the others). Bridge k's log ratio of waymark k to k+1 is
//
//	r_k(u) = a_k·(ℓ(u) − c − log pn(u)) + d_k,
//
// so that Σ_k r_k = ℓ − c − log pn whatever the shares and offsets.
type Objective struct {
	o Options
	// Noise is the run's noise (set in the first Fill unless Fixed).
	Noise nce.Noise
	Fixed bool
	ready bool
	lpn   []float64 // log pn per lane
	lse   []float32
	first [][]float32 // nce.Draws' views of the first minibatch
	c0    float64
	a     []float64
	s, A  []float64
}

// New is tre's objective with the options o.
func New(o Options) *Objective {
	return &Objective{o: o, a: make([]float64, o.M), s: make([]float64, o.M), A: make([]float64, o.M)}
}

func (e *Objective) Lanes(B, _ int) int { return B * (1 + e.o.M) }
func (e *Objective) Params() int        { return 2 * e.o.M }
func (*Objective) GradEvals(int) int64  { return 0 }

// Begin resets the run's state: shares 1/m and offsets 0 (Extra's zeros); the noise
// is set and c initialised in the first Fill.
func (e *Objective) Begin(st *kernel.Step) {
	e.ready = false
	if len(e.lpn) != st.P {
		e.lpn, e.lse = make([]float64, st.P), make([]float32, st.P)
	}
	if len(e.first) != st.Dim {
		e.first = make([][]float32, st.Dim)
	}
}

// Fill draws each data point's noise ε and writes the waymarks. At the first step it
// sets the run's noise (as nce's) and c to the importance-sampling estimate of the
// initial model's log Z under the noise, log mean exp(ℓ(ε) − log pn(ε)).
func (e *Objective) Fill(st *kernel.Step) {
	B, P, m := st.B, st.P, e.o.M
	if !e.ready && !e.Fixed {
		e.Noise = nce.Of(e.o.Noise, e.o.Inflate, st.Box, nce.Draws(st, e.first))
	}
	Waymarks(st.X, B, m, &e.Noise, st.Rng)
	e.Noise.LogDensityLanes(st.X, P, 0, e.lpn) // 0 + log pn: log pn itself (a −0 would read +0, alike in every use)
	if !e.ready {
		e.ready = true
		st.LSE(st.X, P, e.lse, nil)
		kernel.ClearUpper()
		w := make([]float64, 0, B)
		for p := m * B; p < P; p++ {
			w = append(w, float64(e.lse[p])-e.lpn[p])
		}
		e.c0 = nce.LogMeanExp(w)
		st.Extra[0] = float32(e.c0)
	}
}

// MaxDim is the most coordinates of a point Waymarks draws its noise for on the stack.
const MaxDim = 64

// Waymarks fills lanes B..(m+1)B of x [D][(m+1)B], D = n.Dim, from the data in lanes
// 0..B: one noise draw ε_i per data point into waymark m, and
// x_k = √(1−α_k²)·x_0 + α_k·ε for 0 < k < m.
func Waymarks(x []float32, B, m int, n *nce.Noise, rng *rand.Rand) {
	P := B * (m + 1)
	D := n.Dim
	var buf [2 * 33]float64 // α_k and √(1−α_k²) for k ≤ m, on the stack for m ≤ 32
	als, ss := buf[:33], buf[33:]
	if m >= 33 {
		als, ss = make([]float64, m+1), make([]float64, m+1)
	}
	for k := 1; k <= m; k++ {
		al := Alpha(k, m)
		als[k], ss[k] = al, math.Sqrt(max(0, 1-al*al))
	}
	var ebuf [MaxDim]float64 // ε, on the stack for D ≤ MaxDim
	eps := ebuf[:]
	if D > MaxDim {
		eps = make([]float64, D)
	}
	eps = eps[:D]
	for i := range B {
		n.DrawTo(rng, eps)
		for c := range D {
			xc := x[c*P : (c+1)*P]
			x0, a := float64(xc[i]), eps[c]
			for k := 1; k <= m; k++ {
				xc[k*B+i] = float32(ss[k]*x0 + als[k]*a)
			}
		}
	}
}

// Loss is the sum over the bridges k = 0..m−1 of the logistic loss of waymark k
// (lanes kB..(k+1)B, label 1) against waymark k+1 (label 0) under r_k, each a mean
// over the B pairs.
func (e *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	kernel.ClearUpper()
	return e.loss(lse, st.B, st.Extra, coef, st.ExtraGrad)
}

// loss is Loss on the lanes' ℓ (lse) with the parameters extra: it writes dL/dℓ per
// lane into coef (zeroed) and adds dL/dExtra to grad.
func (e *Objective) loss(lse []float32, B int, extra, coef, grad []float32) float32 {
	m := e.o.M
	c := float64(extra[0])
	theta, d := extra[1:1+m], extra[1+m:2*m]
	mx := math.Inf(-1)
	for _, v := range theta {
		mx = max(mx, float64(v))
	}
	var z float64
	for k, v := range theta {
		e.a[k] = math.Exp(float64(v) - mx)
		z += e.a[k]
	}
	var dLast float64
	for _, v := range d {
		dLast -= float64(v)
	}
	inv := 1 / float64(B)
	var loss, dc float64
	var l1p nce.Log1pSum // Σ log1p(e^{−|g|}): the softplus terms beyond max(g, 0)
	for k := range m {
		e.a[k] /= z
		ak := e.a[k]
		dk := dLast
		if k < m-1 {
			dk = float64(d[k])
		}
		var sk, Ak float64
		for i := range B {
			u, v := k*B+i, (k+1)*B+i
			ru := float64(lse[u]) - c - e.lpn[u]
			rv := float64(lse[v]) - c - e.lpn[v]
			gu := ak*ru + dk
			gv := ak*rv + dk
			zu, sgu := nce.Logistic(-gu)
			zv, sgv := nce.Logistic(gv)
			loss += max(-gu, 0) + max(gv, 0)
			l1p.Add(zu)
			l1p.Add(zv)
			du := -sgu * inv
			dv := sgv * inv
			coef[u] += float32(ak * du)
			coef[v] += float32(ak * dv)
			sk += du + dv
			Ak += du*ru + dv*rv
		}
		e.s[k], e.A[k] = sk, Ak
		dc -= ak * sk
	}
	grad[0] += float32(dc)
	var mean float64
	for k := range m {
		mean += e.a[k] * e.A[k]
	}
	for k := range m {
		grad[1+k] += float32(e.a[k] * (e.A[k] - mean))
		if k < m-1 {
			grad[1+m+k] += float32(e.s[k] - e.s[m-1])
		}
	}
	return float32((loss + l1p.Sum()) * inv)
}

// End reports the learned log normaliser c as log_z_learned, its initial value as
// log_z_init, and the bridges' smallest and largest shares a_k.
func (e *Objective) End(st *kernel.Step, res *kernel.Result2D) {
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	m := e.o.M
	res.Stats["log_z_learned"] = float64(st.Extra[0])
	res.Stats["log_z_init"] = e.c0
	mx := math.Inf(-1)
	for _, v := range st.Extra[1 : 1+m] {
		mx = max(mx, float64(v))
	}
	var z float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range st.Extra[1 : 1+m] {
		z += math.Exp(float64(v) - mx)
	}
	for _, v := range st.Extra[1 : 1+m] {
		a := math.Exp(float64(v)-mx) / z
		lo, hi = min(lo, a), max(hi, a)
	}
	res.Stats["share_min"], res.Stats["share_max"] = lo, hi
}

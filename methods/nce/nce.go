package nce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// Name is the method's name.
const Name = "nce"

// Options are nce's settings (grid axes nce_nu, nce_noise, nce_inflate).
type Options struct {
	Nu      int     `opt:"nce_nu" doc:"noise draws per data point (NCE's ν; lanes per step = batch × (1 + ν))" label:"NCE ν" range:"[1,64]"`
	Noise   string  `opt:"nce_noise" doc:"noise distribution: gaussian (mean and covariance of the run's training draws, times nce_inflate; binary tables: the product-Bernoulli of their bit frequencies) or uniform (on the task's box, or the 2^D states)" label:"NCE noise" enum:"gaussian,uniform"`
	Inflate float64 `opt:"nce_inflate" doc:"factor on the fitted Gaussian noise's covariance (nce_noise=gaussian)" label:"NCE noise inflation" range:"(0,100]"`
}

// Defaults are nce's defaults: ν = 10 and the Gaussian of the data's mean and
// covariance (doc.go says where they come from).
var Defaults = Options{Nu: 10, Noise: NoiseGaussian, Inflate: 1}

func init() {
	methods.Register(methods.Method{Name: Name, Order: 20, Sampler: true, KernelOnly: true,
		Source:   "Gutmann & Hyvärinen, AISTATS 2010",
		Doc:      "noise-contrastive estimation: logistic regression of the data against ν noise draws per point, with a learned log normaliser (Gutmann & Hyvärinen, AISTATS 2010)",
		Defaults: Defaults,
		Hooks:    []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.Bits.Hook(bits), methods.Images.Hook(images)}})
}

// spec2D is the hook tasks/plane and tasks/blocks call: it sets nce's objective on the
// spec (the plane's MLP, or a block task's additive or joint model in D = 2B).
var spec2D = methods.Objective(func(o Options) kernel.Objective { return New(o) }, Options.check)

func (o Options) check() error {
	switch {
	case o.Nu < 1 || o.Nu > 64:
		return fmt.Errorf("nce_nu must be in [1, 64], got %d", o.Nu)
	case o.Noise != NoiseGaussian && o.Noise != NoiseUniform:
		return fmt.Errorf("nce_noise: unknown noise %q (known: gaussian, uniform)", o.Noise)
	case !(o.Inflate > 0) || math.IsInf(o.Inflate, 0):
		return fmt.Errorf("nce_inflate must be a finite number > 0, got %v", o.Inflate)
	}
	return nil
}

// The noise distributions.
const (
	NoiseGaussian = "gaussian"
	NoiseUniform  = "uniform"
)

// Noise is a noise distribution pn in ℝ^Dim: a Gaussian with a full covariance or the
// uniform distribution on a box [−Box, Box]^Dim. Its methods Draw, Sample and LogPdf
// are the plane's (Dim = 2); DrawTo and LogDensity take points of any Dim.
type Noise struct {
	Uniform bool
	Box     float64 // uniform: the box [−Box, Box]^Dim
	Dim     int
	Mean    []float64 // gaussian: the mean [Dim]
	Cov     []float64 // gaussian: the covariance [Dim][Dim], row-major (symmetrised, with its ridge)
	l       []float64 // the Cholesky factor of Cov, lower triangular [Dim][Dim], row-major
	logNorm float64   // log of the density's normaliser: −log pn at the mean (gaussian), log((2Box)^Dim) (uniform)
}

// UniformNoise is the uniform distribution on [−box, box]².
func UniformNoise(box float64) Noise { return UniformNoiseD(2, box) }

// UniformNoiseD is the uniform distribution on [−box, box]^dim.
func UniformNoiseD(dim int, box float64) Noise {
	v := 1.0
	for range dim {
		v *= 2 * box // dim = 2: 4·box², as 4·box·box (2box is exact)
	}
	ln := math.Log(v)
	if math.IsInf(v, 0) || v == 0 {
		ln = float64(dim) * math.Log(2*box)
	}
	return Noise{Uniform: true, Box: box, Dim: dim, logNorm: ln}
}

// GaussianNoise is N(mean, cov) on the plane (GaussianNoiseD's).
func GaussianNoise(mean [2]float64, cov [2][2]float64) Noise {
	return GaussianNoiseD(mean[:], []float64{cov[0][0], cov[0][1], cov[1][0], cov[1][1]})
}

// GaussianNoiseD is N(mean, cov) in ℝ^D, D = len(mean), cov [D][D] row-major (copied;
// its off-diagonal pairs are averaged). A covariance whose sum of diagonal and upper
// entries is not finite (a NaN or infinite entry) is replaced by the identity; one that is not positive definite gets a ridge of 1e-6
// times the sum of its diagonal's magnitudes (at least 1e-12), ×10 until it is: on the
// plane, until cov₀₀ > 0, cov₁₁ > 0 and det > 1e-12·cov₀₀·cov₁₁; in D dimensions,
// until every pivot of its Cholesky factorisation exceeds 1e-12 times its diagonal
// entry (the same condition on the plane, up to rounding).
func GaussianNoiseD(mean, cov []float64) Noise {
	D := len(mean)
	if len(cov) != D*D {
		panic(fmt.Sprintf("nce: a covariance of %d entries for a mean of %d coordinates", len(cov), D))
	}
	c := slices.Clone(cov)
	var sum float64 // D = 2: cov₀₀ + cov₁₁ + cov₀₁, the plane's test
	for i := range D {
		for j := i + 1; j < D; j++ {
			v := 0.5 * (c[i*D+j] + c[j*D+i])
			c[i*D+j], c[j*D+i] = v, v
		}
		sum += c[i*D+i]
	}
	for i := range D {
		for j := i + 1; j < D; j++ {
			sum += c[i*D+j]
		}
	}
	if math.IsNaN(sum) || math.IsInf(sum, 0) {
		clear(c)
		for i := range D {
			c[i*D+i] = 1
		}
	}
	l := make([]float64, D*D)
	var tr float64
	for i := range D {
		tr += math.Abs(c[i*D+i])
	}
	for ridge := max(1e-6*tr, 1e-12); !choleskyPD(c, l, D); ridge *= 10 {
		for i := range D {
			c[i*D+i] += ridge
		}
	}
	ln := float64(D) / 2 * math.Log(2*math.Pi) // D = 2: log 2π
	for i := range D {
		ln += math.Log(l[i*D+i])
	}
	return Noise{Dim: D, Mean: slices.Clone(mean), Cov: c, l: l, logNorm: ln}
}

// choleskyPD writes the Cholesky factor of c [D][D] into l and reports whether c is
// positive definite enough (see GaussianNoiseD); on the plane the test is the 2×2
// one, in the 2-D arithmetic.
func choleskyPD(c, l []float64, D int) bool {
	if D == 2 && !(c[0] > 0 && c[3] > 0 && c[0]*c[3]-c[1]*c[1] > 1e-12*c[0]*c[3]) {
		return false
	}
	clear(l)
	for i := range D {
		for j := 0; j <= i; j++ {
			s := c[i*D+j]
			for k := range j {
				s -= l[i*D+k] * l[j*D+k]
			}
			if j < i {
				l[i*D+j] = s / l[j*D+j]
				continue
			}
			if D != 2 && !(s > 1e-12*c[i*D+i]) {
				return false
			}
			l[i*D+i] = math.Sqrt(s)
		}
	}
	return true
}

// FitGaussian is the Gaussian of the plane's draws (x0, x1) (FitGaussianD's).
func FitGaussian(x0, x1 []float32, inflate float64) Noise {
	return FitGaussianD([][]float32{x0, x1}, inflate)
}

// FitGaussianD is the Gaussian of the draws' mean and (maximum-likelihood) covariance,
// the covariance times inflate: x[c][i] is coordinate c of draw i.
func FitGaussianD(x [][]float32, inflate float64) Noise {
	D := len(x)
	n := float64(len(x[0]))
	m := make([]float64, D)
	for c, xc := range x {
		for _, v := range xc {
			m[c] += float64(v)
		}
		m[c] /= n
	}
	cv := make([]float64, D*D)
	a := make([]float64, D)
	for i := range x[0] {
		for c := range D {
			a[c] = float64(x[c][i]) - m[c]
		}
		for j := range D {
			for k := j; k < D; k++ {
				cv[j*D+k] += a[j] * a[k]
			}
		}
	}
	s := inflate / n
	for j := range D {
		for k := j; k < D; k++ {
			cv[j*D+k] *= s
			cv[k*D+j] = cv[j*D+k]
		}
	}
	return GaussianNoiseD(m, cv)
}

// Draw is one draw of the noise on the plane.
func (n *Noise) Draw(rng *rand.Rand) (a, b float64) {
	var x [2]float64
	n.DrawTo(rng, x[:])
	return x[0], x[1]
}

// DrawTo writes one draw of the noise into x [Dim]: uniform, Dim uniforms on the box;
// gaussian, mean + L·z with z Dim standard normals drawn in order.
func (n *Noise) DrawTo(rng *rand.Rand, x []float64) {
	x = x[:n.Dim]
	if n.Uniform {
		for c := range x {
			x[c] = (2*rng.Float64() - 1) * n.Box
		}
		return
	}
	for c := range x {
		x[c] = rng.NormFloat64()
	}
	n.transform(x)
}

// transform overwrites z [Dim] with mean + L·z (from the last coordinate, each reading
// the z's before it).
func (n *Noise) transform(z []float64) {
	D := n.Dim
	for i := D - 1; i >= 0; i-- {
		v := n.Mean[i]
		for k := 0; k <= i; k++ {
			v += n.l[i*D+k] * z[k]
		}
		z[i] = v
	}
}

// Sample is the plane's Gaussian's point of the standard normal pair (z0, z1):
// mean + L·z.
func (n *Noise) Sample(z0, z1 float64) (a, b float64) {
	x := [2]float64{z0, z1}
	n.transform(x[:])
	return x[0], x[1]
}

// LogPdf is log pn(a, b) on the plane (LogDensity's).
func (n *Noise) LogPdf(a, b float64) float64 {
	x := [2]float64{a, b}
	return n.LogDensity(x[:])
}

// LogDensity is log pn(x), x [Dim], overwriting x by its whitened coordinates
// L⁻¹(x − mean) (gaussian; untouched for the uniform). The uniform's is its value on
// the box, −log((2Box)^Dim), everywhere: NCE evaluates it on the box only; TRE's
// waymarks may leave the box and use it as the noise's log density extended by its
// constant.
func (n *Noise) LogDensity(x []float64) float64 {
	if n.Uniform {
		return -n.logNorm
	}
	g := n.gauss()
	return g.Whiten(x[:n.Dim])
}

// gauss is the Gaussian noise as a prob.GaussLanes (its mean, Cholesky factor and
// normaliser).
func (n *Noise) gauss() prob.GaussLanes {
	return prob.GaussLanes{D: n.Dim, Mean: n.Mean, L: n.l, LogNorm: n.logNorm}
}

// Of is the noise of the options for a run in ℝ^D, D = len(x): the uniform on the box,
// or the Gaussian fitted to the draws x [D][n] (inflated).
func Of(kind string, inflate float64, box float32, x [][]float32) Noise {
	if kind == NoiseUniform {
		return UniformNoiseD(len(x), float64(box))
	}
	return FitGaussianD(x, inflate)
}

// Objective is nce as a kernel.Objective in ℝ^D (st.Dim), or on {0,1}^D (binary tables,
// st.Binary: bits.go): lanes 0..B the data, lanes
// B..B(1+ν) the noise (lane B + j·B + i is data point i's j-th noise draw); one
// parameter, the learned log normaliser c (Extra[0]).
type Objective struct {
	o Options
	// Noise is the run's noise distribution (set in the first Fill unless Fixed).
	Noise Noise
	// Bits is the run's noise on binary tables (Step.Binary), set alike.
	Bits BitsNoise
	// Fixed keeps Noise and Bits as set (tests); otherwise each run fits or sets its own.
	Fixed bool
	ready bool
	lpn   []float64 // log(ν pn) per lane
	lse   []float32
	pt    []float64   // one lane's point [D]
	first [][]float32 // the first minibatch by coordinate, for a run on fresh draws
	c0    float64     // the initial c
}

// New is nce's objective with the options o.
func New(o Options) *Objective { return &Objective{o: o} }

func (e *Objective) Lanes(B, _ int) int { return B * (1 + e.o.Nu) }
func (*Objective) Params() int          { return 1 }
func (*Objective) GradEvals(int) int64  { return 0 }

// Begin resets the run's state; the noise is fitted and c initialised in the first
// Fill, where the first minibatch is at hand (a run on fresh draws has no st.Data).
func (e *Objective) Begin(st *kernel.Step) {
	e.ready = false
	if len(e.lpn) != st.P {
		e.lpn, e.lse = make([]float64, st.P), make([]float32, st.P)
	}
	if len(e.pt) != st.Dim {
		e.pt, e.first = make([]float64, st.Dim), make([][]float32, st.Dim)
	}
}

// Draws are the draws a run's noise is fitted to, by coordinate: st.Data, or without
// them (a run on fresh draws) the data lanes of st's first minibatch, as views into
// first (len st.Dim).
func Draws(st *kernel.Step, first [][]float32) [][]float32 {
	if len(st.Data) == st.Dim && len(st.Data[0]) > 0 {
		return st.Data
	}
	for c := range first {
		first[c] = st.Coord(c)[:st.B]
	}
	return first
}

// Fill draws the ν·B noise lanes and their log(ν pn). At the first step it sets the
// run's noise (the Gaussian fitted to st.Data, or to the first minibatch without
// them; on binary lanes the product-Bernoulli of their bit frequencies) and initialises c to the importance-sampling estimate of the initial model's
// log Z under the noise, log mean_j exp(ℓ(y_j) − log pn(y_j)), so that Adam starts
// from a normaliser of the right size instead of 0.
func (e *Objective) Fill(st *kernel.Step) {
	B, P := st.B, st.P
	logNu := math.Log(float64(e.o.Nu))
	if st.Binary {
		e.fillBits(st, logNu)
	} else {
		e.fillContinuous(st, logNu)
	}
	if !e.ready {
		e.ready = true
		st.LSE(st.X, P, e.lse, nil)
		kernel.ClearUpper()
		w := make([]float64, 0, P-B)
		for p := B; p < P; p++ {
			w = append(w, float64(e.lse[p])-(e.lpn[p]-logNu))
		}
		e.c0 = LogMeanExp(w)
		st.Extra[0] = float32(e.c0)
	}
}

// fillContinuous is Fill's noise lanes in ℝ^D and their log(ν pn).
func (e *Objective) fillContinuous(st *kernel.Step, logNu float64) {
	B, P, D := st.B, st.P, st.Dim
	if !e.ready && !e.Fixed {
		e.Noise = Of(e.o.Noise, e.o.Inflate, st.Box, Draws(st, e.first))
	}
	x := e.pt
	for p := B; p < P; p++ {
		e.Noise.DrawTo(st.Rng, x)
		for c := range D {
			st.X[c*P+p] = float32(x[c])
		}
	}
	e.Noise.LogDensityLanes(st.X, P, logNu, e.lpn)
}

// LogDensityLanes sets lpn[p] = add + log pn(x_p) for the P points held as lanes
// (X[c·P + p]): LogDensity's values, eight points at a time in vector lanes where the
// build has them (prob.GaussLanes).
func (n *Noise) LogDensityLanes(X []float32, P int, add float64, lpn []float64) {
	if n.Uniform {
		for p := range P {
			lpn[p] = add + -n.logNorm
		}
		return
	}
	g := n.gauss()
	g.LogDensityLanes(X, P, 0, P, add, lpn)
}

// Loss is −(1/B)[Σ_i log σ(G(x_i)) + Σ_j log(1 − σ(G(y_j)))], G(u) = ℓ(u) − c −
// log(ν pn(u)): Gutmann & Hyvärinen's J_T with the sum over the ν·B noise draws
// divided by B, i.e. −mean_data log σ(G) − ν·mean_noise log(1 − σ(G)).
func (e *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	kernel.ClearUpper()
	return Loss(lse, e.lpn, float64(st.Extra[0]), st.B, coef, st.ExtraGrad)
}

// Loss is the NCE loss of the lanes' ℓ (lse), their log(ν pn) (lpn) and the log
// normaliser c, the first B lanes the data: it writes dL/dℓ per lane into coef and
// adds dL/dc to grad[0].
func Loss(lse []float32, lpn []float64, c float64, B int, coef, grad []float32) float32 {
	var loss, dc float64
	var l1p Log1pSum
	inv := 1 / float64(B)
	const chunk = 256
	var zs [chunk]float64 // each lane's e^{−|x|} of Logistic, a chunk at once (prob.ExpTo: math.Exp's bits)
	for lo := 0; lo < len(lse); lo += chunk {
		hi := min(lo+chunk, len(lse))
		for p := lo; p < hi; p++ {
			x := float64(lse[p]) - c - lpn[p] // G; the data lanes' logistic takes −G
			if p < B {
				x = -x
			}
			zs[p-lo] = -math.Abs(x)
		}
		prob.ExpTo(zs[:hi-lo], zs[:hi-lo])
		for p := lo; p < hi; p++ {
			g := float64(lse[p]) - c - lpn[p]
			z := zs[p-lo]
			var d float64
			if p < B {
				sg := logisticOf(-g, z)
				loss += max(-g, 0)
				l1p.Add(z)
				d = -sg * inv
			} else {
				sg := logisticOf(g, z)
				loss += max(g, 0)
				l1p.Add(z)
				d = sg * inv
			}
			coef[p] = float32(d)
			dc -= d
		}
	}
	grad[0] += float32(dc)
	return float32((loss + l1p.Sum()) * inv)
}

// End reports the learned log normaliser c (nce's estimate of the model's log Z on
// the noise's support) as log_z_learned, and its initial value as log_z_init.
func (e *Objective) End(st *kernel.Step, res *kernel.Result2D) {
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	res.Stats["log_z_learned"] = float64(st.Extra[0])
	res.Stats["log_z_init"] = e.c0
}

// Softplus is log(1 + eˣ), without overflow.
func Softplus(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// Sigmoid is 1/(1 + e⁻ˣ), without overflow.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	z := math.Exp(x)
	return z / (1 + z)
}

// Logistic is z = e^{−|x|} and Sigmoid(x) from it (the same bits as Sigmoid's), so
// that Softplus(x) = max(x, 0) + log1p(z) needs no second exponential.
func Logistic(x float64) (z, sg float64) {
	z = math.Exp(-math.Abs(x))
	return z, logisticOf(x, z)
}

// logisticOf is Sigmoid(x) from z = e^{−|x|}.
func logisticOf(x, z float64) float64 {
	if x >= 0 {
		return 1 / (1 + z)
	}
	return z / (1 + z)
}

// Log1pSum accumulates Σ log1p(z) for z ∈ [0, 1] as the logs of products of up to
// 512 factors 1 + z (at most 2⁵¹²): one logarithm per 512 terms instead of one each,
// within about 1e-13 of the sum of log1p's. The zero value is empty.
type Log1pSum struct {
	sum, prod float64 // prod: the current product (set at its first Add)
	n         int
}

// Add adds log1p(z), z ∈ [0, 1].
func (s *Log1pSum) Add(z float64) {
	if s.n == 0 {
		s.prod = 1 + z
	} else {
		s.prod *= 1 + z
	}
	if s.n++; s.n == 512 {
		s.sum += math.Log(s.prod)
		s.n = 0
	}
}

// Sum is the sum of the terms added.
func (s *Log1pSum) Sum() float64 {
	if s.n == 0 {
		return s.sum
	}
	return s.sum + math.Log(s.prod)
}

// LogMeanExp is log mean exp(w) (0 when no value is finite).
func LogMeanExp(w []float64) float64 {
	m := math.Inf(-1)
	for _, v := range w {
		m = max(m, v)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return 0
	}
	var s float64
	for _, v := range w {
		s += math.Exp(v - m)
	}
	return m + math.Log(s/float64(len(w)))
}

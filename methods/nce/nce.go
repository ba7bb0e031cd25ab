package nce

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Name is the method's name.
const Name = "nce"

// Options are nce's settings (grid axes nce_nu, nce_noise, nce_inflate).
type Options struct {
	Nu      int     `opt:"nce_nu" doc:"noise draws per data point (NCE's ν; lanes per step = batch × (1 + ν))" label:"NCE ν" range:"[1,64]"`
	Noise   string  `opt:"nce_noise" doc:"noise distribution: gaussian (mean and covariance of the run's training draws, times nce_inflate) or uniform (on the task's box)" label:"NCE noise" enum:"gaussian,uniform"`
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
		Trainers: map[string]any{methods.KindPlane: spec2D, "images": images}})
}

// spec2D is the hook tasks/plane calls: it sets nce's objective on the 2-D spec.
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

// Noise is a noise distribution pn on the plane: a Gaussian with a full covariance or
// the uniform distribution on a box.
type Noise struct {
	Uniform bool
	Box     float64    // uniform: the box [−Box, Box]²
	Mean    [2]float64 // gaussian
	Cov     [2][2]float64
	l       [3]float64 // the Cholesky factor of Cov: l00, l10, l11
	logNorm float64    // log of the density's normaliser: −log pn at the mean (gaussian), log(4Box²) (uniform)
}

// UniformNoise is the uniform distribution on [−box, box]².
func UniformNoise(box float64) Noise {
	return Noise{Uniform: true, Box: box, logNorm: math.Log(4 * box * box)}
}

// GaussianNoise is N(mean, cov). A covariance that is not positive definite gets a
// ridge of 1e-6 times its trace (and at least 1e-12).
func GaussianNoise(mean [2]float64, cov [2][2]float64) Noise {
	c01 := 0.5 * (cov[0][1] + cov[1][0])
	cov[0][1], cov[1][0] = c01, c01
	if math.IsNaN(cov[0][0]+cov[1][1]+c01) || math.IsInf(cov[0][0]+cov[1][1]+c01, 0) {
		cov = [2][2]float64{{1, 0}, {0, 1}}
	}
	pd := func() bool {
		return cov[0][0] > 0 && cov[1][1] > 0 && cov[0][0]*cov[1][1]-cov[0][1]*cov[0][1] > 1e-12*cov[0][0]*cov[1][1]
	}
	for ridge := max(1e-6*(math.Abs(cov[0][0])+math.Abs(cov[1][1])), 1e-12); !pd(); ridge *= 10 {
		cov[0][0] += ridge
		cov[1][1] += ridge
	}
	l00 := math.Sqrt(cov[0][0])
	l10 := cov[1][0] / l00
	l11 := math.Sqrt(cov[1][1] - l10*l10)
	return Noise{Mean: mean, Cov: cov, l: [3]float64{l00, l10, l11}, logNorm: math.Log(2*math.Pi) + math.Log(l00) + math.Log(l11)}
}

// FitGaussian is the Gaussian of the draws' mean and (maximum-likelihood) covariance,
// the covariance times inflate.
func FitGaussian(x0, x1 []float32, inflate float64) Noise {
	n := float64(len(x0))
	var m0, m1 float64
	for i := range x0 {
		m0 += float64(x0[i])
		m1 += float64(x1[i])
	}
	m0, m1 = m0/n, m1/n
	var c00, c01, c11 float64
	for i := range x0 {
		a, b := float64(x0[i])-m0, float64(x1[i])-m1
		c00 += a * a
		c01 += a * b
		c11 += b * b
	}
	s := inflate / n
	return GaussianNoise([2]float64{m0, m1}, [2][2]float64{{c00 * s, c01 * s}, {c01 * s, c11 * s}})
}

// Draw is one draw of the noise.
func (n *Noise) Draw(rng *rand.Rand) (a, b float64) {
	if n.Uniform {
		return (2*rng.Float64() - 1) * n.Box, (2*rng.Float64() - 1) * n.Box
	}
	return n.Sample(rng.NormFloat64(), rng.NormFloat64())
}

// Sample is the Gaussian's point of the standard normal pair (z0, z1): mean + L·z.
func (n *Noise) Sample(z0, z1 float64) (a, b float64) {
	return n.Mean[0] + n.l[0]*z0, n.Mean[1] + n.l[1]*z0 + n.l[2]*z1
}

// LogPdf is log pn(a, b). The uniform's is its value on the box, −log(4Box²),
// everywhere: NCE evaluates it on the box only; TRE's waymarks may leave the box and
// use it as the noise's log density extended by its constant.
func (n *Noise) LogPdf(a, b float64) float64 {
	if n.Uniform {
		return -n.logNorm
	}
	y0 := (a - n.Mean[0]) / n.l[0]
	y1 := (b - n.Mean[1] - n.l[1]*y0) / n.l[2]
	return -0.5*(y0*y0+y1*y1) - n.logNorm
}

// Of is the noise of the options for a run: the uniform on the box, or the Gaussian
// fitted to the draws x0, x1 (inflated).
func Of(kind string, inflate float64, box float32, x0, x1 []float32) Noise {
	if kind == NoiseUniform {
		return UniformNoise(float64(box))
	}
	return FitGaussian(x0, x1, inflate)
}

// Objective is nce as a kernel.Objective: lanes 0..B the data, lanes B..B(1+ν) the
// noise (lane B + j·B + i is data point i's j-th noise draw); one parameter, the
// learned log normaliser c (Extra[0]).
type Objective struct {
	o Options
	// Noise is the run's noise distribution (set in the first Fill unless Fixed).
	Noise Noise
	// Fixed keeps Noise as set (tests); otherwise each run fits or sets its own.
	Fixed bool
	ready bool
	lpn   []float64 // log(ν pn) per lane
	lse   []float32
	c0    float64 // the initial c
}

// New is nce's objective with the options o.
func New(o Options) *Objective { return &Objective{o: o} }

func (e *Objective) Lanes(B int) int   { return B * (1 + e.o.Nu) }
func (*Objective) Params() int         { return 1 }
func (*Objective) GradEvals(int) int64 { return 0 }

// Begin resets the run's state; the noise is fitted and c initialised in the first
// Fill, where the first minibatch is at hand (a run on fresh draws has no st.Data).
func (e *Objective) Begin(st *kernel.Step) {
	e.ready = false
	if len(e.lpn) != st.P {
		e.lpn, e.lse = make([]float64, st.P), make([]float32, st.P)
	}
}

// Fill draws the ν·B noise lanes and their log(ν pn). At the first step it sets the
// run's noise (the Gaussian fitted to st.Data, or to the first minibatch without
// them) and initialises c to the importance-sampling estimate of the initial model's
// log Z under the noise, log mean_j exp(ℓ(y_j) − log pn(y_j)), so that Adam starts
// from a normaliser of the right size instead of 0.
func (e *Objective) Fill(st *kernel.Step) {
	B, P := st.B, st.P
	if !e.ready && !e.Fixed {
		var x0, x1 []float32
		if len(st.Data) == 2 {
			x0, x1 = st.Data[0], st.Data[1]
		}
		if len(x0) == 0 {
			x0, x1 = st.X[:B], st.X[P:P+B]
		}
		e.Noise = Of(e.o.Noise, e.o.Inflate, st.Box, x0, x1)
	}
	logNu := math.Log(float64(e.o.Nu))
	for p := range P {
		if p >= B {
			a, b := e.Noise.Draw(st.Rng)
			st.X[p], st.X[P+p] = float32(a), float32(b)
		}
		e.lpn[p] = logNu + e.Noise.LogPdf(float64(st.X[p]), float64(st.X[P+p]))
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
	for p := range lse {
		g := float64(lse[p]) - c - lpn[p]
		var d float64
		if p < B {
			z, sg := Logistic(-g)
			loss += max(-g, 0)
			l1p.Add(z)
			d = -sg * inv
		} else {
			z, sg := Logistic(g)
			loss += max(g, 0)
			l1p.Add(z)
			d = sg * inv
		}
		coef[p] = float32(d)
		dc -= d
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
	if x >= 0 {
		return z, 1 / (1 + z)
	}
	return z, z / (1 + z)
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

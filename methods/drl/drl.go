package drl

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "drl"

// Options are DRL's settings (doc.go gives their sources).
type Options struct {
	Sigma float64 `opt:"drl_sigma" label:"DRL σ" range:"(0,inf)" doc:"drl: the noise level σ of x̃ = x + σε whose recovery likelihood q(x|x̃) ∝ exp(ℓ(x) − ‖x − x̃‖²/(2σ²)) is maximised"`
	Steps int     `opt:"drl_steps" label:"DRL steps" range:"[0,1000]" doc:"drl: Langevin steps K on q(x|x̃) from x̃ for each negative"`
	Step  float64 `opt:"drl_step" label:"DRL b²" range:"(0,2)" doc:"drl: the Langevin step as b² in s² = b²σ² (y ← y + ½s²∇log q(y|x̃) + sξ)"`
	MH    bool    `opt:"drl_mh" label:"DRL MH" doc:"drl: Metropolis-adjust each Langevin step (MALA: exact for q(x|x̃); proposals outside the box rejected)"`
}

// defaults: the paper's K = 30; σ, b² and MH are jemcheck's (doc.go).
var defaults = Options{Sigma: 0.5, Steps: 30, Step: 0.5, MH: true}

// Defaults returns DRL's default options.
func Defaults() Options { return defaults }

func init() {
	methods.Register(methods.Method{Name: Name, Order: 24,
		Doc:     "diffusion recovery likelihood at one noise level: maximise log q(x|x̃) ∝ ℓ(x) − ‖x − x̃‖²/(2σ²) for x̃ = x + σε, its negatives by Langevin on q(·|x̃) from x̃ (no time input: one σ)",
		Source:  "Gao, Song, Poole, Wu & Kingma, ICLR 2021",
		Sampler: true, KernelOnly: true, Defaults: defaults, Validate: validate,
		Hooks: []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.PlaneSampler.Hook(sampler2D)}})
}

// validate refuses options whose chains the float32 kernels cannot run: σ, the
// Langevin step s²/2 = b²σ²/2 and its noise s = √(b²σ²) must each be a nonzero float32
// (σ = 1e308 overflows; σ or b² = 1e-320 underflows to a chain without noise, which
// failed inside training with the kernel's own message).
func validate(g schemas.Grid) error {
	var o Options
	methods.Decode(g, &o)
	if err := methods.CheckFloat32("drl_sigma", o.Sigma); err != nil {
		return err
	}
	s2 := o.Step * o.Sigma * o.Sigma
	for _, v := range []float64{s2 / 2, math.Sqrt(s2)} {
		if !(v > 0) || v > math.MaxFloat32 || float32(v) == 0 {
			return fmt.Errorf("drl_sigma=%v, drl_step=%v: the Langevin step b²σ²/2 = %.3g and its noise √(b²σ²) = %.3g must each be "+
				"within the range of float32 (%.3g to %.3g), in which the kernels compute", o.Sigma, o.Step, s2/2, math.Sqrt(s2),
				math.SmallestNonzeroFloat32, math.MaxFloat32)
		}
	}
	return nil
}

// sampler2D is the sampler the 2-D evaluation reruns fresh (tasks/plane's short run):
// drl's recovery chains, K Langevin steps of s² = b²σ² on q(y|x̃) from y = x̃ = x + σε
// for training draws x, Metropolis-adjusted with drl_mh.
func sampler2D(g schemas.Grid) kernel.Chain2D {
	var o Options
	methods.Decode(g, &o)
	s2 := o.Step * o.Sigma * o.Sigma
	return kernel.Chain2D{Start: kernel.StartNoisedData, Sigma: float32(o.Sigma), Steps: o.Steps,
		Step: float32(s2 / 2), Std: float32(math.Sqrt(s2)), MH: o.MH}
}

// spec2D is the hook tasks/plane and tasks/blocks call: it sets drl's objective on the
// spec (any dimension: the objective reads D from its run's step).
var spec2D = methods.Objective(func(o Options) kernel.Objective { return NewObjective(o) }, nil)

// Objective is DRL as a kernel.Objective in D dimensions: lanes 0..B the data, B..2B
// each data point's negative, a draw of q(·|x̃) by Langevin from x̃.
type Objective struct {
	o   Options
	dim int // D of the run (Begin): len(st.X)/st.P
	// chains [D][B]: the noisy points x̃, the state y with its ∇ℓ, a proposal; e, ep [B]
	// the state's and the proposal's ℓ
	xt, y, e, g, yp, ep, gp []float32
	fwd, bwd                []float32 // MH: the forward and backward drifts' means [D][B]
	acc, tries              float64
}

// NewObjective returns DRL's objective with options o.
func NewObjective(o Options) *Objective { return &Objective{o: o} }

// Lanes is 2B: the data and one negative per data point.
func (*Objective) Lanes(B, _ int) int { return 2 * B }

// Params is 0.
func (*Objective) Params() int { return 0 }

// GradEvals is the Langevin chains' passes: K per chain, K + 1 with MH (the start's
// energy, then each proposal's).
func (d *Objective) GradEvals(B int) int64 {
	k := int64(d.o.Steps)
	if d.o.MH && k > 0 {
		k++
	}
	return k * int64(B)
}

// Begin resets the acceptance count and sizes the chains for the run's batch and
// dimension D (st.Dim, or len(st.X)/st.P when a hand-made step leaves it 0).
func (d *Objective) Begin(st *kernel.Step) {
	d.acc, d.tries = 0, 0
	d.dim = st.Dim
	if d.dim == 0 && st.P > 0 {
		d.dim = len(st.X) / st.P
	}
	if n := d.dim * st.B; len(d.xt) != n || len(d.e) != st.B {
		d.xt, d.y, d.g, d.yp, d.gp = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		d.e, d.ep = make([]float32, st.B), make([]float32, st.B)
		d.fwd, d.bwd = make([]float32, n), make([]float32, n)
	}
}

// Fill draws x̃ = x + σε (st.Rng, per data point its D coordinates in order), runs
// the Langevin chains on q(y|x̃) from y = x̃ (noise from st.Noise) and writes their
// ends into lanes B..2B.
func (d *Objective) Fill(st *kernel.Step) {
	B, P, x, D := st.B, st.P, st.X, d.dim
	sigma := float32(d.o.Sigma)
	for i := range B {
		for c := range D {
			d.xt[c*B+i] = x[c*P+i] + sigma*float32(st.Rng.NormFloat64())
		}
	}
	copy(d.y, d.xt)
	if d.o.Steps > 0 {
		if d.o.MH {
			d.mala(st)
		} else {
			d.ula(st)
		}
	}
	for c := range D {
		copy(x[c*P+B:(c+1)*P], d.y[c*B:(c+1)*B])
	}
}

// drift writes y + ½s²·∇log q(y|x̃) into out, g = ∇ℓ(y).
func (d *Objective) drift(out, y, g []float32, s2, inv2 float32) {
	for i := range y {
		out[i] = y[i] + 0.5*s2*(g[i]-(y[i]-d.xt[i])*inv2)
	}
}

// ula runs K unadjusted Langevin steps y ← y + ½s²∇log q(y|x̃) + sξ.
func (d *Objective) ula(st *kernel.Step) {
	B := st.B
	sig2 := float32(d.o.Sigma * d.o.Sigma)
	s2 := float32(d.o.Step) * sig2
	s := float32(math.Sqrt(float64(s2)))
	for range d.o.Steps {
		st.LSE(d.y, B, d.e, d.g)
		kernel.ClearUpper()
		d.drift(d.y, d.y, d.g, s2, 1/sig2)
		for i := range d.y {
			d.y[i] += s * float32(st.Noise.NormFloat64())
		}
	}
}

// logCond is log q(y_p|x̃) up to its constant: ℓ(y_p) − ‖y_p − x̃_p‖²/(2σ²), the
// squared norm summed over the D coordinates in order.
func (d *Objective) logCond(y, e []float32, p, B int, sig2 float64) float64 {
	a := float64(y[p] - d.xt[p])
	n := a * a
	for c := 1; c < d.dim; c++ {
		a = float64(y[c*B+p] - d.xt[c*B+p])
		n += a * a
	}
	return float64(e[p]) - n/(2*sig2)
}

// mala runs K Metropolis-adjusted Langevin steps, rejecting proposals outside the box.
func (d *Objective) mala(st *kernel.Step) {
	B := st.B
	sig2 := d.o.Sigma * d.o.Sigma
	s2 := d.o.Step * sig2
	s := float32(math.Sqrt(s2))
	st.LSE(d.y, B, d.e, d.g)
	fwd, bwd := d.fwd, d.bwd
	for range d.o.Steps {
		kernel.ClearUpper()
		d.drift(fwd, d.y, d.g, float32(s2), float32(1/sig2))
		for i := range d.yp {
			d.yp[i] = fwd[i] + s*float32(st.Noise.NormFloat64())
		}
		st.LSE(d.yp, B, d.ep, d.gp)
		kernel.ClearUpper()
		d.drift(bwd, d.yp, d.gp, float32(s2), float32(1/sig2))
		for p := range B {
			u := st.Noise.Float64()
			d.tries++
			if !d.inBox(d.yp, p, B, st.Box) || d.ep[p]-d.ep[p] != 0 {
				continue
			}
			var qf, qb float64 // ‖y' − fwd(y)‖², ‖y − bwd(y')‖²
			for i := p; i < len(d.yp); i += B {
				a, b := float64(d.yp[i]-fwd[i]), float64(d.y[i]-bwd[i])
				qf += a * a
				qb += b * b
			}
			r := d.logCond(d.yp, d.ep, p, B, sig2) - d.logCond(d.y, d.e, p, B, sig2) - (qb-qf)/(2*s2)
			// log u < 0 ≤ r accepts without the logarithm (the same decisions).
			if r >= 0 || math.Log(u) < r {
				d.acc++
				for i := p; i < len(d.y); i += B {
					d.y[i], d.g[i] = d.yp[i], d.gp[i]
				}
				d.e[p] = d.ep[p]
			}
		}
	}
}

// inBox is whether every coordinate of chain p of y [D][B] is within [−box, box].
func (d *Objective) inBox(y []float32, p, B int, box float32) bool {
	for i := p; i < len(y); i += B {
		if abs(y[i]) > box {
			return false
		}
	}
	return true
}

func abs(x float32) float32 { return float32(math.Abs(float64(x))) }

// Loss is the recovery likelihood's gradient as a loss: −mean ℓ(data) + mean ℓ(neg).
func (*Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	B := st.B
	inv := 1 / float32(B)
	var l float64
	for i := range B {
		l += float64(lse[B+i]) - float64(lse[i])
		coef[i], coef[B+i] = -inv, inv
	}
	return float32(l / float64(B))
}

// End reports the mean MH acceptance (drl_accept) when the steps are adjusted.
func (d *Objective) End(_ *kernel.Step, res *kernel.Result2D) {
	if !d.o.MH || d.tries == 0 {
		return
	}
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	res.Stats["drl_accept"] = d.acc / d.tries
}

var _ kernel.Objective = (*Objective)(nil)

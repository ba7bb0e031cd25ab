package dsm

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Name is the method's name.
const Name = "dsm"

// Options are DSM's settings (doc.go gives their sources).
type Options struct {
	Sigma float64 `opt:"dsm_sigma" label:"DSM σ" range:"(0,inf)" doc:"dsm: standard deviation σ of the Gaussian perturbation x̃ = x + σε; the loss's minimiser is the truth convolved with N(0, σ²I)"`
	H     float64 `opt:"dsm_h" label:"DSM h/σ" range:"(0,inf)" doc:"dsm: the finite-difference step h of the score (ℓ(x̃+h e_i) − ℓ(x̃−h e_i))/(2h), as a multiple of dsm_sigma"`
}

// defaults are jemcheck's choices for 2-D tasks on a box of half-width 5 with
// components of sd 0.3 to 0.6 (doc.go).
var defaults = Options{Sigma: 0.2, H: 0.25}

// Defaults returns DSM's default options.
func Defaults() Options { return defaults }

func init() {
	methods.Register(methods.Method{Name: Name, Order: 22,
		Doc:     "denoising score matching: the σ²-weighted squared error between the model's score ∇ℓ(x̃), by central finite differences of ℓ along each axis, and the noise's score −ε/σ at x̃ = x + σε (fits the truth convolved with N(0, σ²I))",
		Source:  "Vincent 2011; finite differences: Pang et al., NeurIPS 2020",
		Sampler: true, KernelOnly: true, Defaults: defaults,
		Trainers: map[string]any{methods.KindPlane: spec2D, "images": images}})
}

// spec2D is the hook tasks/plane calls: it sets dsm's objective on the 2-D spec.
var spec2D = methods.Objective(func(o Options) kernel.Objective { return NewObjective(o) }, nil)

// Objective is DSM as a kernel.Objective. Lanes: the B data points (read by the
// trainer's cross-entropy only), then 4 lanes per data point i, lane B + k·B + i for
// k = 0..3 at x̃_i + h e_0, x̃_i − h e_0, x̃_i + h e_1, x̃_i − h e_1.
type Objective struct {
	o        Options
	sigma, h float64
	eps      []float32 // [2][B]: the perturbations' standard normal draws ε
}

// NewObjective returns DSM's objective with options o.
func NewObjective(o Options) *Objective {
	return &Objective{o: o, sigma: o.Sigma, h: o.H * o.Sigma}
}

// Lanes is 5B: the data and four finite-difference lanes per data point.
func (d *Objective) Lanes(B int) int { return 5 * B }

// Params is 0: DSM has no scalar parameters of its own.
func (*Objective) Params() int { return 0 }

// GradEvals is 0: the finite differences are lanes of the forward pass.
func (*Objective) GradEvals(int) int64 { return 0 }

// Begin has nothing to reset: every step draws its own perturbations.
func (*Objective) Begin(*kernel.Step) {}

// Fill draws x̃ = x + σε per data point (from st.Rng) and writes its four
// finite-difference lanes.
func (d *Objective) Fill(st *kernel.Step) {
	B, P, x := st.B, st.P, st.X
	if len(d.eps) != 2*B {
		d.eps = make([]float32, 2*B)
	}
	s, h := float32(d.sigma), float32(d.h)
	for i := range B {
		e0, e1 := float32(st.Rng.NormFloat64()), float32(st.Rng.NormFloat64())
		d.eps[i], d.eps[B+i] = e0, e1
		a, b := x[i]+s*e0, x[P+i]+s*e1
		for k, dx := range [4][2]float32{{h, 0}, {-h, 0}, {0, h}, {0, -h}} {
			c := B + k*B + i
			x[c], x[P+c] = a+dx[0], b+dx[1]
		}
	}
}

// Loss is ½·mean_i ‖σ ŝ(x̃_i) + ε_i‖² (σ²·‖ŝ + ε/σ‖², the usual σ² weighting), ŝ the
// central-difference score; its derivative in ℓ at lane (x̃ ± h e_d) is
// ±(σŝ_d + ε_d)·σ/(2h)/B.
func (d *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	kernel.ClearUpper()
	B := st.B
	var loss float64
	c := d.sigma / (2 * d.h)
	for i := range B {
		for ax := range 2 {
			p, m := B+2*ax*B+i, B+(2*ax+1)*B+i
			r := c*(float64(lse[p])-float64(lse[m])) + float64(d.eps[ax*B+i])
			loss += 0.5 * r * r
			g := float32(r * c / float64(B))
			coef[p], coef[m] = g, -g
		}
	}
	return float32(loss / float64(B))
}

// End reports nothing: DSM has no diagnostics beyond its loss.
func (*Objective) End(*kernel.Step, *kernel.Result2D) {}

var _ kernel.Objective = (*Objective)(nil)

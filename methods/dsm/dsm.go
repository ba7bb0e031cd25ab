package dsm

import (
	"fmt"

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
		Hooks: []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.Images.Hook(images)}})
}

// spec2D is the hook tasks/plane and tasks/blocks call: it sets dsm's objective on the
// spec (its lanes, 1 + 2D per data point, follow the run's dimension D).
var spec2D = methods.Objective(func(o Options) kernel.Objective { return NewObjective(o) }, nil)

// Objective is DSM as a kernel.Objective in D dimensions. Lanes: the B data points
// (read by the trainer's cross-entropy only), then 2D lanes per data point i, lane
// B + k·B + i for k = 0..2D−1 at x̃_i + h e_{k/2} (k even) and x̃_i − h e_{k/2} (k odd);
// on the plane (D = 2) x̃_i + h e_0, x̃_i − h e_0, x̃_i + h e_1, x̃_i − h e_1.
type Objective struct {
	o        Options
	dim      int
	sigma, h float64
	eps      []float32 // [D][B]: the perturbations' standard normal draws ε
}

// NewObjective returns DSM's objective with options o (for points of any dimension D:
// its lanes are (1 + 2D)·B).
func NewObjective(o Options) *Objective {
	return &Objective{o: o, sigma: o.Sigma, h: o.H * o.Sigma}
}

// Lanes is (1 + 2D)·B: the data and 2D finite-difference lanes per data point (5B on
// the plane).
func (*Objective) Lanes(B, D int) int { return (1 + 2*D) * B }

// Params is 0: DSM has no scalar parameters of its own.
func (*Objective) Params() int { return 0 }

// GradEvals is 0: the finite differences are lanes of the forward pass.
func (*Objective) GradEvals(int) int64 { return 0 }

// Begin sizes the perturbations' buffer for the run's batch and dimension (st.Dim;
// a hand-made step without it: its lanes' coordinates); every step draws its own
// perturbations.
func (d *Objective) Begin(st *kernel.Step) {
	d.dim = st.Dim
	if d.dim == 0 {
		d.dim = len(st.X) / st.P
	}
	if st.P != d.Lanes(st.B, d.dim) {
		panic(fmt.Sprintf("dsm: a step of %d lanes for batch %d in D = %d, want %d", st.P, st.B, d.dim, d.Lanes(st.B, d.dim)))
	}
	if len(d.eps) != d.dim*st.B {
		d.eps = make([]float32, d.dim*st.B)
	}
}

// Fill draws x̃ = x + σε per data point (from st.Rng, coordinates in order) and writes
// its 2D finite-difference lanes.
func (d *Objective) Fill(st *kernel.Step) {
	if d.dim == 0 {
		d.Begin(st)
	}
	B, P, x, D := st.B, st.P, st.X, d.dim
	s, h := float32(d.sigma), float32(d.h)
	for i := range B {
		for c := range D {
			d.eps[c*B+i] = float32(st.Rng.NormFloat64())
		}
		for c := range D { // coordinate c of every lane of point i: x̃_c, ± h on axis c's pair
			a := x[c*P+i] + s*d.eps[c*B+i]
			for ax := range D {
				var dx float32
				if ax == c {
					dx = h
				}
				p := B + 2*ax*B + i
				x[c*P+p], x[c*P+p+B] = a+dx, a-dx
			}
		}
	}
}

// Loss is ½·mean_i ‖σ ŝ(x̃_i) + ε_i‖² (σ²·‖ŝ + ε/σ‖², the usual σ² weighting), ŝ the
// central-difference score, the squared norm summed over the D axes; its derivative in
// ℓ at lane (x̃ ± h e_d) is ±(σŝ_d + ε_d)·σ/(2h)/B.
func (d *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	kernel.ClearUpper()
	B := st.B
	var loss float64
	c := d.sigma / (2 * d.h)
	for i := range B {
		for ax := range d.dim {
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

package ed

import (
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// Objective is Energy Discrepancy as a kernel.Objective, for any D: lanes 0..B are the
// data, lane B + j·B + i is data point i's j-th negative x'_ij (j < M); no parameters
// of its own. Continuous lanes get the Gaussian perturbation (variance t per
// coordinate), binary lanes (st.Binary) the Bernoulli one (flip probability t).
type Objective struct {
	m    int
	t, w float32 // float32, so that the plane's numbers are the 2-D kernel's former built-in ed's
	y    []float32
	xs   []float64 // Loss's scratch: the exps' arguments and values, and the points' LSEs
}

// New is ed's objective with the options o.
func New(o Options) *Objective { return &Objective{m: o.M, t: float32(o.T), w: float32(o.W)} }

// Lanes is B·(1 + M): the data and M negatives each.
func (e *Objective) Lanes(B, _ int) int { return B * (1 + e.m) }

// Params is 0: ed learns no normaliser.
func (*Objective) Params() int { return 0 }

// GradEvals is 0: the negatives are drawn without the model.
func (*Objective) GradEvals(int) int64 { return 0 }

// Begin sizes the perturbation's scratch for st.Dim.
func (e *Objective) Begin(st *kernel.Step) {
	if len(e.y) < st.Dim {
		e.y = make([]float32, st.Dim)
	}
}

// Fill draws each data point's negatives from st.Rng into lanes B..B(1+M).
func (e *Objective) Fill(st *kernel.Step) {
	if st.Binary {
		PerturbBits(st.Rng, st.X, st.Dim, st.B, st.P, e.m, float64(e.t), e.y)
		return
	}
	Perturb(st.Rng, st.X, st.Dim, st.B, st.P, e.m, e.t, e.y)
}

// Loss is the ED term of the lanes' energies (Loss).
func (e *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	if n := st.B*(e.m+1) + st.B; len(e.xs) < n {
		e.xs = make([]float64, n)
	}
	return lossInto(lse, st.B, e.m, e.w, coef, e.xs)
}

// End reports nothing: ed has no diagnostics beyond the trainer's.
func (*Objective) End(*kernel.Step, *kernel.Result2D) {}

// Perturb writes the Gaussian negatives of the B data points of x [dim][P] (lanes
// 0..B) into lanes B..B(1+m): for data point i, y = x_i + √t ξ, then x'_ij = y + √t ξ_j
// in lane B + j·B + i, every coordinate's normal drawn in turn (point, then coordinate).
// y is scratch of at least dim values. With dim = 2 the draws and the arithmetic are
// the 2-D kernel's former built-in ed's.
func Perturb(rng *rand.Rand, x []float32, dim, B, P, m int, t float32, y []float32) {
	s := float32(math.Sqrt(float64(t)))
	y = y[:dim]
	for i := range B {
		for c := range y {
			y[c] = x[c*P+i] + s*float32(rng.NormFloat64())
		}
		for j := range m {
			l := B + j*B + i
			for c, yc := range y {
				x[c*P+l] = yc + s*float32(rng.NormFloat64())
			}
		}
	}
}

// PerturbBits writes the Bernoulli negatives of the B binary data points of x [dim][P]
// (each coordinate 0 or 1) into lanes B..B(1+m): y = x_i ⊕ ξ, then x'_ij = y ⊕ ξ_j in
// lane B + j·B + i, each bit of ξ and ξ_j flipped with probability eps (one uniform
// draw per coordinate, in coordinate order: the binary kernel's former built-in ed's).
// y is scratch
// of at least dim values.
func PerturbBits(rng *rand.Rand, x []float32, dim, B, P, m int, eps float64, y []float32) {
	y = y[:dim]
	for i := range B {
		for c := range y {
			b := x[c*P+i] > 0.5
			if rng.Float64() < eps {
				b = !b
			}
			y[c] = bit(b)
		}
		for j := range m {
			l := B + j*B + i
			for c, yc := range y {
				b := yc > 0.5
				if rng.Float64() < eps {
					b = !b
				}
				x[c*P+l] = bit(b)
			}
		}
	}
}

func bit(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// Loss is the ED term mean_i log(w/M + (1/M) Σ_j exp(E(x'_ij) − E(x_i))) of the
// energies e of the data (lanes 0..B) and of their m negatives each (lane B + j·B + i),
// in float64, and writes its derivative with respect to each energy into coef (same
// lanes). It is the 2-D kernel's edLoss.
func Loss(e []float32, B, m int, w float32, coef []float32) float32 {
	return lossInto(e, B, m, w, coef, make([]float64, B*(m+1)+B))
}

// lossInto is Loss with its scratch, at least B·(m+1) + B values.
func lossInto(e []float32, B, m int, w float32, coef []float32, scratch []float64) float32 {
	kernel.ClearUpper()
	logW := math.Inf(-1)
	if w > 0 {
		logW = math.Log(float64(w))
	}
	logM := math.Log(float64(m))
	var loss float64
	// each pass's exps at once (prob.ExpTo: math.Exp's bits in vector lanes); every sum
	// in the point-by-point order
	xs, lses := scratch[:B*(m+1)], scratch[B*(m+1):B*(m+1)+B]
	for i := range B {
		mx := logW
		for j := range m {
			mx = max(mx, float64(e[B+j*B+i]-e[i]))
		}
		row := xs[i*(m+1) : (i+1)*(m+1)]
		row[0] = logW - mx
		for j := range m {
			row[1+j] = float64(e[B+j*B+i]-e[i]) - mx
		}
		lses[i] = mx
	}
	prob.ExpTo(xs[:B*(m+1)], xs[:B*(m+1)])
	for i := range B {
		row := xs[i*(m+1) : (i+1)*(m+1)]
		s := row[0]
		for j := range m {
			s += row[1+j]
		}
		lse := lses[i] + math.Log(s)
		lses[i] = lse
		loss += lse - logM
	}
	for i := range B {
		for j := range m {
			xs[i*m+j] = float64(e[B+j*B+i]-e[i]) - lses[i]
		}
	}
	prob.ExpTo(xs[:B*m], xs[:B*m])
	for i := range B {
		var sum float64
		for j := range m {
			c := xs[i*m+j] / float64(B)
			coef[B+j*B+i] = float32(c)
			sum += c
		}
		coef[i] = float32(-sum)
	}
	return float32(loss / float64(B))
}

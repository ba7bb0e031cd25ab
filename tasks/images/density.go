package images

import (
	"fmt"
	"math"
	"sync"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
)

// density is a truth's exact log density with its input gradient: the target of the
// annealed importance sampling that calibrates the schedule (its log Z is 0) and the
// "model" of the known-answer test. mfa evaluates log p(x, y) but not its gradient, so
// density rebuilds every component's Woodbury factor from the truth's exported
// parameters (mfa.Params): with r = x − μ, A = L⁻¹ΛᵀΨ⁻¹ (L Lᵀ = I + ΛᵀΨ⁻¹Λ),
//
//	log N(x; μ, Σ) = −½ (D log 2π + log det Σ) − ½ (rᵀΨ⁻¹r − ‖A r‖²),
//	∇x log N       = −(Ψ⁻¹ r − Aᵀ(A r)),
//
// and ∇ log p(x) is the components' gradients weighted by their posterior
// responsibilities. Its log p(x, y) agrees with mfa's to rounding (tested).
type density struct {
	D, K  int
	comps []fa
	pool  sync.Pool // *scratch
}

// fa is one factor analyser of class y with its precomputation.
type fa struct {
	y, d          int
	logW, logNorm float64 // log π_y w_yc; −½ (D log 2π + log det Σ)
	mean, invPsi  []float64
	a             []float64 // d×D
}

type scratch struct {
	r, u, lc, lj, g []float64
}

func newDensity(t *mfa.Truth) (*density, error) {
	p := t.Params()
	D, K := t.D(), t.K()
	den := &density{D: D, K: K}
	logTwoPi := math.Log(2 * math.Pi)
	maxD := 0
	for y, cl := range p.Classes {
		for c, cp := range cl.Components {
			d := cp.Factors
			maxD = max(maxD, d)
			f := fa{y: y, d: d, logW: math.Log(p.Pi[y]) + math.Log(cp.Weight), mean: cp.Mean,
				invPsi: make([]float64, D), a: make([]float64, d*D)}
			logDet := 0.0
			for i, v := range cp.Psi {
				f.invPsi[i] = 1 / v
				logDet += math.Log(v)
			}
			m := make([]float64, d*d) // I + ΛᵀΨ⁻¹Λ
			for j := range d {
				for l := 0; l <= j; l++ {
					s := 0.0
					for i := range D {
						s += cp.Loadings[i*d+j] * cp.Loadings[i*d+l] * f.invPsi[i]
					}
					m[j*d+l], m[l*d+j] = s, s
				}
				m[j*d+j]++
			}
			if err := prob.Cholesky(m, d); err != nil {
				return nil, fmt.Errorf("images: class %d component %d: %w", y, c, err)
			}
			for j := range d {
				logDet += 2 * math.Log(m[j*d+j])
				aj := f.a[j*D : (j+1)*D]
				for i := range D {
					aj[i] = cp.Loadings[i*d+j] * f.invPsi[i]
				}
				for l := range j {
					al, v := f.a[l*D:(l+1)*D], m[j*d+l]
					for i := range aj {
						aj[i] -= v * al[i]
					}
				}
				for i := range aj {
					aj[i] /= m[j*d+j]
				}
			}
			f.logNorm = -0.5 * (float64(D)*logTwoPi + logDet)
			den.comps = append(den.comps, f)
		}
	}
	den.pool.New = func() any {
		return &scratch{r: make([]float64, D), u: make([]float64, maxD), lc: make([]float64, len(den.comps)),
			lj: make([]float64, K), g: make([]float64, len(den.comps)*D)}
	}
	return den, nil
}

// eval writes log p(x, y) into lj (len K; nil: none) and ∇x log p(x) into grad (len D;
// nil: none) and returns log p(x).
func (den *density) eval(x, lj, grad []float64) float64 {
	sc := den.pool.Get().(*scratch)
	defer den.pool.Put(sc)
	D := den.D
	for ci := range den.comps {
		f := &den.comps[ci]
		r, u := sc.r, sc.u[:f.d]
		q := 0.0
		for i := range D {
			v := x[i] - f.mean[i]
			r[i] = v
			q += v * v * f.invPsi[i]
		}
		for j := range f.d {
			aj := f.a[j*D : (j+1)*D]
			s := 0.0
			for i, v := range r {
				s += aj[i] * v
			}
			u[j] = s
			q -= s * s
		}
		sc.lc[ci] = f.logW + f.logNorm - 0.5*q
		if grad != nil {
			g := sc.g[ci*D : (ci+1)*D]
			for i, v := range r {
				g[i] = -v * f.invPsi[i]
			}
			for j := range f.d {
				aj, s := f.a[j*D:(j+1)*D], u[j]
				for i := range g {
					g[i] += s * aj[i]
				}
			}
		}
	}
	lp := logSumExp(sc.lc)
	if lj != nil {
		for y := range lj {
			lj[y] = math.Inf(-1)
		}
		for ci := range den.comps {
			y := den.comps[ci].y
			lj[y] = logAddExp(lj[y], sc.lc[ci])
		}
	}
	if grad != nil {
		clear(grad)
		for ci := range den.comps {
			w := math.Exp(sc.lc[ci] - lp)
			if w == 0 {
				continue
			}
			for i, v := range sc.g[ci*D : (ci+1)*D] {
				grad[i] += w * v
			}
		}
	}
	return lp
}

func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	m := max(a, b)
	return m + math.Log(math.Exp(a-m)+math.Exp(b-m))
}

func logSumExp(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// Dim is D (ais.Target).
func (den *density) Dim() int { return den.D }

// LogDensity is log p(x) and its gradient (ais.Target; log Z = 0).
func (den *density) LogDensity(x, grad []float64) float64 { return den.eval(x, nil, grad) }

package mfa

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/jemcheck/jemcheck/models/prob"
)

// Amplitudes of the smooth factors (standard deviations of the latent modes).
const (
	shiftSD      = 0.04 // shift, as a fraction of the image side
	brightnessSD = 0.12 // relative brightness
	thicknessSD  = 0.15 // relative stroke thickness
	rotationSD   = 0.1  // rotation, radians
	cosineSD     = 0.05 // low-frequency intensity fields, times U(0.5, 1.5)
	psiField     = 0.3  // log ψ varies by ±psiField over the image (smooth) ...
	psiJitter    = 0.1  // ... and by ±psiJitter per pixel
	morphSD      = 0.15 // cross-fade factor: sd of the blend position
	morphOffset  = 0.1  // cross-fade means sit at ½ ∓ morphOffset
)

// cosines are the (horizontal, vertical) frequencies of the low-frequency factors, in order.
var cosines = [...][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}, {0, 2}, {2, 1}, {1, 2}, {2, 2}, {3, 0}, {0, 3}}

// numShapeFactors is the number of factors derived from the shape (before the cosines).
const numShapeFactors = 5

// Seed-stream tags.
const (
	tagKinds = iota + 1
	tagClass
	tagComponent
	tagEdge
)

// Truth is an exact labelled image distribution: per class a mixture of factor analysers.
// A Truth is immutable and safe for concurrent use; its Evaluators are not.
type Truth struct {
	params       Params
	side, dim, k int
	logPi        []float64
	comps        [][]component
	maxC, maxD   int
	pool         sync.Pool
	classMeans   [][]float64
}

// component holds one factor analyser and its Woodbury precomputation.
type component struct {
	d       int
	logW    float64   // log π_y + log w_yc
	logNorm float64   // −½ (D log 2π + log det Σ)
	logDet  float64   // log det Σ
	mean    []float64 // D
	invPsi  []float64 // D
	sqrtPsi []float64 // D
	loadT   []float64 // d×D: factor j's loading image at [j*D:(j+1)*D]
	a       []float64 // d×D: L⁻¹ Λᵀ Ψ⁻¹ with L Lᵀ = I + Λᵀ Ψ⁻¹ Λ
}

// New makes the truth of spec from seed; equal seeds and specs give identical truths.
// Class y's shape and its shape components come from their own seed streams, so they do
// not depend on K (the cross-fade components, which pair neighbouring classes, apart).
func New(seed uint64, spec Spec) (*Truth, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	S, D, K := spec.S, spec.D(), spec.K
	perm := prob.NewRand(prob.Seed(seed, tagKinds)).Perm(numKinds)
	sp := spec
	p := Params{S: S, K: K, Pi: make([]float64, K), Classes: make([]ClassParams, K), Seed: seed, Spec: &sp}
	bases := make([]shape, K)
	edges := crossFadeEdges(K)
	if spec.Ambiguity == 0 {
		edges = nil
	}
	perClassEdges := make([]int, K)
	for _, e := range edges {
		perClassEdges[e[0]]++
		perClassEdges[e[1]]++
	}
	for y := range K {
		p.Pi[y] = 1 / float64(K)
		rng := prob.NewRand(prob.Seed(seed, tagClass, uint64(y)))
		kind := rng.IntN(numKinds)
		if y < numKinds {
			kind = perm[y]
		}
		bases[y] = drawShape(rng, kind, S)
		w := make([]float64, spec.Components)
		var sum float64
		for c := range w {
			w[c] = uniform(rng, 0.5, 1.5)
			sum += w[c]
		}
		shapeMass := 1.0
		if perClassEdges[y] > 0 {
			shapeMass = 1 - spec.Ambiguity
		}
		cl := ClassParams{Shape: kindNames[kind], Components: make([]ComponentParams, spec.Components, spec.Components+perClassEdges[y])}
		for c := range cl.Components {
			crng := prob.NewRand(prob.Seed(seed, tagComponent, uint64(y), uint64(c)))
			v := bases[y].variant(crng)
			cp := newComponent(D, spec.Factors, shapeMass*w[c]/sum)
			v.render(S, cp.Mean)
			drawPsi(crng, S, spec.Noise, cp.Psi)
			amps := cosineAmps(crng)
			smoothLoadings(S, spec.Factors, cp.Factors, []shape{v}, cp.Mean, amps, cp.Loadings)
			cl.Components[c] = cp
		}
		p.Classes[y] = cl
	}
	// Cross-fade components: for edge (a, b), both classes get the blend of the base
	// shapes with identical loadings and ψ; class a's mean is (½+δ) s_a + (½−δ) s_b and
	// class b's is (½−δ) s_a + (½+δ) s_b; the extra factor is morphSD (s_b − s_a).
	sa, sb := make([]float64, D), make([]float64, D)
	for _, e := range edges {
		a, b := e[0], e[1]
		erng := prob.NewRand(prob.Seed(seed, tagEdge, uint64(a), uint64(b)))
		bases[a].render(S, sa)
		bases[b].render(S, sb)
		d := spec.Factors + 1
		shared := newComponent(D, d, spec.Ambiguity/float64(perClassEdges[a]))
		for i := range D {
			shared.Mean[i] = 0.5 * (sa[i] + sb[i])
		}
		drawPsi(erng, S, spec.Noise, shared.Psi)
		amps := cosineAmps(erng)
		smoothLoadings(S, spec.Factors, d, []shape{bases[a], bases[b]}, shared.Mean, amps, shared.Loadings)
		for i := range D {
			shared.Loadings[i*d+spec.Factors] = morphSD * (sb[i] - sa[i])
		}
		for side, y := range e {
			cp := newComponent(D, d, spec.Ambiguity/float64(perClassEdges[y]))
			copy(cp.Loadings, shared.Loadings)
			copy(cp.Psi, shared.Psi)
			t := 0.5 - morphOffset // weight of the other class's shape
			if side == 1 {
				t = 0.5 + morphOffset
			}
			for i := range D {
				cp.Mean[i] = (1-t)*sa[i] + t*sb[i]
			}
			p.Classes[y].Components = append(p.Classes[y].Components, cp)
		}
	}
	return build(p)
}

// crossFadeEdges are the class pairs that share a cross-fade component: (y, y+1 mod K),
// once each (a single pair when K = 2).
func crossFadeEdges(K int) [][2]int {
	if K == 2 {
		return [][2]int{{0, 1}}
	}
	e := make([][2]int, K)
	for y := range K {
		e[y] = [2]int{y, (y + 1) % K}
	}
	return e
}

func newComponent(D, d int, w float64) ComponentParams {
	return ComponentParams{Weight: w, Factors: d, Mean: make([]float64, D), Loadings: make([]float64, D*d), Psi: make([]float64, D)}
}

// drawPsi fills psi with Noise² times exp of a smooth field in [−psiField, psiField]
// (low-order cosines with normal coefficients) and a per-pixel jitter in ±psiJitter.
func drawPsi(rng *rand.Rand, S int, noise float64, psi []float64) {
	var coef [5]float64
	for j := range coef {
		coef[j] = rng.NormFloat64()
	}
	field := make([]float64, len(psi))
	var peak float64
	for i := range field {
		for j := range coef {
			field[i] += coef[j] * cosField(S, i, cosines[j+1])
		}
		peak = math.Max(peak, math.Abs(field[i]))
	}
	for i := range psi {
		jit := uniform(rng, -1, 1)
		psi[i] = noise * noise * math.Exp(psiField*field[i]/peak+psiJitter*jit)
	}
}

// cosineAmps draws the amplitudes of the cosine factors: cosineSD times U(0.5, 1.5).
func cosineAmps(rng *rand.Rand) [len(cosines)]float64 {
	var a [len(cosines)]float64
	for j := range a {
		a[j] = cosineSD * uniform(rng, 0.5, 1.5)
	}
	return a
}

// smoothLoadings writes the first nf smooth factors into columns 0..nf−1 of the D×d
// row-major loadings: the shape factors of the equal-weight blend of shapes (whose mean
// image is mean), then the cosine fields.
func smoothLoadings(S, nf, d int, shapes []shape, mean []float64, amps [len(cosines)]float64, load []float64) {
	D := S * S
	col, p, m := make([]float64, D), make([]float64, D), make([]float64, D)
	for f := range nf {
		if f < numShapeFactors {
			clear(col)
			for _, sh := range shapes {
				shapeFactor(sh, f, S, p, m, mean)
				for i := range col {
					col[i] += p[i]
				}
			}
			if f == 2 { // brightness is of the blend, not a sum
				copy(col, p)
			} else {
				for i := range col {
					col[i] /= float64(len(shapes))
				}
			}
		} else {
			fr := cosines[f-numShapeFactors]
			for i := range col {
				col[i] = amps[f-numShapeFactors] * cosField(S, i, fr)
			}
		}
		for i := range D {
			load[i*d+f] = col[i]
		}
	}
}

// cosField is the low-frequency field of frequencies fr at pixel i of an S×S image.
func cosField(S, i int, fr [2]int) float64 {
	r, c := i/S, i%S
	return math.Cos(math.Pi*float64(fr[0])*(float64(c)+0.5)/float64(S)) *
		math.Cos(math.Pi*float64(fr[1])*(float64(r)+0.5)/float64(S))
}

// shapeFactor writes into out the loading image of shape factor f of the component with
// shape v and mean image mean: central finite differences of the rendered shape scaled
// by the mode's standard deviation (brightness is the mean itself, scaled).
func shapeFactor(v shape, f, S int, out, tmp, mean []float64) {
	var plus, minus shape = v, v
	var h, sd float64
	switch f {
	case 0: // horizontal shift
		h, sd = 0.25/float64(S), shiftSD
		plus.cx += h
		minus.cx -= h
	case 1: // vertical shift
		h, sd = 0.25/float64(S), shiftSD
		plus.cy += h
		minus.cy -= h
	case 2: // brightness
		for i, m := range mean {
			out[i] = brightnessSD * m
		}
		return
	case 3: // thickness (relative)
		h, sd = 0.05, thicknessSD
		plus.hw *= 1 + h
		minus.hw *= 1 - h
	case 4: // rotation
		h, sd = 0.05, rotationSD
		plus.theta += h
		minus.theta -= h
	}
	plus.render(S, out)
	minus.render(S, tmp)
	for i := range out {
		out[i] = sd * (out[i] - tmp[i]) / (2 * h)
	}
}

// FromParams builds the truth that p describes, after checking it (shapes, finite values,
// ψ > 0, weights summing to 1). New(seed, spec) and FromParams(New(seed, spec).Params())
// evaluate identically, bit for bit.
func FromParams(p Params) (*Truth, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return build(p.clone())
}

// build precomputes the Woodbury factors of every component of p, which it takes over.
func build(p Params) (*Truth, error) {
	S, K := p.S, p.K
	D := S * S
	t := &Truth{params: p, side: S, dim: D, k: K, logPi: make([]float64, K), comps: make([][]component, K)}
	logTwoPi := math.Log(2 * math.Pi)
	for y, cl := range p.Classes {
		t.logPi[y] = math.Log(p.Pi[y])
		t.comps[y] = make([]component, len(cl.Components))
		t.maxC = max(t.maxC, len(cl.Components))
		for c, cp := range cl.Components {
			d := cp.Factors
			t.maxD = max(t.maxD, d)
			k := component{
				d: d, logW: t.logPi[y] + math.Log(cp.Weight), mean: cp.Mean,
				invPsi: make([]float64, D), sqrtPsi: make([]float64, D),
				loadT: make([]float64, d*D), a: make([]float64, d*D),
			}
			var logDetPsi float64
			for i, v := range cp.Psi {
				k.invPsi[i] = 1 / v
				k.sqrtPsi[i] = math.Sqrt(v)
				logDetPsi += math.Log(v)
				for j := range d {
					k.loadT[j*D+i] = cp.Loadings[i*d+j]
				}
			}
			// M = I + Λᵀ Ψ⁻¹ Λ and its Cholesky factor L (lower, in place).
			m := make([]float64, d*d)
			for j := range d {
				lj := k.loadT[j*D : (j+1)*D]
				for l := 0; l <= j; l++ {
					ll := k.loadT[l*D : (l+1)*D]
					var s float64
					for i, ip := range k.invPsi {
						s += lj[i] * ll[i] * ip
					}
					m[j*d+l] = s
				}
				m[j*d+j]++
			}
			if err := cholesky(m, d); err != nil {
				return nil, fmt.Errorf("mfa: class %d component %d: %w", y, c, err)
			}
			var logDetM float64
			for j := range d {
				logDetM += 2 * math.Log(m[j*d+j])
			}
			// A = L⁻¹ Λᵀ Ψ⁻¹ by forward substitution, row by row.
			for j := range d {
				aj := k.a[j*D : (j+1)*D]
				lj := k.loadT[j*D : (j+1)*D]
				for i := range aj {
					aj[i] = lj[i] * k.invPsi[i]
				}
				for l := range j {
					al := k.a[l*D : (l+1)*D]
					f := m[j*d+l]
					for i := range aj {
						aj[i] -= f * al[i]
					}
				}
				inv := 1 / m[j*d+j]
				for i := range aj {
					aj[i] *= inv
				}
			}
			k.logDet = logDetPsi + logDetM
			k.logNorm = -0.5 * (float64(D)*logTwoPi + k.logDet)
			t.comps[y][c] = k
		}
	}
	t.classMeans = make([][]float64, K)
	for y, cl := range p.Classes {
		t.classMeans[y] = make([]float64, D)
		for _, cp := range cl.Components {
			for i, m := range cp.Mean {
				t.classMeans[y][i] += cp.Weight * m
			}
		}
	}
	t.pool.New = func() any { return t.NewEvaluator() }
	return t, nil
}

// cholesky is prob.Cholesky with the strict upper triangle zeroed, so a is L.
func cholesky(a []float64, n int) error {
	if err := prob.Cholesky(a, n); err != nil {
		return err
	}
	for j := range n {
		for k := j + 1; k < n; k++ {
			a[j*n+k] = 0
		}
	}
	return nil
}

// S is the image side.
func (t *Truth) S() int { return t.side }

// D is the dimension S².
func (t *Truth) D() int { return t.dim }

// K is the number of classes.
func (t *Truth) K() int { return t.k }

// Params returns a deep copy of the truth's parameters.
func (t *Truth) Params() Params { return t.params.clone() }

// Pi returns a copy of the class probabilities.
func (t *Truth) Pi() []float64 { return append([]float64(nil), t.params.Pi...) }

// Components is the number of components of class y.
func (t *Truth) Components(y int) int { return len(t.comps[y]) }

// Weight is the weight w_yc of component c within class y.
func (t *Truth) Weight(y, c int) float64 { return t.params.Classes[y].Components[c].Weight }

// Mean returns a copy of the mean image μ_yc.
func (t *Truth) Mean(y, c int) []float64 {
	return append([]float64(nil), t.params.Classes[y].Components[c].Mean...)
}

// ClassMean returns the mean image of class y, Σ_c w_yc μ_yc.
func (t *Truth) ClassMean(y int) []float64 { return append([]float64(nil), t.classMeans[y]...) }

// LogDetCov is log det Σ_yc, by the matrix-determinant lemma.
func (t *Truth) LogDetCov(y, c int) float64 { return t.comps[y][c].logDet }

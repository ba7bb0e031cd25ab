package ais

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LowRank is the normalised Gaussian N(Mean, U diag(Λ − σ²) Uᵀ + σ² I) with U D×q
// orthonormal (probabilistic PCA, Tipping & Bishop 1999): q directions of variance
// Λ_k ≥ σ² and σ² in the rest. A Base, and a component of MixtureBase where the target's
// modes are correlated (shifts, strokes, smooth fields) beyond a diagonal Gaussian's
// reach. Costs O(D·q) per density, gradient or draw.
type LowRank struct {
	Mean    []float64
	U       []float64 // D×q row-major, orthonormal columns
	Lambda  []float64 // the q variances along U's columns, each ≥ Sigma2
	Sigma2  float64   // the variance in every other direction
	d, q    int
	shrink  []float64 // 1 − σ²/Λ_k
	sdU     []float64 // √(Λ_k − σ²)
	scale   []float64 // √(diag covariance)
	logNorm float64
}

// NewLowRank is N(mean, U diag(lambda − σ²) Uᵀ + σ² I); u (D×q row-major) must have
// orthonormal columns (not checked beyond its shape), lambda_k ≥ sigma2 > 0.
func NewLowRank(mean, u, lambda []float64, sigma2 float64) (*LowRank, error) {
	d, q := len(mean), len(lambda)
	if d == 0 || len(u) != d*q || q >= d {
		return nil, fmt.Errorf("ais: low-rank base with D = %d, q = %d, %d values of U", d, q, len(u))
	}
	if !(sigma2 > 0) || math.IsInf(sigma2, 0) {
		return nil, fmt.Errorf("ais: low-rank base σ² = %v", sigma2)
	}
	g := &LowRank{Mean: append([]float64(nil), mean...), U: append([]float64(nil), u...), Lambda: append([]float64(nil), lambda...), Sigma2: sigma2, d: d, q: q}
	g.logNorm = -0.5 * (float64(d)*math.Log(2*math.Pi) + float64(d-q)*math.Log(sigma2))
	for k, l := range lambda {
		if !(l >= sigma2) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("ais: low-rank base Λ_%d = %v below σ² = %v", k, l, sigma2)
		}
		g.logNorm -= 0.5 * math.Log(l)
		g.shrink = append(g.shrink, 1-sigma2/l)
		g.sdU = append(g.sdU, math.Sqrt(l-sigma2))
	}
	g.scale = make([]float64, d)
	for j := range d {
		v := sigma2
		for k := range q {
			v += u[j*q+k] * u[j*q+k] * (lambda[k] - sigma2)
		}
		g.scale[j] = math.Sqrt(v)
		if math.IsNaN(mean[j]) || math.IsInf(mean[j], 0) {
			return nil, fmt.Errorf("ais: low-rank base mean %d = %v", j, mean[j])
		}
	}
	return g, nil
}

// Dim is D.
func (g *LowRank) Dim() int { return g.d }

// Scale is √(diag covariance).
func (g *LowRank) Scale() []float64 { return g.scale }

// LogDensity is log N(x), with Σ⁻¹ = (I − U diag(1 − σ²/Λ) Uᵀ)/σ², and its gradient
// −Σ⁻¹(x − Mean) into grad when non-nil.
func (g *LowRank) LogDensity(x, grad []float64) float64 {
	q := g.q
	var buf [32]float64
	a := buf[:0]
	if q > len(buf) {
		a = make([]float64, 0, q)
	}
	a = a[:q]
	clear(a)
	rr := 0.0
	for j, v := range x {
		r := v - g.Mean[j]
		rr += r * r
		row := g.U[j*q : (j+1)*q]
		for k := range a {
			a[k] += row[k] * r
		}
	}
	quad := rr
	for k, v := range a {
		quad -= v * v * g.shrink[k]
		a[k] = v * g.shrink[k]
	}
	if grad != nil {
		for j, v := range x {
			p := 0.0
			row := g.U[j*q : (j+1)*q]
			for k := range a {
				p += row[k] * a[k]
			}
			grad[j] = -(v - g.Mean[j] - p) / g.Sigma2
		}
	}
	return g.logNorm - 0.5*quad/g.Sigma2
}

// Sample writes an exact draw into x: Mean + U(√(Λ − σ²) ⊙ z) + σ ε.
func (g *LowRank) Sample(rng *rand.Rand, x []float64) {
	q := g.q
	var buf [32]float64
	z := buf[:0]
	if q > len(buf) {
		z = make([]float64, 0, q)
	}
	z = z[:q]
	for k := range z {
		z[k] = g.sdU[k] * rng.NormFloat64()
	}
	s := math.Sqrt(g.Sigma2)
	for j := range x {
		v := g.Mean[j] + s*rng.NormFloat64()
		row := g.U[j*q : (j+1)*q]
		for k := range z {
			v += row[k] * z[k]
		}
		x[j] = v
	}
}

// fitLowRank is the probabilistic PCA of the rows of data (n×d) with q directions
// (Tipping & Bishop's maximum-likelihood fit: U the top q eigenvectors of the sample
// covariance, Λ their eigenvalues, σ² the mean of the other d − q), every variance
// × inflate². The eigenvectors come from subspace iteration on the centred data
// (O(n·d·q) a sweep) and a Jacobi eigendecomposition of the q×q projection.
func fitLowRank(data []float64, d, q int, inflate float64, rng *rand.Rand) (*LowRank, error) {
	n := len(data) / d
	q = min(q, n-2, d-1)
	mean, sd := meanSD(data, d, 1)
	if !(inflate > 0) {
		inflate = 1
	}
	trace := 0.0
	for _, s := range sd {
		trace += s * s
	}
	if q <= 0 {
		return NewLowRank(mean, nil, nil, inflate*inflate*trace/float64(d))
	}
	xc := make([]float64, len(data))
	for i := range n {
		for j := range d {
			xc[i*d+j] = data[i*d+j] - mean[j]
		}
	}
	// cov writes C·Q (d×q) for Q (d×q), C = Xcᵀ Xc/(n − 1).
	t := make([]float64, n*q)
	cov := func(Q, out []float64) {
		clear(t)
		for i := range n {
			xi := xc[i*d : (i+1)*d]
			ti := t[i*q : (i+1)*q]
			for j, v := range xi {
				row := Q[j*q : (j+1)*q]
				for k := range ti {
					ti[k] += v * row[k]
				}
			}
		}
		clear(out)
		for i := range n {
			xi := xc[i*d : (i+1)*d]
			ti := t[i*q : (i+1)*q]
			for j, v := range xi {
				row := out[j*q : (j+1)*q]
				for k := range ti {
					row[k] += v * ti[k] / float64(n-1)
				}
			}
		}
	}
	Q := make([]float64, d*q)
	for i := range Q {
		Q[i] = rng.NormFloat64()
	}
	orth(Q, d, q)
	Y := make([]float64, d*q)
	for range 60 {
		cov(Q, Y)
		Q, Y = Y, Q
		orth(Q, d, q)
	}
	cov(Q, Y)
	B := make([]float64, q*q) // Qᵀ C Q
	for a := range q {
		for b := range q {
			for j := range d {
				B[a*q+b] += Q[j*q+a] * Y[j*q+b]
			}
		}
	}
	vals, vecs := jacobiEigen(B, q)
	U := make([]float64, d*q)
	for j := range d {
		for k := range q {
			for a := range q {
				U[j*q+k] += Q[j*q+a] * vecs[a*q+k]
			}
		}
	}
	top := 0.0
	for _, v := range vals {
		top += v
	}
	s2 := max((trace-top)/float64(d-q), 1e-12*trace/float64(d), 1e-24)
	lambda := make([]float64, q)
	for k, v := range vals {
		lambda[k] = inflate * inflate * max(v, s2)
	}
	return NewLowRank(mean, U, lambda, inflate*inflate*s2)
}

// orth makes the q columns of Q (d×q row-major) orthonormal (modified Gram–Schmidt).
func orth(Q []float64, d, q int) {
	for k := range q {
		for p := range k {
			dot := 0.0
			for j := range d {
				dot += Q[j*q+k] * Q[j*q+p]
			}
			for j := range d {
				Q[j*q+k] -= dot * Q[j*q+p]
			}
		}
		nrm := 0.0
		for j := range d {
			nrm += Q[j*q+k] * Q[j*q+k]
		}
		nrm = math.Sqrt(nrm)
		if nrm == 0 {
			Q[(k%d)*q+k], nrm = 1, 1
		}
		for j := range d {
			Q[j*q+k] /= nrm
		}
	}
}

// jacobiEigen is the eigendecomposition of the symmetric q×q matrix a (destroyed):
// eigenvalues in decreasing order and the eigenvectors as the columns of vecs (q×q
// row-major).
func jacobiEigen(a []float64, q int) (vals, vecs []float64) {
	v := make([]float64, q*q)
	for i := range q {
		v[i*q+i] = 1
	}
	for range 100 {
		off := 0.0
		for i := range q {
			for j := i + 1; j < q; j++ {
				off += a[i*q+j] * a[i*q+j]
			}
		}
		if off < 1e-30 {
			break
		}
		for p := range q {
			for r := p + 1; r < q; r++ {
				apr := a[p*q+r]
				if apr == 0 {
					continue
				}
				theta := (a[r*q+r] - a[p*q+p]) / (2 * apr)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range q { // A ← A J (columns p, r)
					akp, akr := a[k*q+p], a[k*q+r]
					a[k*q+p], a[k*q+r] = c*akp-s*akr, s*akp+c*akr
				}
				for k := range q { // A ← Jᵀ A (rows p, r)
					apk, ark := a[p*q+k], a[r*q+k]
					a[p*q+k], a[r*q+k] = c*apk-s*ark, s*apk+c*ark
				}
				for k := range q {
					vkp, vkr := v[k*q+p], v[k*q+r]
					v[k*q+p], v[k*q+r] = c*vkp-s*vkr, s*vkp+c*vkr
				}
			}
		}
	}
	idx := make([]int, q)
	for i := range idx {
		idx[i] = i
	}
	for i := range q { // selection sort, decreasing
		for j := i + 1; j < q; j++ {
			if a[idx[j]*q+idx[j]] > a[idx[i]*q+idx[i]] {
				idx[i], idx[j] = idx[j], idx[i]
			}
		}
	}
	vals = make([]float64, q)
	vecs = make([]float64, q*q)
	for k, i := range idx {
		vals[k] = a[i*q+i]
		for r := range q {
			vecs[r*q+k] = v[r*q+i]
		}
	}
	return vals, vecs
}

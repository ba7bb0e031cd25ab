package mfa

import (
	"math"
	"math/rand/v2"
)

// categorical draws an index with probabilities p (summing to 1).
func categorical(rng *rand.Rand, p func(int) float64, n int) int {
	u := rng.Float64()
	for i := range n - 1 {
		u -= p(i)
		if u < 0 {
			return i
		}
	}
	return n - 1
}

// SampleComponent writes an exact draw of component c of class y into x (length D):
// x = μ + Λ z + √ψ ⊙ ε with z ~ N(0, I_d), ε ~ N(0, I_D).
func (t *Truth) SampleComponent(rng *rand.Rand, y, c int, x []float64) {
	if len(x) != t.dim {
		panic("mfa: len(x) != D")
	}
	k := &t.comps[y][c]
	D := t.dim
	for i := range x {
		x[i] = k.mean[i] + k.sqrtPsi[i]*rng.NormFloat64()
	}
	for j := range k.d {
		z := rng.NormFloat64()
		row := k.loadT[j*D : (j+1)*D]
		for i := range x {
			x[i] += z * row[i]
		}
	}
}

// SampleOne draws one exact labelled pair into x (length D) and returns y:
// y ~ π, c ~ w_y, then SampleComponent.
func (t *Truth) SampleOne(rng *rand.Rand, x []float64) int {
	y := categorical(rng, func(i int) float64 { return t.params.Pi[i] }, t.k)
	t.SampleClass(rng, y, x)
	return y
}

// SampleClass writes an exact draw from p(x | y) into x (length D) and returns its
// component: c ~ w_y, then SampleComponent.
func (t *Truth) SampleClass(rng *rand.Rand, y int, x []float64) int {
	cs := t.params.Classes[y].Components
	c := categorical(rng, func(i int) float64 { return cs[i].Weight }, len(cs))
	t.SampleComponent(rng, y, c, x)
	return c
}

// Sample draws n exact labelled pairs: x is n×D row-major, y their classes.
func (t *Truth) Sample(rng *rand.Rand, n int) (x []float64, y []int32) {
	x = make([]float64, n*t.dim)
	y = make([]int32, n)
	for i := range n {
		y[i] = int32(t.SampleOne(rng, x[i*t.dim:(i+1)*t.dim]))
	}
	return x, y
}

// Accuracy is a Monte Carlo estimate of the Bayes classifier's performance on the truth,
// from N exact draws, each with its standard error.
type Accuracy struct {
	N int `json:"n"`
	// Hit is the fraction of draws whose argmax_y p(y|x) equals the drawn label.
	Hit   float64 `json:"hit"`
	HitSE float64 `json:"hit_se"`
	// MaxPost is the mean of max_y p(y|x): the same expectation as Hit, with less variance.
	MaxPost   float64 `json:"max_post"`
	MaxPostSE float64 `json:"max_post_se"`
	// NLL is the mean of −log p(y|x) at the drawn label: the conditional entropy H(Y|X), nats.
	NLL   float64 `json:"nll"`
	NLLSE float64 `json:"nll_se"`
}

// BayesAccuracy estimates the Bayes accuracy (and H(Y|X)) from n exact draws.
func (t *Truth) BayesAccuracy(rng *rand.Rand, n int) Accuracy {
	e := t.NewEvaluator()
	x := make([]float64, t.dim)
	post := make([]float64, t.k)
	var hit, mp, mp2, nll, nll2 float64
	for range n {
		y := t.SampleOne(rng, x)
		e.Posterior(x, post)
		best := 0
		for j := range post {
			if post[j] > post[best] {
				best = j
			}
		}
		if best == y {
			hit++
		}
		mp += post[best]
		mp2 += post[best] * post[best]
		l := -math.Log(post[y])
		nll += l
		nll2 += l * l
	}
	fn := float64(n)
	a := Accuracy{N: n, Hit: hit / fn, MaxPost: mp / fn, NLL: nll / fn}
	a.HitSE = math.Sqrt(a.Hit * (1 - a.Hit) / fn)
	a.MaxPostSE = math.Sqrt(math.Max(0, mp2/fn-a.MaxPost*a.MaxPost) / fn)
	a.NLLSE = math.Sqrt(math.Max(0, nll2/fn-a.NLL*a.NLL) / fn)
	return a
}

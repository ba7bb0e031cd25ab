package models

import (
	"math"
	"math/rand/v2"
)

// refLinear trains the linear model in float64 with a plain scalar loop (the maths of
// shared/peers/gofused generalised to X x K, both encodings and any px weight), with the
// textbook bias-corrected Adam. Initial parameters come from initTheta, so the result is
// comparable with Trainer.Train up to float32 rounding.
func refLinear(X, K int, onehot bool, counts []float64, steps int, lr, w float64, seed uint64) []float64 {
	ls := []layer{{1, K}}
	if onehot {
		ls = []layer{{X, K}}
	}
	init := initTheta(seed, ls)
	th := make([]float64, len(init))
	for i, v := range init {
		th[i] = float64(v)
	}
	P := len(th)
	m := make([]float64, P)
	v := make([]float64, P)
	W := 0.0
	for _, c := range counts {
		W += c
	}
	c := make([]float64, len(counts))
	for i := range counts {
		c[i] = counts[i] / W
	}
	logits := func() []float64 {
		f := make([]float64, X*K)
		for x := range X {
			for y := range K {
				if onehot {
					f[x*K+y] = th[x*K+y] + th[X*K+y]
				} else {
					f[x*K+y] = th[y]*float64(x) + th[K+y]
				}
			}
		}
		return f
	}
	pb1, pb2 := 1.0, 1.0
	for range steps {
		f := logits()
		gf := make([]float64, X*K)
		mx := math.Inf(-1)
		for _, v := range f {
			mx = math.Max(mx, v)
		}
		z := 0.0
		for _, v := range f {
			z += math.Exp(v - mx)
		}
		for x := range X {
			lm := math.Inf(-1)
			cx := 0.0
			for y := range K {
				lm = math.Max(lm, f[x*K+y])
				cx += c[x*K+y]
			}
			lz := 0.0
			for y := range K {
				lz += math.Exp(f[x*K+y] - lm)
			}
			for y := range K {
				s := math.Exp(f[x*K+y]-lm) / lz
				q := math.Exp(f[x*K+y]-mx) / z
				gf[x*K+y] = (1-w)*cx*s - c[x*K+y] + w*q
			}
		}
		gt := make([]float64, P)
		for x := range X {
			for y := range K {
				if onehot {
					gt[x*K+y] += gf[x*K+y]
					gt[X*K+y] += gf[x*K+y]
				} else {
					gt[y] += float64(x) * gf[x*K+y]
					gt[K+y] += gf[x*K+y]
				}
			}
		}
		pb1 *= adamBeta1
		pb2 *= adamBeta2
		for i := range th {
			m[i] = adamBeta1*m[i] + (1-adamBeta1)*gt[i]
			v[i] = adamBeta2*v[i] + (1-adamBeta2)*gt[i]*gt[i]
			th[i] -= lr * (m[i] / (1 - pb1)) / (math.Sqrt(v[i]/(1-pb2)) + adamEps)
		}
	}
	return logits()
}

// randomTable returns a random joint table over n cells (uniforms, normalised).
func randomTable(rng *rand.Rand, n int) []float64 {
	p := make([]float64, n)
	s := 0.0
	for i := range p {
		p[i] = rng.Float64() + 0.05
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// drawSamples draws n cell indices from p.
func drawSamples(rng *rand.Rand, p []float64, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		u, k, acc := rng.Float64(), 0, p[0]
		for u > acc && k < len(p)-1 {
			k++
			acc += p[k]
		}
		out[i] = int32(k)
	}
	return out
}

// countsOf is the histogram of samples over n cells.
func countsOf(samples []int32, n int) []float64 {
	c := make([]float64, n)
	for _, s := range samples {
		c[s]++
	}
	return c
}

// klJoint is KL(p || q) with q = softmax over all cells of the logits, in float64.
func klJoint(p, logits []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, v)
	}
	z := 0.0
	for _, v := range logits {
		z += math.Exp(v - mx)
	}
	kl := 0.0
	for i, pi := range p {
		if pi > 0 {
			logq := logits[i] - mx - math.Log(z)
			kl += pi * (math.Log(pi) - logq)
		}
	}
	return kl
}

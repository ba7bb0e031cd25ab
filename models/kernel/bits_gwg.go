package kernel

import (
	"math"
	"math/rand/v2"
)

// The single-bit Gibbs-with-Gradients proposal (Grathwohl et al., ICML 2021) on states
// of {0,1}^D, D ≤ MaxBitsD, of methods/pcd's objective on binary tables: the chain
// in lane p of n lanes, state s (bit i its coordinate i), flips bit i with probability
// q(i|s) ∝ exp(d_i/2), d_i = (1 − 2s_i)·∂ℓ/∂x_i, the first-order change of log q(x) by
// the flip, read from the input gradient g [D][n] of ℓ = LSE_y f at the chains.

// gwgScores are the proposal's log-weights d_i/2 of the chain in lane p.
func gwgScores(g []float32, s uint32, D, n, p int, out []float64) {
	for i := range D {
		sign := 1.0
		if (s>>i)&1 == 1 {
			sign = -1
		}
		out[i] = sign * float64(g[i*n+p]) / 2
	}
}

// GWGDraw draws the bit i the chain in lane p flips (from rng: one Float64) and
// returns it with log q(i|s).
func GWGDraw(rng *rand.Rand, g []float32, s uint32, D, n, p int) (int, float64) {
	var sc [MaxBitsD]float64
	gwgScores(g, s, D, n, p, sc[:D])
	m := math.Inf(-1)
	for _, v := range sc[:D] {
		m = max(m, v)
	}
	var z float64
	for _, v := range sc[:D] {
		z += math.Exp(v - m)
	}
	u := rng.Float64() * z
	i := 0
	for ; i < D-1; i++ {
		u -= math.Exp(sc[i] - m)
		if u < 0 {
			break
		}
	}
	return i, sc[i] - m - math.Log(z)
}

// GWGLogProb is log q(i|s) of flipping bit i of the state s in lane p (g the gradient
// at s): the reverse move's probability from a proposal s.
func GWGLogProb(g []float32, s uint32, i, D, n, p int) float64 {
	var sc [MaxBitsD]float64
	gwgScores(g, s, D, n, p, sc[:D])
	m := math.Inf(-1)
	for _, v := range sc[:D] {
		m = max(m, v)
	}
	var z float64
	for _, v := range sc[:D] {
		z += math.Exp(v - m)
	}
	return sc[i] - m - math.Log(z)
}

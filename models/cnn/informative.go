package cnn

import (
	"fmt"
	"math/rand/v2"
)

// classStart is JEM++'s informative initialisation of the SGLD buffer and its restarts
// (Yang & Ji, ICCV 2021; SGLD.Informative): a class by its frequency in the
// training draws, then a draw of that class's Gaussian, the mean and maximum-likelihood
// covariance of its draws (fitGauss; a class with fewer than 2 draws takes the pooled
// fit).
type classStart struct {
	cum   []float64 // cumulative class frequencies
	gauss []gaussNoise
	z     []float64
}

func newClassStart(data Data) (*classStart, error) {
	D, n := data.S*data.S, len(data.Y)
	pooled, err := fitGauss(data.X, n, D, 1)
	if err != nil {
		return nil, fmt.Errorf("informative start: %w", err)
	}
	cs := &classStart{cum: make([]float64, data.K), gauss: make([]gaussNoise, data.K), z: make([]float64, D)}
	acc := 0.0
	for c := range data.K {
		var x []float32
		for i, y := range data.Y {
			if y == c {
				x = append(x, data.X[i*D:(i+1)*D]...)
			}
		}
		m := len(x) / D
		acc += float64(m) / float64(n)
		cs.cum[c] = acc
		cs.gauss[c] = pooled
		if m >= 2 {
			if cs.gauss[c], err = fitGauss(x, m, D, 1); err != nil {
				return nil, fmt.Errorf("informative start, class %d: %w", c, err)
			}
		}
	}
	cs.cum[data.K-1] = 1
	return cs, nil
}

// draw fills row [D] with a draw: row = μ_c + z·L_cᵀ, z standard normal.
func (cs *classStart) draw(rng *rand.Rand, row []float32) {
	u, c := rng.Float64(), 0
	for c < len(cs.cum)-1 && u >= cs.cum[c] {
		c++
	}
	g := &cs.gauss[c]
	D := g.D
	for k := range D {
		cs.z[k] = rng.NormFloat64()
	}
	for d := range D {
		v := float64(g.mean[d])
		for k := range D {
			v += cs.z[k] * float64(g.lT[k*D+d])
		}
		row[d] = float32(v)
	}
}

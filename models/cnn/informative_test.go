package cnn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestClassStart: the informative start draws a class by its frequency in the data and
// then that class's Gaussian: on two classes of independent pixels with known means
// and variances (70% of the draws N(−0.5, 0.1²), 30% N(0.5, 0.2²) per pixel), 4000 draws
// match the frequencies, means and variances within 4 standard errors.
func TestClassStart(t *testing.T) {
	const S, n = 4, 3000
	D := S * S
	rng := rand.New(rand.NewPCG(1, 2))
	data := Data{X: make([]float32, n*D), Y: make([]int, n), S: S, K: 2}
	mu, sd := []float64{-0.5, 0.5}, []float64{0.1, 0.2}
	for i := range n {
		y := 0
		if rng.Float64() < 0.3 {
			y = 1
		}
		data.Y[i] = y
		for d := range D {
			data.X[i*D+d] = float32(mu[y] + sd[y]*rng.NormFloat64())
		}
	}
	cs, err := newClassStart(data)
	if err != nil {
		t.Fatal(err)
	}
	const m = 4000
	row := make([]float32, D)
	var count [2]float64
	var sum, sq [2][]float64
	for c := range 2 {
		sum[c], sq[c] = make([]float64, D), make([]float64, D)
	}
	for range m {
		cs.draw(rng, row)
		var mean float64
		for _, v := range row {
			mean += float64(v) / float64(D)
		}
		c := 0
		if mean > 0 {
			c = 1
		}
		count[c]++
		for d, v := range row {
			sum[c][d] += float64(v)
			sq[c][d] += float64(v) * float64(v)
		}
	}
	frac := count[1] / m
	var want float64
	for _, y := range data.Y {
		want += float64(y) / n
	}
	if se := math.Sqrt(want * (1 - want) / m); math.Abs(frac-want) > 4*se {
		t.Errorf("class 1 drawn %.4f of the time, data %.4f (SE %.4f)", frac, want, se)
	}
	for c := range 2 {
		for d := range D {
			mean := sum[c][d] / count[c]
			v := sq[c][d]/count[c] - mean*mean
			if se := sd[c] / math.Sqrt(count[c]); math.Abs(mean-mu[c]) > 4*se+0.01 {
				t.Errorf("class %d pixel %d: mean %.4f, want %.4f ± %.4f", c, d, mean, mu[c], se)
			}
			if w := sd[c] * sd[c]; math.Abs(v/w-1) > 4*math.Sqrt(2/count[c])+0.08 {
				t.Errorf("class %d pixel %d: variance %.5f, want %.5f", c, d, v, w)
			}
		}
	}
	// jem-sgld from the informative start trains (JEM++: 5 steps).
	sp, _ := Parse("cnn:4")
	small := barRing(256, 8, 0.5, 3)
	_, st, err := Train(context.Background(), sp, small, TrainOptions{Objective: SGLD{Steps: 5, BufferSize: 64, Informative: true}, Steps: 3, Batch: 16, Seed: 1})
	if err != nil || st.Diverged || math.IsNaN(float64(st.Loss[len(st.Loss)-1])) {
		t.Fatalf("informative jem-sgld: %v, diverged %v, loss %v", err, st.Diverged, st.Loss)
	}
}

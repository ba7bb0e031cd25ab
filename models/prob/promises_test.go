package prob

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteAUROC is the AUROC by the double sum over value pairs.
func bruteAUROC(score, in, out []float64) float64 {
	var s, si, so float64
	for a := range score {
		si += in[a]
		so += out[a]
		for b := range score {
			switch {
			case score[a] > score[b]:
				s += in[a] * out[b]
			case score[a] == score[b]:
				s += in[a] * out[b] / 2
			}
		}
	}
	return s / (si * so)
}

func TestAUROC(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.Float64()
		}
		return v
	}
	tests := []struct {
		name           string
		score, in, out []float64
		want           float64 // NaN: compare with the brute force
	}{
		{"perfect", []float64{0, 1}, []float64{0, 1}, []float64{1, 0}, 1},
		{"reversed", []float64{1, 0}, []float64{0, 1}, []float64{1, 0}, 0},
		{"constant score", []float64{3, 3, 3}, []float64{0.2, 0.3, 0.5}, []float64{0.6, 0.2, 0.2}, 0.5},
		{"same distributions", []float64{0.1, 0.5, 0.2}, []float64{0.2, 0.3, 0.5}, []float64{0.2, 0.3, 0.5}, 0.5},
		{"ties", []float64{1, 1, 2, 0}, []float64{0.1, 0.2, 0.3, 0.4}, []float64{0.25, 0.25, 0.25, 0.25}, math.NaN()},
		{"random", rnd(50), rnd(50), rnd(50), math.NaN()},
		{"random with ties", []float64{1, 2, 2, 3, 1, 3, 2}, rnd(7), rnd(7), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if math.IsNaN(want) {
				want = bruteAUROC(tt.score, tt.in, tt.out)
			}
			if got := AUROC(tt.score, tt.in, tt.out); math.Abs(got-want) > 1e-12 {
				t.Errorf("AUROC = %.15g, want %.15g", got, want)
			}
		})
	}
}

func TestCalibrationError(t *testing.T) {
	p := []float64{0.1, 0.3, 0.4, 0.2} // p(y|x=0) = (.25, .75), p(y|x=1) = (2/3, 1/3)
	tests := []struct {
		name string
		q    []float64
		want float64
	}{
		{"bayes classifier", p, 0},
		{"bayes conditional, other marginal", []float64{0.05, 0.15, 0.4, 0.2}, 0},
		// q(y|x=0) = (.5,.5): ŷ=0 (tie), confidence .5 vs p(0|0) = .25; q(y|x=1) = (.9,.1):
		// ŷ=0, .9 vs 2/3.
		{"overconfident", []float64{0.25, 0.25, 0.45, 0.05}, 0.4*0.25 + 0.6*(0.9-2.0/3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CalibrationError(p, tt.q, 2, 2); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("CalibrationError = %.15g, want %.15g", got, tt.want)
			}
		})
	}
}

// TestOODCeiling: the true density as the score is the ceiling of every score's AUROC
// against uniform out-of-distribution x (Neyman–Pearson: p(x)/u(x) is the likelihood
// ratio), and a model with the true marginal reaches it.
func TestOODCeiling(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		p := make([]float64, 8*3)
		s := 0.0
		for i := range p {
			p[i] = r.Float64() * r.Float64()
			s += p[i]
		}
		for i := range p {
			p[i] /= s
		}
		px := Marginal(p, 8, 3)
		u := Uniform(8)
		ceiling := AUROC(px, px, u)
		logPx, maxPy := OODScores(p, 8, 3)
		if got := AUROC(logPx, px, u); math.Abs(got-ceiling) > 1e-12 {
			t.Fatalf("log p(x) score %g, ceiling %g", got, ceiling)
		}
		if got := AUROC(maxPy, px, u); got > ceiling+1e-12 {
			t.Fatalf("max softmax %g above the ceiling %g", got, ceiling)
		}
	}
}

// TestTVFloor: the exact expected TV of n draws' histogram against closed forms, and
// against a simulation.
func TestTVFloor(t *testing.T) {
	cases := []struct {
		name string
		p    []float64
		n    int
		want float64
	}{
		// One draw from (½, ½): the histogram is (1, 0) or (0, 1), TV ½ always.
		{"coin-one-draw", []float64{0.5, 0.5}, 1, 0.5},
		// Two draws: TV 0 with probability ½ (one each), ½ otherwise.
		{"coin-two-draws", []float64{0.5, 0.5}, 2, 0.25},
		// One draw from (¼, ¾): TV is ¾ or ¼ with probabilities ¼ and ¾.
		{"skewed-one-draw", []float64{0.25, 0.75}, 1, 0.25*0.75 + 0.75*0.25},
		{"point-mass", []float64{1, 0}, 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TVFloor(tc.p, tc.n); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("TVFloor = %v, want %v", got, tc.want)
			}
		})
	}
	p := []float64{0.5, 0.2, 0.2, 0.05, 0.05}
	rng := NewRand(1)
	const n, reps = 100, 20000
	mean := 0.0
	for range reps {
		h := make([]float64, len(p))
		for range n {
			u, c := rng.Float64(), 0
			for u > p[c] && c < len(p)-1 {
				u -= p[c]
				c++
			}
			h[c] += 1.0 / n
		}
		mean += TotalVariation(h, p) / reps
	}
	if got := TVFloor(p, n); math.Abs(got-mean) > 0.002 {
		t.Errorf("TVFloor %v, simulated %v", got, mean)
	}
}

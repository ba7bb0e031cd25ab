package prob

import (
	"math"
	"testing"
)

func approxSlice(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			return false
		}
	}
	return true
}

func TestKL(t *testing.T) {
	cases := []struct {
		name string
		p, q []float64
		want float64
	}{
		// ½·log(½/¼) + ½·log(½/¾) = ½·log(4/3).
		{"by hand", []float64{0.5, 0.5}, []float64{0.25, 0.75}, 0.5 * math.Log(4.0/3)},
		// ¼·log(¼/½) + ¾·log(¾/½) = ¾·log 3 − log 2.
		{"reversed", []float64{0.25, 0.75}, []float64{0.5, 0.5}, 0.75*math.Log(3) - math.Log(2)},
		{"equal", []float64{0.1, 0.2, 0.7}, []float64{0.1, 0.2, 0.7}, 0},
		{"zero in p", []float64{0, 1}, []float64{0.5, 0.5}, math.Log(2)},
		{"zero in both", []float64{0, 1}, []float64{0, 1}, 0},
		{"p>0 where q=0", []float64{0.5, 0.5}, []float64{1, 0}, math.Inf(1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := KL(c.p, c.q)
			if math.IsInf(c.want, 1) {
				if !math.IsInf(got, 1) {
					t.Fatalf("got %g, want +Inf", got)
				}
				return
			}
			if math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("got %.15g, want %.15g", got, c.want)
			}
		})
	}
}

func TestMarginalConditional(t *testing.T) {
	cases := []struct {
		name     string
		p        []float64
		x, k     int
		wantMarg []float64
		wantCond []float64
	}{
		{"2x2", []float64{0.1, 0.3, 0.2, 0.4}, 2, 2, []float64{0.4, 0.6}, []float64{0.25, 0.75, 1.0 / 3, 2.0 / 3}},
		{"1x3", []float64{0.2, 0.3, 0.5}, 1, 3, []float64{1}, []float64{0.2, 0.3, 0.5}},
		{"empty row is uniform", []float64{0, 0, 0, 0.5, 0.25, 0.25}, 2, 3, []float64{0, 1}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 0.5, 0.25, 0.25}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Marginal(c.p, c.x, c.k); !approxSlice(got, c.wantMarg, 1e-15) {
				t.Errorf("got marginal %v, want %v", got, c.wantMarg)
			}
			if got := Conditional(c.p, c.x, c.k); !approxSlice(got, c.wantCond, 1e-15) {
				t.Errorf("got conditional %v, want %v", got, c.wantCond)
			}
		})
	}
}

func TestKLConditional(t *testing.T) {
	p := []float64{0.1, 0.3, 0.2, 0.4} // p(y|x=0) = (¼, ¾), p(y|x=1) = (⅓, ⅔), p(x) = (0.4, 0.6)
	cases := []struct {
		name string
		q    []float64
		want float64
	}{
		{"equal", p, 0},
		{"same conditionals, other marginal", []float64{0.2, 0.6, 0.2 / 3, 0.4 / 3}, 0},
		{"uniform conditionals", []float64{0.25, 0.25, 0.25, 0.25},
			0.4*KL([]float64{0.25, 0.75}, []float64{0.5, 0.5}) + 0.6*KL([]float64{1.0 / 3, 2.0 / 3}, []float64{0.5, 0.5})},
		{"zero where p>0", []float64{0.5, 0, 0.25, 0.25}, math.Inf(1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := KLConditional(p, c.q, 2, 2)
			if math.IsInf(c.want, 1) != math.IsInf(got, 1) || (!math.IsInf(got, 1) && math.Abs(got-c.want) > 1e-12) {
				t.Fatalf("got %.15g, want %.15g", got, c.want)
			}
		})
	}
}

func TestSoftmax(t *testing.T) {
	cases := []struct {
		name   string
		logits []float64
		want   []float64
	}{
		{"zeros", []float64{0, 0, 0, 0}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"log probs", []float64{math.Log(0.1), math.Log(0.2), math.Log(0.7)}, []float64{0.1, 0.2, 0.7}},
		{"shifted by 1000", []float64{1000 + math.Log(0.1), 1000 + math.Log(0.9)}, []float64{0.1, 0.9}},
		{"+1000 and -1000", []float64{1000, -1000}, []float64{1, 0}},
		{"all -1000", []float64{-1000, -1000}, []float64{0.5, 0.5}},
		{"-Inf cell", []float64{math.Inf(-1), 0}, []float64{0, 1}},
		{"empty", []float64{}, []float64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Softmax(c.logits)
			if !approxSlice(got, c.want, 1e-12) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestFloorAndEmpirical(t *testing.T) {
	cases := []struct {
		cells int
		n     int64
		want  float64
	}{
		{4, 1000, 0.0015},
		{2, 1, 0.5},
		{100, 50, 0.99},
	}
	for _, c := range cases {
		if got := Floor(c.cells, c.n); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Floor(%d, %d): got %g, want %g", c.cells, c.n, got, c.want)
		}
	}
	if got, want := Empirical([]int64{1, 3, 0, 4}), []float64{0.125, 0.375, 0, 0.5}; !approxSlice(got, want, 0) {
		t.Errorf("Empirical: got %v, want %v", got, want)
	}
	if got, want := Empirical([]int64{0, 0}), []float64{0, 0}; !approxSlice(got, want, 0) {
		t.Errorf("Empirical of no samples: got %v, want %v", got, want)
	}
}

// TestFloorMonteCarlo checks that Floor is the expected KL(p ‖ empirical) for N = 1000
// on a 2×2 table without tiny cells (so that no cell is ever empty).
func TestFloorMonteCarlo(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	const n, reps = 1000, 4000
	rng := NewRand(Seed(23))
	sum := 0.0
	for range reps {
		sum += KL(p, Empirical(Multinomial(rng, n, p)))
	}
	got, want := sum/reps, Floor(len(p), n)
	t.Logf("mean KL %.6g, Floor %.6g, ratio %.4f", got, want, got/want)
	if math.Abs(got/want-1) > 0.1 {
		t.Fatalf("got mean KL %.6g, want Floor %.6g within 10%%", got, want)
	}
}

func TestAccuracy(t *testing.T) {
	p := []float64{0.1, 0.3, 0.25, 0.15, 0.1, 0.1} // X=3, K=2
	cases := []struct {
		name string
		q    []float64
		want float64
	}{
		{"truth is Bayes", p, 0.3 + 0.25 + 0.1},
		{"all wrong", []float64{0.9, 0.1, 0.1, 0.9, 0.1, 0.9}, 0.1 + 0.15 + 0.1},
		{"ties go to lowest y", []float64{0.25, 0.25, 0.25, 0.25, 0, 0}, 0.1 + 0.25 + 0.1},
		{"scale per row does not matter", []float64{0.001, 0.002, 0.5, 0.1, 0.2, 0.197}, 0.3 + 0.25 + 0.1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Accuracy(p, c.q, 3, 2); math.Abs(got-c.want) > 1e-15 {
				t.Fatalf("got %g, want %g", got, c.want)
			}
		})
	}
	if got, want := BayesAccuracy(p, 3, 2), 0.65; math.Abs(got-want) > 1e-15 {
		t.Errorf("BayesAccuracy: got %g, want %g", got, want)
	}
	if got, want := BayesAccuracy([]float64{0.25, 0.25, 0.25, 0.25}, 2, 2), 0.5; got != want {
		t.Errorf("BayesAccuracy of uniform: got %g, want %g", got, want)
	}
}

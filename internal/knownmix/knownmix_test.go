package knownmix

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// edge is a mixture with much of its mass outside the box: the tails' cases.
var edge = Mixture{
	W:  []float64{0.6, 0.4},
	M0: []float64{4, -1},
	M1: []float64{0, -4.5},
	SD: []float64{1, 0.8},
}

var cases = []struct {
	name string
	m    Mixture
}{
	{"standard", Standard},
	{"standard noised σ 0.5", Standard.Noised(0.5)},
	{"one component", Mixture{W: []float64{1}, M0: []float64{0.3}, M1: []float64{-0.2}, SD: []float64{0.5}}},
	{"edge", edge},
}

// TestCells: the midpoint rule of exp LogP on each of the c×c cells matches Cells (to
// the rule's error, O(h²)), and the cells sum to 1 − Outside; Standard's outside mass
// is < 1e-7, as its doc says.
func TestCells(t *testing.T) {
	const c, sub = 40, 8 // cells per side; midpoint nodes per cell side
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cells := tc.m.Cells(c, Box)
			h := 2.0 * Box / c / sub
			var sum, integral, worst float64
			for i := range c {
				for j := range c {
					var s float64
					for a := range sub {
						for b := range sub {
							x0 := -Box + (float64(i*sub+a)+0.5)*h
							x1 := -Box + (float64(j*sub+b)+0.5)*h
							lp, _, _ := tc.m.LogP(x0, x1)
							s += math.Exp(lp) * h * h
						}
					}
					worst = max(worst, math.Abs(s-cells[i*c+j]))
					integral += s
					sum += cells[i*c+j]
				}
			}
			out := tc.m.Outside(Box)
			t.Logf("Σ cells %.12f, midpoint ∫ %.12f, outside %.3g, worst cell error %.2g", sum, integral, out, worst)
			if math.Abs(sum-(1-out)) > 1e-12 {
				t.Errorf("cells sum to %.15f, want 1 − outside = %.15f", sum, 1-out)
			}
			if math.Abs(integral-(1-out)) > 1e-4 || worst > 1e-4 {
				t.Errorf("midpoint integral %.8f (want %.8f), worst cell error %.2g", integral, 1-out, worst)
			}
		})
	}
	if out := Standard.Outside(Box); out >= 1e-7 || out <= 0 {
		t.Errorf("Standard's mass outside the box %.3g, want in (0, 1e-7)", out)
	}
	if out := edge.Outside(Box); out < 0.1 {
		t.Errorf("edge's mass outside the box %.3g, want a visible share", out)
	}
}

// TestGradient: LogP's gradient matches central finite differences of its log density,
// and LSE(β) is β times both, in float32, with or without the gradient.
func TestGradient(t *testing.T) {
	pts := [][2]float64{{0, 0}, {-1.2, 0.3}, {2, -1}, {0.4, -1.5}, {-3, 2.5}, {4.5, -4.5}}
	const h = 1e-5
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range pts {
				_, g0, g1 := tc.m.LogP(p[0], p[1])
				u, _, _ := tc.m.LogP(p[0]+h, p[1])
				d, _, _ := tc.m.LogP(p[0]-h, p[1])
				f0 := (u - d) / (2 * h)
				u, _, _ = tc.m.LogP(p[0], p[1]+h)
				d, _, _ = tc.m.LogP(p[0], p[1]-h)
				f1 := (u - d) / (2 * h)
				if math.Abs(f0-g0) > 1e-5*max(1, math.Abs(f0)) || math.Abs(f1-g1) > 1e-5*max(1, math.Abs(f1)) {
					t.Errorf("at %v: gradient (%.8f, %.8f), finite differences (%.8f, %.8f)", p, g0, g1, f0, f1)
				}
			}
			n := len(pts)
			x := make([]float32, 2*n)
			for i, p := range pts {
				x[i], x[n+i] = float32(p[0]), float32(p[1])
			}
			const beta = 0.7
			lse, grad, lse2 := make([]float32, n), make([]float32, 2*n), make([]float32, n)
			tc.m.LSE(beta)(x, n, lse, grad)
			tc.m.LSE(beta)(x, n, lse2, nil)
			for i := range n {
				lp, g0, g1 := tc.m.LogP(float64(x[i]), float64(x[n+i]))
				if lse[i] != float32(beta*lp) || lse2[i] != lse[i] || grad[i] != float32(beta*g0) || grad[n+i] != float32(beta*g1) {
					t.Errorf("point %d: LSE %v (no gradient %v), gradient (%v, %v); want β·log p %v, (%v, %v)",
						i, lse[i], lse2[i], grad[i], grad[n+i], float32(beta*lp), float32(beta*g0), float32(beta*g1))
				}
			}
		})
	}
}

// TestMoments: the mean and covariance of Sample's draws match Moments within 4
// standard errors, Noised adds σ² to the covariance's diagonal, and TrainingDraws are
// Sample's draws of prob.NewRand(seed) in float32, labelled by x0 > 0.
func TestMoments(t *testing.T) {
	const n = 200000
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu, cov := tc.m.Moments()
			x0, x1 := tc.m.Sample(prob.NewRand(7), n)
			xs := [2][]float64{x0, x1}
			for a := range 2 {
				mean, se := MeanSE(xs[a])
				if math.Abs(mean-mu[a]) > 4*se {
					t.Errorf("axis %d: sample mean %.5f ± %.5f, exact %.5f", a, mean, se, mu[a])
				}
				for b := range 2 {
					prod := make([]float64, n)
					for i := range n {
						prod[i] = (xs[a][i] - mu[a]) * (xs[b][i] - mu[b])
					}
					m, se := MeanSE(prod)
					if math.Abs(m-cov[a][b]) > 4*se {
						t.Errorf("covariance %d%d: sample %.5f ± %.5f, exact %.5f", a, b, m, se, cov[a][b])
					}
				}
			}
			const sigma = 0.3
			_, cn := tc.m.Noised(sigma).Moments()
			for a := range 2 {
				for b := range 2 {
					want := cov[a][b]
					if a == b {
						want += sigma * sigma
					}
					if math.Abs(cn[a][b]-want) > 1e-12 {
						t.Errorf("noised covariance %d%d: %.12f, want %.12f", a, b, cn[a][b], want)
					}
				}
			}
			X0, X1, Y := tc.m.TrainingDraws(7, 1000)
			for i := range Y {
				if X0[i] != float32(x0[i]) || X1[i] != float32(x1[i]) || (Y[i] == 1) != (x0[i] > 0) || Y[i] > 1 {
					t.Fatalf("training draw %d: (%v, %v) class %d; Sample's (%v, %v)", i, X0[i], X1[i], Y[i], x0[i], x1[i])
				}
			}
		})
	}
}

// TestMeanSE: known values.
func TestMeanSE(t *testing.T) {
	for _, tc := range []struct {
		v        []float64
		mean, se float64
	}{
		{[]float64{1, 2, 3, 4}, 2.5, math.Sqrt(5.0 / 3 / 4)},
		{[]float64{-1, 1}, 0, 1},
		{[]float64{3, 3, 3}, 3, 0},
	} {
		if m, se := MeanSE(tc.v); math.Abs(m-tc.mean) > 1e-15 || math.Abs(se-tc.se) > 1e-15 {
			t.Errorf("MeanSE(%v) = %v, %v; want %v, %v", tc.v, m, se, tc.mean, tc.se)
		}
	}
}

// TestModelCells: a network whose parameters are all 0 (f ≡ 0) has uniform cells and
// log Z = log(K · area of the box); ModelTV is then the uniform's TV from the cells.
// A trained smoke run (Train, the exact-JEM baseline method of kernel) moves towards
// the truth.
func TestModelCells(t *testing.T) {
	spec := SmokeSpec(200)
	spec.Exact = true
	zero := make([]float32, len(kernel.InitMLP2D(4, spec.Hidden, spec.K)))
	const G = 20
	q, lz, err := ModelCells(spec.Hidden, spec.K, zero, G, Box)
	if err != nil {
		t.Fatal(err)
	}
	uni := make([]float64, G*G)
	for i := range q {
		uni[i] = 1.0 / (G * G)
		if math.Abs(q[i]-uni[i]) > 1e-12 {
			t.Fatalf("cell %d: %v, want %v", i, q[i], uni[i])
		}
	}
	if want := math.Log(2 * 4 * Box * Box); math.Abs(lz-want) > 1e-9 {
		t.Errorf("log Z %.9f, want %.9f", lz, want)
	}
	tv, err := Standard.ModelTV(spec.Hidden, spec.K, zero, G, Box)
	if want := prob.TotalVariation(uni, Standard.Cells(G, Box)); err != nil || math.Abs(tv-want) > 1e-12 {
		t.Errorf("ModelTV %v (%v), want %v", tv, err, want)
	}
	r, theta0 := Train(t, spec, Standard, 3)
	tv0, _ := Standard.ModelTV(spec.Hidden, spec.K, theta0, G, Box)
	tv1, _ := Standard.ModelTV(spec.Hidden, spec.K, r.Theta, G, Box)
	t.Logf("exact JEM, %d steps: cell TV %.3f (init %.3f)", spec.Steps, tv1, tv0)
	if tv1 >= tv0 {
		t.Errorf("training did not move towards the truth: cell TV %.3f, init %.3f", tv1, tv0)
	}
}

// TestFiniteDiff: the central difference of a quadratic is exact up to rounding (the
// float32 step's, ~1e-5 here), and x is restored bit for bit.
func TestFiniteDiff(t *testing.T) {
	x := []float32{0.5, -1.25, 2}
	f := func() float64 {
		var s float64
		for i, v := range x {
			s += float64(i+1) * float64(v) * float64(v)
		}
		return s
	}
	for p := range x {
		old := x[p]
		fd := FiniteDiff(f, x, p, 1e-2)
		if want := 2 * float64(p+1) * float64(old); math.Abs(fd-want) > 1e-4 || x[p] != old {
			t.Errorf("entry %d: %.8f, want %.8f (x[p] %v, was %v)", p, fd, want, x[p], old)
		}
	}
}

// TestWithOption: WithOption sets each of the grid's bool axes (those of schemas, and
// of the method packages linked in) to the opposite of its default.
func TestWithOption(t *testing.T) {
	n := 0
	for _, a := range schemas.AxisDefs {
		d, ok := a.Field.Default().(bool)
		if !ok {
			continue
		}
		n++
		g := WithOption(t, a.Key(), !d)
		if got := a.Field.Get(&g); got != !d {
			t.Errorf("%s: set to %v, reads %v", a.Key(), !d, got)
		}
	}
	if n == 0 {
		t.Error("no bool axis to set")
	}
}

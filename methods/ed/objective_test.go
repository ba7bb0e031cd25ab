package ed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// hook2D is ed's hook of kind (the plane's and the block tasks' type).
func hook2D(t *testing.T, kind string) func(schemas.Grid, *kernel.Spec2D) error {
	t.Helper()
	plug := methods.Plane
	if kind == methods.KindBlocks {
		plug = methods.Blocks
	}
	h, ok := plug.Of(Name)
	if !ok {
		t.Fatalf("no %s hook", kind)
	}
	return h
}

// grid is the default point with ed's options o.
func grid(o Options) schemas.Grid {
	g := schemas.DefaultGrid()
	g.EDNegatives, g.EDT, g.EDW = o.M, o.T, o.W
	return g
}

// TestHooks2D: Defaults are the grid axes' defaults; the plane's and the block
// tasks' hooks set ed's objective with the point's options, and refuse options out of
// range.
func TestHooks2D(t *testing.T) {
	if o := optionsOf(schemas.DefaultGrid()); o != Defaults {
		t.Errorf("the axes' defaults %+v, Defaults %+v", o, Defaults)
	}
	for _, kind := range []string{methods.KindPlane, methods.KindBlocks} {
		t.Run(kind, func(t *testing.T) {
			h := hook2D(t, kind)
			var s kernel.Spec2D
			if err := h(grid(Options{M: 8, T: 0.25, W: 0}), &s); err != nil {
				t.Fatal(err)
			}
			if s.Objective == nil {
				t.Fatal("no objective set")
			}
			o, ok := s.Objective().(*Objective)
			if !ok || o.m != 8 || o.t != 0.25 || o.w != 0 || o.Lanes(64, 2) != 64*9 || o.Params() != 0 || o.GradEvals(64) != 0 {
				t.Errorf("objective %+v", s.Objective())
			}
			for _, bad := range []Options{{M: 0, T: 1, W: 1}, {M: 65, T: 1, W: 1}, {M: 4, T: 0, W: 1}, {M: 4, T: math.Inf(1), W: 1}, {M: 4, T: 1, W: -1}} {
				if err := h(grid(bad), &kernel.Spec2D{}); err == nil || !strings.Contains(err.Error(), "must be") {
					t.Errorf("options %+v: error %v", bad, err)
				}
			}
		})
	}
}

// TestLossCoefficients: the loss's dL/dE per lane matches central finite differences.
func TestLossCoefficients(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    int
		w    float32
	}{{"M=3 w=1", 3, 1}, {"M=5 w=0", 5, 0}, {"M=1 w=0.3", 1, 0.3}} {
		t.Run(tc.name, func(t *testing.T) {
			const B = 16
			rng := prob.NewRand(9)
			e := make([]float32, B*(1+tc.m))
			for i := range e {
				e[i] = float32(rng.NormFloat64() * 2)
			}
			coef := make([]float32, len(e))
			Loss(e, B, tc.m, tc.w, coef)
			at := func() float64 { return float64(Loss(e, B, tc.m, tc.w, make([]float32, len(e)))) }
			for _, p := range []int{0, 5, B, B + 7, tc.m*B + 2} {
				if fd := knownmix.FiniteDiff(at, e, p, 1e-2); math.Abs(fd-float64(coef[p])) > 1e-4 {
					t.Errorf("lane %d: coef %.6f, finite difference %.6f", p, coef[p], fd)
				}
			}
		})
	}
}

// truthCase is a known density in D dimensions: n exact draws into x [dim][P] (lanes
// 0..n) and log p at n points of x.
type truthCase struct {
	name   string
	dim    int
	binary bool
	o      Options
	draw   func(rng *rand.Rand, x []float32, P, n int)
	logp   func(x []float32, P, p int) float64
}

// TestLossMinimisedAtTruth: on exact draws of a known density and exact perturbations,
// the loss of E = β·log p (w = 1) is least at β = 1 among nearby β, and dL/dβ at β = 1
// is 0 within 3 standard errors: with a symmetric perturbation the truth minimises ED
// for any M. The plane's mixture, an anisotropic Gaussian in D = 6 and a product of
// Bernoullis on {0,1}^8 (the bit-flip perturbation).
func TestLossMinimisedAtTruth(t *testing.T) {
	const B = 16384
	runtime.LockOSThread() // kernel.ClearUpper acts on this thread
	defer runtime.UnlockOSThread()
	sd := []float64{0.5, 1, 1.5, 0.7, 2, 1.2}
	pb := []float64{0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.6, 0.8}
	mix := func(o Options) truthCase {
		return truthCase{name: "plane mixture", dim: 2, o: o,
			draw: func(_ *rand.Rand, x []float32, P, n int) {
				x0, x1 := knownmix.Standard.Sample(prob.NewRand(5), n)
				for i := range n {
					x[i], x[P+i] = float32(x0[i]), float32(x1[i])
				}
			},
			logp: func(x []float32, P, p int) float64 {
				lp, _, _ := knownmix.Standard.LogP(float64(x[p]), float64(x[P+p]))
				return lp
			}}
	}
	cases := []truthCase{
		mix(Defaults), mix(Options{M: 4, T: 0.25, W: 1}), mix(Options{M: 16, T: 1, W: 1}),
		{name: "gaussian D=6", dim: 6, o: Options{M: 4, T: 0.5, W: 1},
			draw: func(rng *rand.Rand, x []float32, P, n int) {
				for i := range n {
					for c, s := range sd {
						x[c*P+i] = float32(s * rng.NormFloat64())
					}
				}
			},
			logp: func(x []float32, P, p int) float64 {
				var l float64
				for c, s := range sd {
					z := float64(x[c*P+p]) / s
					l -= z*z/2 + math.Log(s)
				}
				return l
			}},
		{name: "bernoulli D=8", dim: 8, binary: true, o: Options{M: 4, T: 0.1, W: 1},
			draw: func(rng *rand.Rand, x []float32, P, n int) {
				for i := range n {
					for c, q := range pb {
						x[c*P+i] = bit(rng.Float64() < q)
					}
				}
			},
			logp: func(x []float32, P, p int) float64 {
				var l float64
				for c, q := range pb {
					if x[c*P+p] > 0.5 {
						l += math.Log(q)
					} else {
						l += math.Log(1 - q)
					}
				}
				return l
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" "+optString(tc.o), func(t *testing.T) {
			o := New(tc.o)
			P := o.Lanes(B, tc.dim)
			x := make([]float32, tc.dim*P)
			rng := prob.NewRand(7)
			tc.draw(rng, x, P, B)
			st := kernel.Step{B: B, P: P, Dim: tc.dim, Binary: tc.binary, X: x, Rng: rng}
			o.Begin(&st)
			o.Fill(&st)
			logp := make([]float32, P)
			for p := range P {
				logp[p] = float32(tc.logp(x, P, p))
			}
			e, coef := make([]float32, P), make([]float32, P)
			loss := func(beta float64) float64 {
				for p := range P {
					e[p] = float32(beta) * logp[p]
				}
				clear(coef)
				return float64(o.Loss(&st, e, coef))
			}
			betas := []float64{0.6, 0.8, 0.9, 1, 1.1, 1.25, 1.6}
			ls, best := make([]float64, len(betas)), 0
			for i, b := range betas {
				if ls[i] = loss(b); ls[i] < ls[best] {
					best = i
				}
			}
			loss(1)
			// dL/dβ = Σ_lanes coef·log p; per data point its own terms (independent draws).
			per := make([]float64, B)
			for i := range B {
				d := float64(coef[i]) * float64(logp[i])
				for j := range tc.o.M {
					d += float64(coef[B+j*B+i]) * float64(logp[B+j*B+i])
				}
				per[i] = d * B
			}
			mean, se := knownmix.MeanSE(per)
			t.Logf("losses %.5f at β %v; dL/dβ at 1 = %.4f ± %.4f", ls, betas, mean, se)
			if betas[best] != 1 {
				t.Errorf("least loss at β = %g, want 1", betas[best])
			}
			if math.Abs(mean) > 3*se {
				t.Errorf("dL/dβ at β = 1 is %.4f, more than 3 standard errors (%.4f) from 0", mean, se)
			}
		})
	}
}

func optString(o Options) string { return fmt.Sprintf("M=%d t=%g w=%g", o.M, o.T, o.W) }

// TestPerturbMoments: the perturbations' moments in D = 5: Gaussian, x'_ij − x_i has
// variance 2t per coordinate and two negatives of one point covary by t; Bernoulli,
// every lane is a state of {0,1}^D and a negative differs from its data point in a
// coordinate with probability 2ε(1−ε), two negatives of one point differ from it in
// the same coordinate with probability ε(1−ε)² + ε²(1−ε) (y flipped and neither ξ_j, or
// y kept and both). Each within 5 standard errors.
func TestPerturbMoments(t *testing.T) {
	const B, M, D = 4096, 3, 5
	for _, tc := range []struct {
		name   string
		binary bool
		t      float64
	}{{"gaussian t=0.7", false, 0.7}, {"bernoulli eps=0.2", true, 0.2}} {
		t.Run(tc.name, func(t *testing.T) {
			o := New(Options{M: M, T: tc.t, W: 1})
			P := o.Lanes(B, D)
			rng := prob.NewRand(11)
			x := make([]float32, D*P)
			for i := range B {
				for c := range D {
					if tc.binary {
						x[c*P+i] = bit(rng.IntN(2) == 1)
					} else {
						x[c*P+i] = float32(rng.NormFloat64())
					}
				}
			}
			st := kernel.Step{B: B, P: P, Dim: D, Binary: tc.binary, X: x, Rng: rng}
			o.Begin(&st)
			o.Fill(&st)
			var one, two []float64 // per (point, coordinate): negative 0's statistic, negatives 0 and 1's
			for i := range B {
				for c := range D {
					d0, d1 := float64(x[c*P+B+i]-x[c*P+i]), float64(x[c*P+2*B+i]-x[c*P+i])
					if tc.binary {
						for j := range M {
							if v := x[c*P+B+j*B+i]; v != 0 && v != 1 {
								t.Fatalf("lane %d coordinate %d is %v, not a bit", B+j*B+i, c, v)
							}
						}
						one = append(one, math.Abs(d0))
						two = append(two, math.Abs(d0)*math.Abs(d1))
					} else {
						one = append(one, d0*d0)
						two = append(two, d0*d1)
					}
				}
			}
			want1, want2 := 2*tc.t, tc.t
			if e := tc.t; tc.binary {
				want1, want2 = 2*e*(1-e), e*(1-e)*(1-e)+e*e*(1-e)
			}
			for _, s := range []struct {
				what string
				v    []float64
				want float64
			}{{"one negative", one, want1}, {"two negatives", two, want2}} {
				mean, se := knownmix.MeanSE(s.v)
				t.Logf("%s: %.4f ± %.4f, want %.4f", s.what, mean, se, s.want)
				if math.Abs(mean-s.want) > 5*se {
					t.Errorf("%s: %.4f ± %.4f, want %.4f", s.what, mean, se, s.want)
				}
			}
		})
	}
}

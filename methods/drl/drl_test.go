package drl

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// step is a Step of the B draws x for the objective's lanes, its model β·log p.
func step(o *Objective, B int, x0, x1 []float64, beta float64, seed uint64) *kernel.Step {
	P := o.Lanes(B, 2)
	st := &kernel.Step{Step: 1, B: B, P: P, Box: knownmix.Box, X: make([]float32, 2*P), Y: make([]int32, B),
		Rng: prob.NewRand(seed), Noise: prob.NewRand(seed + 1), LSE: knownmix.Standard.LSE(beta)}
	for i := range B {
		st.X[i], st.X[P+i] = float32(x0[i]), float32(x1[i])
	}
	return st
}

// TestGradientZeroAtTruth: on exact draws x of the mixture, the recovery-likelihood
// gradient along β of the energies β·log p, −mean log p(x) + mean log p(x'), x' the
// Langevin negatives from x̃ = x + σε, is 0 within 3 standard errors at β = 1 (x given
// x̃ is then exactly q(·|x̃), so x' and x share a law) and pushes β toward 1 beyond 3
// standard errors at β = 0.8 (negative) and 1.25 (positive): with MH at the defaults
// and with 200 steps. Unadjusted Langevin (the paper's) at 30 steps and b² 0.25 is
// biased at β = 1 (its chains are broader than q(·|x̃)): that case wants the bias.
func TestGradientZeroAtTruth(t *testing.T) {
	const B = 8192
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x0, x1 := knownmix.Standard.Sample(prob.NewRand(5), B)
	cases := []struct {
		name   string
		o      Options
		biased bool // want dL/dβ at β = 1 beyond 3 standard errors from 0 (and nothing else)
	}{
		{"defaults (MH, 30 steps)", defaults, false},
		{"MH, 200 steps", Options{Sigma: 0.5, Steps: 200, Step: 0.5, MH: true}, false},
		{"MH, 200 steps, σ 1", Options{Sigma: 1, Steps: 200, Step: 0.5, MH: true}, false},
		{"unadjusted, 30 steps, b² 0.25 (biased)", Options{Sigma: 0.5, Steps: 30, Step: 0.25}, true},
	}
	for _, c := range cases {
		for _, beta := range []float64{0.8, 1, 1.25} {
			t.Run(fmt.Sprintf("%s, β %g", c.name, beta), func(t *testing.T) {
				o := NewObjective(c.o)
				st := step(o, B, x0, x1, beta, 6)
				o.Begin(st)
				o.Fill(st)
				res := &kernel.Result2D{}
				o.End(st, res)
				kernel.ClearUpper()
				P := st.P
				d := make([]float64, B)
				for i := range B {
					a, _, _ := knownmix.Standard.LogP(float64(st.X[i]), float64(st.X[P+i]))
					b, _, _ := knownmix.Standard.LogP(float64(st.X[B+i]), float64(st.X[P+B+i]))
					d[i] = b - a
				}
				mean, se := knownmix.MeanSE(d)
				t.Logf("%s, β %g: dL/dβ = %.5f ± %.5f (%.1f SE); acceptance %.3f", c.name, beta, mean, se, mean/se, res.Stats["drl_accept"])
				switch {
				case c.biased:
					if beta == 1 && math.Abs(mean) < 3*se {
						t.Errorf("unadjusted: dL/dβ at β = 1 is %.5f, within 3 standard errors (%.5f) of 0: the bias this case documents is gone", mean, se)
					}
				case beta == 1 && math.Abs(mean) > 3*se:
					t.Errorf("dL/dβ at β = 1 is %.5f, more than 3 standard errors (%.5f) from 0", mean, se)
				case beta < 1 && mean > -3*se:
					t.Errorf("dL/dβ at β = %g is %.5f, not negative beyond 3 standard errors (%.5f)", beta, mean, se)
				case beta > 1 && mean < 3*se:
					t.Errorf("dL/dβ at β = %g is %.5f, not positive beyond 3 standard errors (%.5f)", beta, mean, se)
				}
			})
		}
	}
}

// TestCoefficients: Loss's derivatives match central finite differences of Loss.
func TestCoefficients(t *testing.T) {
	const B = 16
	o := NewObjective(defaults)
	st := &kernel.Step{B: B, P: o.Lanes(B, 2)}
	rng := prob.NewRand(4)
	lse := make([]float32, st.P)
	for i := range lse {
		lse[i] = float32(rng.NormFloat64())
	}
	coef := make([]float32, st.P)
	o.Loss(st, lse, coef)
	for _, p := range []int{0, 9, B, 2*B - 1} {
		fd := knownmix.FiniteDiff(func() float64 { return float64(o.Loss(st, lse, make([]float32, st.P))) }, lse, p, 1e-2)
		if math.Abs(fd-float64(coef[p])) > 1e-4 {
			t.Errorf("lane %d: coef %.6f, finite difference %.6f", p, coef[p], fd)
		}
	}
}

// TestTrains: DRL trains a 2-D run through kernel.Train2D (spec2D) without diverging,
// with MH (the defaults) and unadjusted, and two runs of one seed agree bit for bit;
// the model's cell TV from the truth is reported.
func TestTrains(t *testing.T) {
	for _, c := range []struct {
		name string
		g    schemas.Grid
	}{{"defaults (MH)", schemas.Grid{}}, {"unadjusted", knownmix.WithOption(t, "drl_mh", false)}} {
		t.Run(c.name, func(t *testing.T) {
			spec := knownmix.SmokeSpec(300)
			if err := spec2D(c.g, &spec); err != nil {
				t.Fatal(err)
			}
			r, theta := knownmix.Train(t, spec, knownmix.Standard, 3)
			tv0, _ := knownmix.Standard.ModelTV(spec.Hidden, 2, theta, 20, knownmix.Box)
			tv, _ := knownmix.Standard.ModelTV(spec.Hidden, 2, r.Theta, 20, knownmix.Box)
			t.Logf("%s: loss %.4f, budget %d passes per step, stats %v; cell TV %.3f (init %.3f)", c.name, r.Loss, spec.GradEvalsPerStep(2), r.Stats, tv, tv0)
			if _, ok := r.Stats["drl_accept"]; ok != (c.name != "unadjusted") {
				t.Errorf("stats %v", r.Stats)
			}
		})
	}
}

package snl

import (
	"math"
	"runtime"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// logZs are log ∫ p(x)^β dx over the box for each β, by the midpoint rule on 500²
// cells. The upper AVX state is cleared before each β's 250,000 math.Exp: Go's
// asynchronous preemption restores all 32 ZMM registers on an AVX-512 CPU in the simd
// build (runtime/preempt_amd64.s) and leaves it dirty, and the scalar math then ran
// ~20× slower (1.1 s for this function against 29 ms with GODEBUG=asyncpreemptoff=1).
// The caller locks its OS thread.
func logZs(betas []float64) []float64 {
	const n = 500
	kernel.ClearUpper()
	h := 2.0 * knownmix.Box / n
	lp := make([]float64, 0, n*n)
	for i := range n {
		a := -knownmix.Box + (float64(i)+0.5)*h
		for j := range n {
			l, _, _ := knownmix.Standard.LogP(a, -knownmix.Box+(float64(j)+0.5)*h)
			lp = append(lp, l)
		}
	}
	out := make([]float64, len(betas))
	for k, beta := range betas {
		kernel.ClearUpper()
		m := math.Inf(-1)
		for _, v := range lp {
			m = max(m, beta*v)
		}
		var s float64
		for _, v := range lp {
			s += math.Exp(beta*v - m)
		}
		out[k] = m + math.Log(s*h*h)
	}
	return out
}

// step is a Step of the B draws x for the objective's lanes, its training draws
// the same points.
func step(o *Objective, B int, x0, x1 []float64, seed uint64) *kernel.Step {
	P := o.Lanes(B, 2)
	st := &kernel.Step{Step: 2, B: B, P: P, Dim: 2, Box: knownmix.Box, X: make([]float32, 2*P), Y: make([]int32, B),
		Rng: prob.NewRand(seed), Noise: prob.NewRand(seed + 1), Extra: make([]float32, 1), ExtraGrad: make([]float32, 1),
		Data: [][]float32{make([]float32, B), make([]float32, B)}}
	for i := range B {
		st.X[i], st.X[P+i] = float32(x0[i]), float32(x1[i])
		st.Data[0][i], st.Data[1][i] = st.X[i], st.X[P+i]
	}
	return st
}

// TestMinimisedAtTruth: on exact draws of the mixture and proposal draws, with b the
// exact log Z of β·log p on the box, dL/db is 0 within 3 standard errors for every
// tested β (b = log Z minimises the bound); the loss L(β, log Z(β)) (then the NLL of
// p^β/Z(β), up to the IS error) is least at β = 1; and dL/dβ at β = 1, b = log Z(1)
// (≈ 0: the mixture's mass outside the box is 5.7e-8) is 0 within 3 standard errors.
func TestMinimisedAtTruth(t *testing.T) {
	const B = 16384
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	betas := []float64{0.6, 0.8, 0.9, 1, 1.1, 1.25, 1.6}
	lz := logZs(betas)
	for _, c := range []struct {
		name string
		o    Options
	}{{"gaussian proposal (default)", defaults}, {"uniform proposal", Options{N: 4, Proposal: "uniform"}}} {
		t.Run(c.name, func(t *testing.T) {
			x0, x1 := knownmix.Standard.Sample(prob.NewRand(5), B)
			o := NewObjective(c.o)
			st := step(o, B, x0, x1, 6)
			o.Begin(st)
			o.Fill(st)
			P, n := st.P, st.P-B
			lp := make([]float64, P)
			for p := range P {
				lp[p], _, _ = knownmix.Standard.LogP(float64(st.X[p]), float64(st.X[P+p]))
			}
			lse, coef := make([]float32, P), make([]float32, P)
			ls := make([]float64, len(betas))
			best := 0
			for k, beta := range betas {
				for p := range P {
					lse[p] = float32(beta * lp[p])
				}
				st.Extra[0] = float32(lz[k])
				clear(coef)
				ls[k] = float64(o.Loss(st, lse, coef))
				if ls[k] < ls[best] {
					best = k
				}
				tj := make([]float64, n) // e^{−b}·w_j, whose mean is e^{−b}Ẑ
				for j := range n {
					tj[j] = float64(coef[B+j]) * float64(n)
				}
				mt, se := knownmix.MeanSE(tj)
				g := float64(st.ExtraGrad[0])
				t.Logf("β %.2f: log Z %.5f, loss %.5f, dL/db %.5f ± %.5f (IS ESS share %.3f)", beta, lz[k], ls[k], g, se, o.ess)
				if math.Abs(1-mt-g) > 1e-4 {
					t.Errorf("β %g: dL/db %.6f, want 1 − mean e^{−b}w = %.6f", beta, g, 1-mt)
				}
				if math.Abs(g) > 3*se {
					t.Errorf("β %g: dL/db at b = log Z is %.5f, more than 3 standard errors (%.5f) from 0", beta, g, se)
				}
				if beta == 1 {
					dd, dp := make([]float64, B), make([]float64, n)
					for i := range B {
						dd[i] = -lp[i]
					}
					for j := range n {
						dp[j] = tj[j] * lp[B+j]
					}
					md, sd := knownmix.MeanSE(dd)
					mp, sp := knownmix.MeanSE(dp)
					var sum float64
					for p := range P {
						sum += float64(coef[p]) * lp[p]
					}
					se := math.Hypot(sd, sp)
					t.Logf("dL/dβ at β = 1, b = log Z = %.5f: %.5f ± %.5f (data %.4f, proposals %.4f)", lz[k], sum, se, md, mp)
					if math.Abs(sum) > 3*se {
						t.Errorf("dL/dβ at β = 1 is %.5f, more than 3 standard errors (%.5f) from 0", sum, se)
					}
				}
			}
			t.Logf("losses %.5f at β %v", ls, betas)
			if betas[best] != 1 {
				t.Errorf("least loss at β = %g, want 1", betas[best])
			}
		})
	}
}

// TestCoefficients: Loss's derivatives in ℓ and b match central finite differences.
func TestCoefficients(t *testing.T) {
	const B = 16
	x0, x1 := knownmix.Standard.Sample(prob.NewRand(2), B)
	for _, c := range []struct {
		name string
		o    Options
	}{{"gaussian", Options{N: 3, Proposal: "gaussian"}}, {"uniform", Options{N: 2, Proposal: "uniform"}}} {
		t.Run(c.name, func(t *testing.T) {
			o := NewObjective(c.o)
			st := step(o, B, x0, x1, 3)
			o.Begin(st)
			o.Fill(st)
			rng := prob.NewRand(4)
			lse := make([]float32, st.P)
			for i := range lse {
				lse[i] = float32(rng.NormFloat64() - 3)
			}
			st.Extra[0] = 0.3
			coef := make([]float32, st.P)
			o.Loss(st, lse, coef)
			db := float64(st.ExtraGrad[0])
			loss := func() float64 { return float64(o.Loss(st, lse, make([]float32, st.P))) }
			for _, p := range []int{0, 7, B, B + 5, 2*B + 1, st.P - 1} {
				fd := knownmix.FiniteDiff(loss, lse, p, 1e-3)
				if math.Abs(fd-float64(coef[p])) > 2e-3*max(1, math.Abs(fd)) {
					t.Errorf("lane %d: coef %.6f, finite difference %.6f", p, coef[p], fd)
				}
			}
			if fd := knownmix.FiniteDiff(loss, st.Extra, 0, 1e-3); math.Abs(fd-db) > 2e-3*max(1, math.Abs(fd)) {
				t.Errorf("b: gradient %.6f, finite difference %.6f", db, fd)
			}
		})
	}
}

// TestTrains: SNL trains a 2-D run through kernel.Train2D (spec2D) without diverging,
// two runs of one seed agree bit for bit, and its learned b is compared with the
// trained model's exact log Z on a 200² grid of cells (3×3 Gauss–Legendre nodes each).
func TestTrains(t *testing.T) {
	for _, c := range []struct {
		name string
		g    schemas.Grid
		tol  float64 // |b − log Z| allowed after 300 steps
	}{{"defaults (gaussian)", schemas.Grid{}, 0.3}, {"uniform", knownmix.WithOption(t, "snl_proposal", "uniform"), 0.3}} {
		t.Run(c.name, func(t *testing.T) {
			spec := knownmix.SmokeSpec(300)
			if err := spec2D(c.g, &spec); err != nil {
				t.Fatal(err)
			}
			r, theta := knownmix.Train(t, spec, knownmix.Standard, 3)
			if len(r.Extra) != 1 {
				t.Fatalf("extra parameters %v, want b", r.Extra)
			}
			_, lz, err := knownmix.ModelCells(spec.Hidden, 2, r.Theta, 200, knownmix.Box)
			if err != nil {
				t.Fatal(err)
			}
			_, lz0, _ := knownmix.ModelCells(spec.Hidden, 2, theta, 200, knownmix.Box)
			tv, _ := knownmix.Standard.ModelTV(spec.Hidden, 2, r.Theta, 20, knownmix.Box)
			b := r.Stats["log_z_learned"]
			t.Logf("%s: learned log Z %.4f, exact %.4f (gap %+.4f; last IS log Ẑ %.4f, ESS share %.3f); log Z at init %.4f; loss %.4f; cell TV %.3f",
				c.name, b, lz, b-lz, r.Stats["log_z_is"], r.Stats["is_ess_share"], lz0, r.Loss, tv)
			if math.Abs(b-lz) > c.tol {
				t.Errorf("learned log Z %.4f, exact %.4f: gap over %g", b, lz, c.tol)
			}
		})
	}
}

package kernel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// Known-answer tests of the recipes' samplers and of ED's loss, on a fixed energy whose
// distribution is known: the log density of an isotropic Gaussian mixture well inside
// the box (its mass outside [−5, 5]² is 5.7e-8, from the third component's tail), whose cell masses on a pooled grid are
// exact products of normal CDF differences.

type mixture struct {
	w, m0, m1, sd []float64
}

// testMixture is a two-class-like mixture of three components with overlapping modes.
var testMixture = mixture{
	w:  []float64{0.5, 0.3, 0.2},
	m0: []float64{-1.2, 1.3, 0.4},
	m1: []float64{0.3, 1.0, -1.5},
	sd: []float64{0.6, 0.5, 0.7},
}

// logp is the mixture's log density at (a, b) and its gradient.
func (m mixture) logp(a, b float64) (lp, g0, g1 float64) {
	var s, s0, s1 float64
	for k := range m.w {
		v := m.sd[k] * m.sd[k]
		d0, d1 := a-m.m0[k], b-m.m1[k]
		c := m.w[k] / (2 * math.Pi * v) * math.Exp(-(d0*d0+d1*d1)/(2*v))
		s += c
		s0 -= c * d0 / v
		s1 -= c * d1 / v
	}
	return math.Log(s), s0 / s, s1 / s
}

// energy is β·log p as an Energy.
func (m mixture) energy(beta float64) Energy {
	return func(x []float32, P int, e, grad []float32) {
		for p := range P {
			lp, g0, g1 := m.logp(float64(x[p]), float64(x[P+p]))
			e[p] = float32(beta * lp)
			if grad != nil {
				grad[p], grad[P+p] = float32(beta*g0), float32(beta*g1)
			}
		}
	}
}

// cells are the mixture's exact masses of the c×c cells of [−box, box]².
func (m mixture) cells(c int, box float64) []float64 {
	phi := func(z float64) float64 { return 0.5 * (1 + math.Erf(z/math.Sqrt2)) }
	h := 2 * box / float64(c)
	out := make([]float64, c*c)
	for k := range m.w {
		for i := range c {
			a := phi((-box+float64(i+1)*h-m.m0[k])/m.sd[k]) - phi((-box+float64(i)*h-m.m0[k])/m.sd[k])
			for j := range c {
				b := phi((-box+float64(j+1)*h-m.m1[k])/m.sd[k]) - phi((-box+float64(j)*h-m.m1[k])/m.sd[k])
				out[i*c+j] += m.w[k] * a * b
			}
		}
	}
	return out
}

// sample draws n points of the mixture.
func (m mixture) sample(rng *rand.Rand, n int) (x0, x1 []float64) {
	x0, x1 = make([]float64, n), make([]float64, n)
	for i := range n {
		u, k := rng.Float64(), 0
		for k < len(m.w)-1 && u > m.w[k] {
			u -= m.w[k]
			k++
		}
		x0[i], x1[i] = m.m0[k]+m.sd[k]*rng.NormFloat64(), m.m1[k]+m.sd[k]*rng.NormFloat64()
	}
	return x0, x1
}

// hist is the (weighted) histogram of the chains x [2][B] on the c×c cells of the box.
func hist(x []float32, w []float32, B, c int, box float32) []float64 {
	h := make([]float64, c*c)
	var tot float64
	for p := range B {
		i := int((x[p] + box) / (2 * box) * float32(c))
		j := int((x[B+p] + box) / (2 * box) * float32(c))
		wp := 1.0
		if w != nil {
			wp = float64(w[p])
		}
		tot += wp
		if i >= 0 && i < c && j >= 0 && j < c {
			h[i*c+j] += wp
		}
	}
	for i := range h {
		h[i] /= tot
	}
	return h
}

const (
	kaBox   = 5
	kaCells = 10
)

// uniformChains are B chains uniform on the box with their energies and gradients.
func uniformChains(seed uint64, B int, en Energy) *langevin {
	l := newLangevin(B)
	l.rng = prob.NewRand(seed)
	for i := range l.x {
		l.x[i] = (2*l.rng.Float32() - 1) * kaBox
	}
	en(l.x, B, l.e, l.g)
	return l
}

// TestMALAKnownAnswer: independent MALA chains started uniformly on the box sample the
// mixture: the TV of their final states from the exact cell masses is within 1.5× the
// floor of as many exact draws; unadjusted Langevin with the same large step is not.
func TestMALAKnownAnswer(t *testing.T) {
	const B = 2048
	truth := testMixture.cells(kaCells, kaBox)
	floor := prob.TVFloor(truth, B)
	en := testMixture.energy(1)
	cases := []struct {
		name   string
		adjust bool
		eta    float32
		within bool
	}{
		{"mala adapted", true, 0.05, true},
		{"mala large step", true, 0.5, true},
		{"ula large step (no correction)", false, 0.5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := uniformChains(7, B, en)
			eta, accSum := c.eta, 0.0
			for k := range 60 { // 60 "training steps" of 10 moves, adapted over the first 30
				if c.adjust {
					acc := l.mala(en, 10, eta, kaBox)
					accSum += acc
					if k < 30 && c.eta < 0.5 {
						eta = adaptStep(eta, acc, kaBox)
					}
				} else {
					l.shortRun(en, 10, eta, true)
				}
			}
			tv := prob.TotalVariation(hist(l.x, nil, B, kaCells, kaBox), truth)
			t.Logf("%s: TV %.4f, floor %.4f, eta %.3g, acceptance %.3f", c.name, tv, floor, eta, accSum/60)
			if (tv <= 1.5*floor) != c.within {
				t.Errorf("TV %.4f vs 1.5× floor %.4f: within = %v, want %v", tv, 1.5*floor, tv <= 1.5*floor, c.within)
			}
		})
	}
}

// TestAdaptStepTowardTarget: the adapted step settles where MALA accepts ~0.574.
func TestAdaptStepTowardTarget(t *testing.T) {
	en := testMixture.energy(1)
	l := uniformChains(3, 256, en)
	eta := float32(1e-3)
	var acc float64
	for range 400 {
		acc = l.mala(en, 5, eta, kaBox)
		eta = adaptStep(eta, acc, kaBox)
	}
	var late float64
	for range 50 {
		late += l.mala(en, 5, eta, kaBox)
	}
	late /= 50
	t.Logf("eta %.4g, acceptance %.3f", eta, late)
	if math.Abs(late-AcceptTarget) > 0.05 {
		t.Errorf("acceptance %.3f after adaptation, want %.3f ± 0.05", late, AcceptTarget)
	}
}

// TestJarzynskiKnownAnswer: walkers started uniformly, their energy annealed from
// 0.3·log p to log p over 40 steps (a model changing under training), moved by
// unadjusted Langevin with a step large enough to bias it: the weighted walkers
// estimate the exact cell masses within 1.5× the floor of ESS exact draws, the same
// walkers unweighted do not; on the wide box and on one that cuts the mixture (its
// truth the mixture restricted to the box), where the walkers' reverse moves reach
// out of the box.
func TestJarzynskiKnownAnswer(t *testing.T) {
	const B = 4096
	for _, box := range []float32{kaBox, 2} {
		t.Run(fmt.Sprintf("box %g", box), func(t *testing.T) {
			truth := testMixture.cells(kaCells, float64(box))
			var mass float64
			for _, v := range truth {
				mass += v
			}
			for i := range truth {
				truth[i] /= mass
			}
			l := newLangevin(B)
			l.rng = prob.NewRand(11)
			for i := range l.x {
				l.x[i] = (2*l.rng.Float32() - 1) * box
			}
			testMixture.energy(0.3)(l.x, B, l.e, l.g)
			a, eOld, w := make([]float64, B), make([]float32, B), make([]float32, B)
			for p := range B {
				a[p] = float64(l.e[p])
			}
			copy(eOld, l.e)
			const stages = 40
			resamples := 0
			var ess float64
			for k := range stages + 10 {
				beta := min(1, 0.3+0.7*float64(k+1)/stages)
				en := testMixture.energy(beta)
				_, e, res, dead := l.weighted(en, a, eOld, false, 2, 0.12, box, 0.3, w)
				if dead {
					t.Fatal("every walker died")
				}
				if res {
					resamples++
				}
				ess = e               // the number of draws the weighted (or just resampled) walkers are worth
				en(l.x, B, eOld, nil) // the "training forward" at the walkers
			}
			weighted := prob.TotalVariation(hist(l.x, w, B, kaCells, box), truth)
			plain := prob.TotalVariation(hist(l.x, nil, B, kaCells, box), truth)
			floor, floorB := prob.TVFloor(truth, int(ess)), prob.TVFloor(truth, B)
			t.Logf("box %g (mass %.3f): weighted TV %.4f (floor at ESS %.0f: %.4f), unweighted %.4f (floor at %d: %.4f), %d resamplings",
				box, mass, weighted, ess, floor, plain, B, floorB, resamples)
			if weighted > 1.5*floor {
				t.Errorf("weighted TV %.4f over 1.5× the floor %.4f", weighted, floor)
			}
			if plain <= 1.5*floorB {
				t.Errorf("unweighted TV %.4f within 1.5× the floor %.4f of %d draws: the step does not bias ULA, the test shows nothing", plain, floorB, B)
			}
		})
	}
}

// TestEDMinimisedAtTruth: on draws of the mixture, ED's loss of the energies β·log p
// is least at β = 1 among the tested temperatures, and its derivative in β at 1 (the
// loss's gradient along a parameter) is 0 within 3 standard errors, for the defaults
// and for a smaller perturbation.
func TestEDMinimisedAtTruth(t *testing.T) {
	const B = 16384
	runtime.LockOSThread() // ClearUpper acts on this thread: scalar math.Exp after AVX-512 code with a dirty upper state runs ~100× slower
	defer runtime.UnlockOSThread()
	for _, o := range []EDOptions{DefaultED(), {M: 4, T: 0.25, W: 1}, {M: 16, T: 1, W: 1}} {
		rng := prob.NewRand(5)
		x0, x1 := testMixture.sample(rng, B)
		P := B * (1 + o.M)
		x := make([]float32, 2*P)
		for i := range B {
			x[i], x[P+i] = float32(x0[i]), float32(x1[i])
		}
		edPerturb(rng, x, B, P, o)
		logp := make([]float32, P)
		testMixture.energy(1)(x, P, logp, nil)
		e, coef := make([]float32, P), make([]float32, P)
		loss := func(beta float64) float64 {
			ClearUpper()
			for p := range P {
				e[p] = float32(beta) * logp[p]
			}
			return float64(edLoss(e, B, o, coef))
		}
		betas := []float64{0.6, 0.8, 0.9, 1, 1.1, 1.25, 1.6}
		best := 0
		ls := make([]float64, len(betas))
		for i, b := range betas {
			ls[i] = loss(b)
			if ls[i] < ls[best] {
				best = i
			}
		}
		loss(1)
		// dL/dβ = Σ_lanes coef·log p; per data point i its own terms (independent draws).
		per := make([]float64, B)
		for i := range B {
			d := coef[i] * logp[i]
			for j := range o.M {
				d += coef[B+j*B+i] * logp[B+j*B+i]
			}
			per[i] = float64(d) * B
		}
		var mean, v float64
		for _, d := range per {
			mean += d
		}
		mean /= B
		for _, d := range per {
			v += (d - mean) * (d - mean)
		}
		se := math.Sqrt(v / (B - 1) / B)
		t.Logf("ED %+v: losses %v at β %v; dL/dβ at 1 = %.4f ± %.4f", o, ls, betas, mean, se)
		if betas[best] != 1 {
			t.Errorf("ED %+v: least loss at β = %g, want 1", o, betas[best])
		}
		if math.Abs(mean) > 3*se {
			t.Errorf("ED %+v: dL/dβ at β = 1 is %.4f, more than 3 standard errors (%.4f) from 0", o, mean, se)
		}
	}
}

// TestEDCoefficients: edLoss's derivatives match finite differences of its loss.
func TestEDCoefficients(t *testing.T) {
	o := EDOptions{M: 3, T: 1, W: 1}
	const B = 16
	rng := prob.NewRand(9)
	e := make([]float32, B*(1+o.M))
	for i := range e {
		e[i] = float32(rng.NormFloat64() * 2)
	}
	coef := make([]float32, len(e))
	edLoss(e, B, o, coef)
	for _, p := range []int{0, 5, B, B + 7, 3*B + 2} {
		const h = 1e-2
		e[p] += h
		up := float64(edLoss(e, B, o, make([]float32, len(e))))
		e[p] -= 2 * h
		down := float64(edLoss(e, B, o, make([]float32, len(e))))
		e[p] += h
		fd := (up - down) / (2 * h)
		if math.Abs(fd-float64(coef[p])) > 1e-4 {
			t.Errorf("lane %d: coef %.6f, finite difference %.6f", p, coef[p], fd)
		}
	}
}

// TestRecipesTrain: every recipe trains a 2-D run without diverging and reaches a
// lower loss than it starts from (a smoke test of the trainer's wiring; the leaderboard
// measures them against the truth).
func TestRecipesTrain(t *testing.T) {
	rng := prob.NewRand(1)
	x0, x1 := testMixture.sample(rng, 512)
	X0, X1, Y := make([]float32, 512), make([]float32, 512), make([]int32, 512)
	for i := range X0 {
		X0[i], X1[i] = float32(x0[i]), float32(x1[i])
		if x0[i] > 0 {
			Y[i] = 1
		}
	}
	lo := LangevinOptions{Steps: 5, Step: 0.01, Adapt: true, Buffer: 1000, Reinit: 0.05, Noise: true, L2: 0.1, ESS: 0.5}
	for _, m := range []Method2D{MALA2D, Jarzynski2D, ED2D, ShortRun2D} {
		t.Run(m.String(), func(t *testing.T) {
			spec := Spec2D{Hidden: []int{16}, K: 2, Method: m, Steps: 200, Batch: 64, PxWeight: 1, Box: 5,
				Langevin: lo, ED: DefaultED(), KeepBuffer: true}
			run := Run2D{Seed: 3, Theta: InitMLP2D(4, spec.Hidden, 2), LR: 3e-3, X0: X0, X1: X1, Y: Y}
			res, err := Train2D(context.Background(), spec, []Run2D{run, run})
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			if r.Diverged {
				t.Fatalf("diverged at step %d", r.DivergedStep)
			}
			for i := range r.Theta {
				if r.Theta[i] != res[1].Theta[i] {
					t.Fatal("two runs of the same seed differ")
				}
			}
			t.Logf("%s: loss %.4f, η %.4g, acceptance %.3f, resamplings %d, buffer %d", m, r.Loss, r.StepSize, r.Accept, r.Resamples, len(r.Buffer))
			if (m == MALA2D) != (len(r.Buffer) == 2*lo.Buffer) {
				t.Errorf("buffer of %d values", len(r.Buffer))
			}
		})
	}
}

package kernel_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// Known-answer tests of kernel.Langevin (the chains of mala, jarzynski and shortrun) on
// a fixed energy whose distribution is known, in D = 2 and D = 4: the product over
// blocks of coordinates (x_{2b}, x_{2b+1}) of knownmix.Standard, whose every block's
// marginal has exact cell masses on the box (knownmix.Mixture.Cells). With D = 2 they
// are the plane kernel's former tests of its built-in mala and jarzynski samplers
// (TestMALAKnownAnswer, TestAdaptStepTowardTarget, TestJarzynskiKnownAnswer), on the
// same draws.

const (
	lvBox   = 5
	lvCells = 10
)

// productLSE is β·Σ_b log p(x_{2b}, x_{2b+1}) of knownmix.Standard over blocks blocks,
// in Step.LSE's convention (points [2·blocks][n]).
func productLSE(beta float64, blocks int) func(x []float32, n int, e, grad []float32) {
	m := knownmix.Standard
	return func(x []float32, n int, e, grad []float32) {
		clear(e[:n])
		for b := range blocks {
			x0, x1 := x[2*b*n:(2*b+1)*n], x[(2*b+1)*n:(2*b+2)*n]
			for p := range n {
				lp, g0, g1 := m.LogP(float64(x0[p]), float64(x1[p]))
				e[p] += float32(beta * lp)
				if grad != nil {
					grad[2*b*n+p], grad[(2*b+1)*n+p] = float32(beta*g0), float32(beta*g1)
				}
			}
		}
	}
}

// blockHist is the (weighted) histogram of block b of the chains x [D][n] on the c×c
// cells of the box.
func blockHist(x []float32, w []float32, n, b, c int, box float32) []float64 {
	h := make([]float64, c*c)
	x0, x1 := x[2*b*n:(2*b+1)*n], x[(2*b+1)*n:(2*b+2)*n]
	var tot float64
	for p := range n {
		i := int((x0[p] + box) / (2 * box) * float32(c))
		j := int((x1[p] + box) / (2 * box) * float32(c))
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

// worstBlockTV is the largest TV over the blocks of the chains' histograms from truth.
func worstBlockTV(x, w []float32, n, blocks int, box float32, truth []float64) float64 {
	var worst float64
	for b := range blocks {
		worst = max(worst, prob.TotalVariation(blockHist(x, w, n, b, lvCells, box), truth))
	}
	return worst
}

// uniformChains are n chains in D = 2·blocks uniform on the box (stream seed) with ℓ
// and ∇ℓ evaluated.
func uniformChains(seed uint64, blocks, n int, box float32, lse func(x []float32, n int, e, grad []float32)) *kernel.Langevin {
	l := kernel.NewLangevin(2*blocks, n)
	l.Rng = prob.NewRand(seed)
	l.Uniform(l.Rng, box)
	l.Eval(lse)
	return l
}

// TestLangevinMALAKnownAnswer: independent MALA chains started uniformly on the box
// sample the product of mixtures: every block's TV of the chains' final states from
// the exact cell masses is within 1.5× the floor of as many exact draws (in D = 4 the
// MH test couples the blocks); unadjusted Langevin with the same large step is not.
func TestLangevinMALAKnownAnswer(t *testing.T) {
	const n = 2048
	truth := knownmix.Standard.Cells(lvCells, lvBox)
	floor := prob.TVFloor(truth, n)
	cases := []struct {
		name   string
		blocks int
		adjust bool
		eta    float32
		within bool
	}{
		{"D=2/mala adapted", 1, true, 0.05, true},
		{"D=2/mala large step", 1, true, 0.5, true},
		{"D=2/ula large step (no correction)", 1, false, 0.5, false},
		{"D=4/mala adapted", 2, true, 0.05, true}, // (unadjusted moves of a product target are D=2's per block)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lse := productLSE(1, c.blocks)
			l := uniformChains(7, c.blocks, n, lvBox, lse)
			eta, accSum := c.eta, 0.0
			for k := range 60 { // 60 "training steps" of 10 moves, adapted over the first 30
				if c.adjust {
					acc := l.MALA(lse, 10, eta, lvBox)
					accSum += acc
					if k < 30 && c.eta < 0.5 {
						eta = kernel.AdaptStep(eta, acc, lvBox)
					}
				} else {
					l.ShortRun(lse, 10, eta, true)
				}
			}
			tv := worstBlockTV(l.X, nil, n, c.blocks, lvBox, truth)
			t.Logf("%s: worst block TV %.4f, floor %.4f, eta %.3g, acceptance %.3f", c.name, tv, floor, eta, accSum/60)
			if (tv <= 1.5*floor) != c.within {
				t.Errorf("TV %.4f vs 1.5× floor %.4f: within = %v, want %v", tv, 1.5*floor, tv <= 1.5*floor, c.within)
			}
		})
	}
}

// TestLangevinAdaptStep: the adapted step settles where MALA accepts ~0.574, in D = 2
// and D = 4 (where it settles at a smaller η).
func TestLangevinAdaptStep(t *testing.T) {
	for _, blocks := range []int{1, 2} {
		t.Run(fmt.Sprintf("D=%d", 2*blocks), func(t *testing.T) {
			lse := productLSE(1, blocks)
			l := uniformChains(3, blocks, 256, lvBox, lse)
			eta := float32(1e-3)
			for range 400 {
				eta = kernel.AdaptStep(eta, l.MALA(lse, 5, eta, lvBox), lvBox)
			}
			var late float64
			for range 50 {
				late += l.MALA(lse, 5, eta, lvBox)
			}
			late /= 50
			t.Logf("D=%d: eta %.4g, acceptance %.3f", 2*blocks, eta, late)
			if math.Abs(late-kernel.AcceptTarget) > 0.05 {
				t.Errorf("acceptance %.3f after adaptation, want %.3f ± 0.05", late, kernel.AcceptTarget)
			}
		})
	}
}

// TestLangevinAdaptStepBounds: AdaptStep moves log η by AdaptRate·(acc − target) and
// keeps η within [MinStep, MaxStep·box²].
func TestLangevinAdaptStepBounds(t *testing.T) {
	cases := []struct {
		name      string
		eta       float32
		acc       float64
		box, want float32
	}{
		{"at the target", 0.01, kernel.AcceptTarget, 5, 0.01},
		{"all accepted", 0.01, 1, 5, float32(0.01 * math.Exp(kernel.AdaptRate*(1-kernel.AcceptTarget)))},
		{"none accepted", 0.01, 0, 5, float32(0.01 * math.Exp(-kernel.AdaptRate*kernel.AcceptTarget))},
		{"floor", kernel.MinStep, 0, 5, kernel.MinStep},
		{"ceiling", 25, 1, 5, 25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := kernel.AdaptStep(c.eta, c.acc, c.box); math.Abs(float64(got-c.want)) > 1e-6*float64(c.want) {
				t.Errorf("AdaptStep(%g, %g, %g) = %g, want %g", c.eta, c.acc, c.box, got, c.want)
			}
		})
	}
}

// TestLangevinJarzynskiKnownAnswer: walkers started uniformly, their energy annealed
// from 0.3·ℓ to ℓ over 40 steps (a model changing under training), moved by unadjusted
// Langevin with a step large enough to bias it: the weighted walkers estimate every
// block's exact cell masses within 1.5× the floor of ESS exact draws, the same walkers
// unweighted do not; on the wide box and on one that cuts the mixture (its truth the
// mixture restricted to the box), where the walkers' reverse moves reach out of the
// box (the backward kernel's box mass, a product over the D coordinates).
func TestLangevinJarzynskiKnownAnswer(t *testing.T) {
	const n = 4096
	cases := []struct {
		blocks int
		box    float32
	}{{1, lvBox}, {1, 2}, {2, lvBox}, {2, 2}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("D=%d/box %g", 2*c.blocks, c.box), func(t *testing.T) {
			box := c.box
			truth := knownmix.Standard.Cells(lvCells, float64(box))
			var mass float64
			for _, v := range truth {
				mass += v
			}
			for i := range truth {
				truth[i] /= mass
			}
			l := kernel.NewLangevin(2*c.blocks, n)
			l.Rng = prob.NewRand(11)
			l.Uniform(l.Rng, box)
			l.Eval(productLSE(0.3, c.blocks))
			a, eOld, w := make([]float64, n), make([]float32, n), make([]float32, n)
			for p := range n {
				a[p] = float64(l.E[p])
			}
			copy(eOld, l.E)
			const stages = 40
			resamples := 0
			var ess float64
			for k := range stages + 10 {
				beta := min(1, 0.3+0.7*float64(k+1)/stages)
				lse := productLSE(beta, c.blocks)
				_, e, res, dead := l.Weighted(lse, a, eOld, false, 2, 0.12, box, 0.3, w)
				if dead {
					t.Fatal("every walker died")
				}
				if res {
					resamples++
				}
				ess = e                // the number of draws the weighted (or just resampled) walkers are worth
				lse(l.X, n, eOld, nil) // the "training forward" at the walkers
			}
			weighted := worstBlockTV(l.X, w, n, c.blocks, box, truth)
			plain := worstBlockTV(l.X, nil, n, c.blocks, box, truth)
			floor, floorN := prob.TVFloor(truth, int(ess)), prob.TVFloor(truth, n)
			t.Logf("D=%d box %g (mass %.3f): weighted TV %.4f (floor at ESS %.0f: %.4f), unweighted %.4f (floor at %d: %.4f), %d resamplings",
				2*c.blocks, box, mass, weighted, ess, floor, plain, n, floorN, resamples)
			if weighted > 1.5*floor {
				t.Errorf("weighted TV %.4f over 1.5× the floor %.4f", weighted, floor)
			}
			if plain <= 1.5*floorN {
				t.Errorf("unweighted TV %.4f within 1.5× the floor %.4f of %d draws: the step does not bias ULA, the test shows nothing", plain, floorN, n)
			}
		})
	}
}

// TestLangevinResample: a systematic resample keeps each walker about exp(a)/Σexp(a)·N
// times (within one), carries its ℓ and gradient along, and zeroes the log weights.
func TestLangevinResample(t *testing.T) {
	const n = 64
	for _, dim := range []int{2, 6} {
		t.Run(fmt.Sprintf("D=%d", dim), func(t *testing.T) {
			l := kernel.NewLangevin(dim, n)
			l.Rng = prob.NewRand(5)
			a, w := make([]float64, n), make([]float32, n)
			for p := range n {
				for c := range dim {
					l.X[c*n+p] = float32(p) + float32(c)/10
					l.G[c*n+p] = -float32(p)
				}
				l.E[p] = float32(p)
				a[p] = float64(p%4) - 2 // walkers 3, 7, … weigh e³ times walkers 0, 4, …
			}
			want := make([]float32, n)
			kernel.NormWeights(want, a)
			l.Resample(a, w)
			count := make([]int, n)
			for i := range n {
				j := int(l.E[i])
				count[j]++
				for c := range dim {
					if l.X[c*n+i] != float32(j)+float32(c)/10 || l.G[c*n+i] != -float32(j) {
						t.Fatalf("walker %d: coordinate %d not walker %d's", i, c, j)
					}
				}
			}
			for j := range n {
				if math.Abs(float64(count[j])-float64(want[j])*n) >= 1 {
					t.Errorf("walker %d kept %d times, want %.2f ± 1", j, count[j], float64(want[j])*n)
				}
			}
			for _, v := range a {
				if v != 0 {
					t.Fatal("log weights not reset")
				}
			}
		})
	}
}

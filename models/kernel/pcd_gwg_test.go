package kernel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Tests of the gwg proposal (locally balanced, exact-difference Gibbs with gradients).
// The exact transition matrices below are written from the formulas of pcd.go's file
// comment, independently of the chain code, and the chain code is checked against them.

// randomMarginal is the marginal p(x) = Σ_y p(x,y) of a random joint table [X][K] with
// cells ∝ exp(σ·N(0,1)) (σ large: a peaked table), in float64, normalised.
func randomMarginal(seed uint64, X, K int, sigma float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 99))
	p := make([]float64, X)
	total := 0.0
	for x := range X {
		for range K {
			p[x] += math.Exp(sigma * rng.NormFloat64())
		}
		total += p[x]
	}
	for x := range p {
		p[x] /= total
	}
	return p
}

// transitionMatrix is the exact one-step kernel P[x][x'] of a proposal targeting
// q ∝ w, in float64.
func transitionMatrix(prop Proposal, w []float64) [][]float64 {
	X := len(w)
	P := make([][]float64, X)
	deg := func(x int) float64 {
		if x == 0 || x == X-1 {
			return 1
		}
		return 2
	}
	for x := range X {
		P[x] = make([]float64, X)
		if X == 1 {
			P[x][x] = 1
			continue
		}
		D := 0.0
		for z := range X {
			if z != x {
				D += math.Sqrt(w[z])
			}
		}
		for y := range X {
			if y == x {
				continue
			}
			var prob float64
			switch prop {
			case ProposalUniform:
				prob = 1 / float64(X) * accept(w[y], w[x])
			case ProposalNeighbour:
				if y == x-1 || y == x+1 {
					prob = 1 / deg(x) * accept(w[y]*deg(x), w[x]*deg(y))
				}
			case ProposalGWG:
				if D > 0 {
					Dy := 0.0
					for z := range X {
						if z != y {
							Dy += math.Sqrt(w[z])
						}
					}
					prob = math.Sqrt(w[y]) / D * accept(math.Sqrt(w[y])*D, math.Sqrt(w[x])*Dy)
				}
			}
			P[x][y] = prob
		}
		stay := 1.0
		for y, v := range P[x] {
			if y != x {
				stay -= v
			}
		}
		P[x][x] = stay
	}
	return P
}

// accept is min(1, a/b) (1 when b = 0 < a, 0 when a = 0).
func accept(a, b float64) float64 {
	if a >= b {
		if a == 0 {
			return 0
		}
		return 1
	}
	return a / b
}

// stepDist is the distribution one step after d: d·P.
func stepDist(d []float64, P [][]float64) []float64 {
	out := make([]float64, len(d))
	for x, dx := range d {
		if dx == 0 {
			continue
		}
		for y, v := range P[x] {
			out[y] += dx * v
		}
	}
	return out
}

func tv(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(a[i] - b[i])
	}
	return s / 2
}

// worstTV is max over the start x of TV(δ_x Pⁿ, p) for n = 0..maxN (result[n]).
func worstTV(P [][]float64, p []float64, maxN int) []float64 {
	X := len(p)
	out := make([]float64, maxN+1)
	for x := range X {
		d := make([]float64, X)
		d[x] = 1
		for n := 0; n <= maxN; n++ {
			out[n] = max(out[n], tv(d, p))
			d = stepDist(d, P)
		}
	}
	return out
}

// exactIAT is the integrated autocorrelation time τ = 1 + 2 Σ_{k≥1} ρ_k of h(x_t) for
// the stationary chain of P (ρ_k = Cov(h(x_0), h(x_k))/Var h), summed until the terms
// fall below 1e-12 (at most 10⁵ lags).
func exactIAT(P [][]float64, p, h []float64) float64 {
	mean, v := 0.0, 0.0
	for x := range p {
		mean += p[x] * h[x]
	}
	g := make([]float64, len(p))
	for x := range p {
		g[x] = h[x] - mean
		v += p[x] * g[x] * g[x]
	}
	hc := slices.Clone(g)
	tau := 1.0
	for range 100000 {
		ng := make([]float64, len(g)) // g ← P g: E[h̃(x_k) | x_0 = x]
		for x := range g {
			for y, pxy := range P[x] {
				ng[x] += pxy * g[y]
			}
		}
		g = ng
		rho := 0.0
		for x := range p {
			rho += p[x] * hc[x] * g[x]
		}
		rho /= v
		tau += 2 * rho
		if math.Abs(rho) < 1e-12 {
			break
		}
	}
	return tau
}

// gwgCases are the targets of the known-answer tests: random tables' marginals (X = 2,
// 7, 32; σ = 1, K = 3), a peaked one (X = 32, σ = 3) and one with zero weights.
func gwgCases() []struct {
	name string
	w    []float64
} {
	return []struct {
		name string
		w    []float64
	}{
		{"random X=2", randomMarginal(1, 2, 3, 1)},
		{"random X=7", randomMarginal(2, 7, 3, 1)},
		{"random X=32", randomMarginal(3, 32, 3, 1)},
		{"peaked X=32", randomMarginal(4, 32, 3, 3)},
		{"zero weights X=6", []float64{0, 0.5, 0, 0.2, 0.3, 0}},
	}
}

// TestGWGKernelExact: the exact gwg kernel of every case keeps detailed balance
// (|p(x)P(x,x') − p(x')P(x',x)| ≤ 1e-15) and has rows summing to 1 with no negative
// entries, so p is its stationary distribution.
func TestGWGKernelExact(t *testing.T) {
	for _, c := range gwgCases() {
		P := transitionMatrix(ProposalGWG, c.w)
		X := len(c.w)
		for x := range X {
			for y := range X {
				if P[x][y] < -1e-15 {
					t.Errorf("%s: P[%d][%d] = %g < 0", c.name, x, y, P[x][y])
				}
				if d := math.Abs(c.w[x]*P[x][y] - c.w[y]*P[y][x]); d > 1e-15 {
					t.Errorf("%s: detailed balance off by %g at (%d,%d)", c.name, d, x, y)
				}
			}
		}
		if got := stepDist(c.w, P); tv(got, c.w) > 1e-14 {
			t.Errorf("%s: p·P differs from p by TV %g", c.name, tv(got, c.w))
		}
	}
}

// TestGWGTransitions: the chain code's one-step moves from every x are distributed as
// the exact kernel's row P[x][·] (chi-square over 10⁵ steps from x, threshold chiBound:
// false alarm < 1e-5 per row), for every case; so the proposal and its Hastings
// correction are the documented ones.
func TestGWGTransitions(t *testing.T) {
	const draws = 100000
	for ci, c := range gwgCases() {
		t.Run(c.name, func(t *testing.T) {
			X := len(c.w)
			P := transitionMatrix(ProposalGWG, c.w)
			g := newGWGTable(X)
			g.set(c.w)
			rng := newPCDRNG(uint64(500 + ci))
			worst := 0.0
			for x := range X {
				counts := make([]int, X)
				for range draws {
					counts[g.step(rng, x)]++
				}
				if P[x][x] == 1 {
					if counts[x] != draws {
						t.Errorf("from x=%d (no move possible): counts %v", x, counts)
					}
					continue
				}
				chi2, dof := chiSquare(t, counts, P[x])
				if dof == 0 { // one possible outcome: chiSquare checked the others are never drawn
					continue
				}
				if chi2 > chiBound(dof) {
					t.Errorf("from x=%d: chi2 = %.1f > %.1f (dof %d): counts %v, P %.4f", x, chi2, chiBound(dof), dof, counts, P[x])
				}
				worst = max(worst, chi2/chiBound(dof))
			}
			t.Logf("largest chi2/bound over the %d rows: %.2f", X, worst)
		})
	}
}

// TestGWGKnownAnswer: 40000 independent chains, each started uniformly and advanced
// by the gwg chain code on a fixed target (a random table's own p(x) as w), end
// distributed as p: Pearson's chi-square of the final states against p is below
// chiBound (false alarm < 1e-5). Each case runs the number of steps after which the
// exact kernel is within TV 1e-6 of p from every start (the chains' bias, far below
// the sampling floor); the TV of the empirical distribution from p is logged beside
// its expected size for N exact draws, ½·Σ_x √(2p(x)(1−p(x))/(πN)) (the floor).
func TestGWGKnownAnswer(t *testing.T) {
	const chains = 40000
	for ci, c := range gwgCases() {
		t.Run(c.name, func(t *testing.T) {
			X := len(c.w)
			P := transitionMatrix(ProposalGWG, c.w)
			wt := worstTV(P, c.w, 5000)
			steps := slices.IndexFunc(wt, func(v float64) bool { return v < 1e-6 })
			if steps < 0 {
				t.Fatalf("the exact kernel is not within 1e-6 of p after 5000 steps (%g)", wt[5000])
			}
			g := newGWGTable(X)
			g.set(c.w)
			rng := newPCDRNG(700 + uint64(ci))
			counts := make([]int, X)
			for range chains {
				counts[g.chain(rng, rng.intN(X), steps)]++
			}
			chi2, dof := chiSquare(t, counts, c.w)
			if chi2 > chiBound(dof) {
				t.Errorf("chi2 = %.1f > %.1f (dof %d): counts %v, p %.4f", chi2, chiBound(dof), dof, counts, c.w)
			}
			emp := make([]float64, X)
			floor := 0.0
			for x, n := range counts {
				emp[x] = float64(n) / chains
				floor += math.Sqrt(2*c.w[x]*(1-c.w[x])/(math.Pi*chains)) / 2
			}
			t.Logf("%d steps (exact worst-start TV %.1e): chi2 %.1f (dof %d, bound %.1f); TV(empirical, p) %.4f, expected floor %.4f",
				steps, wt[steps], chi2, dof, chiBound(dof), tv(emp, c.w), floor)
		})
	}
	t.Run("X=1 stays, no draws", func(t *testing.T) {
		g := newGWGTable(1)
		g.set([]float64{1})
		rng := newPCDRNG(1)
		want := *rng
		if x := g.chain(rng, 0, 10); x != 0 || *rng != want {
			t.Errorf("moved to %d or drew", x)
		}
	})
	t.Run("non-finite weights stay", func(t *testing.T) {
		for _, w := range [][]float64{{math.NaN(), 1, 1}, {math.Inf(1), 1, 1}, {-1, 1, 1}, {0, 0, 0}} {
			g := newGWGTable(3)
			g.set(w)
			rng := newPCDRNG(1)
			for x := range 3 {
				if y := g.chain(rng, x, 10); y != x {
					t.Errorf("w %v: moved from %d to %d", w, x, y)
				}
			}
		}
	})
}

// TestGWGMixing: on the peaked X=32 table (σ = 3: the top value holds 29% of the
// mass, the top 5 65%), gwg mixes faster than uniform: its exact integrated
// autocorrelation time of the energy log p(x) is lower and its worst-start TV after 20
// steps is lower, and its move rate P(x_{t+1} ≠ x_t), measured on 2000 stationary
// chains (started from exact draws of p) of 500 steps each by the chain code, is higher
// than uniform's by more than 5 standard errors (from the spread across the
// independent chains); every measured move rate is within 5 standard errors of the
// exact one. Neighbour is reported beside them.
func TestGWGMixing(t *testing.T) {
	w := randomMarginal(4, 32, 3, 3)
	X := len(w)
	h := make([]float64, X)
	cum := make([]float64, X)
	total := 0.0
	for x := range X {
		h[x] = math.Log(w[x])
		total += w[x]
		cum[x] = total
	}
	sorted := slices.Clone(w)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	t.Logf("target: top p(x) %.3f, top 5 %.3f", sorted[0], sorted[0]+sorted[1]+sorted[2]+sorted[3]+sorted[4])
	const chains, steps = 2000, 500
	type stat struct{ iat, tv20, move, moveExact, moveSE, lag1 float64 }
	stats := map[Proposal]stat{}
	for _, prop := range []Proposal{ProposalUniform, ProposalNeighbour, ProposalGWG} {
		P := transitionMatrix(prop, w)
		st := stat{iat: exactIAT(P, w, h), tv20: worstTV(P, w, 20)[20]}
		for x := range X {
			st.moveExact += w[x] * (1 - P[x][x])
		}
		g := newGWGTable(X)
		g.set(w)
		rng := newPCDRNG(900 + uint64(prop))
		var sum, sumSq float64
		var c01, c00 float64 // lag-1 autocovariance and variance of the energy (pooled)
		mean := 0.0
		for x := range X {
			mean += w[x] * h[x]
		}
		for range chains {
			x := invertCum(cum, w, rng.float64()*total)
			moves := 0
			for range steps {
				var y int
				if prop == ProposalGWG {
					y = g.step(rng, x)
				} else {
					y = mhStep(rng, x, w, prop == ProposalNeighbour)
				}
				if y != x {
					moves++
				}
				c01 += (h[x] - mean) * (h[y] - mean)
				c00 += (h[x] - mean) * (h[x] - mean)
				x = y
			}
			m := float64(moves) / steps
			sum += m
			sumSq += m * m
		}
		st.move = sum / chains
		st.moveSE = math.Sqrt((sumSq/chains - st.move*st.move) / (chains - 1))
		st.lag1 = c01 / c00
		stats[prop] = st
		t.Logf("%-9v: exact IAT of log p %7.2f, exact worst-start TV after 20 steps %.1e, move rate %.4f ± %.4f (exact %.4f), lag-1 autocorrelation of log p %.3f",
			prop, st.iat, st.tv20, st.move, st.moveSE, st.moveExact, st.lag1)
		if d := math.Abs(st.move - st.moveExact); d > 5*st.moveSE {
			t.Errorf("%v: move rate %.4f, exact %.4f (more than 5 SE %.4f apart)", prop, st.move, st.moveExact, st.moveSE)
		}
	}
	u, g := stats[ProposalUniform], stats[ProposalGWG]
	if !(g.iat < u.iat) {
		t.Errorf("gwg IAT %.2f not below uniform's %.2f", g.iat, u.iat)
	}
	if !(g.tv20 < u.tv20) {
		t.Errorf("gwg TV after 20 steps %.3f not below uniform's %.3f", g.tv20, u.tv20)
	}
	if se := math.Hypot(g.moveSE, u.moveSE); !(g.move-u.move > 5*se) {
		t.Errorf("gwg move rate %.4f not above uniform's %.4f by 5 SE (%.4f)", g.move, u.move, se)
	}
}

// TestPCDGWGSampler: through the sampler (Proposal gwg, 2000 slots, 2000 negatives of 3
// chain steps per step, no restarts), after 100 steps the buffer is distributed as
// q (chi-square below chiBound; every slot has then been advanced about 300 steps, and
// the exact kernel is within TV 1e-6 of q after 60 from any start, checked), every
// negative is in range and its slot holds it, and the histogram counts the negatives.
func TestPCDGWGSampler(t *testing.T) {
	q := marginal64(pcdLogits(7), 7, 2)
	X := len(q)
	if wt := worstTV(transitionMatrix(ProposalGWG, q), q, 60); wt[60] > 1e-6 {
		t.Fatalf("exact kernel after 60 steps: TV %g", wt[60])
	}
	s := newPCDSampler(PCD{Negatives: 2000, Buffer: 2000, ChainSteps: 3, Proposal: ProposalGWG, Seed: 5}, X)
	for range 100 {
		s.step(q)
		n := make([]int32, X)
		for _, x := range s.neg {
			if x < 0 || int(x) >= X {
				t.Fatalf("negative %d out of range", x)
			}
			n[x]++
		}
		if !slices.Equal(n, s.cnt) {
			t.Fatalf("histogram %v, negatives give %v", s.cnt, n)
		}
	}
	for i, j := range s.idx { // the last negative of each slot is in the buffer
		if last := slices.Index(s.idx[i+1:], j); last < 0 && s.buf[j] != s.neg[i] {
			t.Fatalf("slot %d holds %d, its last negative is %d", j, s.buf[j], s.neg[i])
		}
	}
	counts := make([]int, X)
	for _, x := range s.buf {
		counts[x]++
	}
	chi2, dof := chiSquare(t, counts, q)
	if chi2 > chiBound(dof) {
		t.Errorf("buffer chi2 = %.1f > %.1f (dof %d): counts %v, q %.4f", chi2, chiBound(dof), dof, counts, q)
	}
	t.Logf("buffer chi2 %.2f (dof %d)", chi2, dof)
}

// TestPCDProposalOptions: the names round-trip; Validate refuses an unknown proposal
// and Neighbour with gwg (pcd-exact ignores both); Neighbour = true and Proposal =
// ProposalNeighbour train the same bits, and Proposal = ProposalUniform the same bits
// as the zero value.
func TestPCDProposalOptions(t *testing.T) {
	for _, p := range []Proposal{ProposalUniform, ProposalNeighbour, ProposalGWG} {
		if q, ok := ParseProposal(p.String()); !ok || q != p {
			t.Errorf("%v: parsed back as %v, %v", p, q, ok)
		}
	}
	if _, ok := ParseProposal("gibbs"); ok {
		t.Error("ParseProposal accepted gibbs")
	}
	ok := PCD{Negatives: 4, Buffer: 8, ChainSteps: 1}
	for _, c := range []struct {
		name  string
		edit  func(*PCD)
		valid bool
	}{
		{"gwg", func(p *PCD) { p.Proposal = ProposalGWG }, true},
		{"neighbour both ways", func(p *PCD) { p.Proposal, p.Neighbour = ProposalNeighbour, true }, true},
		{"unknown", func(p *PCD) { p.Proposal = 3 }, false},
		{"neighbour with gwg", func(p *PCD) { p.Proposal, p.Neighbour = ProposalGWG, true }, false},
		{"exact ignores it", func(p *PCD) { p.Exact, p.Proposal, p.Neighbour = true, 9, true }, true},
	} {
		p := ok
		c.edit(&p)
		if err := p.Validate(); (err == nil) != c.valid {
			t.Errorf("%s: Validate = %v", c.name, err)
		}
	}
	spec, fix := pcdFixtures()
	same := func(a, b Run) {
		t.Helper()
		ra, err := Train(context.Background(), spec, []Run{a})
		if err != nil {
			t.Fatal(err)
		}
		rb, err := Train(context.Background(), spec, []Run{b})
		if err != nil {
			t.Fatal(err)
		}
		if hashResults(ra) != hashResults(rb) {
			t.Errorf("%+v and %+v train different bits", *a.PCD, *b.PCD)
		}
	}
	nb := fix[0] // Neighbour: true
	o := *nb.PCD
	o.Neighbour, o.Proposal = false, ProposalNeighbour
	alt := nb
	alt.PCD = &o
	same(nb, alt)
	un := fix[1] // uniform, zero value
	o2 := *un.PCD
	o2.Proposal = ProposalUniform
	alt2 := un
	alt2.PCD = &o2
	same(un, alt2)
}

// gwgFixtures are pcdFixtures' pcd runs with the gwg proposal (with and without
// restarts) at px weights 1 and ½.
func gwgFixtures() (Spec, []Run) {
	spec, runs := pcdFixtures()
	var out []Run
	for _, r := range runs {
		if r.PCD.Exact {
			continue
		}
		o := *r.PCD
		o.Neighbour, o.Proposal = false, ProposalGWG
		r.PCD = &o
		out = append(out, r)
	}
	return spec, out
}

// pcdGWGGolden is hashResults of gwgFixtures' runs trained together, computed once; both
// builds must reproduce it bit for bit.
const pcdGWGGolden = 0xcdc9f91a5b8e11bf

// TestPCDGWGGolden: the gwg fixture runs are bit-identical to the golden hash in the
// portable and in the vector build, trained alone or together, and their buffers are in
// range.
func TestPCDGWGGolden(t *testing.T) {
	spec, fix := gwgFixtures()
	res, err := Train(context.Background(), spec, fix)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Diverged || len(r.Buffer) != fix[i].PCD.Buffer {
			t.Errorf("run %d: Diverged %v, %d buffer entries", i, r.Diverged, len(r.Buffer))
		}
		for _, x := range r.Buffer {
			if x < 0 || int(x) >= spec.X {
				t.Fatalf("run %d: buffer value %d out of range", i, x)
			}
		}
		alone, err := Train(context.Background(), spec, fix[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if hashResults(alone) != hashResults(res[i:i+1]) {
			t.Errorf("run %d: alone and together differ", i)
		}
	}
	t.Logf("SIMD=%v", SIMD)
	if got := hashResults(res); got != pcdGWGGolden {
		t.Errorf("hash %#x, want %#x (SIMD=%v)", got, uint64(pcdGWGGolden), SIMD)
	}
}

// TestPCDGWGTrains: on the full-batch 2×2 (scalar linear) and 4×3 (one-hot linear)
// tables, JEM with pcd and the gwg proposal (256 negatives, 5 chain steps, buffer 1000,
// 5% restarts) lands as close to exact JEM as the other proposals (TestPCDTrains):
// every one of 8 seeds has KL(p‖q) within 3e-3.
func TestPCDGWGTrains(t *testing.T) {
	const seeds, klTol = 8, 3e-3
	for _, tb := range []struct {
		name  string
		spec  Spec
		cells []float32
	}{
		{"2x2", Spec{X: 2, K: 2, Steps: 1000, CheckEvery: 25}, tab2x2},
		{"4x3", Spec{X: 4, K: 3, OneHot: true, Steps: 1000, CheckEvery: 25}, tab4x3},
	} {
		t.Run(tb.name, func(t *testing.T) {
			var runs []Run
			for s := range seeds {
				r := tableRun(tb.spec, tb.cells, uint64(s), 0.01)
				r.PCD = &PCD{Negatives: 256, Buffer: 1000, ChainSteps: 5, Reinit: 0.05, Proposal: ProposalGWG, Seed: uint64(100 + s)}
				runs = append(runs, r)
			}
			res, err := Train(context.Background(), tb.spec, runs)
			if err != nil {
				t.Fatal(err)
			}
			mean := 0.0
			for s, r := range res {
				kl := klPQ(tb.cells, r.Logits)
				mean += kl / seeds
				if r.Diverged || kl > klTol {
					t.Errorf("seed %d: Diverged %v, KL(p‖q) = %.2e (tolerance %.0e)", s, r.Diverged, kl, klTol)
				}
			}
			t.Logf("pcd 256 gwg: mean KL %.2e", mean)
		})
	}
}

// BenchmarkPCDProposal: the sampler's step (64 negatives from a buffer of 1000, 5%
// restarts, 5 MH steps each) on a fixed random target of X = 8 and 64 values, per
// proposal; ns/chainstep is the time per MH step (the step's time over its 320 chain
// steps, slot draws, restarts and gwg's per-step table included).
func BenchmarkPCDProposal(b *testing.B) {
	for _, prop := range []Proposal{ProposalUniform, ProposalNeighbour, ProposalGWG} {
		for _, X := range []int{8, 64} {
			b.Run(fmt.Sprintf("%v/X=%d", prop, X), func(b *testing.B) {
				w := randomMarginal(8, X, 4, 1)
				opt := PCD{Negatives: 64, Buffer: 1000, ChainSteps: 5, Reinit: 0.05, Proposal: prop, Seed: 1}
				s := newPCDSampler(opt, X)
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					s.step(w)
				}
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*opt.Negatives*opt.ChainSteps), "ns/chainstep")
			})
		}
	}
}

// TestGWGTableAccurate: D(x) = Σ_{z≠x} √w(z) is accurate to 1e-15 relative even when
// x holds nearly all the mass (weights down to float32's smallest, 1e-45, beside 1),
// where Σ√w − √w(x) would have lost every digit; the chain never moves to a zero
// weight and moves between the two heavy values.
func TestGWGTableAccurate(t *testing.T) {
	w := []float64{1e-30, 1, 1e-45, 0, 3e-38, 1e-20, 0.25, 1e-44}
	for i := range w {
		w[i] = float64(float32(w[i]))
	}
	g := newGWGTable(len(w))
	g.set(w)
	for x := range w {
		var terms []float64
		for z := range w {
			if z != x {
				terms = append(terms, math.Sqrt(w[z]))
			}
		}
		slices.Sort(terms) // smallest first: the sum is exact to ~1 ulp
		want := 0.0
		for _, v := range terms {
			want += v
		}
		if math.Abs(g.d[x]-want) > 1e-15*want {
			t.Errorf("D(%d) = %g, want %g", x, g.d[x], want)
		}
	}
	rng := newPCDRNG(3)
	for range 100000 {
		for x := range w {
			if y := g.step(rng, x); y != x && !(w[y] > 0) {
				t.Fatalf("moved from %d to %d of weight %g", x, y, w[y])
			}
		}
	}
	x, moved := 1, 0
	for range 100000 {
		y := g.step(rng, x)
		if y != x {
			moved++
		}
		x = y
	}
	if moved == 0 {
		t.Error("the chain never moved between the two heavy values")
	}
}

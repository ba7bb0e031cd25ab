package kernel

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Tables of the training tests: uneven joints p(x,y), row-major [X][K].
var (
	tab2x2 = []float32{0.1, 0.3, 0.45, 0.15}
	tab4x3 = []float32{
		0.02, 0.10, 0.05,
		0.20, 0.04, 0.06,
		0.03, 0.03, 0.25,
		0.12, 0.08, 0.02,
	}
)

// tableRun is a JEM run (w = 1) of spec on cells with the project's initialisation
// from seed.
func tableRun(spec Spec, cells []float32, seed uint64, lr float32) Run {
	var layers [][2]int
	for _, l := range spec.layers() {
		layers = append(layers, [2]int{l.in, l.out})
	}
	return Run{Theta: InitTheta(seed, layers), LR: lr, PxWeight: 1, Cells: cells}
}

// klPQ is KL(p‖q) in float64 of the joint p (cells) from the model joint q = softmax f.
func klPQ(p, f []float32) float64 {
	lz := lse64(f)
	kl := 0.0
	for j, pj := range p {
		if pj > 0 {
			kl += float64(pj) * (math.Log(float64(pj)) - (float64(f[j]) - lz))
		}
	}
	return kl
}

func lse64(f []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range f {
		mx = max(mx, float64(v))
	}
	z := 0.0
	for _, v := range f {
		z += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(z)
}

// marginal64 is q(x) = softmax_x LSE_y f(x) in float64.
func marginal64(f []float32, X, K int) []float64 {
	lz := lse64(f)
	q := make([]float64, X)
	for x := range X {
		q[x] = math.Exp(lse64(f[x*K:(x+1)*K]) - lz)
	}
	return q
}

// chiSquare is Pearson's statistic of the counts against the probabilities q (cells of
// probability 0 must have count 0; they add nothing and count no degree of freedom).
func chiSquare(t *testing.T, counts []int, q []float64) (chi2 float64, dof int) {
	t.Helper()
	n := 0
	for _, c := range counts {
		n += c
	}
	for x, c := range counts {
		if q[x] == 0 {
			if c != 0 {
				t.Errorf("x=%d has probability 0 but %d draws", x, c)
			}
			continue
		}
		e := float64(n) * q[x]
		chi2 += (float64(c) - e) * (float64(c) - e) / e
		dof++
	}
	return chi2, dof - 1
}

// chiBound is a rejection threshold for a chi-square statistic with dof degrees of
// freedom at a false-alarm rate below about 1e-5 (Wilson–Hilferty with z = 4.3).
func chiBound(dof int) float64 {
	k := float64(dof)
	a := 2 / (9 * k)
	c := 1 - a + 4.3*math.Sqrt(a)
	return k * c * c * c
}

// pcdLogits are fixed logits [X][2] whose marginal q(x) is uneven.
func pcdLogits(X int) []float32 {
	f := make([]float32, 2*X)
	for x := range X {
		f[2*x] = float32(math.Sin(1.7*float64(x)+0.3)) * 1.5
		f[2*x+1] = float32(math.Cos(2.9*float64(x))) - 0.5
	}
	return f
}

// TestMHChain: many independent chains, each started uniformly and advanced by the
// Metropolis–Hastings helper on fixed logits, end distributed as q(x) = softmax_x LSE_y
// f(x) (chi-square test over the chains' final states), for the uniform and the
// reflecting neighbour proposal (whose Hastings correction the X=3 case needs most).
func TestMHChain(t *testing.T) {
	cases := []struct {
		name      string
		X, steps  int
		neighbour bool
	}{
		{"uniform X=6", 6, 20, false},
		{"uniform X=2", 2, 20, false},
		{"neighbour X=6", 6, 300, true},
		{"neighbour X=3", 3, 100, true},
		{"neighbour X=2", 2, 50, true},
	}
	const chains = 40000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := marginal64(pcdLogits(c.X), c.X, 2)
			rng := newPCDRNG(11 + uint64(c.X))
			counts := make([]int, c.X)
			for range chains {
				x := mhChain(rng, rng.intN(c.X), q, c.steps, c.neighbour)
				counts[x]++
			}
			chi2, dof := chiSquare(t, counts, q)
			if chi2 > chiBound(dof) {
				t.Errorf("chi2 = %.1f > %.1f (dof %d): counts %v, q %.4f", chi2, chiBound(dof), dof, counts, q)
			}
			t.Logf("chi2 %.2f (dof %d), q %.3f", chi2, dof, q)
		})
	}
	t.Run("X=1 stays", func(t *testing.T) {
		rng := newPCDRNG(1)
		for _, nb := range []bool{false, true} {
			if x := mhChain(rng, 0, []float64{1}, 10, nb); x != 0 {
				t.Errorf("neighbour=%v: moved to %d", nb, x)
			}
		}
	})
}

// TestExactSampler: pcd-exact's draws (the sampler's step, many steps) have the
// histogram q(x); a zero-weight x is never drawn and a diverged (NaN) q gives uniform
// draws in range.
func TestExactSampler(t *testing.T) {
	cases := []struct {
		name string
		q    []float64
	}{
		{"uneven X=7", marginal64(pcdLogits(7), 7, 2)},
		{"zero weights", []float64{0, 0.5, 0, 0.2, 0.3, 0}},
		{"X=1", []float64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			X := len(c.q)
			s := newPCDSampler(PCD{Exact: true, Negatives: 1000, Seed: 3}, X)
			counts := make([]int, X)
			for range 200 {
				s.step(c.q)
				for x, n := range s.cnt {
					counts[x] += int(n)
				}
				for i, x := range s.neg {
					if s.cnt[x] == 0 {
						t.Fatalf("negative %d = %d not in the histogram", i, x)
					}
				}
			}
			if X == 1 {
				return
			}
			chi2, dof := chiSquare(t, counts, c.q)
			if chi2 > chiBound(dof) {
				t.Errorf("chi2 = %.1f > %.1f (dof %d): counts %v, q %.4f", chi2, chiBound(dof), dof, counts, c.q)
			}
		})
	}
	t.Run("NaN weights", func(t *testing.T) {
		s := newPCDSampler(PCD{Exact: true, Negatives: 100, Seed: 3}, 4)
		s.step([]float64{math.NaN(), 1, 1, 1})
		for _, x := range s.neg {
			if x < 0 || x >= 4 {
				t.Fatalf("draw %d out of range", x)
			}
		}
	})
}

// TestInvertCum: the branch-free binary search of the exact sampler is the first x
// with cum[x] > t, for random weights with zeros (X up to 130) and t on and between
// the prefix sums, and t >= total gives the last x of positive weight.
func TestInvertCum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		X := 1 + rng.IntN(130)
		w := make([]float64, X)
		cum := make([]float64, X)
		total := 0.0
		for x := range w {
			if rng.IntN(3) > 0 || x == X/2 {
				w[x] = rng.Float64()
			}
			total += w[x]
			cum[x] = total
		}
		ts := []float64{0, total, math.Nextafter(total, 0), rng.Float64() * total}
		for range 5 {
			ts = append(ts, cum[rng.IntN(X)])
		}
		for _, tv := range ts {
			want := 0
			for want < X && !(cum[want] > tv) {
				want++
			}
			if want == X {
				for want = X - 1; want > 0 && w[want] == 0; want-- {
				}
			}
			if got := invertCum(cum, w, tv); got != want {
				t.Fatalf("trial %d: X=%d t=%v: got %d, want %d (cum %v)", trial, X, tv, got, want, cum)
			}
			if got := invertCum(cum, w, tv); w[got] == 0 {
				t.Fatalf("trial %d: drew x=%d of weight 0", trial, got)
			}
		}
	}
}

// TestPCDBufferSequential: with few slots and many negatives per step, a slot drawn
// several times in one step continues its chain: every negative is one neighbour move
// (or none) from the value its slot held just before, the buffer ends holding each
// slot's last negative, and every value stays in 0..X−1. With one slot, one step's
// chain travels further than a single move from where it started.
func TestPCDBufferSequential(t *testing.T) {
	const X = 8
	q := marginal64(pcdLogits(X), X, 2)
	cases := []struct {
		name string
		opt  PCD
	}{
		{"one slot", PCD{Negatives: 200, Buffer: 1, ChainSteps: 1, Neighbour: true, Seed: 1}},
		{"three slots", PCD{Negatives: 300, Buffer: 3, ChainSteps: 1, Neighbour: true, Seed: 2}},
		{"restarts", PCD{Negatives: 300, Buffer: 5, ChainSteps: 1, Neighbour: true, Reinit: 0.2, Seed: 3}},
		{"uniform proposal", PCD{Negatives: 300, Buffer: 2, ChainSteps: 3, Seed: 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newPCDSampler(c.opt, X)
			for step := range 20 {
				cur := slices.Clone(s.buf)
				seen := map[int32]bool{}
				s.step(q)
				for i, x := range s.neg {
					j := s.idx[i]
					if x < 0 || x >= X {
						t.Fatalf("step %d: negative %d = %d out of range", step, i, x)
					}
					if c.opt.Neighbour && c.opt.Reinit == 0 && abs(int(x-cur[j])) > c.opt.ChainSteps {
						t.Fatalf("step %d: negative %d (slot %d) = %d, more than %d moves from the slot's %d",
							step, i, j, x, c.opt.ChainSteps, cur[j])
					}
					cur[j] = x
					seen[x] = true
				}
				if !slices.Equal(cur, s.buf) {
					t.Fatalf("step %d: buffer %v, want each slot's last negative %v", step, s.buf, cur)
				}
				if c.opt.Buffer == 1 && len(seen) <= 3 {
					t.Errorf("step %d: one slot's chain visited only %d values in %d moves", step, len(seen), c.opt.Negatives)
				}
			}
		})
	}
}

func abs(a int) int { return max(a, -a) }

// TestPCDLossGrad: in a PCD block dL/df is (1−w)ĉ(x)s − c + w·n̂(x)s with n̂ the
// histogram of the lane's own negatives of the step, for w = 1, ½ and 0, pcd and
// pcd-exact; for w = 1 it differs from the exact gradient q − c (the sampler is used).
func TestPCDLossGrad(t *testing.T) {
	spec := Spec{X: 4, K: 3, OneHot: true, Hidden: []int{5}, Steps: 1, CheckEvery: 1}
	X, K := spec.X, spec.K
	opts := []PCD{
		{Exact: true, Negatives: 7, Seed: 1},
		{Negatives: 5, Buffer: 3, ChainSteps: 2, Reinit: 0.1, Seed: 2},
	}
	var runs []Run
	for i, w := range []float32{1, 0.5, 0} {
		for j := range opts {
			r := tableRun(spec, tab4x3, uint64(10*i+j), 0.01)
			r.PxWeight, r.PCD = w, &opts[j]
			runs = append(runs, r)
		}
	}
	part := make([]int, len(runs))
	for i := range part {
		part[i] = i
	}
	b := newBlock(spec, lanesFor(spec.NumParams(), len(runs)), modeMix)
	b.pcd = newPCDBlock(X, b.L)
	b.load(runs, part)
	b.forward()
	b.lossGrad()
	L := b.L
	for l, r := range runs {
		f := make([]float32, X*K)
		for j := range f {
			f[j] = b.f[j*L+l]
		}
		s := b.pcd.s[l]
		qx := marginal64(f, X, K)
		w := float64(r.PxWeight)
		diffExact := 0.0
		for x := range X {
			lx := lse64(f[x*K : (x+1)*K])
			chat := 0.0
			for y := range K {
				chat += float64(r.Cells[x*K+y])
			}
			nh := float64(s.cnt[x]) / float64(s.opt.Negatives)
			for y := range K {
				sy := math.Exp(float64(f[x*K+y]) - lx)
				c := float64(r.Cells[x*K+y])
				want := (1-w)*chat*sy - c + w*nh*sy
				got := float64(b.gf[(x*K+y)*L+l])
				if math.Abs(got-want) > 1e-6 {
					t.Errorf("run %d (w=%v) gf[%d,%d] = %v, want %v", l, w, x, y, got, want)
				}
				diffExact = max(diffExact, math.Abs(got-((1-w)*chat*sy-c+w*qx[x]*sy)))
			}
		}
		if w == 1 && diffExact < 1e-3 {
			t.Errorf("run %d: the sampled gradient equals the exact one (max diff %v)", l, diffExact)
		}
	}
}

// TestPCDTrains: on full-batch 2×2 (scalar linear) and 4×3 (one-hot linear) tables,
// JEM with pcd-exact (256 negatives) and pcd (256 negatives, uniform and neighbour
// proposals) lands close to exact JEM, whose KL(p‖q) is ~0: every seed's KL is within
// klTol; with one negative per step the runs are much noisier (mean KL at least 5× that
// of 256 negatives): the negatives drive the gradient.
func TestPCDTrains(t *testing.T) {
	const seeds, klTol = 8, 3e-3
	tables := []struct {
		name  string
		spec  Spec
		cells []float32
	}{
		{"2x2", Spec{X: 2, K: 2, Steps: 1000, CheckEvery: 25}, tab2x2},
		{"4x3", Spec{X: 4, K: 3, OneHot: true, Steps: 1000, CheckEvery: 25}, tab4x3},
	}
	samplers := []struct {
		name  string
		opt   *PCD
		noisy bool
	}{
		{"exact JEM", nil, false},
		{"pcd-exact 256", &PCD{Exact: true, Negatives: 256}, false},
		{"pcd 256 uniform", &PCD{Negatives: 256, Buffer: 1000, ChainSteps: 5, Reinit: 0.05}, false},
		{"pcd 256 neighbour", &PCD{Negatives: 256, Buffer: 1000, ChainSteps: 5, Neighbour: true}, false},
		{"pcd-exact 1", &PCD{Exact: true, Negatives: 1}, true},
		{"pcd 1", &PCD{Negatives: 1, Buffer: 100, ChainSteps: 1}, true},
	}
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			var runs []Run
			for _, sm := range samplers {
				for s := range seeds {
					r := tableRun(tb.spec, tb.cells, uint64(s), 0.01)
					if sm.opt != nil {
						o := *sm.opt
						o.Seed = uint64(100 + s)
						r.PCD = &o
					}
					runs = append(runs, r)
				}
			}
			res, err := Train(context.Background(), tb.spec, runs)
			if err != nil {
				t.Fatal(err)
			}
			mean := make([]float64, len(samplers))
			for i, sm := range samplers {
				for s := range seeds {
					r := res[i*seeds+s]
					kl := klPQ(tb.cells, r.Logits)
					mean[i] += kl / seeds
					if r.Diverged {
						t.Errorf("%s seed %d diverged", sm.name, s)
					}
					if !sm.noisy && kl > klTol {
						t.Errorf("%s seed %d: KL(p‖q) = %.2e > %.0e", sm.name, s, kl, klTol)
					}
				}
				t.Logf("%-18s mean KL %.2e", sm.name, mean[i])
			}
			if mean[0] > 1e-5 {
				t.Errorf("exact JEM: mean KL %.2e, want ~0", mean[0])
			}
			for i, sm := range samplers {
				if sm.noisy && mean[i] < 5*mean[1] {
					t.Errorf("%s: mean KL %.2e, not clearly noisier than 256 negatives (%.2e)", sm.name, mean[i], mean[1])
				}
			}
		})
	}
}

// pcdFixtures are the runs of the determinism and golden tests: pcd (both proposals,
// restarts) and pcd-exact at px weights 1 and ½, on a 4×3 one-hot MLP 8.
func pcdFixtures() (Spec, []Run) {
	spec := Spec{X: 4, K: 3, OneHot: true, Hidden: []int{8}, Steps: 200, CheckEvery: 5}
	opts := []PCD{
		{Negatives: 16, Buffer: 50, ChainSteps: 3, Reinit: 0.1, Neighbour: true, Seed: 21},
		{Negatives: 8, Buffer: 4, ChainSteps: 2, Seed: 22},
		{Exact: true, Negatives: 32, Seed: 23},
	}
	var runs []Run
	for i, w := range []float32{1, 0.5} {
		for j := range opts {
			r := tableRun(spec, tab4x3, uint64(10*i+j), 0.02)
			o := opts[j]
			r.PxWeight, r.PCD = w, &o
			runs = append(runs, r)
		}
	}
	return spec, runs
}

// hashResults hashes the bits of every result's Theta, Logits, Loss and Buffer.
func hashResults(res []Result) uint64 {
	h := fnv.New64a()
	put := func(u uint32) { h.Write([]byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}) }
	for _, r := range res {
		for _, v := range slices.Concat(r.Theta, r.Logits, []float32{r.Loss}) {
			put(math.Float32bits(v))
		}
		for _, x := range r.Buffer {
			put(uint32(x))
		}
		put(uint32(len(r.Buffer)))
	}
	return h.Sum64()
}

// TestPCDDeterminism: a PCD run's result is the same trained alone (R=1), among many
// runs (other PCD seeds and options, exact runs of every px mode) and on a second
// call; another seed gives another result.
func TestPCDDeterminism(t *testing.T) {
	spec, fix := pcdFixtures()
	ctx := context.Background()
	var crowd []Run
	for i := range 40 {
		r := fix[i%len(fix)]
		switch i % 4 {
		case 0:
			o := *r.PCD
			o.Seed = uint64(1000 + i)
			r.PCD = &o
		case 1:
			r.PCD = nil
			r.PxWeight = float32(i%3) / 2
		}
		crowd = append(crowd, r)
	}
	crowd = slices.Insert(crowd, 7, fix...)
	many, err := Train(ctx, spec, crowd)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range fix {
		alone, err := Train(ctx, spec, []Run{r})
		if err != nil {
			t.Fatal(err)
		}
		again, err := Train(ctx, spec, []Run{r})
		if err != nil {
			t.Fatal(err)
		}
		a, m, g := hashResults(alone), hashResults(many[7+i:8+i]), hashResults(again)
		if a != m || a != g {
			t.Errorf("run %d: alone %x, among 46 runs %x, again %x", i, a, m, g)
		}
		if len(alone[0].Buffer) == 0 {
			t.Errorf("run %d: no buffer", i)
		}
		o := *r.PCD
		o.Seed++
		r.PCD = &o
		other, err := Train(ctx, spec, []Run{r})
		if err != nil {
			t.Fatal(err)
		}
		if hashResults(other) == a {
			t.Errorf("run %d: seed+1 gives the same result", i)
		}
	}
}

// pcdGolden is hashResults of pcdFixtures' runs trained together, computed once; both
// builds (portable and GOEXPERIMENT=simd) must reproduce it bit for bit. It depends on
// math/rand/v2's PCG and IntN/Float64 and on the float32 maths of the kernel: recompute
// it (and say why in the commit) only when one of those changes on purpose.
const pcdGolden = 0x9f61d5fda2c66f61

// TestPCDGolden: the fixture runs' parameters, logits, loss and buffers are bit-identical
// to the golden hash, in the portable and in the vector build; their buffers have the
// documented lengths and values in 0..X−1.
func TestPCDGolden(t *testing.T) {
	spec, fix := pcdFixtures()
	res, err := Train(context.Background(), spec, fix)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := fix[i].PCD.Buffer
		if fix[i].PCD.Exact {
			want = fix[i].PCD.Negatives
		}
		if len(r.Buffer) != want {
			t.Errorf("run %d: %d buffer entries, want %d", i, len(r.Buffer), want)
		}
		for _, x := range r.Buffer {
			if x < 0 || int(x) >= spec.X {
				t.Fatalf("run %d: buffer value %d out of range", i, x)
			}
		}
		if r.Diverged {
			t.Errorf("run %d diverged", i)
		}
	}
	t.Logf("SIMD=%v", SIMD)
	if got := hashResults(res); got != pcdGolden {
		t.Errorf("hash %#x, want %#x (SIMD=%v)", got, uint64(pcdGolden), SIMD)
	}
}

// TestPCDValidation: bad options are refused by Train, naming the run.
func TestPCDValidation(t *testing.T) {
	spec := Spec{X: 2, K: 2, Steps: 1, CheckEvery: 1}
	ok := PCD{Negatives: 4, Buffer: 8, ChainSteps: 1, Reinit: 0.5}
	cases := []struct {
		name  string
		edit  func(*PCD)
		valid bool
	}{
		{"ok", func(*PCD) {}, true},
		{"exact ignores the buffer", func(p *PCD) { p.Exact, p.Buffer, p.Reinit, p.ChainSteps = true, 0, 7, -1 }, true},
		{"zero chain steps", func(p *PCD) { p.ChainSteps = 0 }, true},
		{"negatives 0", func(p *PCD) { p.Negatives = 0 }, false},
		{"exact negatives 0", func(p *PCD) { p.Exact, p.Negatives = true, 0 }, false},
		{"negatives huge", func(p *PCD) { p.Negatives = MaxPCDNegatives + 1 }, false},
		{"buffer 0", func(p *PCD) { p.Buffer = 0 }, false},
		{"reinit -0.1", func(p *PCD) { p.Reinit = -0.1 }, false},
		{"reinit 1.5", func(p *PCD) { p.Reinit = 1.5 }, false},
		{"reinit NaN", func(p *PCD) { p.Reinit = float32(math.NaN()) }, false},
		{"chain steps -1", func(p *PCD) { p.ChainSteps = -1 }, false},
		{"average last 5", func(p *PCD) { p.AverageLast = 5 }, true},
		{"average last -1", func(p *PCD) { p.AverageLast = -1 }, false},
		{"exact average last -1", func(p *PCD) { p.Exact, p.AverageLast = true, -1 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.edit(&p)
			runs := []Run{tableRun(spec, tab2x2, 1, 0.1), tableRun(spec, tab2x2, 2, 0.1)}
			runs[1].PCD = &p
			_, err := Train(context.Background(), spec, runs)
			switch {
			case c.valid && err != nil:
				t.Errorf("refused: %v", err)
			case !c.valid && err == nil:
				t.Error("accepted")
			case !c.valid && !strings.Contains(err.Error(), "run 1"):
				t.Errorf("error %q does not name run 1", err)
			}
		})
	}
}

// BenchmarkPCD: JEM runs at 2×2 (scalar linear) and 8×4 (one-hot MLP 16,16), 1000
// full-batch steps, exact and with 64 negatives per step: pcd-exact, and pcd with 5
// uniform-proposal MH steps per negative on a buffer of 1000 (5% restarts).
func BenchmarkPCD(b *testing.B) {
	samplers := []struct {
		name string
		opt  *PCD
	}{
		{"exact", nil},
		{"pcd-exact64", &PCD{Exact: true, Negatives: 64}},
		{"pcd64x5", &PCD{Negatives: 64, Buffer: 1000, ChainSteps: 5, Reinit: 0.05}},
	}
	for _, sh := range []struct {
		name string
		spec Spec
		R    int
	}{
		{"2x2", Spec{X: 2, K: 2, Steps: 1000, CheckEvery: 25}, 256},
		{"8x4_onehot_16_16", Spec{X: 8, K: 4, OneHot: true, Hidden: []int{16, 16}, Steps: 1000, CheckEvery: 5}, 64},
	} {
		for _, sm := range samplers {
			b.Run(fmt.Sprintf("%s/%s/R=%d", sh.name, sm.name, sh.R), func(b *testing.B) {
				runs := benchRuns(sh.spec, sh.R, 0.01, 1)
				m := modeJEM
				if sm.opt != nil {
					m = modeMix
					for i := range runs {
						o := *sm.opt
						o.Seed = uint64(i)
						runs[i].PCD = &o
					}
				}
				benchTrain(b, sh.spec, runs, m)
			})
		}
	}
}

// avgFixtures are pcdFixtures with averaging over the last 50 of the 200 steps on
// every run but the second (AverageLast 0) and over all steps (AverageLast > Steps) on
// the fourth.
func avgFixtures() (Spec, []Run) {
	spec, runs := pcdFixtures()
	for i := range runs {
		o := *runs[i].PCD
		switch i {
		case 1:
			o.AverageLast = 0
		case 3:
			o.AverageLast = 1000
		default:
			o.AverageLast = 50
		}
		runs[i].PCD = &o
	}
	return spec, runs
}

// hashAvg hashes the bits of every result's AvgLogits (and their lengths).
func hashAvg(res []Result) uint64 {
	h := fnv.New64a()
	put := func(u uint32) { h.Write([]byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}) }
	for _, r := range res {
		for _, v := range r.AvgLogits {
			put(math.Float32bits(v))
		}
		put(uint32(len(r.AvgLogits)))
	}
	return h.Sum64()
}

// pcdAvgGolden is hashAvg of avgFixtures' runs trained together, computed once; both
// builds must reproduce it bit for bit.
const pcdAvgGolden = 0x4e65d8e8ba27c0fb

// TestPCDAverageUnchanged: averaging does not touch the training: with AverageLast = 0
// AvgLogits is nil, and with or without averaging every run's Theta, Logits, Loss and
// Buffer are bit-identical to the golden runs without it; the averaged logits are
// bit-identical in both builds (golden hash).
func TestPCDAverageUnchanged(t *testing.T) {
	ctx := context.Background()
	spec, fix := pcdFixtures()
	_, avg := avgFixtures()
	plain, err := Train(ctx, spec, fix)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Train(ctx, spec, avg)
	if err != nil {
		t.Fatal(err)
	}
	if got := hashResults(plain); got != pcdGolden {
		t.Errorf("without averaging: hash %#x, want %#x", got, uint64(pcdGolden))
	}
	if got := hashResults(res); got != pcdGolden {
		t.Errorf("with averaging: hash %#x, want %#x", got, uint64(pcdGolden))
	}
	for i, r := range plain {
		if r.AvgLogits != nil {
			t.Errorf("run %d without averaging: AvgLogits %v, want nil", i, r.AvgLogits)
		}
	}
	for i, r := range res {
		if (r.AvgLogits == nil) != (avg[i].PCD.AverageLast == 0) {
			t.Errorf("run %d (AverageLast %d): AvgLogits %v", i, avg[i].PCD.AverageLast, r.AvgLogits)
		}
		if r.AvgLogits != nil && slices.Equal(r.AvgLogits, r.Logits) {
			t.Errorf("run %d: averaged logits equal the final ones", i)
		}
	}
	t.Logf("SIMD=%v", SIMD)
	if got := hashAvg(res); got != pcdAvgGolden {
		t.Errorf("averaged logits: hash %#x, want %#x (SIMD=%v)", got, uint64(pcdAvgGolden), SIMD)
	}
}

// TestPCDAverageLast1: averaging over the last step gives the final logits (up to the
// float32 → float64 → float32 round trip, which is exact); for a run that diverges no
// averaged logits come back.
func TestPCDAverageLast1(t *testing.T) {
	spec, runs := pcdFixtures()
	for i := range runs {
		o := *runs[i].PCD
		o.AverageLast = 1
		runs[i].PCD = &o
	}
	bad := runs[0]
	bad.LR = 1e38
	bad.Theta = slices.Clone(bad.Theta)
	for j := range bad.Theta {
		bad.Theta[j] = 1e38
	}
	runs = append(runs, bad)
	res, err := Train(context.Background(), spec, runs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res[:len(res)-1] {
		if len(r.AvgLogits) != len(r.Logits) {
			t.Fatalf("run %d: %d averaged logits, want %d", i, len(r.AvgLogits), len(r.Logits))
		}
		for j, v := range r.AvgLogits {
			if d := math.Abs(float64(v - r.Logits[j])); d > 1e-5 {
				t.Errorf("run %d logit %d: averaged %v, final %v", i, j, v, r.Logits[j])
			}
		}
	}
	if r := res[len(res)-1]; !r.Diverged || r.AvgLogits != nil {
		t.Errorf("diverging run: Diverged %v, AvgLogits %v", r.Diverged, r.AvgLogits)
	}
}

// TestPCDAverageHelps: on the 2×2 table, JEM with pcd-exact and 4 negatives at lr 0.05
// ends noisy; averaging the parameters over the last 300 of 1000 steps cancels much of
// the gradient noise: the mean KL(p‖q) over 16 seeds is lower at the averaged
// parameters than at the final ones.
func TestPCDAverageHelps(t *testing.T) {
	const seeds = 16
	spec := Spec{X: 2, K: 2, Steps: 1000, CheckEvery: 25}
	var runs []Run
	for s := range seeds {
		r := tableRun(spec, tab2x2, uint64(s), 0.05)
		r.PCD = &PCD{Exact: true, Negatives: 4, Seed: uint64(100 + s), AverageLast: 300}
		runs = append(runs, r)
	}
	res, err := Train(context.Background(), spec, runs)
	if err != nil {
		t.Fatal(err)
	}
	var final, avg float64
	for s, r := range res {
		if r.Diverged || r.AvgLogits == nil {
			t.Fatalf("seed %d: Diverged %v, AvgLogits %v", s, r.Diverged, r.AvgLogits)
		}
		final += klPQ(tab2x2, r.Logits) / seeds
		avg += klPQ(tab2x2, r.AvgLogits) / seeds
	}
	t.Logf("mean KL(p‖q): final %.3e, averaged over the last 300 steps %.3e", final, avg)
	if !(avg < final) {
		t.Errorf("mean KL at the averaged parameters %.3e, not below the final %.3e", avg, final)
	}
}

package prob

import (
	"math"
	"strings"
	"testing"
)

func TestParseBlocksSpec(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "blocks:8,gmm:3,2", want: "blocks:8,gmm:3,2"},
		{in: "blocks: 1, gmm: 3, 2", want: "blocks:1,gmm:3,2"},
		{in: "blocks:32,moons:0.1", want: "blocks:32,moons:0.1"},
		{in: "blocks:4,circles:0.05", want: "blocks:4,circles:0.05"},
		{in: "blocks:0,gmm:3,2", err: "B must be in [1, 32]"},
		{in: "blocks:33,gmm:3,2", err: "B must be in [1, 32]"},
		{in: "blocks:65,gmm:3,2", err: "D = 2B ≤ 64"},
		{in: "blocks:x,gmm:3,2", err: "is not an integer"},
		{in: "blocks:2", err: "want blocks:B,<2-D task>"},
		{in: "blocks:2,spiral:1", err: "its block task: unknown task"},
		{in: "blocks:2,gmm:1,2", err: "K must be in"},
		{in: "gmm:3,2", err: "want blocks:B"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := ParseBlocksSpec(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || s.String() != tt.want {
				t.Fatalf("got %v, %v; want %s", s, err, tt.want)
			}
		})
	}
}

// TestBlocksOneBlockIsTask2D: blocks:1,T is the 2-D task T of the same seed: its task,
// its draws and its grid truth.
func TestBlocksOneBlockIsTask2D(t *testing.T) {
	for _, inner := range []string{"gmm:3,2", "moons:0.1"} {
		spec, err := ParseBlocksSpec("blocks:1," + inner)
		if err != nil {
			t.Fatal(err)
		}
		seed := uint64(42)
		bt := spec.Draw(seed)
		want := spec.Inner.Draw(seed)
		g := Grid{G: 16, Box: 5}
		tr, tw := bt.Truth(g).Table(), want.Truth(g)
		for i := range tw {
			if math.Abs(tr[i]-tw[i]) > 1e-15 {
				t.Fatalf("%s: truth cell %d: %v, want %v", inner, i, tr[i], tw[i])
			}
		}
		x, y := bt.Sample(7, 100)
		d := want.Sample(7, 100)
		for i := range y {
			if x[2*i] != d.X0[i] || x[2*i+1] != d.X1[i] || y[i] != d.Y[i] {
				t.Fatalf("%s: draw %d differs", inner, i)
			}
		}
	}
}

// TestBlocksDrawRotates: block 0 is unrotated, the others rotated about the origin
// (distances from the origin and the weights kept); blocks:B shares its first blocks
// with blocks:B+k.
func TestBlocksDrawRotates(t *testing.T) {
	s4, _ := ParseBlocksSpec("blocks:4,gmm:2,3")
	s2, _ := ParseBlocksSpec("blocks:2,gmm:2,3")
	t4, t2 := s4.Draw(9), s2.Draw(9)
	for b := range 2 {
		if t4.Blocks[b].String() != t2.Blocks[b].String() || t4.Angles[b] != t2.Angles[b] {
			t.Fatalf("block %d differs between B=4 and B=2", b)
		}
	}
	if t4.Angles[0] != 0 {
		t.Fatalf("block 0 rotated by %v", t4.Angles[0])
	}
	for b := 1; b < 4; b++ {
		orig := s4.Inner.Draw(Seed(9, tagBlock, uint64(b)))
		for i, c := range t4.Blocks[b].comps {
			o := orig.comps[i]
			if math.Abs(math.Hypot(c.Mu0, c.Mu1)-math.Hypot(o.Mu0, o.Mu1)) > 1e-12 || c.SD != o.SD || c.Weight != o.Weight || c.Y != o.Y {
				t.Fatalf("block %d component %d: %+v from %+v", b, i, c, o)
			}
			if got := math.Atan2(c.Mu1, c.Mu0) - math.Atan2(o.Mu1, o.Mu0); math.Abs(math.Remainder(got-t4.Angles[b], 2*math.Pi)) > 1e-9 {
				t.Fatalf("block %d component %d turned by %v, want %v", b, i, got, t4.Angles[b])
			}
		}
	}
	m, _ := ParseBlocksSpec("blocks:2,moons:0.1")
	mt := m.Draw(3)
	orig := m.Inner.Draw(Seed(3, tagBlock, 1))
	if d := mt.Blocks[1].shape.Angle - orig.shape.Angle; math.Abs(d-mt.Angles[1]) > 1e-12 {
		t.Fatalf("moons block turned by %v, want %v", d, mt.Angles[1])
	}
}

// TestBlocksSampleConditional: each block's draws given y follow its conditional (one
// component per class: the mean and sd of x_b given y), the classes the prior.
func TestBlocksSampleConditional(t *testing.T) {
	mk := func(mu [][2]float64, w []float64, sd float64) Task2D {
		var cs []Component
		for y, m := range mu {
			cs = append(cs, Component{Y: y, Weight: w[y], Mu0: m[0], Mu1: m[1], SD: sd})
		}
		task, err := NewMixture(0, cs)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	bt := BlocksTask{K: 2, Blocks: []Task2D{
		mk([][2]float64{{-1, 0}, {1, 0}}, []float64{0.3, 0.7}, 0.5),
		mk([][2]float64{{0, 2}, {0, -2}}, []float64{0.5, 0.5}, 0.25),
	}}
	const n = 40000
	x, y := bt.Sample(1, n)
	var cnt [2]float64
	var sum [2][2]float64
	for i := range n {
		cnt[y[i]]++
		sum[y[i]][0] += x[4*i+2]
		sum[y[i]][1] += x[4*i+3]
	}
	if p := cnt[0] / n; math.Abs(p-0.3) > 4*math.Sqrt(0.3*0.7/n) {
		t.Errorf("class 0 share %v, want 0.3", p)
	}
	want := [2][2]float64{{0, 2}, {0, -2}}
	for yy := range 2 {
		for d := range 2 {
			if m := sum[yy][d] / cnt[yy]; math.Abs(m-want[yy][d]) > 4*0.25/math.Sqrt(cnt[yy]) {
				t.Errorf("block 1 class %d coord %d mean %v, want %v", yy, d, m, want[yy][d])
			}
		}
	}
	if pr := bt.Prior(); math.Abs(pr[0]-0.3) > 1e-15 || math.Abs(pr[1]-0.7) > 1e-15 {
		t.Errorf("prior %v", pr)
	}
}

// randomBlocks is a random block truth and random model logits of B blocks on a G×G
// grid with K classes.
func randomBlocks(seed uint64, B, G, k int) (BlocksTruth, [][]float64) {
	rng := NewRand(seed)
	g := Grid{G: G, Box: 1}
	n := g.Cells()
	bt := BlocksTruth{Grid: g, K: k, Prior: make([]float64, k), Cond: make([][]float64, B)}
	s := 0.0
	for y := range k {
		bt.Prior[y] = 0.2 + rng.Float64()
		s += bt.Prior[y]
	}
	for y := range k {
		bt.Prior[y] /= s
	}
	l := make([][]float64, B)
	for b := range B {
		c := make([]float64, n*k)
		col := make([]float64, k)
		for i := range c {
			c[i] = rng.Float64() * rng.Float64()
			col[i%k] += c[i]
		}
		for i := range c {
			c[i] /= col[i%k]
		}
		bt.Cond[b] = c
		l[b] = make([]float64, n*k)
		for i := range l[b] {
			l[b][i] = 2 * rng.NormFloat64()
		}
	}
	return bt, l
}

// bruteBlocks enumerates the product grid: the truth's and the model's joints over
// (c_0, …, c_{B−1}, y), flattened.
func bruteBlocks(bt BlocksTruth, l [][]float64) (p, q []float64) {
	B, k, n := bt.B(), bt.K, bt.Grid.Cells()
	total := 1
	for range B {
		total *= n
	}
	p, lq := make([]float64, total*k), make([]float64, total*k)
	for idx := range total {
		r := idx
		cells := make([]int, B)
		for b := B - 1; b >= 0; b-- {
			cells[b], r = r%n, r/n
		}
		for y := range k {
			pv, lv := bt.Prior[y], 0.0
			for b, c := range cells {
				pv *= bt.Cond[b][c*k+y]
				lv += l[b][c*k+y]
			}
			p[idx*k+y], lq[idx*k+y] = pv, lv
		}
	}
	return p, Softmax(lq)
}

// TestBlocksExactMatchesBruteForce: the factorised log Z and joint KL equal a brute
// enumeration of the product grid, and the Monte Carlo marginal and conditional KLs
// and accuracies agree with the enumerated ones within 4 standard errors.
func TestBlocksExactMatchesBruteForce(t *testing.T) {
	for _, c := range []struct{ B, G, k int }{{1, 4, 3}, {2, 4, 3}, {3, 3, 2}} {
		bt, l := randomBlocks(uint64(c.B*100+c.G), c.B, c.G, c.k)
		p, q := bruteBlocks(bt, l)
		x := len(p) / c.k
		// log Z by enumeration
		all := make([]float64, 0, len(p))
		B, n, k := c.B, bt.Grid.Cells(), c.k
		for idx := range x {
			r := idx
			cells := make([]int, B)
			for b := B - 1; b >= 0; b-- {
				cells[b], r = r%n, r/n
			}
			for y := range k {
				v := 0.0
				for b, cc := range cells {
					v += l[b][cc*k+y]
				}
				all = append(all, v)
			}
		}
		logZ, _ := BlocksLogZ(l, k)
		if want := LogSumExp(all); math.Abs(logZ-want) > 1e-12 {
			t.Errorf("%+v: log Z %v, brute force %v", c, logZ, want)
		}
		kl, want := BlocksJointKL(bt, l), KL(p, q)
		if math.Abs(kl-want) > 1e-10 {
			t.Errorf("%+v: joint KL %v, brute force %v", c, kl, want)
		}
		wm, wc := KL(Marginal(p, x, k), Marginal(q, x, k)), KLConditional(p, q, x, k)
		wa, wb := Accuracy(p, q, x, k), BayesAccuracy(p, x, k)
		mc := bt.Draw(5, 40000).Evaluate(l)
		for _, v := range []struct {
			name          string
			got, se, want float64
		}{{"marginal", mc.Marginal, mc.MarginalSE, wm}, {"conditional", mc.Conditional, mc.ConditionalSE, wc},
			{"accuracy", mc.Accuracy, mc.AccuracySE, wa}, {"bayes", mc.Bayes, mc.BayesSE, wb}} {
			if !(v.se > 0) || math.Abs(v.got-v.want) > 4*v.se {
				t.Errorf("%+v: MC %s %v ± %v, exact %v", c, v.name, v.got, v.se, v.want)
			}
		}
		if math.Abs(wm+wc-want) > 1e-10 {
			t.Errorf("%+v: marginal + conditional %v, joint %v", c, wm+wc, want)
		}
	}
}

// TestBlocksTableRoundTrip: Table and BlocksTruthFromTable are inverses, and the table
// sums to 1.
func TestBlocksTableRoundTrip(t *testing.T) {
	bt, _ := randomBlocks(3, 3, 4, 3)
	tab := bt.Table()
	s := 0.0
	for _, v := range tab {
		s += v
	}
	if math.Abs(s-1) > 1e-12 {
		t.Fatalf("table sums to %v", s)
	}
	back := BlocksTruthFromTable(tab, bt.Grid, 3, 3)
	for y := range 3 {
		if math.Abs(back.Prior[y]-bt.Prior[y]) > 1e-15 {
			t.Fatalf("prior %v, want %v", back.Prior, bt.Prior)
		}
	}
	for b := range 3 {
		for i, v := range bt.Cond[b] {
			if math.Abs(back.Cond[b][i]-v) > 1e-14 {
				t.Fatalf("block %d cell %d: %v, want %v", b, i, back.Cond[b][i], v)
			}
		}
	}
}

// TestBlocksKLClosedForm: a product of Gaussian blocks (one isotropic Gaussian per class
// and block) against a model of the same form, its cell logits the exact log cell
// masses per unit area of its Gaussians: the grid joint KL tends to the closed form
// Σ_y π(y) log(π(y)/ρ(y)) + Σ_y π(y) Σ_b KL(N(μ_by, σ_b²I) ‖ N(ν_by, τ_b²I)) as the grid
// refines (from below: discretising never increases a KL).
func TestBlocksKLClosedForm(t *testing.T) {
	pi, rho := []float64{0.4, 0.6}, []float64{0.5, 0.5}
	muP := [][][2]float64{{{-1, 0}, {1, 0.5}}, {{0, 1}, {0.5, -1}}, {{1, 1}, {-1, -1}}}
	muQ := [][][2]float64{{{-0.8, 0.1}, {1, 0.3}}, {{0.2, 1}, {0.5, -1.2}}, {{1, 0.7}, {-1.1, -1}}}
	sdP, sdQ := []float64{0.5, 0.6, 0.4}, []float64{0.55, 0.6, 0.5}
	B := len(muP)
	mix := func(mu [][2]float64, w []float64, sd float64) Task2D {
		var cs []Component
		for y, m := range mu {
			cs = append(cs, Component{Y: y, Weight: w[y], Mu0: m[0], Mu1: m[1], SD: sd})
		}
		task, err := NewMixture(0, cs)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	want := 0.0
	for y := range 2 {
		want += pi[y] * math.Log(pi[y]/rho[y])
		for b := range B {
			dx, dy := muP[b][y][0]-muQ[b][y][0], muP[b][y][1]-muQ[b][y][1]
			s2, t2 := sdP[b]*sdP[b], sdQ[b]*sdQ[b]
			want += pi[y] * (2*math.Log(sdQ[b]/sdP[b]) + (2*s2+dx*dx+dy*dy)/(2*t2) - 1)
		}
	}
	var prev float64
	for i, G := range []int{32, 64, 256} {
		g := Grid{G: G, Box: 6}
		task := BlocksTask{K: 2}
		l := make([][]float64, B)
		for b := range B {
			w := pi
			if b > 0 {
				w = []float64{0.5, 0.5}
			}
			task.Blocks = append(task.Blocks, mix(muP[b], w, sdP[b]))
			qw := []float64{0.5, 0.5}
			m := mix(muQ[b], qw, sdQ[b]).Truth(g) // cell masses of ½N(ν_b0) and ½N(ν_b1)
			l[b] = make([]float64, len(m))
			for j, v := range m {
				l[b][j] = math.Log(v * 2 / g.CellArea()) // the Gaussian's own log mass per unit area
				if b == 0 {
					l[b][j] += math.Log(rho[j%2])
				}
			}
		}
		kl := BlocksJointKL(task.Truth(g), l)
		t.Logf("G=%d: grid KL %.8f, closed form %.8f", G, kl, want)
		if kl > want+1e-9 || (i > 0 && kl < prev-1e-12) {
			t.Errorf("G=%d: grid KL %v not in [previous %v, closed form %v]", G, kl, prev, want)
		}
		prev = kl
	}
	if math.Abs(prev-want) > 2e-3*want {
		t.Errorf("grid KL at G=256 %v, closed form %v", prev, want)
	}
}

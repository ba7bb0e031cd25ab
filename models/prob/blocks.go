package prob

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/internal/avx"
)

// Block tasks (issue 22, item 2): continuous tasks in D = 2B dimensions whose joint KL
// is exact on a grid in any D.
//
// A block task "blocks:B,<2-D task>" is B independent draws of a 2-D task spec (all
// with the same K classes), block b ≥ 1 rotated about the origin by its own random
// angle, tied together by one class prior: the truth is
//
//	p(x, y) = π(y) · Π_b p_b(x_b | y),   π(y) = p_0(y),   p_b(x_b|y) = p_b(x_b, y)/p_b(y),
//
// with x_b ∈ ℝ² the b-th pair of coordinates. On the G×G grid over the box (Grid) every
// block's conditional becomes its exact cell masses P_b(c|y) (Task2D.Truth, normalised
// per class), and the grid truth is π(y)·Π_b P_b(c_b|y) over the product grid of G^{2B}
// cells: far too many to enumerate, but every expectation the KLs need factorises.
//
// The model is block-additive, f(x)[y] = Σ_b g_b(x_b)[y], and its grid joint is
// q(c, y) = exp(Σ_b ℓ_b[c_b, y]) / Z with ℓ_b the block's cell logits (the log cell
// mass per unit area of exp g_b, as kernel.CellLogits computes them for a 2-D model),
// so that
//
//	Z = Σ_y Π_b Z_{b,y},   Z_{b,y} = Σ_c exp ℓ_b[c, y]                    (BlocksLogZ)
//	E_p log q = Σ_y π(y) Σ_b Σ_c P_b(c|y) ℓ_b[c, y] − log Z
//	E_p log p = Σ_y π(y) [log π(y) + Σ_b Σ_c P_b(c|y) log P_b(c|y)]
//	KL_joint  = E_p log p − E_p log q                                   (BlocksJointKL)
//
// exactly (the cell area's constant cancels between ℓ and Z). The marginal KL
// KL(p(c)‖q(c)), q(c) = Σ_y q(c, y), does not factorise; it and the conditional KL
// E_p KL(p(y|c)‖q(y|c)) are Monte Carlo estimates over M exact draws of the grid truth
// (BlocksDraws: y ~ π, then each block's cell c_b ~ P_b(·|y)), with their standard
// errors. Everything is on the same grid discretisation: the draws are cells, and
// log p(c) = LSE_y [log π(y) + Σ_b log P_b(c_b|y)] uses the exact cell masses, so
// joint = marginal + conditional holds in expectation.

// MaxBlocks is the most blocks of a block task (D = 2B ≤ 64 dimensions).
const MaxBlocks = 32

// BlocksSpec is a parsed block task string "blocks:B,<2-D task>".
type BlocksSpec struct {
	B     int      // blocks, 1..MaxBlocks
	Inner TaskSpec // the 2-D task every block is a draw of
}

// BlocksPrefix starts every block task string.
const BlocksPrefix = "blocks:"

// ParseBlocksSpec parses "blocks:B,<2-D task>", e.g. "blocks:8,gmm:3,2" or
// "blocks:4,moons:0.1" (spaces are ignored).
func ParseBlocksSpec(s string) (BlocksSpec, error) {
	rest, ok := strings.CutPrefix(strings.ReplaceAll(s, " ", ""), BlocksPrefix)
	if !ok {
		return BlocksSpec{}, fmt.Errorf("task %q: want blocks:B,<2-D task>, e.g. blocks:8,gmm:3,2", s)
	}
	bs, inner, ok := strings.Cut(rest, ",")
	if !ok || inner == "" {
		return BlocksSpec{}, fmt.Errorf("task %q: want blocks:B,<2-D task> (B blocks, each a draw of a gmm:K,C, moons:SIGMA or circles:SIGMA task), e.g. blocks:8,gmm:3,2", s)
	}
	b, err := strconv.Atoi(bs)
	if err != nil {
		return BlocksSpec{}, fmt.Errorf("task %q: B %q is not an integer", s, bs)
	}
	if b < 1 || b > MaxBlocks {
		return BlocksSpec{}, fmt.Errorf("task %q: B must be in [1, %d] blocks (D = 2B ≤ %d dimensions), got %d", s, MaxBlocks, 2*MaxBlocks, b)
	}
	spec, err := ParseTaskSpec(inner)
	if err != nil {
		return BlocksSpec{}, fmt.Errorf("task %q: its block task: %w", s, err)
	}
	return BlocksSpec{B: b, Inner: spec}, nil
}

// String is the canonical form, the inverse of ParseBlocksSpec.
func (s BlocksSpec) String() string { return fmt.Sprintf("%s%d,%s", BlocksPrefix, s.B, s.Inner) }

// BlocksTask is a drawn block task: its blocks' 2-D tasks (rotations applied) and the
// angle each was rotated by (block 0: none).
type BlocksTask struct {
	K      int
	Blocks []Task2D
	Angles []float64
}

var (
	tagBlock = SeedString("block")
	tagAngle = SeedString("angle")
)

// Draw returns the block task of a seed: block 0 is exactly Inner.Draw(seed), not
// rotated (so that blocks:1,T is the 2-D task T of the same seed), and block b ≥ 1 is
// Inner.Draw(Seed(seed, "block", b)) rotated about the origin by an angle uniform on
// [0, 2π) from Seed(seed, "angle", b). Block b does not depend on B: blocks:B and
// blocks:B' of the same seed share their first min(B, B') blocks.
func (s BlocksSpec) Draw(seed uint64) BlocksTask {
	t := BlocksTask{K: s.Inner.K, Blocks: make([]Task2D, s.B), Angles: make([]float64, s.B)}
	for b := range s.B {
		if b == 0 {
			t.Blocks[0] = s.Inner.Draw(seed)
			continue
		}
		a := 2 * math.Pi * NewRand(Seed(seed, tagAngle, uint64(b))).Float64()
		t.Blocks[b], t.Angles[b] = s.Inner.Draw(Seed(seed, tagBlock, uint64(b))).Rotated(a), a
	}
	return t
}

// Rotated is the task rotated about the origin by angle a (radians): a mixture's means
// rotate (its components are isotropic), a moons or circles shape turns by a.
func (t Task2D) Rotated(a float64) Task2D {
	c, s := math.Cos(a), math.Sin(a)
	out := t
	if t.comps != nil {
		out.comps = make([]Component, len(t.comps))
		for i, m := range t.comps {
			m.Mu0, m.Mu1 = c*m.Mu0-s*m.Mu1, s*m.Mu0+c*m.Mu1
			out.comps[i] = m
		}
		return out
	}
	if out.shape.Scale == 0 { // a literal without a draw: make the rotation apply
		out.shape.Scale = 1
	}
	out.shape.Angle += a
	return out
}

// String names the task's spec-level shape.
func (t BlocksTask) String() string {
	if len(t.Blocks) == 0 {
		return "blocks(none)"
	}
	return fmt.Sprintf("%d blocks of %s", len(t.Blocks), t.Blocks[0])
}

// classSampler draws x ~ p(x | y) of a 2-D task.
type classSampler struct {
	t    Task2D
	cum  [][]float64 // mixtures: per class, cumulative weights of its components
	idx  [][]int     // ... and their indices
	cumY []float64   // cumulative class weights (its prior)
}

func newClassSampler(t Task2D) classSampler {
	cs := classSampler{t: t, cumY: make([]float64, t.K)}
	w := make([]float64, t.K)
	switch t.Kind {
	case "gmm", "mixture":
		cs.cum, cs.idx = make([][]float64, t.K), make([][]int, t.K)
		for i, c := range t.comps {
			w[c.Y] += c.Weight
			cs.cum[c.Y] = append(cs.cum[c.Y], w[c.Y])
			cs.idx[c.Y] = append(cs.idx[c.Y], i)
		}
	default:
		for y := range t.K {
			w[y] = t.classWeight(y)
		}
	}
	s := 0.0
	for y := range t.K {
		s += w[y]
		cs.cumY[y] = s
	}
	return cs
}

// draw returns one x ~ p(x | y).
func (cs classSampler) draw(rng *rand.Rand, y int) (x0, x1 float64) {
	t := cs.t
	switch t.Kind {
	case "gmm", "mixture":
		cum := cs.cum[y]
		u := rng.Float64() * cum[len(cum)-1]
		j := 0
		for j < len(cum)-1 && cum[j] <= u {
			j++
		}
		c := t.comps[cs.idx[y][j]]
		return c.Mu0 + c.SD*rng.NormFloat64(), c.Mu1 + c.SD*rng.NormFloat64()
	}
	sd := t.noiseSD()
	a0, a1 := t.curve(y, t.span()*rng.Float64())
	return a0 + sd*rng.NormFloat64(), a1 + sd*rng.NormFloat64()
}

// Sample draws n i.i.d. points (x, y) of the continuous block task from seed: x is
// n×2B row-major (draw i's block b at x[i·2B+2b], x[i·2B+2b+1]). The class and block 0
// are block 0's own draws, Blocks[0].Sample(seed, n) (so blocks:1,T draws exactly what
// the 2-D task T draws); block b ≥ 1 is then drawn given each y from its own stream
// Seed(seed, "block", b), independent of B.
func (t BlocksTask) Sample(seed uint64, n int) (x []float64, y []int32) {
	B := len(t.Blocks)
	d0 := t.Blocks[0].Sample(seed, n)
	x, y = make([]float64, n*2*B), d0.Y
	for i := range n {
		x[i*2*B], x[i*2*B+1] = d0.X0[i], d0.X1[i]
	}
	for b := 1; b < B; b++ {
		cs := newClassSampler(t.Blocks[b])
		rng := NewRand(Seed(seed, tagBlock, uint64(b)))
		for i := range n {
			x[i*2*B+2*b], x[i*2*B+2*b+1] = cs.draw(rng, int(y[i]))
		}
	}
	return x, y
}

// Prior is the continuous class prior of the block task, block 0's p_0(y).
func (t BlocksTask) Prior() []float64 {
	cs := newClassSampler(t.Blocks[0])
	out := make([]float64, t.K)
	prev := 0.0
	for y, c := range cs.cumY {
		out[y], prev = c-prev, c
	}
	return out
}

// BlocksTruth is a block task's truth on a grid: the class prior π(y) (block 0's class
// masses on the grid) and per block the exact conditional cell masses P_b(c|y),
// [G²][K] with cell c and class y at c·K + y (each class's column sums to 1).
type BlocksTruth struct {
	Grid  Grid
	K     int
	Prior []float64
	Cond  [][]float64
}

// B is the number of blocks.
func (bt BlocksTruth) B() int { return len(bt.Cond) }

// Truth is the block task's truth on the grid (every block's Task2D.Truth, the prior
// from block 0's, each block conditioned on y by its own class masses). A block whose
// grid holds no mass of some class panics (the kind's Check refuses such tasks).
func (t BlocksTask) Truth(g Grid) BlocksTruth {
	bt := BlocksTruth{Grid: g, K: t.K, Cond: make([][]float64, len(t.Blocks))}
	k := t.K
	for b, task := range t.Blocks {
		tb := task.Truth(g)
		py := make([]float64, k)
		for i, v := range tb {
			py[i%k] += v
		}
		for i := range tb {
			if py[i%k] <= 0 {
				panic(fmt.Sprintf("prob: block %d has no mass of class %d on the grid", b, i%k))
			}
			tb[i] /= py[i%k]
		}
		if b == 0 {
			bt.Prior = py
		}
		bt.Cond[b] = tb
	}
	return bt
}

// Table is the truth in a table's layout over (block, cell) × class: entry
// ((b·G² + c)·K + y) is π(y)^{1/B}·P_b(c|y)/(B·S), S = Σ_y π(y)^{1/B}, which sums to 1
// (the block kind's Block.P). Its logarithm, read as the additive model's block cell
// logits, is the truth itself: Σ_b log entry(b, c_b, y) = log π(y) + Σ_b log P_b(c_b|y)
// − B·log(B·S), a constant off log p(c, y). At B = 1 it is the 2-D task's grid truth.
func (bt BlocksTruth) Table() []float64 {
	B, k := bt.B(), bt.K
	n := bt.Grid.Cells() * k
	root := make([]float64, k)
	s := 0.0
	for y, v := range bt.Prior {
		root[y] = math.Pow(v, 1/float64(B))
		s += root[y]
	}
	out := make([]float64, B*n)
	for b, c := range bt.Cond {
		for i, v := range c {
			out[b*n+i] = root[i%k] * v / (float64(B) * s)
		}
	}
	return out
}

// BlocksTruthFromTable inverts Table: the truth of B blocks on grid g with K classes
// from its table layout (P_b(c|y) the block's columns normalised, π(y) ∝ (block 0's
// column sum)^B).
func BlocksTruthFromTable(p []float64, g Grid, B, k int) BlocksTruth {
	n := g.Cells() * k
	if len(p) != B*n {
		panic(fmt.Sprintf("prob: block truth of %d entries, want %d blocks × %d", len(p), B, n))
	}
	bt := BlocksTruth{Grid: g, K: k, Prior: make([]float64, k), Cond: make([][]float64, B)}
	for b := range B {
		c := make([]float64, n)
		py := make([]float64, k)
		for i := range n {
			py[i%k] += p[b*n+i]
		}
		for i := range n {
			if py[i%k] > 0 {
				c[i] = p[b*n+i] / py[i%k]
			}
		}
		bt.Cond[b] = c
		if b == 0 {
			s := 0.0
			for y, v := range py {
				bt.Prior[y] = math.Pow(v, float64(B))
				s += bt.Prior[y]
			}
			for y := range bt.Prior {
				bt.Prior[y] /= s
			}
		}
	}
	return bt
}

// BlocksLogZ is the additive model's log normaliser on the product grid: with ℓ[b] its
// block b's cell logits [G²][K], log Z = log Σ_y Π_b Z_{b,y}, and logZby[b][y] = log
// Z_{b,y} = log Σ_c exp ℓ[b][c·K+y].
func BlocksLogZ(l [][]float64, k int) (logZ float64, logZby [][]float64) {
	logZby = make([][]float64, len(l))
	ly := make([]float64, k)
	for b, lb := range l {
		logZby[b] = make([]float64, k)
		for y := range k {
			m := math.Inf(-1)
			for i := y; i < len(lb); i += k {
				m = max(m, lb[i])
			}
			s := 0.0
			if !math.IsInf(m, 0) && !math.IsNaN(m) {
				for i := y; i < len(lb); i += k {
					s += math.Exp(lb[i] - m)
				}
			} else {
				s = 1
			}
			logZby[b][y] = m + math.Log(s)
			ly[y] += logZby[b][y]
		}
	}
	return LogSumExp(ly), logZby
}

// LogSumExp is log Σ exp(v) (−Inf for an empty or all −Inf slice; NaN in, NaN out).
func LogSumExp(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		if math.IsNaN(x) {
			return math.NaN()
		}
		m = max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// NegEntropy is E_p log p(c, y) of the grid truth: Σ_y π(y)[log π(y) + Σ_b Σ_c
// P_b(c|y) log P_b(c|y)].
func (bt BlocksTruth) NegEntropy() float64 {
	k := bt.K
	s := 0.0
	for y, py := range bt.Prior {
		if py == 0 {
			continue
		}
		in := math.Log(py)
		for _, c := range bt.Cond {
			for i := y; i < len(c); i += k {
				if c[i] > 0 {
					in += c[i] * math.Log(c[i])
				}
			}
		}
		s += py * in
	}
	return s
}

// BlocksJointKL is the exact joint KL(p‖q) on the grid of the additive model with
// block cell logits l[b] ([G²][K]) from the truth (see the file's doc); +Inf where q
// puts no mass on a cell of the truth's support, NaN for non-finite logits.
func BlocksJointKL(bt BlocksTruth, l [][]float64) float64 {
	if len(l) != bt.B() {
		panic(fmt.Sprintf("prob: BlocksJointKL of %d blocks of logits, truth has %d", len(l), bt.B()))
	}
	k := bt.K
	logZ, _ := BlocksLogZ(l, k)
	elq := 0.0
	for y, py := range bt.Prior {
		if py == 0 {
			continue
		}
		in := 0.0
		for b, c := range bt.Cond {
			for i := y; i < len(c); i += k {
				if c[i] > 0 {
					in += c[i] * l[b][i]
				}
			}
		}
		elq += py * in
	}
	kl := bt.NegEntropy() - (elq - logZ)
	if math.IsNaN(kl) || math.IsInf(elq, -1) {
		if math.IsInf(elq, -1) && !math.IsNaN(logZ) {
			return math.Inf(1)
		}
		return math.NaN()
	}
	return clampRounding(kl)
}

// BlocksDraws are M exact draws of a block task's grid truth: each draw's class and
// cell per block, with the truth's log p(c) and p(y|c) there (shared by every run of
// the task).
type BlocksDraws struct {
	M, B, K int
	Y       []int32
	Cells   []int32   // M×B: draw i's cell in block b at i·B + b
	LogPx   []float64 // log p(c) = LSE_y [log π(y) + Σ_b log P_b(c_b|y)]
	Post    []float64 // M×K: p(y | c)
}

// Draw returns m exact draws of the grid truth from seed: y ~ π, then each block's
// cell c_b ~ P_b(·|y).
func (bt BlocksTruth) Draw(seed uint64, m int) BlocksDraws {
	B, k, n := bt.B(), bt.K, bt.Grid.Cells()
	rng := NewRand(seed)
	cumY := cumulative(bt.Prior)
	cum := make([][]float64, B*k) // per block and class: cumulative masses over cells
	for b, c := range bt.Cond {
		for y := range k {
			col := make([]float64, n)
			for i := range n {
				col[i] = c[i*k+y]
			}
			cum[b*k+y] = cumulative(col)
		}
	}
	d := BlocksDraws{M: m, B: B, K: k, Y: make([]int32, m), Cells: make([]int32, m*B), LogPx: make([]float64, m), Post: make([]float64, m*k)}
	lp := make([]float64, k)
	avx.ClearUpper() // see package avx
	for i := range m {
		y := pick(rng, cumY)
		d.Y[i] = int32(y)
		for b := range B {
			d.Cells[i*B+b] = int32(pick(rng, cum[b*k+y]))
		}
		for yy := range k {
			v := math.Log(bt.Prior[yy])
			for b, c := range bt.Cond {
				v += math.Log(c[int(d.Cells[i*B+b])*k+yy])
			}
			lp[yy] = v
		}
		d.LogPx[i] = LogSumExp(lp)
		for yy := range k {
			d.Post[i*k+yy] = math.Exp(lp[yy] - d.LogPx[i])
		}
	}
	return d
}

func cumulative(w []float64) []float64 {
	out := make([]float64, len(w))
	s := 0.0
	for i, v := range w {
		s += v
		out[i] = s
	}
	return out
}

// BlocksMC is a run's Monte Carlo measures over a task's BlocksDraws: the joint KL
// E_p[log p(c, y) − log q(c, y)] (a Monte Carlo check of the exact one), the marginal
// KL E_p[log p(c) − log q(c)], the conditional KL E_p KL(p(y|c)‖q(y|c)) (per draw the
// exact KL over the classes), the accuracy E_p p(ŷ(c)|c) of ŷ = argmax q(y|c) and the
// Bayes accuracy E_p max_y p(y|c), each with its standard error (sd/√M).
type BlocksMC struct {
	Joint, JointSE             float64
	Marginal, MarginalSE       float64
	Conditional, ConditionalSE float64
	Accuracy, AccuracySE       float64
	Bayes, BayesSE             float64
}

// Evaluate measures the additive model with block cell logits l[b] on the draws.
func (d BlocksDraws) Evaluate(l [][]float64) BlocksMC {
	B, k := d.B, d.K
	logZ, _ := BlocksLogZ(l, k)
	return d.EvaluateRows(func(i int, f []float64) {
		for y := range k {
			v := 0.0
			for b := range B {
				v += l[b][int(d.Cells[i*B+b])*k+y]
			}
			f[y] = v
		}
	}, logZ)
}

// EvaluateRows measures a model on the draws from its logits at draw i (logits(i, f)
// sets f [K]) and its log normaliser logZ, log q(c, y) = f[y] − logZ.
func (d BlocksDraws) EvaluateRows(logits func(i int, f []float64), logZ float64) BlocksMC {
	k := d.K
	var joint, marg, cond, acc, bayes meanSE
	f := make([]float64, k)
	avx.ClearUpper() // see package avx
	for i := range d.M {
		logits(i, f)
		lse := LogSumExp(f)
		marg.add(d.LogPx[i] - (lse - logZ))
		post := d.Post[i*k : (i+1)*k]
		y := d.Y[i]
		joint.add(d.LogPx[i] + math.Log(post[y]) - (f[y] - logZ))
		c := 0.0
		for y, p := range post {
			if p > 0 {
				c += p * (math.Log(p) - (f[y] - lse))
			}
		}
		cond.add(c)
		acc.add(post[argmax(f)])
		bayes.add(post[argmax(post)])
	}
	out := BlocksMC{}
	out.Joint, out.JointSE = joint.get()
	out.Marginal, out.MarginalSE = marg.get()
	out.Conditional, out.ConditionalSE = cond.get()
	out.Accuracy, out.AccuracySE = acc.get()
	out.Bayes, out.BayesSE = bayes.get()
	return out
}

// meanSE accumulates a mean and its standard error (Welford).
type meanSE struct {
	n       int
	mean, s float64
}

func (m *meanSE) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.s += d * (x - m.mean)
}

func (m meanSE) get() (mean, se float64) {
	if m.n < 2 {
		return m.mean, math.NaN()
	}
	return m.mean, math.Sqrt(m.s / float64(m.n-1) / float64(m.n))
}

// BayesMean is the Bayes classifier's accuracy E_p max_y p(y|c) over the draws (the
// same for every model).
func (d BlocksDraws) BayesMean() float64 {
	var m meanSE
	for i := range d.M {
		post := d.Post[i*d.K : (i+1)*d.K]
		m.add(post[argmax(post)])
	}
	mean, _ := m.get()
	return mean
}

// densityCache holds a block task's mixture components per block and each block's own
// class masses p_b(y), for its continuous density.
type densityCache struct {
	comps [][]Component
	py    [][]float64
}

func (t BlocksTask) densities() densityCache {
	d := densityCache{comps: make([][]Component, len(t.Blocks)), py: make([][]float64, len(t.Blocks))}
	for b, bt := range t.Blocks {
		d.comps[b] = bt.Components(0)
		d.py[b] = make([]float64, t.K)
		for _, c := range d.comps[b] {
			d.py[b][c.Y] += c.Weight
		}
	}
	return d
}

// logDensity is log p(x) = log Σ_y π(y) Π_b p_b(x_b|y) of the continuous task at x [2B].
func (d densityCache) logDensity(prior []float64, x []float64) float64 {
	lp := make([]float64, len(prior))
	for y, py := range prior {
		l := math.Log(py)
		for b, comps := range d.comps {
			l += math.Log(MixtureDensity(comps, x[2*b], x[2*b+1], y)) - math.Log(d.py[b][y])
		}
		lp[y] = l
	}
	return LogSumExp(lp)
}

// LogDensity is the continuous truth's log p(x) at x [2B] (over all of ℝ^2B).
func (t BlocksTask) LogDensity(x []float64) float64 { return t.densities().logDensity(t.Prior(), x) }

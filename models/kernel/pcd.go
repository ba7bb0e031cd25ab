package kernel

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Sampled log-Z gradients for the table kernel: persistent contrastive divergence (PCD)
// and its exact-sampling control (pcd-exact).
//
// The joint NLL's logit gradient is q − c with q = softmax over all X·K cells. Split as
// q(x,y) = q(x)·s(x,y) (q(x) = softmax_x LSE_y f(x), s(x,·) = softmax_y f(x)), a run with
// a sampler replaces q(x) by n̂(x), the histogram of its Negatives negatives divided by
// Negatives. With px weight w the gradient is
//
//	gf = (1−w)ĉ(x)·s − c + w·n̂(x)·s     (ĉ(x) = Σ_y c(x,y))
//
// (for w = 1 exactly n̂(x)s − c; for w = 0 the negatives do not enter, though the
// sampler still runs); the reported Loss stays the exact loss on Cells. Runs with a
// sampler are trained in blocks of their own (any px weights, mix mode).
// The negatives are drawn under the current parameters: after the step's forward pass,
// from q(x) computed with the kernel's own float32 softmax (so bit-identical in the
// portable and the vector build), converted to float64 for the sampler.
//
//   - pcd-exact (Exact): each negative is an independent exact draw from q(x)
//     (inversion on the cumulative sums), so the gradient is unbiased and only noisy.
//   - pcd: a replay buffer of Buffer x values, initially uniform. Each step draws
//     Negatives slots uniformly with replacement, one after another: the negative
//     starts from the slot's current value (or, with probability Reinit, a uniform x),
//     takes ChainSteps Metropolis–Hastings steps targeting q(x), and is written back
//     before the next negative is drawn, so a slot drawn twice in one step continues
//     the chain of its first draw.
//
// Proposals (PCD.Proposal; see Proposal for the rng draws):
//
//   - uniform: x' uniform over 0..X−1 (x itself included; symmetric), accepted with
//     probability min(1, q(x')/q(x)).
//   - neighbour: x−1 or x+1 with probability ½ each in the interior, and the only
//     neighbour with probability 1 at an end (reflecting). The reflecting proposal is not
//     symmetric at the ends, so the acceptance carries the Hastings correction: a move
//     x → x' is accepted with probability min(1, q(x')·deg(x) / (q(x)·deg(x'))), deg
//     the number of neighbours (1 at an end, 2 inside), which keeps detailed balance for
//     q.
//   - gwg: x' ≠ x with probability q(x'|x) = √q(x') / D(x), D(x) = Σ_{z≠x} √q(z), and
//     accepted with probability min(1, q(x')·q(x|x') / (q(x)·q(x'|x))) =
//     min(1, √q(x')·D(x) / (√q(x)·D(x'))) (detailed balance for q). This is the
//     locally balanced proposal of Zanella (2020, "Informed proposals for local MCMC in
//     discrete spaces", JASA) with balancing function g(t) = √t: q(x'|x) ∝
//     exp((E(x') − E(x))/2) over x' ≠ x, E = log q̃(x) = LSE_y f(x)[y]. Gibbs with
//     gradients (Grathwohl, Swersky, Hashemi, Duvenaud, Maddison, ICML 2021, "Oops I
//     took a gradient") is the same proposal with E(x') − E(x) replaced by its
//     first-order estimate through the one-hot encoding h of x, d(x') = ∂E/∂h_{x'} −
//     ∂E/∂h_x at h = onehot(x), which it needs because its spaces are too large to
//     enumerate. Here X is small and the sampler is given q(x) at every x (not the
//     model's input gradients), so the kernel uses the exact differences: "gwg" is GWG
//     without the Taylor approximation (for one categorical variable: its proposal
//     softmax over x' ≠ x of (E(x') − E(x))/2, the mode the authors' released sampler
//     runs with exact differences in place of gradients). The two coincide exactly
//     when the estimate is exact. For the one-hot linear model (f(x)[y] = W[x][y] + b[y]) f is linear in h,
//     so d(x') = Σ_y s(x,y)·(f(x')[y] − f(x)[y]) with s(x,·) = softmax_y f(x); LSE is
//     convex, so d(x') ≤ E(x') − E(x), with equality iff f(x')[y] − f(x)[y] is the
//     same for every class y (always when K = 1; for K ≥ 2 only on such tables). With
//     tanh hidden layers d is a first-order estimate through the network, and on scalar
//     x (no one-hot encoding) the categorical GWG proposal is not defined; the proposal
//     here is the same for every architecture, since it depends on q alone. For X = 2
//     it proposes the other value and accepts with min(1, q(x')/q(x)).
//
// X = 1 never moves.
//
// Polyak averaging (AverageLast > 0): the run also sums, in float64 with plain scalar
// adds, its parameters after each of the last min(AverageLast, Steps) Adam updates, and
// Result.AvgLogits holds the logits at their mean (rounded to float32); a run that
// diverged gets none. The training itself, and so every other field of the Result, is
// unchanged.
//
// Every random draw of a run (the initial buffer, slots, restarts, proposals,
// acceptances, exact draws) comes from one PCG generator (math/rand/v2's PCG-DXSM)
// seeded by (PCD.Seed, pcdStream), turned into integers and uniforms by pcdRNG's own
// exact arithmetic, and every comparison is in float64 on the float32 q(x), so a run's
// negatives, and so its result, depend only on its own Run and the Spec (and not on the
// build, the machine or math/rand/v2's Rand methods).

// PCD is a run's sampler for the log-Z gradient (kernel.Run.PCD; nil = exact).
type PCD struct {
	Exact       bool     // pcd-exact: negatives drawn exactly from q(x) every step
	Negatives   int      // negatives per step (>= 1)
	Buffer      int      // pcd: replay buffer size (>= 1)
	Reinit      float32  // pcd: per-negative probability of a uniform restart, in [0,1]
	ChainSteps  int      // pcd: MH steps per training step (>= 0)
	Proposal    Proposal // pcd: the MH proposal (the zero value: uniform)
	Neighbour   bool     // pcd: x±1 proposal instead of uniform (the same as Proposal = ProposalNeighbour; not with ProposalGWG)
	Seed        uint64   // the sampler's RNG: every draw of the run's chains derives from it
	AverageLast int      // > 0: also return the logits of the parameters averaged over the last AverageLast steps (Polyak averaging), in Result.AvgLogits
}

// Proposal is a pcd chain's Metropolis–Hastings proposal (see the file comment for what
// each proposes and its acceptance). Every step of a chain of X >= 2 takes its random
// draws from the sampler's generator:
//
//   - ProposalUniform: two draws, the first for x' (exact bounded integer, one or more
//     words), the second's top 53 bits for the acceptance uniform u.
//   - ProposalNeighbour: one draw, its bit 0 for the direction and its top 53 bits
//     for u.
//   - ProposalGWG: two draws, the first's top 53 bits for x' (inversion on the
//     prefix sums of √q with x's interval cut out), the second's top 53 bits for u; none when no
//     move is possible (q(x') = 0 for every x' ≠ x, or a non-finite q: a diverged run).
type Proposal uint8

// The proposals.
const (
	ProposalUniform   Proposal = iota // "uniform": any x, uniformly
	ProposalNeighbour                 // "neighbour": x±1, reflecting
	ProposalGWG                       // "gwg": x' ≠ x with probability ∝ √q(x') (locally balanced, exact GWG)
)

var proposalNames = [...]string{"uniform", "neighbour", "gwg"}

// String is the proposal's option name ("uniform", "neighbour", "gwg").
func (p Proposal) String() string {
	if int(p) < len(proposalNames) {
		return proposalNames[p]
	}
	return fmt.Sprintf("Proposal(%d)", uint8(p))
}

// ParseProposal is the proposal of an option name (String's inverse); ok is false
// (and the proposal uniform) for any other name.
func ParseProposal(name string) (p Proposal, ok bool) {
	for i, n := range proposalNames {
		if n == name {
			return Proposal(i), true
		}
	}
	return ProposalUniform, false
}

// proposal is the chain's proposal: Proposal, or neighbour when Neighbour is set.
func (p *PCD) proposal() Proposal {
	if p.Neighbour {
		return ProposalNeighbour
	}
	return p.Proposal
}

// Limits on the PCD options (memory and time per step).
const (
	MaxPCDNegatives  = 1 << 20
	MaxPCDBuffer     = 1 << 24
	MaxPCDChainSteps = 1 << 16
)

// pcdStream is the second word of the sampler's PCG seed.
const pcdStream = 0x7063642d6b726e6c // "pcd-krnl"

// Validate reports the first problem with the options, or nil. pcd-exact checks
// Negatives and AverageLast only (Buffer, Reinit, ChainSteps, Proposal and Neighbour are
// then unused).
func (p *PCD) Validate() error {
	if p == nil {
		return nil
	}
	if p.Negatives < 1 || p.Negatives > MaxPCDNegatives {
		return fmt.Errorf("pcd: Negatives must be in [1, %d], got %d", MaxPCDNegatives, p.Negatives)
	}
	if p.AverageLast < 0 {
		return fmt.Errorf("pcd: AverageLast must be >= 0, got %d", p.AverageLast)
	}
	if p.Exact {
		return nil
	}
	if p.Buffer < 1 || p.Buffer > MaxPCDBuffer {
		return fmt.Errorf("pcd: Buffer must be in [1, %d], got %d", MaxPCDBuffer, p.Buffer)
	}
	if !(p.Reinit >= 0 && p.Reinit <= 1) {
		return fmt.Errorf("pcd: Reinit must be in [0, 1], got %v", p.Reinit)
	}
	if p.ChainSteps < 0 || p.ChainSteps > MaxPCDChainSteps {
		return fmt.Errorf("pcd: ChainSteps must be in [0, %d], got %d", MaxPCDChainSteps, p.ChainSteps)
	}
	if p.Proposal > ProposalGWG {
		return fmt.Errorf("pcd: unknown Proposal %d", uint8(p.Proposal))
	}
	if p.Neighbour && p.Proposal != ProposalUniform && p.Proposal != ProposalNeighbour {
		return fmt.Errorf("pcd: Neighbour set with Proposal %v", p.Proposal)
	}
	return nil
}

// pcdRNG is the sampler's random source: PCG-DXSM with exact bounded integers and
// 53-bit uniforms.
type pcdRNG struct{ pcg rand.PCG }

func newPCDRNG(seed uint64) *pcdRNG {
	r := &pcdRNG{}
	r.pcg.Seed(seed, pcdStream)
	return r
}

func (r *pcdRNG) uint64() uint64 { return r.pcg.Uint64() }

// float64 is uniform on [0, 1) in steps of 2^-53.
func (r *pcdRNG) float64() float64 { return float64(r.pcg.Uint64()>>11) * 0x1p-53 }

// intN is uniform on 0..n−1 (n >= 1), exactly: Lemire's multiply-shift with rejection.
func (r *pcdRNG) intN(n int) int {
	un := uint64(n)
	hi, lo := bits.Mul64(r.pcg.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), un)
		}
	}
	return int(hi)
}

// pcdSampler is one run's sampler state.
type pcdSampler struct {
	opt PCD
	X   int
	rng *pcdRNG
	buf []int32   // pcd: the replay buffer
	idx []int32   // pcd: the slot of each negative of the last step
	neg []int32   // the last step's negatives
	cnt []int32   // their histogram [X]
	cum []float64 // pcd-exact: cumulative q(x)
	gwg *gwgTable // pcd with the gwg proposal: the step's proposal table
}

// newPCDSampler seeds a run's sampler and draws its initial buffer (uniform x).
func newPCDSampler(p PCD, X int) *pcdSampler {
	s := &pcdSampler{opt: p, X: X, rng: newPCDRNG(p.Seed),
		neg: make([]int32, p.Negatives), cnt: make([]int32, X)}
	if p.Exact {
		s.cum = make([]float64, X)
		return s
	}
	s.buf = make([]int32, p.Buffer)
	s.idx = make([]int32, p.Negatives)
	if p.proposal() == ProposalGWG {
		s.gwg = newGWGTable(X)
	}
	for i := range s.buf {
		s.buf[i] = int32(s.rng.intN(X))
	}
	return s
}

// step draws the step's negatives under q(x) ∝ w[x] (w >= 0, len X) into s.neg and
// their histogram into s.cnt.
func (s *pcdSampler) step(w []float64) {
	clear(s.cnt)
	p, rng, X := &s.opt, s.rng, s.X
	if p.Exact {
		total := 0.0
		for x, v := range w {
			total += v
			s.cum[x] = total
		}
		for i := range s.neg {
			x := sampleCum(rng, s.cum, w)
			s.neg[i] = int32(x)
			s.cnt[x]++
		}
		return
	}
	reinit := float64(p.Reinit)
	prop := p.proposal()
	if prop == ProposalGWG {
		s.gwg.set(w)
	}
	for i := range s.neg {
		j := rng.intN(len(s.buf))
		x := int(s.buf[j])
		if reinit > 0 && rng.float64() < reinit {
			x = rng.intN(X)
		}
		if prop == ProposalGWG {
			x = s.gwg.chain(rng, x, p.ChainSteps)
		} else {
			x = mhChain(rng, x, w, p.ChainSteps, prop == ProposalNeighbour)
		}
		s.buf[j] = int32(x) // written before the next negative: duplicates chain on
		s.idx[i], s.neg[i] = int32(j), int32(x)
		s.cnt[x]++
	}
}

// sampleCum draws x with probability w[x]/Σw by inversion on cum (the prefix sums of
// w): the first x with cum[x] > u·Σw, u uniform on [0,1) (never a zero-weight x). A
// non-finite or zero total (a diverged run) gives a uniform x.
func sampleCum(rng *pcdRNG, cum, w []float64) int {
	X := len(cum)
	total := cum[X-1]
	if !(total > 0) || total > 1e300 {
		return rng.intN(X)
	}
	return invertCum(cum, w, float64(rng.uint64()>>11)*0x1p-53*total)
}

// invertCum is the first x with cum[x] > t for 0 <= t and cum the prefix sums of
// w >= 0 (finite, positive total); t >= total gives the last x of positive weight.
func invertCum(cum, w []float64, t float64) int {
	X := len(cum)
	if !(t < cum[X-1]) { // t rounded up to total: the last x of positive weight
		x := X - 1
		for x > 0 && !(w[x] > 0) {
			x--
		}
		return x
	}
	return firstAbove(cum, t)
}

// firstAbove is the first i with c[i] > t, for c non-decreasing, >= 0 and finite, and
// t >= 0; len(c)−1 when there is none (c not empty).
func firstAbove(c []float64, t float64) int {
	// Branch-free binary search (the outcome is random, a branch would mispredict):
	// the answer is in [base, base+n). The values are >= 0 and finite, so they compare
	// as their bits: mask is −1 iff c[base+half−1] <= t.
	tb := int64(math.Float64bits(t))
	base, n := 0, len(c)
	for n > 1 {
		half := n >> 1
		mask := (int64(math.Float64bits(c[base+half-1])) - tb - 1) >> 63
		base += half & int(mask)
		n -= half
	}
	return base
}

// mhChain advances x by steps Metropolis–Hastings steps targeting q(x) ∝ w[x].
func mhChain(rng *pcdRNG, x int, w []float64, steps int, neighbour bool) int {
	for range steps {
		x = mhStep(rng, x, w, neighbour)
	}
	return x
}

// mhStep is one Metropolis–Hastings step from x targeting q(x) ∝ w[x]: a uniform
// proposal, or the reflecting neighbour proposal with its Hastings correction (see the
// file comment). It accepts iff u·w[x]·deg(x') < w[x']·deg(x), u uniform on [0,1) (so
// always when the ratio is >= 1, and never on a non-finite weight: a diverged run). The
// uniform proposal takes one draw for x' and one for u; the neighbour proposal one draw
// for both, its bit 0 for the direction and its top 53 bits for u. The accept/reject
// decision is a select, not a branch (it is unpredictable).
func mhStep(rng *pcdRNG, x int, w []float64, neighbour bool) int {
	X := len(w)
	if X < 2 {
		return x
	}
	var y int
	var a, b float64
	var r uint64
	if neighbour {
		r = rng.uint64()
		y = x - 1 + 2*int(r&1)
		if x == 0 {
			y = 1
		}
		if x == X-1 {
			y = X - 2
		}
		a, b = w[y]*degree(x, X), w[x]*degree(y, X)
	} else {
		y = rng.intN(X)
		a, b = w[y], w[x]
		r = rng.uint64()
	}
	if float64(r>>11)*0x1p-53*b < a {
		x = y
	}
	return x
}

// gwgTable is the gwg proposal for one target q ∝ w (set once per sampler step, since
// every chain step of a training step targets the same q): r = √w, its prefix sums
// with a leading 0 for the draws, and D(x) = Σ_{z≠x} r[z] for every x, summed as the
// mass below x plus the mass above x (each a sum of non-negative terms, the second
// taken from the right: no cancellation, so D(x) is accurate to a few ulps however
// peaked q is).
type gwgTable struct {
	r  []float64 // √w[x]
	lo []float64 // lo[x] = Σ_{z<x} r[z] (len X+1: lo[0] = 0, lo[X] = Σ r)
	d  []float64 // D(x)
	ok bool      // Σ r is finite, > 0 and <= 1e150 (so the acceptance's products are finite)
}

func newGWGTable(X int) *gwgTable {
	return &gwgTable{r: make([]float64, X), lo: make([]float64, X+1), d: make([]float64, X)}
}

// set fills the table for q ∝ w (w >= 0, len X). A NaN, infinite or negative weight
// (a diverged run) leaves ok false: the chains then stay where they are.
func (t *gwgTable) set(w []float64) {
	X := len(w)
	a := 0.0
	for i := range X {
		t.r[i] = math.Sqrt(w[i])
		a += t.r[i]
		t.lo[i+1] = a
	}
	hi := 0.0 // Σ_{z>x} r[z]
	for x := X - 1; x >= 0; x-- {
		t.d[x] = t.lo[x] + hi
		hi += t.r[x]
	}
	t.ok = a > 0 && a <= 1e150 && hi > 0 && hi <= 1e150
}

// chain advances x by steps gwg Metropolis–Hastings steps.
func (t *gwgTable) chain(rng *pcdRNG, x, steps int) int {
	for range steps {
		x = t.step(rng, x)
	}
	return x
}

// step is one gwg Metropolis–Hastings step from x (see the file comment). x' ≠ x is
// drawn with probability r[x']/D(x) by inversion with x's interval cut out: v =
// u₁·D(x), u₁ from the first draw's top 53 bits, and v' = v below the mass lo[x] of
// the values under x, v' = v + r[x] from there on; x' is the first value with
// lo[x'+1] > v' (rounding is monotone, so v + r[x] >= lo[x+1] and x' > x on that
// side). Then the move is accepted iff u₂·r[x]·D(x') < r[x']·D(x), u₂ from the second
// draw's top 53 bits (always when r[x] = 0 < r[x'], never when r[x'] = 0). The only
// effect of rounding beyond that of the prefix sums themselves: v' can reach Σ r, and
// the search then gives X−1, a draw of probability ~2^-53 (x' = X−1 = x is a step that
// stays; a zero weight is rejected). No draw is taken when no move is possible
// (D(x) = 0 or !ok). Both the side and the acceptance are selects, not branches (they
// are unpredictable).
func (t *gwgTable) step(rng *pcdRNG, x int) int {
	X := len(t.r)
	D := t.d[x]
	if X < 2 || !t.ok || !(D > 0) {
		return x
	}
	v := float64(rng.uint64()>>11) * 0x1p-53 * D
	// v and lo[x] are >= 0 and finite, so they compare as their bits: above is all
	// ones iff lo[x] <= v.
	above := uint64((int64(math.Float64bits(t.lo[x])) - int64(math.Float64bits(v)) - 1) >> 63)
	v += math.Float64frombits(math.Float64bits(t.r[x]) & above)
	y := firstAbove(t.lo[1:], v)
	if float64(rng.uint64()>>11)*0x1p-53*t.r[x]*t.d[y] < t.r[y]*D {
		x = y
	}
	return x
}

// degree is the number of neighbours of x on the path 0..X−1 (X >= 2).
func degree(x, X int) float64 {
	d := 2.0
	if x == 0 || x == X-1 {
		d = 1
	}
	return d
}

// pcdBlock is the sampler side of a block whose lanes are runs with a PCD (every lane
// of such a block is in mix mode: rw = (1−w)ĉ).
type pcdBlock struct {
	s  []*pcdSampler // per real lane
	qx []float32     // q(x) [X], lane-major
	nh []float32     // n̂(x) [X], lane-major (0 on padding lanes)
	w  []float64     // one lane's q(x) in float64

	// Polyak averaging (PCD.AverageLast > 0 on some real lane).
	avg  bool
	from []int     // per real lane: the first step summed (0: no averaging)
	sum  []float64 // Σ theta over the summed steps [P], lane-major
	save []float32 // theta while the averaged logits are evaluated
}

func newPCDBlock(X, L int) *pcdBlock {
	return &pcdBlock{qx: make([]float32, X*L), nh: make([]float32, X*L), w: make([]float64, X)}
}

// loadPCD seeds the samplers of the block's real lanes.
func (b *block) loadPCD(runs []Run, part []int) {
	p := b.pcd
	p.s = p.s[:0]
	for _, k := range part {
		p.s = append(p.s, newPCDSampler(*runs[k].PCD, b.X))
	}
	clear(p.nh)
	p.avg, p.from = false, p.from[:0]
	for _, k := range part {
		from := 0
		if a := runs[k].PCD.AverageLast; a > 0 {
			from = max(1, b.spec.Steps-a+1)
			p.avg = true
		}
		p.from = append(p.from, from)
	}
	if p.avg {
		if p.sum == nil {
			p.sum = make([]float64, b.P*b.L)
			p.save = make([]float32, b.P*b.L)
		}
		clear(p.sum)
	}
}

// pcdAccumulate adds step t's parameters (after its Adam update) to the running sum of
// every averaging lane whose window has begun: plain scalar float64 adds in step order,
// so the sum is the same in both builds. A lane that diverges gets no AvgLogits, so
// the guard's restores need no undoing here.
func (b *block) pcdAccumulate(t int) {
	L, p := b.L, b.pcd
	for l, from := range p.from {
		if from == 0 || t < from {
			continue
		}
		for j := range b.P {
			p.sum[j*L+l] += float64(b.theta[j*L+l])
		}
	}
}

// pcdAvgLogits stores Result.AvgLogits of the averaging lanes that did not diverge: the
// block's forward pass at the averaged parameters float32(sum/n), n = min(AverageLast,
// Steps) (with no steps, the initial parameters, i.e. the final logits). theta is
// restored afterwards.
func (b *block) pcdAvgLogits(out []Result, part []int) {
	p := b.pcd
	if !p.avg {
		return
	}
	L, XK, steps := b.L, b.X*b.K, b.spec.Steps
	copy(p.save, b.theta)
	for l, from := range p.from {
		if from == 0 || steps == 0 {
			continue
		}
		n := float64(steps - from + 1)
		for j := range b.P {
			b.theta[j*L+l] = float32(p.sum[j*L+l] / n)
		}
	}
	b.forward()
	for i, k := range part {
		if p.from[i] == 0 || b.div[i] {
			continue
		}
		f := make([]float32, XK)
		for j := range f {
			f[j] = b.f[j*L+i]
		}
		out[k].AvgLogits = f
	}
	copy(b.theta, p.save)
}

// pcdLossGrad is lossGrad for a PCD block: q(x) from the joint softmax, the negatives
// of every real lane, then gf = (1−w)ĉ(x)s − c + w·n̂(x)s.
func (b *block) pcdLossGrad() {
	L, K, X, XK := b.L, b.K, b.X, b.X*b.K
	p := b.pcd
	vSoftmax(b.q, b.f, XK, L)
	for x := range X {
		vRowSum(p.qx[x*L:(x+1)*L], b.q[x*K*L:(x+1)*K*L], K, L)
	}
	for l, s := range p.s {
		for x := range X {
			p.w[x] = float64(p.qx[x*L+l])
		}
		s.step(p.w)
		n := float32(s.opt.Negatives)
		for x, c := range s.cnt {
			p.nh[x*L+l] = float32(c) / n
		}
	}
	for x := range X {
		r := x * K * L
		vSoftmax(b.s[r:r+K*L], b.f[r:r+K*L], K, L)
		for y := range K {
			i := r + y*L
			vMul(b.q[i:i+L], p.nh[x*L:(x+1)*L], b.s[i:i+L])
		}
		vGradMix(b.gf[r:], b.s[r:], b.q[r:], b.c[r:], b.rw[x*L:], b.w, K, L)
	}
}

// pcdBuffer is lane i's Result.Buffer: pcd: the final buffer; pcd-exact: the last
// step's negatives (none before the first step).
func (b *block) pcdBuffer(i int) []int32 {
	s := b.pcd.s[i]
	if s.opt.Exact {
		if b.spec.Steps == 0 {
			return nil
		}
		return append([]int32(nil), s.neg...)
	}
	return append([]int32(nil), s.buf...)
}

// validatePCD checks every run's PCD options.
func validatePCD(runs []Run) error {
	for i, r := range runs {
		if err := r.PCD.Validate(); err != nil {
			return fmt.Errorf("kernel: run %d: %w", i, err)
		}
	}
	return nil
}

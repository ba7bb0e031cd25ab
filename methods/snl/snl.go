package snl

import (
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/nce"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
)

// Name is the method's name.
const Name = "snl"

// Options are SNL's settings (doc.go gives their sources).
type Options struct {
	N        int    `opt:"snl_n" label:"SNL draws per point" range:"[1,64]" doc:"snl: proposal draws per data point for the importance-sampling estimate of Z"`
	Proposal string `opt:"snl_proposal" label:"SNL proposal" enum:"gaussian,uniform" doc:"snl: the importance proposal: gaussian (a diagonal Gaussian fitted to the run's training draws, sd inflated 1.5×, truncated to the box, mixed with 10% uniform on the box; binary tables: the product-Bernoulli of their bit frequencies, mixed alike) or uniform (on the box, or the 2^D states)"`
}

// defaults are jemcheck's choices (doc.go).
var defaults = Options{N: 4, Proposal: "gaussian"}

// Defaults returns SNL's default options.
func Defaults() Options { return defaults }

// The Gaussian proposal's constants: its sd is the draws' sd times Inflate, and it is
// mixed with the uniform density on the box with weight Defensive (Hesterberg 1995's
// defensive importance sampling: every weight is at most exp ℓ·area/Defensive).
const (
	Inflate   = 1.5
	Defensive = 0.1
)

func init() {
	methods.Register(methods.Method{Name: Name, Order: 23,
		Doc:     "self-normalised likelihood: −mean ℓ(data) + e^{−b}·Ẑ + b − 1, an upper bound of the NLL tight at b = log Z, with one learned scalar b and Ẑ by importance sampling from a fixed proposal",
		Source:  "Self-normalised likelihood, arXiv 2503.07021 (2025)",
		Sampler: true, KernelOnly: true, Defaults: defaults,
		Hooks: []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.Bits.Hook(bits)}})
}

// spec2D is the hook tasks/plane and tasks/blocks call: it sets snl's objective on the
// spec (the plane's MLP, or a block task's additive or joint model in D = 2B).
var spec2D = methods.Objective(func(o Options) kernel.Objective { return NewObjective(o) }, nil)

// Objective is SNL as a kernel.Objective in ℝ^D (st.Dim): lanes 0..B the data,
// B..B(1+N) the proposal draws u_j; its one parameter st.Extra[0] is b.
type Objective struct {
	o Options
	// the Gaussian proposal, per axis [D]: mean, sd and log mass inside the box; the CDF
	// at the box's ends (lo, hi) and log sd, for the box box
	mu, sd, logMass []float64
	lo, hi, logSD   []float64
	box             float64
	fitted          bool
	bern            nce.BitsNoise // binary tables: the fitted product-Bernoulli proposal
	first           [][]float32   // the first minibatch by coordinate, for a run on fresh draws
	pt              []float64     // one draw [D]
	logR            []float64     // log r(u_j) of the current draws
	w               []float64     // Loss: the weights exp(ℓ(u_j) − log r(u_j) − max)
	scratch         []float32     // [D][n] draws, and their ℓ, for the first step's b
	lastLogZ, ess   float64       // the last step's IS log Ẑ and the ESS share of its weights
}

// NewObjective returns SNL's objective with options o.
func NewObjective(o Options) *Objective { return &Objective{o: o} }

// Lanes is B(1 + N).
func (s *Objective) Lanes(B, _ int) int { return B * (1 + s.o.N) }

// Params is 1: b, the learned log Z.
func (*Objective) Params() int { return 1 }

// GradEvals is 0: the proposal draws are lanes of the forward pass (the first step's
// one extra forward pass, for b's initial value, is not counted).
func (*Objective) GradEvals(int) int64 { return 0 }

// Begin sizes the run's state for st.Dim and fits the Gaussian proposal to the run's
// training draws (when it trains on fresh draws, Fill fits it to the first minibatch).
func (s *Objective) Begin(st *kernel.Step) {
	s.fitted, s.lastLogZ, s.ess = false, math.NaN(), math.NaN()
	if D := st.Dim; len(s.mu) != D {
		s.mu, s.sd, s.logMass = make([]float64, D), make([]float64, D), make([]float64, D)
		s.lo, s.hi, s.logSD = make([]float64, D), make([]float64, D), make([]float64, D)
		s.first, s.pt = make([][]float32, D), make([]float64, D)
	}
	if s.o.Proposal == "gaussian" && len(st.Data) == st.Dim && len(st.Data[0]) > 1 {
		if st.Binary {
			s.fitBits(st.Data)
		} else {
			s.fit(st.Data, st.Box)
		}
	}
}

// fit sets the Gaussian proposal from draws x [D][n]: per-axis mean and sd (at least
// 5% of the box's half-width), the sd inflated by Inflate.
func (s *Objective) fit(x [][]float32, box float32) {
	kernel.ClearUpper()
	b := float64(box)
	for d, x := range x {
		var m, v float64
		for _, t := range x {
			m += float64(t)
		}
		m /= float64(len(x))
		for _, t := range x {
			v += (float64(t) - m) * (float64(t) - m)
		}
		sd := max(math.Sqrt(v/float64(len(x)-1)), 0.05*b) * Inflate
		s.mu[d], s.sd[d] = m, sd
		s.lo[d], s.hi[d] = phi((-b-m)/sd), phi((b-m)/sd)
		s.logMass[d] = math.Log(s.hi[d] - s.lo[d])
		s.logSD[d] = math.Log(sd)
	}
	s.box, s.fitted = b, true
}

func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// logBox is the log volume of the box [−box, box]^D: log(4box²) on the plane.
func logBox(D int, box float64) float64 {
	v := 1.0
	for range D {
		v *= 2 * box // D = 2: (2box)², as 4·box·box (2box is exact)
	}
	if math.IsInf(v, 0) || v == 0 {
		return float64(D) * math.Log(2*box)
	}
	return math.Log(v)
}

// logGaussian is log of the truncated Gaussian part of r at u [D] in the box.
func (s *Objective) logGaussian(u []float64) float64 {
	lg := 0.0
	for d, u := range u {
		z := (u - s.mu[d]) / s.sd[d]
		lg += -0.5*z*z - s.logSD[d] - halfLog2Pi - s.logMass[d]
	}
	return lg
}

// logMixture sets logR[j] = log r(u_j) = logAdd(logDefensive + logU, log1mDefensive +
// lg_j) from lg_j = logR[j] (the Gaussian part's log), with t as scratch: logAdd's
// exps at once (prob.ExpTo), the same bits as logAdd lane by lane.
func logMixture(logR, t []float64, logU float64) {
	a := logDefensive + logU
	for j, lg := range logR {
		b := log1mDefensive + lg
		t[j] = min(a, b) - max(a, b)
	}
	prob.ExpTo(t, t)
	for j, lg := range logR {
		logR[j] = max(a, log1mDefensive+lg) + math.Log(1+t[j])
	}
}

var (
	halfLog2Pi     = 0.5 * math.Log(2*math.Pi)
	logDefensive   = math.Log(Defensive)
	log1mDefensive = math.Log(1 - Defensive)
)

// logAdd is log(eᵃ + eᵇ) (the larger term's exponent is exp(0) = 1, not computed).
func logAdd(a, b float64) float64 {
	m := max(a, b)
	return m + math.Log(1+math.Exp(min(a, b)-m))
}

// Fill draws the proposal lanes from r (st.Rng) and, at the first step, sets b to the
// importance-sampling log Ẑ of the initial model.
func (s *Objective) Fill(st *kernel.Step) {
	kernel.ClearUpper()
	B, P, D, x := st.B, st.P, st.Dim, st.X
	n := P - B
	if len(s.logR) != n {
		s.logR = make([]float64, n)
	}
	if st.Binary {
		s.fillBits(st)
	} else {
		s.fillContinuous(st)
	}
	if st.Step == 1 && st.LSE != nil {
		if len(s.scratch) != (D+1)*n {
			s.scratch = make([]float32, (D+1)*n)
		}
		for c := range D {
			copy(s.scratch[c*n:(c+1)*n], x[c*P+B:(c+1)*P])
		}
		lse := s.scratch[D*n:]
		st.LSE(s.scratch[:D*n], n, lse, nil)
		kernel.ClearUpper()
		m := math.Inf(-1)
		for j := range n {
			m = max(m, float64(lse[j])-s.logR[j])
		}
		var z float64
		for j := range n {
			z += math.Exp(float64(lse[j]) - s.logR[j] - m)
		}
		if b := m + math.Log(z/float64(n)); !math.IsNaN(b) && !math.IsInf(b, 0) {
			st.Extra[0] = float32(b)
		}
	}
}

// fillContinuous is Fill's proposal lanes in the box and their log r.
func (s *Objective) fillContinuous(st *kernel.Step) {
	B, P, D, x := st.B, st.P, st.Dim, st.X
	box := float64(st.Box)
	if s.o.Proposal == "gaussian" && !s.fitted {
		for c := range s.first {
			s.first[c] = st.Coord(c)[:B]
		}
		s.fit(s.first, st.Box)
	}
	u := s.pt
	logU := -logBox(D, box) // the same for every lane
	for j := range P - B {
		if s.o.Proposal != "gaussian" || st.Rng.Float64() < Defensive {
			for c := range D {
				u[c] = (2*st.Rng.Float64() - 1) * box
			}
		} else {
			for c := range D {
				u[c] = s.truncated(c, st.Rng.Float64(), box)
			}
		}
		for c := range D {
			x[c*P+B+j] = float32(u[c])
			u[c] = float64(x[c*P+B+j])
		}
		if s.o.Proposal != "gaussian" {
			s.logR[j] = logU
		} else {
			s.logR[j] = s.logGaussian(u)
		}
	}
	if s.o.Proposal == "gaussian" {
		if len(s.w) != len(s.logR) {
			s.w = make([]float64, len(s.logR))
		}
		logMixture(s.logR, s.w, logU) // s.w: scratch until Loss sets the weights
	}
}

// truncated is the inverse-CDF draw of axis d's Gaussian truncated to the box at the
// uniform u.
func (s *Objective) truncated(d int, u, box float64) float64 {
	lo, hi := s.lo[d], s.hi[d]
	if box != s.box {
		lo, hi = phi((-box-s.mu[d])/s.sd[d]), phi((box-s.mu[d])/s.sd[d])
	}
	p := lo + u*(hi-lo)
	v := s.mu[d] + s.sd[d]*math.Sqrt2*math.Erfinv(2*p-1)
	return min(box, max(-box, v))
}

// Loss is −mean_i ℓ(x_i) + e^{−b}·Ẑ + b − 1 with Ẑ = mean_j exp ℓ(u_j)/r(u_j), e^{−b}Ẑ
// by log-sum-exp. Its derivatives: −1/B per data lane, e^{−b}·w_j/n per proposal lane,
// 1 − e^{−b}Ẑ in b.
func (s *Objective) Loss(st *kernel.Step, lse, coef []float32) float32 {
	kernel.ClearUpper()
	B, P := st.B, st.P
	n := P - B
	b := float64(st.Extra[0])
	var data float64
	for i := range B {
		data += float64(lse[i])
		coef[i] = -1 / float32(B)
	}
	logN := math.Log(float64(n))
	m := math.Inf(-1)
	for j := range n {
		m = max(m, float64(lse[B+j])-s.logR[j])
	}
	if len(s.w) != n {
		s.w = make([]float64, n)
	}
	for j := range n {
		s.w[j] = float64(lse[B+j]) - s.logR[j] - m
	}
	prob.ExpTo(s.w, s.w) // the weights, math.Exp's bits in vector lanes
	var sum, sum2 float64
	for _, w := range s.w {
		sum += w
		sum2 += w * w
	}
	logW := m + math.Log(sum) - logN // log Ẑ
	t := math.Exp(logW - b)          // e^{−b}·Ẑ
	k := math.Exp(m - logN - b)      // coef = e^{−b}·w_j/n, w_j = exp(ℓ(u_j) − log r(u_j))
	for j := range n {
		coef[B+j] = float32(s.w[j] * k)
	}
	st.ExtraGrad[0] = float32(1 - t)
	s.lastLogZ, s.ess = logW, sum*sum/sum2/float64(n)
	return float32(-data/float64(B) + t + b - 1)
}

// End reports the learned log Z (b), the last step's importance-sampling log Ẑ and the
// effective sample size share of its weights.
func (s *Objective) End(st *kernel.Step, res *kernel.Result2D) {
	if res.Stats == nil {
		res.Stats = map[string]float64{}
	}
	res.Stats["log_z_learned"] = float64(st.Extra[0])
	res.Stats["log_z_is"] = s.lastLogZ
	res.Stats["is_ess_share"] = s.ess
}

var _ kernel.Objective = (*Objective)(nil)

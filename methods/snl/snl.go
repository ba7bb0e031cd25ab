package snl

import (
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// Name is the method's name.
const Name = "snl"

// Options are SNL's settings (doc.go gives their sources).
type Options struct {
	N        int    `opt:"snl_n" label:"SNL draws per point" range:"[1,64]" doc:"snl: proposal draws per data point for the importance-sampling estimate of Z"`
	Proposal string `opt:"snl_proposal" label:"SNL proposal" enum:"gaussian,uniform" doc:"snl: the importance proposal: gaussian (a diagonal Gaussian fitted to the run's training draws, sd inflated 1.5×, truncated to the box, mixed with 10% uniform on the box) or uniform (on the box)"`
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
		Trainers: map[string]any{methods.KindPlane: spec2D}})
}

// spec2D is the hook tasks/plane calls: it sets snl's objective on the 2-D spec.
var spec2D = methods.Objective(func(o Options) kernel.Objective { return NewObjective(o) }, nil)

// Objective is SNL as a kernel.Objective: lanes 0..B the data, B..B(1+N) the
// proposal draws u_j; its one parameter st.Extra[0] is b.
type Objective struct {
	o Options
	// the Gaussian proposal: per-axis mean, sd and log mass inside the box; the CDF at
	// the box's ends (lo, hi) and log sd, for the box box
	mu, sd, logMass [2]float64
	lo, hi, logSD   [2]float64
	box             float64
	fitted          bool
	logR            []float64 // log r(u_j) of the current draws
	w               []float64 // Loss: the weights exp(ℓ(u_j) − log r(u_j) − max)
	scratch         []float32 // [2][n] draws, and their ℓ, for the first step's b
	lastLogZ, ess   float64   // the last step's IS log Ẑ and the ESS share of its weights
}

// NewObjective returns SNL's objective with options o.
func NewObjective(o Options) *Objective { return &Objective{o: o} }

// Lanes is B(1 + N).
func (s *Objective) Lanes(B int) int { return B * (1 + s.o.N) }

// Params is 1: b, the learned log Z.
func (*Objective) Params() int { return 1 }

// GradEvals is 0: the proposal draws are lanes of the forward pass (the first step's
// one extra forward pass, for b's initial value, is not counted).
func (*Objective) GradEvals(int) int64 { return 0 }

// Begin fits the Gaussian proposal to the run's training draws (when it trains on
// fresh draws, Fill fits it to the first minibatch).
func (s *Objective) Begin(st *kernel.Step) {
	s.fitted, s.lastLogZ, s.ess = false, math.NaN(), math.NaN()
	if s.o.Proposal == "gaussian" && len(st.Data) == 2 && len(st.Data[0]) > 1 {
		s.fit(st.Data[0], st.Data[1], st.Box)
	}
}

// fit sets the Gaussian proposal from draws x0, x1: per-axis mean and sd (at least 5%
// of the box's half-width), the sd inflated by Inflate.
func (s *Objective) fit(x0, x1 []float32, box float32) {
	kernel.ClearUpper()
	b := float64(box)
	for d, x := range [2][]float32{x0, x1} {
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

// logProposal is log r(u) at (a, c) in the box.
func (s *Objective) logProposal(a, c, box float64) float64 {
	logU := -math.Log(4 * box * box)
	if s.o.Proposal != "gaussian" {
		return logU
	}
	lg := 0.0
	for d, u := range [2]float64{a, c} {
		z := (u - s.mu[d]) / s.sd[d]
		lg += -0.5*z*z - s.logSD[d] - halfLog2Pi - s.logMass[d]
	}
	return logAdd(logDefensive+logU, log1mDefensive+lg)
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
	B, P, x := st.B, st.P, st.X
	box := float64(st.Box)
	if s.o.Proposal == "gaussian" && !s.fitted {
		s.fit(x[:B], x[P:P+B], st.Box)
	}
	n := P - B
	if len(s.logR) != n {
		s.logR = make([]float64, n)
	}
	for j := range n {
		var a, c float64
		if s.o.Proposal != "gaussian" || st.Rng.Float64() < Defensive {
			a, c = (2*st.Rng.Float64()-1)*box, (2*st.Rng.Float64()-1)*box
		} else {
			a, c = s.truncated(0, st.Rng.Float64(), box), s.truncated(1, st.Rng.Float64(), box)
		}
		x[B+j], x[P+B+j] = float32(a), float32(c)
		s.logR[j] = s.logProposal(float64(x[B+j]), float64(x[P+B+j]), box)
	}
	if st.Step == 1 && st.LSE != nil {
		if len(s.scratch) != 3*n {
			s.scratch = make([]float32, 3*n)
		}
		copy(s.scratch[:n], x[B:P])
		copy(s.scratch[n:2*n], x[P+B:2*P])
		lse := s.scratch[2*n:]
		st.LSE(s.scratch[:2*n], n, lse, nil)
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
	var sum, sum2 float64
	for j := range n {
		w := math.Exp(float64(lse[B+j]) - s.logR[j] - m)
		s.w[j] = w
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

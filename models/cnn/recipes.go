package cnn

import (
	"errors"
	"fmt"
	"math"
	"strings"

	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The sampler-free recipes on the CNN: ed, dsm and nce. Each is cross-entropy on the
// data plus PxWeight times a loss on ℓ(x) = LSE_y f(x)[y], the model's log
// unnormalised q(x) (JEM's split log q(x, y) = log q(y|x) + log q(x)):
//
//   - ED (Schröder et al., NeurIPS 2023), Gaussian perturbation: per data point x,
//     y = x + √t ξ and M negatives x'_j = y + √t ξ_j; the term is
//     mean_i log(w/M + (1/M) Σ_j exp(ℓ(x'_ij) − ℓ(x_i))), methods/ed's on the plane.
//   - DSM (Vincent 2011), exact: x̃ = x + σε and the term ½·mean ‖σ ∇x ℓ(x̃) + ε‖²; the
//     input gradient is the hand backward pass, and its parameter gradient is GoMLX
//     autodiff through that pass (double backprop; autodiff of GoMLX's own input
//     gradient needs Pad, which SimpleGo lacks). Its minimiser is the truth convolved
//     with N(0, σ²I).
//   - NCE (Gutmann & Hyvärinen 2010): ν noise draws per data point from the Gaussian
//     with the mean and full covariance of the run's training draws (times Inflate, a
//     ridge where singular), G(u) = ℓ(u) − c − log(ν pn(u)) and the term
//     −(1/B)[Σ_data log σ(G) + Σ_noise log(1 − σ(G))], c a learned scalar trained by Adam
//     with the network, started at the importance-sampling estimate of the initial
//     model's log Z under the noise.
//
// ed and nce evaluate ℓ on lanes (the data, then the negatives or noise draws) in one
// forward pass; with the hand backward pass the term's derivative in each lane's ℓ
// (GoMLX autodiff of the small term graph) weights that lane's softmax as its dlogits.

// ED is cross-entropy plus Energy Discrepancy with Gaussian perturbations (zero
// fields: the 2-D defaults M 4, t 1, w 1). W is the stabiliser: as 0 reads as the
// default, a W <= 1e-30 means w = 0.
type ED struct {
	M int     // negatives per data point, in [1, 64]
	T float64 // variance t of each Gaussian perturbation
	W float64 // stabiliser w
}

// DSM is cross-entropy plus exact denoising score matching.
type DSM struct {
	Sigma float64 // std σ of the perturbation x̃ = x + σε, 0.2
}

// NCE is cross-entropy plus noise-contrastive estimation with a learned log Z.
type NCE struct {
	Nu      int     // noise draws per data point ν, 10, in [1, 64]
	Inflate float64 // factor on the fitted Gaussian's covariance, 1
}

// edWZero is the stabiliser under which ED drops the w term (w = 0).
const edWZero = 1e-30

func (e ED) withDefaults() ED {
	if e.M == 0 {
		e.M = 4
	}
	if e.T == 0 {
		e.T = 1
	}
	if e.W == 0 {
		e.W = 1
	}
	return e
}

func (d DSM) withDefaults() DSM {
	if d.Sigma == 0 {
		d.Sigma = 0.2
	}
	return d
}

func (n NCE) withDefaults() NCE {
	if n.Nu == 0 {
		n.Nu = 10
	}
	if n.Inflate == 0 {
		n.Inflate = 1
	}
	return n
}

func finitePos(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// Name is "ed".
func (ED) Name() string { return "ed" }

// GradEvals is the M negatives.
func (e ED) GradEvals() int64 { return int64(e.withDefaults().M) }

// Check wants M in [1, 64], a finite T > 0 and a finite W >= 0.
func (e ED) Check(TrainOptions) error {
	if e = e.withDefaults(); e.M < 1 || e.M > 64 || !finitePos(e.T) || !(e.W >= 0) || math.IsInf(e.W, 0) {
		return fmt.Errorf("cnn: bad ED options %+v (need M in [1, 64], a finite T > 0, a finite W >= 0)", e)
	}
	return nil
}

// Begin starts a run: ED keeps no state.
func (e ED) Begin(*Run) (Term, error) { return &edTerm{o: e.withDefaults()}, nil }

type edTerm struct {
	termBase
	o ED
}

// Lanes are the M negatives of every data point (edNegatives).
func (t *edTerm) Lanes(s *StepGraph) *Node { return edNegatives(s, s.X, t.o) }

// Loss is edLoss.
func (t *edTerm) Loss(_ *StepGraph, ld, ln *Node) *Node { return edLoss(ld, ln, t.o) }

// End reports "ed_loss".
func (t *edTerm) End(_ []float32, st *Stats) { st.MethodStats = termStats(t.o.Name(), st.Term) }

// Name is "dsm".
func (DSM) Name() string { return "dsm" }

// GradEvals is 0: the score is an input gradient of the data's own pass.
func (DSM) GradEvals() int64 { return 0 }

// Check wants a finite Sigma > 0, and refuses Autodiff on SimpleGo.
func (d DSM) Check(o TrainOptions) error {
	switch {
	case !finitePos(d.withDefaults().Sigma):
		return fmt.Errorf("cnn: DSM Sigma must be a finite number > 0, got %v", d.Sigma)
	case o.Autodiff && (o.Backend == "go" || strings.HasPrefix(o.Backend, "go:")):
		return errors.New("cnn: DSM with Autodiff differentiates GoMLX's own input gradient, whose VJP needs Pad, missing on SimpleGo (the default, hand input gradient works)")
	}
	return nil
}

// Begin starts a run: DSM keeps no state.
func (d DSM) Begin(*Run) (Term, error) { return &dsmTerm{o: d.withDefaults()}, nil }

type dsmTerm struct {
	termBase
	o DSM
}

// Loss is dsmLoss at x̃ = x + σε, its score by StepGraph.LSEGrad.
func (t *dsmTerm) Loss(s *StepGraph, _, _ *Node) *Node {
	eps := s.Normal(s.B, s.D)
	_, sc := s.LSEGrad(Add(s.X, MulScalar(eps, t.o.Sigma)))
	return dsmLoss(sc, eps, t.o.Sigma)
}

// End reports "dsm_loss".
func (t *dsmTerm) End(_ []float32, st *Stats) { st.MethodStats = termStats(t.o.Name(), st.Term) }

// Name is "nce".
func (NCE) Name() string { return "nce" }

// GradEvals is the ν noise draws.
func (n NCE) GradEvals() int64 { return int64(n.withDefaults().Nu) }

// Check wants Nu in [1, 64] and a finite Inflate > 0.
func (n NCE) Check(TrainOptions) error {
	if n = n.withDefaults(); n.Nu < 1 || n.Nu > 64 || !finitePos(n.Inflate) {
		return fmt.Errorf("cnn: bad NCE options %+v (need Nu in [1, 64], a finite Inflate > 0)", n)
	}
	return nil
}

// Begin fits the noise to the run's training draws and starts c at the importance-
// sampling estimate of the initial model's log Z under it, from ν·B draws.
func (n NCE) Begin(r *Run) (Term, error) {
	n = n.withDefaults()
	D := r.Data.S * r.Data.S
	gn, err := fitGauss(r.Data.X, len(r.Data.Y), D, n.Inflate)
	if err != nil {
		return nil, err
	}
	t := &nceTerm{o: n, noise: &gn, logZIS: math.NaN()}
	outs, err := r.Eval("nce_init", func(s *StepGraph) []*Node {
		y, lpn := gn.draw(s, n.Nu*r.Batch)
		return []*Node{logMeanExp(Sub(s.LSE(y), lpn))}
	})
	if err != nil {
		return nil, fmt.Errorf("cnn: nce's log Z start: %w", err)
	}
	t.c0 = tensors.MustCopyFlatData[float32](outs[0])[0]
	if math.IsNaN(float64(t.c0)) || math.IsInf(float64(t.c0), 0) {
		return nil, fmt.Errorf("cnn: nce's log Z start is %v: the initial model's energies overflow under the noise", t.c0)
	}
	return t, nil
}

// nceTerm is one run's noise, c's start and the last step's estimate of log Z.
type nceTerm struct {
	o          NCE
	noise      *gaussNoise
	c0         float32
	logZIS     float64
	lpnD, lpnN *Node
}

// Own is c, started at c0.
func (t *nceTerm) Own() []float32 { return []float32{t.c0} }

// Lanes are ν·B noise draws.
func (t *nceTerm) Lanes(s *StepGraph) *Node {
	lanes, lpn := t.noise.draw(s, t.o.Nu*s.B)
	logNu := math.Log(float64(t.o.Nu))
	t.lpnD, t.lpnN = AddScalar(t.noise.logPdf(s.X), logNu), AddScalar(lpn, logNu)
	return lanes
}

// Loss is nceLoss with c; the noise draws' log mean exp(ℓ − log pn) is an output.
func (t *nceTerm) Loss(s *StepGraph, ld, ln *Node) *Node {
	s.Output(logMeanExp(Sub(ln, AddScalar(t.lpnN, -math.Log(float64(t.o.Nu))))))
	return nceLoss(ld, ln, t.lpnD, t.lpnN, s.Own[0])
}

func (*nceTerm) Feed() []*tensors.Tensor { return nil }

// After keeps the step's importance-sampling estimate of log Z.
func (t *nceTerm) After(outs []*tensors.Tensor) {
	t.logZIS = float64(tensors.MustCopyFlatData[float32](outs[0])[0])
}

// End reports "nce_loss", the learned and initial c, the last estimate of log Z and
// the noise's ridge.
func (t *nceTerm) End(own []float32, st *Stats) {
	st.MethodStats = termStats(t.o.Name(), st.Term)
	st.MethodStats["log_z_learned"] = float64(own[0])
	st.MethodStats["log_z_init"] = float64(t.c0)
	st.MethodStats["log_z_is"] = t.logZIS
	st.MethodStats["nce_ridge"] = t.noise.ridge
}

// gaussNoise is NCE's noise N(μ, LLᵀ) on R^D, host-side.
type gaussNoise struct {
	D       int
	mean    []float32 // [D]
	lT      []float32 // Lᵀ, [D, D] row-major: a draw is μ + z·Lᵀ
	linvT   []float32 // (L⁻¹)ᵀ: z = (x − μ)·L⁻ᵀ
	logNorm float64   // Σ_d log L_dd + (D/2)·log 2π
	ridge   float64   // added to the covariance's diagonal (0: none needed)
}

// fitGauss fits the Gaussian with the mean and maximum-likelihood covariance of the n
// rows of x [n, D], the covariance times inflate; where it is not positive definite
// (n ≤ D, constant pixels) a ridge of 1e-6 times its mean variance (at least 1e-12),
// times 10 until it is.
func fitGauss(x []float32, n, D int, inflate float64) (gaussNoise, error) {
	if n < 1 || len(x) != n*D {
		return gaussNoise{}, fmt.Errorf("cnn: nce noise: %d values for %d draws of %d pixels", len(x), n, D)
	}
	mean := make([]float64, D)
	for i := range n {
		for d, v := range x[i*D : (i+1)*D] {
			mean[d] += float64(v)
		}
	}
	for d := range mean {
		mean[d] /= float64(n)
	}
	cov := make([]float64, D*D)
	row := make([]float64, D)
	for i := range n {
		for d, v := range x[i*D : (i+1)*D] {
			row[d] = float64(v) - mean[d]
		}
		for a := range D {
			ra, c := row[a], cov[a*D:a*D+a+1]
			for b := range c {
				c[b] += ra * row[b]
			}
		}
	}
	for a := range D {
		for b := 0; b <= a; b++ {
			cov[a*D+b] *= inflate / float64(n)
			cov[b*D+a] = cov[a*D+b]
		}
	}
	return newGauss(mean, cov, D)
}

// newGauss is N(mean, cov) (cov [D, D] row-major, symmetric), with fitGauss's ridge
// where cov is not positive definite.
func newGauss(mean, cov []float64, D int) (gaussNoise, error) {
	var tr float64
	for a := range D {
		tr += cov[a*D+a]
	}
	if math.IsNaN(tr) || math.IsInf(tr, 0) {
		return gaussNoise{}, errors.New("cnn: nce noise: the training draws' covariance is not finite")
	}
	l := make([]float64, D*D)
	ridge := 0.0
	for step := max(1e-6*tr/float64(D), 1e-12); ; step *= 10 {
		copy(l, cov)
		for a := range D {
			l[a*D+a] += ridge
		}
		if prob.Cholesky(l, D) == nil {
			break
		}
		if ridge > 1e6*max(tr, 1) {
			return gaussNoise{}, errors.New("cnn: nce noise: no ridge makes the covariance positive definite")
		}
		ridge = step
	}
	// L⁻¹ by forward substitution, column by column.
	inv := make([]float64, D*D)
	for c := range D {
		for r := c; r < D; r++ {
			s := 0.0
			if r == c {
				s = 1
			}
			for k := c; k < r; k++ {
				s -= l[r*D+k] * inv[k*D+c]
			}
			inv[r*D+c] = s / l[r*D+r]
		}
	}
	gn := gaussNoise{D: D, mean: make([]float32, D), lT: make([]float32, D*D), linvT: make([]float32, D*D), ridge: ridge,
		logNorm: 0.5 * float64(D) * math.Log(2*math.Pi)}
	for a := range D {
		gn.mean[a] = float32(mean[a])
		gn.logNorm += math.Log(l[a*D+a])
		for b := 0; b <= a; b++ {
			gn.lT[b*D+a] = float32(l[a*D+b])      // (Lᵀ)[b][a] = L[a][b]
			gn.linvT[b*D+a] = float32(inv[a*D+b]) // (L⁻ᵀ)[b][a] = L⁻¹[a][b]
		}
	}
	return gn, nil
}

func (gn *gaussNoise) consts(g *Graph) (mean, lT, linvT *Node) {
	D := gn.D
	return Reshape(Const(g, gn.mean), 1, D), Reshape(Const(g, gn.lT), D, D), Reshape(Const(g, gn.linvT), D, D)
}

// draw returns n draws [n, D] of the noise and their log density [n].
func (gn *gaussNoise) draw(s *StepGraph, n int) (y, lpn *Node) {
	mean, lT, _ := gn.consts(s.G)
	z := s.Normal(n, gn.D)
	y = Add(Dot(z, lT), mean)
	lpn = AddScalar(MulScalar(ReduceSum(Square(z), -1), -0.5), -gn.logNorm)
	return y, lpn
}

// logPdf is the noise's log density at the rows of x [n, D], [n].
func (gn *gaussNoise) logPdf(x *Node) *Node {
	mean, _, linvT := gn.consts(x.Graph())
	z := Dot(Sub(x, mean), linvT)
	return AddScalar(MulScalar(ReduceSum(Square(z), -1), -0.5), -gn.logNorm)
}

// edNegatives draws ED's M negatives of every row of x [B, D]: y = x + √t ξ, then
// x'_j = y + √t ξ_j in row j·B + i, [M·B, D].
func edNegatives(s *StepGraph, x *Node, o ED) *Node {
	B, D := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	sd := math.Sqrt(o.T)
	y := Add(x, MulScalar(s.Normal(B, D), sd))
	xij := s.Normal(o.M, B, D)
	return Reshape(Add(InsertAxes(y, 0), MulScalar(xij, sd)), o.M*B, D)
}

// edLoss is mean_i log(w/M + (1/M) Σ_j exp(ℓn_ji − ℓd_i)) of the data's ℓd [B] and the
// negatives' ℓn [M·B] (row j·B + i).
func edLoss(ld, ln *Node, o ED) *Node {
	B := ld.Shape().Dimensions[0]
	diff := Transpose(Sub(Reshape(ln, o.M, B), InsertAxes(ld, 0)), 0, 1) // [B, M]
	if o.W > edWZero {
		diff = Concatenate([]*Node{AddScalar(ZerosLike(InsertAxes(ld, -1)), math.Log(o.W)), diff}, -1)
	}
	return AddScalar(ReduceAllMean(logSumExp(diff)), -math.Log(float64(o.M)))
}

// softplus is log(1 + eˣ) without overflow.
func softplus(x *Node) *Node {
	return Add(Max(x, ZerosLike(x)), Log1p(Exp(Neg(Abs(x)))))
}

// nceLoss is −(1/B)[Σ_data log σ(G) + Σ_noise log(1 − σ(G))], G = ℓ − c − lpn, of the
// data's ℓd, lpnD [B] and the noise's ℓn, lpnN [ν·B]; lpn is log(ν pn).
func nceLoss(ld, ln, lpnD, lpnN, c *Node) *Node {
	B := ld.Shape().Dimensions[0]
	gd := Sub(Sub(ld, c), lpnD)
	gn := Sub(Sub(ln, c), lpnN)
	return MulScalar(Add(ReduceAllSum(softplus(Neg(gd))), ReduceAllSum(softplus(gn))), 1/float64(B))
}

// dsmLoss is ½·mean_i (‖σ s_i + ε_i‖² − ‖ε_i‖²) = ½·mean_i (σ²‖s_i‖² + 2σ s_i·ε_i) of the
// scores s [B, D] at x̃ = x + σε: Vincent's loss less the parameter-free ½‖ε‖² (same
// gradient; without it the term's batch-to-batch noise, about √(D/2), would hide its
// progress).
func dsmLoss(s, eps *Node, sigma float64) *Node {
	B := s.Shape().Dimensions[0]
	ss := MulScalar(s, sigma)
	return MulScalar(ReduceAllSum(Mul(ss, Add(ss, MulScalar(eps, 2)))), 0.5/float64(B))
}

// logMeanExp over all of x.
func logMeanExp(x *Node) *Node {
	n := x.Shape().Size()
	return AddScalar(logSumExp(Reshape(x, 1, n)), -math.Log(float64(n)))
}

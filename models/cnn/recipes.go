package cnn

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	//lint:ignore ST1001 GoMLX graph-building style.
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"

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

// Recipe methods.
const (
	// ED is cross-entropy plus Energy Discrepancy with Gaussian perturbations.
	ED Method = "ed"
	// DSM is cross-entropy plus exact denoising score matching.
	DSM Method = "dsm"
	// NCE is cross-entropy plus noise-contrastive estimation with a learned log Z.
	NCE Method = "nce"
)

func (m Method) recipe() bool { return m == ED || m == DSM || m == NCE }

// EDOptions are Energy Discrepancy's settings (zero fields: the 2-D defaults M 4, t 1,
// w 1). W is the stabiliser: as 0 reads as the default, a W <= 1e-30 means w = 0.
type EDOptions struct {
	M int     // negatives per data point, in [1, 64]
	T float64 // variance t of each Gaussian perturbation
	W float64 // stabiliser w
}

// DSMOptions are denoising score matching's settings.
type DSMOptions struct {
	Sigma float64 // std σ of the perturbation x̃ = x + σε, 0.2
}

// NCEOptions are noise-contrastive estimation's settings.
type NCEOptions struct {
	Nu      int     // noise draws per data point ν, 10, in [1, 64]
	Inflate float64 // factor on the fitted Gaussian's covariance, 1
}

// edWZero is the stabiliser under which ED drops the w term (w = 0).
const edWZero = 1e-30

func (o *TrainOptions) recipeDefaults() {
	e := &o.ED
	if e.M == 0 {
		e.M = 4
	}
	if e.T == 0 {
		e.T = 1
	}
	if e.W == 0 {
		e.W = 1
	}
	if o.DSM.Sigma == 0 {
		o.DSM.Sigma = 0.2
	}
	if o.NCE.Nu == 0 {
		o.NCE.Nu = 10
	}
	if o.NCE.Inflate == 0 {
		o.NCE.Inflate = 1
	}
	if o.PxWeight == 0 {
		o.PxWeight = 1
	}
}

func finitePos(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func (o TrainOptions) validateRecipe() error {
	switch {
	case !finitePos(o.PxWeight):
		return fmt.Errorf("cnn: PxWeight must be a finite number > 0, got %v", o.PxWeight)
	case o.Method.recipe() && o.EnergyL2 != 0:
		return fmt.Errorf("cnn: EnergyL2 applies to %s only, not %s", JEMSGLD, o.Method)
	case o.ED.M < 1 || o.ED.M > 64 || !finitePos(o.ED.T) || !(o.ED.W >= 0) || math.IsInf(o.ED.W, 0):
		return fmt.Errorf("cnn: bad ED options %+v (need M in [1, 64], a finite T > 0, a finite W >= 0)", o.ED)
	case !finitePos(o.DSM.Sigma):
		return fmt.Errorf("cnn: DSM Sigma must be a finite number > 0, got %v", o.DSM.Sigma)
	case o.Method == DSM && o.Autodiff && (o.Backend == "go" || strings.HasPrefix(o.Backend, "go:")):
		return errors.New("cnn: DSM with Autodiff differentiates GoMLX's own input gradient, whose VJP needs Pad, missing on SimpleGo (the default, hand input gradient works)")
	case o.NCE.Nu < 1 || o.NCE.Nu > 64 || !finitePos(o.NCE.Inflate):
		return fmt.Errorf("cnn: bad NCE options %+v (need Nu in [1, 64], a finite Inflate > 0)", o.NCE)
	}
	return nil
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
func (gn *gaussNoise) draw(rng *Node, n int) (rngOut, y, lpn *Node) {
	mean, lT, _ := gn.consts(rng.Graph())
	rngOut, z := RandomNormal(rng, shapes.Make(dtypes.Float32, n, gn.D))
	y = Add(Dot(z, lT), mean)
	lpn = AddScalar(MulScalar(ReduceSum(Square(z), -1), -0.5), -gn.logNorm)
	return rngOut, y, lpn
}

// logPdf is the noise's log density at the rows of x [n, D], [n].
func (gn *gaussNoise) logPdf(x *Node) *Node {
	mean, _, linvT := gn.consts(x.Graph())
	z := Dot(Sub(x, mean), linvT)
	return AddScalar(MulScalar(ReduceSum(Square(z), -1), -0.5), -gn.logNorm)
}

// edNegatives draws ED's M negatives of every row of x [B, D]: y = x + √t ξ, then
// x'_j = y + √t ξ_j in row j·B + i, [M·B, D].
func edNegatives(rng, x *Node, o EDOptions) (rngOut, neg *Node) {
	B, D := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	s := math.Sqrt(o.T)
	rng, xi := RandomNormal(rng, x.Shape())
	y := Add(x, MulScalar(xi, s))
	rng, xij := RandomNormal(rng, shapes.Make(dtypes.Float32, o.M, B, D))
	neg = Reshape(Add(InsertAxes(y, 0), MulScalar(xij, s)), o.M*B, D)
	return rng, neg
}

// edTerm is mean_i log(w/M + (1/M) Σ_j exp(ℓn_ji − ℓd_i)) of the data's ℓd [B] and the
// negatives' ℓn [M·B] (row j·B + i).
func edTerm(ld, ln *Node, o EDOptions) *Node {
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

// nceTerm is −(1/B)[Σ_data log σ(G) + Σ_noise log(1 − σ(G))], G = ℓ − c − lpn, of the
// data's ℓd, lpnD [B] and the noise's ℓn, lpnN [ν·B]; lpn is log(ν pn).
func nceTerm(ld, ln, lpnD, lpnN, c *Node) *Node {
	B := ld.Shape().Dimensions[0]
	gd := Sub(Sub(ld, c), lpnD)
	gn := Sub(Sub(ln, c), lpnN)
	return MulScalar(Add(ReduceAllSum(softplus(Neg(gd))), ReduceAllSum(softplus(gn))), 1/float64(B))
}

// dsmTerm is ½·mean_i (‖σ s_i + ε_i‖² − ‖ε_i‖²) = ½·mean_i (σ²‖s_i‖² + 2σ s_i·ε_i) of the
// scores s [B, D] at x̃ = x + σε: Vincent's loss less the parameter-free ½‖ε‖² (same
// gradient; without it the term's batch-to-batch noise, about √(D/2), would hide its
// progress).
func dsmTerm(s, eps *Node, sigma float64) *Node {
	B := s.Shape().Dimensions[0]
	ss := MulScalar(s, sigma)
	return MulScalar(ReduceAllSum(Mul(ss, Add(ss, MulScalar(eps, 2)))), 0.5/float64(B))
}

// logMeanExp over all of x.
func logMeanExp(x *Node) *Node {
	n := x.Shape().Size()
	return AddScalar(logSumExp(Reshape(x, 1, n)), -math.Log(float64(n)))
}

// recipeOut is a recipe step's graph: the loss, its cross-entropy and recipe term, the
// gradients of the loss in p (the network's, then c for nce), the rng state after the
// step's draws, and nce's importance-sampling estimate of log Z under the noise (the
// step's noise draws; nil for ed and dsm).
type recipeOut struct {
	loss, ce, term *Node
	grads          []*Node
	rng            *Node
	logZIS         *Node
}

// buildRecipe builds one recipe step on the data x [B, D] (noise already added) with
// one-hot labels [B, K]: p are the network's parameters followed, for nce, by c.
func buildRecipe(nt *net, k trainKey, noise *gaussNoise, p []*Node, x, onehot, rng *Node) recipeOut {
	B := x.Shape().Dimensions[0]
	np := len(nt.sp.layerShapes(nt.S, nt.K))
	w := k.pxW
	invB := 1 / float64(B)
	ceOf := func(logits *Node) *Node {
		return MulScalar(ReduceAllSum(Sub(logSumExp(logits), ReduceSum(Mul(logits, onehot), -1))), invB)
	}
	var out recipeOut
	if k.method == DSM {
		var eps *Node
		rng, eps = RandomNormal(rng, x.Shape())
		xt := Add(x, MulScalar(eps, k.dsm.Sigma))
		_, s := nt.lseGrad(p, xt, k.autodiff)
		out.term = dsmTerm(s, eps, k.dsm.Sigma)
		logits, ac := nt.forward(p, x)
		out.ce = ceOf(logits)
		out.loss = Add(out.ce, MulScalar(out.term, w))
		if k.autodiff {
			out.grads = Gradient(out.loss, p...)
		} else {
			out.grads, _ = nt.backward(p, ac, MulScalar(Sub(Softmax(logits, -1), onehot), invB), true, false)
			tg := Gradient(out.term, p...)
			for j := range out.grads {
				out.grads[j] = Add(out.grads[j], MulScalar(tg[j], w))
			}
		}
		out.rng = rng
		return out
	}

	// ed and nce: one forward pass over the data and its lanes.
	var lanes, lpnD, lpnN, c *Node
	switch k.method {
	case ED:
		rng, lanes = edNegatives(rng, x, k.ed)
	case NCE:
		var lpn *Node
		rng, lanes, lpn = noise.draw(rng, k.nce.Nu*B)
		logNu := math.Log(float64(k.nce.Nu))
		lpnD, lpnN = AddScalar(noise.logPdf(x), logNu), AddScalar(lpn, logNu)
		c = p[np]
	}
	out.rng = rng
	term := func(ld, ln *Node) *Node {
		if k.method == ED {
			return edTerm(ld, ln, k.ed)
		}
		return nceTerm(ld, ln, lpnD, lpnN, c)
	}
	isOf := func(ln *Node) {
		if k.method == NCE {
			out.logZIS = logMeanExp(Sub(ln, AddScalar(lpnN, -math.Log(float64(k.nce.Nu)))))
		}
	}
	if k.autodiff { // two forward passes: the VJP of Slice needs Pad, which SimpleGo lacks
		logitsD, _ := nt.forward(p[:np], x)
		logitsN, _ := nt.forward(p[:np], lanes)
		ln := logSumExp(logitsN)
		isOf(ln)
		out.ce = ceOf(logitsD)
		out.term = term(logSumExp(logitsD), ln)
		out.loss = Add(out.ce, MulScalar(out.term, w))
		out.grads = Gradient(out.loss, p...)
		return out
	}
	logits, ac := nt.forward(p[:np], Concatenate([]*Node{x, lanes}, 0))
	sm := Softmax(logits, -1)
	l := logSumExp(logits)
	logitsD, smD := Slice(logits, AxisRange(0, B)), Slice(sm, AxisRange(0, B))
	out.ce = ceOf(logitsD)
	// The term's derivative in every lane's ℓ, not through the network.
	ld, ln := Identity(StopGradient(Slice(l, AxisRange(0, B)))), Identity(StopGradient(Slice(l, AxisRange(B))))
	isOf(ln)
	out.term = term(ld, ln)
	out.loss = Add(out.ce, MulScalar(out.term, w))
	wrt := []*Node{ld, ln}
	if c != nil {
		wrt = append(wrt, c)
	}
	tg := Gradient(out.term, wrt...)
	coef := Concatenate([]*Node{tg[0], tg[1]}, 0)
	dl := MulScalar(Mul(InsertAxes(coef, -1), sm), w)
	dce := MulScalar(Sub(smD, onehot), invB)
	dl = Add(dl, Concatenate([]*Node{dce, Zeros(x.Graph(), shapes.Make(dtypes.Float32, lanes.Shape().Dimensions[0], nt.K))}, 0))
	out.grads, _ = nt.backward(p[:np], ac, dl, true, false)
	if c != nil {
		out.grads = append(out.grads, MulScalar(tg[2], w))
	}
	return out
}

// buildNCEInit builds the graph of c's start: log mean exp(ℓ(y) − log pn(y)) over n
// noise draws y at the parameters p. Inputs p, rng; outputs c0, rng'.
func buildNCEInit(g *Graph, nt *net, noise *gaussNoise, n int) {
	p := paramNodes(g, nt.sp.layerShapes(nt.S, nt.K), "p")
	rng := Parameter(g, "rng", RNGStateForGraph(g).Shape())
	rng, y, lpn := noise.draw(rng, n)
	logits, _ := nt.forward(p, y)
	g.Compile(logMeanExp(Sub(logSumExp(logits), lpn)), rng)
}

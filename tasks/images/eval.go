package images

import (
	"context"
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/ais"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// MCDraws is the number of fresh exact draws of a task's truth (and of uniform noise
// images, for the OOD AUROCs) its Monte Carlo measures average over, the same for
// every method of the task.
const MCDraws = 4000

// The AIS of log Z_θ and its calibration on the truth. At D = 64 a model's forward run
// costs about (AISChains·AISTemps + AISPilotChains·AISTemps) input-gradient evaluations
// of the CNN (272,000; about 35 s for cnn:8,16 on one core of the reference machine at
// 130 µs a gradient);
// the truth's calibration (forward and reverse) about 5 s a task on 2 cores.
const (
	AISChains      = 256
	AISTemps       = 1000
	AISPilotChains = 16
	AISBlock       = 32
	// AISInflate widens the base components' per-pixel sds over their draws'.
	AISInflate = 1.05
	// AISClusters is the k-means clusters per class of the AIS base (ais.FitMixtureBase
	// on the training draws and their labels), AISMinCluster the fewest draws a
	// cluster may have, AISRank the directions of each cluster's low-rank Gaussian
	// (probabilistic PCA).
	AISClusters   = 4
	AISMinCluster = 50
	AISRank       = 12
)

// The box [BoxLo, BoxHi]^D that a model's q_θ is normalised on. exp LSE_y f(x) of a
// CNN need not be integrable on R^D (with swish or linear heads LSE f grows linearly
// along rays, so Z_θ over R^D can be infinite, and forward AIS then reads log Ẑ in the
// hundreds); on a box it is bounded and Z_θ finite. The box is the pixel range [0, 1]
// widened by 2 on each side, ten times the truth's pixel noise and more: p puts no draw
// of the tests outside it (TestKnownAnswer counts them), so KL(p‖q_θ) on the box
// differs from p's own by p's mass outside, which is negligible.
const (
	BoxLo = -2.0
	BoxHi = 3.0
)

// boxed is a target restricted to the box: log f = −Inf outside (the AIS rejects moves
// there and gives chains started there weight 0), gradient 0 there.
type boxed struct{ ais.BatchTarget }

func (b boxed) LogDensityBatch(x []float64, n int, out, grad []float64) {
	b.BatchTarget.LogDensityBatch(x, n, out, grad)
	d := b.Dim()
	for i := range n {
		if !inBox(x[i*d : (i+1)*d]) {
			out[i] = math.Inf(-1)
			if grad != nil {
				clear(grad[i*d : (i+1)*d])
			}
		}
	}
}

func inBox(x []float64) bool {
	for _, v := range x {
		if !(v >= BoxLo && v <= BoxHi) {
			return false
		}
	}
	return true
}

// AISKernel is the transition of the AIS: MALA (one gradient a temperature).
var AISKernel = ais.MALA

// aisOptions are the default AIS settings (the same for the calibration and the model).
func aisOptions(seed uint64) ais.Options {
	return ais.Options{Seed: seed, Chains: AISChains, Temps: AISTemps, Kernel: AISKernel, PilotChains: AISPilotChains, Block: AISBlock}
}

// aisOptions are the task's AIS settings: the defaults, with the run's --ais_chains and
// --ais_temps where set.
func (s *evalSet) aisOptions(seed uint64) ais.Options {
	o := aisOptions(seed)
	if s.chains > 0 {
		o.Chains = s.chains
	}
	if s.temps > 0 {
		o.Temps = s.temps
	}
	return o
}

// model is what the evaluation reads of a learned joint: its logits f(x)[y] and its
// log-density ℓ(x) = LSE_y f(x)[y] (up to log Z) with the input gradient.
type model interface {
	logits(x []float64, n int) ([]float64, error)
	ais.BatchTarget
}

// cnnModel is a trained CNN, evaluated on a GoMLX backend configuration ("" = the
// package default, the pure-Go backend; the run's --backend otherwise).
type cnnModel struct {
	p       cnn.Params
	backend string
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// evalChunk is the images per CNN evaluation call.
const evalChunk = 1000

// logitsChunked is the n×K logits of a float32 classifier f on x (n×D), evaluated
// evalChunk images a call.
func logitsChunked(x []float64, n, D, K int, f func(x []float32, n int) ([]float32, error)) ([]float64, error) {
	out := make([]float64, 0, n*K)
	for i := 0; i < n; i += evalChunk {
		c := min(evalChunk, n-i)
		l, err := f(toF32(x[i*D:(i+c)*D]), c)
		if err != nil {
			return nil, err
		}
		if len(l) != c*K {
			return nil, fmt.Errorf("the model gives %d outputs an image, want the %d logits of the task's classes", len(l)/c, K)
		}
		for _, v := range l {
			out = append(out, float64(v))
		}
	}
	return out, nil
}

// energyBatch is ais.BatchTarget's LogDensityBatch for a float32 classifier whose
// energy returns LSE_y f(x) and, if grad, its input gradient: NaN where it fails.
func energyBatch(x []float64, n, D int, out, grad []float64, energy func(x []float32, n int, grad bool) (lse, dx []float32, err error)) {
	lse, dx, err := energy(toF32(x[:n*D]), n, grad != nil)
	if err != nil {
		for i := range out[:n] {
			out[i] = math.NaN()
		}
		return
	}
	for i := range n {
		out[i] = float64(lse[i])
	}
	for i := range dx {
		grad[i] = float64(dx[i])
	}
}

func (m cnnModel) logits(x []float64, n int) ([]float64, error) {
	return logitsChunked(x, n, m.Dim(), m.p.K, func(x []float32, n int) ([]float32, error) { return cnn.LogitsOn(m.backend, m.p, x, n) })
}

func (m cnnModel) Dim() int { return m.p.S * m.p.S }

func (m cnnModel) LogDensityBatch(x []float64, n int, out, grad []float64) {
	energyBatch(x, n, m.Dim(), out, grad, func(x []float32, n int, g bool) ([]float32, []float32, error) {
		return cnn.EnergyOn(m.backend, m.p, x, n, g)
	})
}

// truthModel is the truth as a model: f(x)[y] = log p(x, y), ℓ(x) = log p(x) (log Z = 0).
type truthModel struct{ den *density }

func (m truthModel) logits(x []float64, n int) ([]float64, error) {
	D, K := m.den.D, m.den.K
	out := make([]float64, n*K)
	for i := range n {
		m.den.eval(x[i*D:(i+1)*D], out[i*K:(i+1)*K], nil)
	}
	return out, nil
}

func (m truthModel) Dim() int { return m.den.D }

func (m truthModel) LogDensityBatch(x []float64, n int, out, grad []float64) {
	D := m.den.D
	for i := range n {
		var g []float64
		if grad != nil {
			g = grad[i*D : (i+1)*D]
		}
		out[i] = m.den.eval(x[i*D:(i+1)*D], nil, g)
	}
}

// calibration is the AIS schedule's check on a task's truth (log Z = 0).
type calibration struct {
	Lower, Upper, Gap, GapSE float64
	LowerSE, UpperSE         float64
	KLower, KUpper           float64 // Pareto k̂ of the forward and reverse weights
	Covered                  bool    // log Z = 0 within [Lower − 3 SE, Upper + 3 SE]
	Accepted                 bool
	Reason                   string
}

// evalSet is a task's evaluation: its truth, MCDraws exact draws with the truth there,
// as many uniform noise images, the AIS base fitted to the training draws.
type evalSet struct {
	truth     *mfa.Truth
	den       *density
	D, K      int
	seed      uint64 // the task's seed
	x         []float64
	y         []int32
	lj, post  []float64 // M×K: log p(x, y), p(y|x)
	logPx     []float64
	noise     []float64 // M×D uniform on [0, 1]^D
	noisePx   []float64
	base      ais.Base
	bayes     float64
	outside   int // draws with a pixel outside the box
	cal       *calibration
	aucTruePx float64
	// chains and temps override AISChains and AISTemps where > 0 (--ais_chains,
	// --ais_temps); set them before calibrate and measure.
	chains, temps int
}

// newEvalSet draws a task's evaluation set; train are its training draws (n×D) and
// labels their classes, which the AIS base is fitted to (nil: no AIS base, for a model
// whose log Z is exact).
func newEvalSet(tr *mfa.Truth, seed uint64, train []float64, labels []int32) (*evalSet, error) {
	den, err := newDensity(tr)
	if err != nil {
		return nil, err
	}
	D, K, M := tr.D(), tr.K(), MCDraws
	s := &evalSet{truth: tr, den: den, D: D, K: K, seed: seed}
	s.x, s.y = evalDraws(tr, seed)
	s.lj, s.post, s.logPx = make([]float64, M*K), make([]float64, M*K), make([]float64, M)
	hit := 0
	for i := range M {
		lj := s.lj[i*K : (i+1)*K]
		s.logPx[i] = den.eval(s.x[i*D:(i+1)*D], lj, nil)
		best := 0
		for y := range K {
			s.post[i*K+y] = math.Exp(lj[y] - s.logPx[i])
			if lj[y] > lj[best] {
				best = y
			}
		}
		if best == int(s.y[i]) {
			hit++
		}
	}
	s.bayes = float64(hit) / float64(M)
	for i := range M {
		if !inBox(s.x[i*D : (i+1)*D]) {
			s.outside++
		}
	}
	rng := prob.NewRand(prob.Seed(seed, tagOOD))
	s.noise = make([]float64, M*D)
	for i := range s.noise {
		s.noise[i] = rng.Float64()
	}
	s.noisePx = make([]float64, M)
	for i := range M {
		s.noisePx[i] = den.eval(s.noise[i*D:(i+1)*D], nil, nil)
	}
	s.aucTruePx = auroc(s.logPx, s.noisePx)
	if train == nil { // no AIS (a model with an exact log Z)
		return s, nil
	}
	if s.base, err = fitBase(train, labels, D, seed); err != nil {
		return nil, err
	}
	return s, nil
}

// fitBase is the AIS base of a task: a mixture of low-rank Gaussians (the probabilistic
// PCA of AISRank directions of each cluster), one per class × at most AISClusters
// k-means clusters of the training draws, each variance × AISInflate², weighted by
// their share of the draws. One diagonal Gaussian (ais.FitBase) sends the
// chains to the truth's well-separated components in the wrong proportions and its
// calibration never passed at D = 64 (docs/images.md).
func fitBase(train []float64, labels []int32, D int, seed uint64) (ais.Base, error) {
	y := make([]int, len(labels))
	for i, v := range labels {
		y[i] = int(v)
	}
	return ais.FitMixtureBase(train, y, D, ais.MixtureFit{Clusters: AISClusters, MinSize: AISMinCluster, Rank: AISRank, Inflate: AISInflate, Seed: prob.Seed(seed, tagAIS, prob.SeedString("base"))})
}

// auroc is P(in > out) + ½ P(tie) over two samples.
func auroc(in, out []float64) float64 {
	score := append(append([]float64(nil), in...), out...)
	win, wout := make([]float64, len(score)), make([]float64, len(score))
	for i := range in {
		win[i] = 1 / float64(len(in))
	}
	for i := range out {
		wout[len(in)+i] = 1 / float64(len(out))
	}
	return prob.AUROC(score, win, wout)
}

// calibrate runs BDMC on the truth (log Z = 0) with the model's AIS settings and base
// (the same s.base that measure's forward AIS of the model starts from): forward from
// the base, reverse from AISChains fresh exact draws. Accepted where ais.Calibrate
// accepts and |gap| + SE ≤ ais.DefaultGapTol (a negative gap is noise, not evidence).
func (s *evalSet) calibrate(ctx context.Context) *calibration {
	o := s.aisOptions(prob.Seed(s.seed, tagAIS, prob.SeedString("teacher")))
	draws, _ := s.truth.Sample(prob.NewRand(prob.Seed(s.seed, tagAIS, prob.SeedString("reverse draws"))), o.Chains)
	c, err := ais.Calibrate(ctx, ais.FromBatch(boxed{truthModel{s.den}}), 0, s.base, draws, o, ais.DefaultGapTol)
	if err != nil {
		return &calibration{Lower: math.NaN(), Upper: math.NaN(), Gap: math.NaN(), GapSE: math.NaN(), Reason: "calibration failed: " + err.Error()}
	}
	out := &calibration{Lower: c.Lower.LogZ, Upper: c.Upper.LogZ, Gap: c.Gap, GapSE: c.GapSE, LowerSE: c.Lower.SE, UpperSE: c.Upper.SE,
		KLower: c.Lower.K, KUpper: c.Upper.K, Covered: c.Covered, Accepted: c.Accept, Reason: c.Reason}
	if out.Accepted && !(math.Abs(c.Gap)+c.GapSE <= ais.DefaultGapTol) {
		out.Accepted = false
		out.Reason = fmt.Sprintf("BDMC gap %.3g ± %.2g nat on the truth: |gap| + SE above %.3g (T = %d, %d chains)", c.Gap, c.GapSE, ais.DefaultGapTol, c.Schedule.T(), o.Chains)
	}
	if !out.Accepted {
		out.Reason = "AIS schedule refused on the truth: " + out.Reason
	}
	return out
}

// fillTask sets the task's columns (the same for every method).
func (s *evalSet) fillTask(row *schemas.ResultRow) {
	row.BayesAccuracy, row.AUROCTruePx = s.bayes, s.aucTruePx
	if c := s.cal; c != nil {
		row.AISTeacherLower, row.AISTeacherUpper, row.AISTeacherGap, row.AISAccepted = c.Lower, c.Upper, c.Gap, c.Accepted
		row.AISRefused = c.Reason
	}
}

// result is a model's measures on a task.
type result struct {
	KLCond, KLCondSE  float64
	Acc, ECE, ECETrue float64
	AUCPx, AUCPy      float64
	Joint, JointSE    float64 // mean and SE of log p(x, y) − f(x)[y]
	Marg, MargSE      float64 // mean and SE of log p(x) − LSE_y f(x)[y] (q(x)'s KL less log Z)
	// The Z-free divergences over the exact draws (prob.MeanSE, prob.SDSE): the Fisher
	// divergence E_p‖∇ₓ log p(x) − ∇ₓ LSE_y f(x)[y]‖² and the log-ratio spread
	// sd_p[log p(x, y) − f(x)[y]], both 0 exactly when q = p, whatever Z_θ is.
	Fisher, FisherSE   float64
	Spread, SpreadSE   float64
	LogZ, LogZSE, ESS  float64 // forward AIS of log Z_θ (stochastic lower bound)
	Chains             int     // its chains
	LogZUp, LogZUpSE   float64 // reverse AIS (exact draws of the model only; NaN otherwise)
	KLLower, KLLowerSE float64
	KLUpper, KLUpperSE float64
	Err                error
}

// meanSE is the mean and its standard error.
func meanSE(v []float64) (float64, float64) {
	n := float64(len(v))
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= n
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / (n - 1) / n)
}

// measure evaluates a model; exact are exact draws of the model (the known-answer
// test's truth), nil for a learned one (no upper bound).
func (s *evalSet) measure(ctx context.Context, m model, exact []float64) result {
	nan := math.NaN()
	r := result{KLCond: nan, KLCondSE: nan, Acc: nan, ECE: nan, ECETrue: nan, AUCPx: nan, AUCPy: nan, Joint: nan, JointSE: nan, Marg: nan, MargSE: nan,
		Fisher: nan, FisherSE: nan, Spread: nan, SpreadSE: nan, LogZ: nan, LogZSE: nan, ESS: nan, LogZUp: nan, LogZUpSE: nan, KLLower: nan, KLLowerSE: nan, KLUpper: nan, KLUpperSE: nan}
	M, K := len(s.y), s.K
	f, err := m.logits(s.x, M)
	if err != nil {
		r.Err = err
		return r
	}
	fo, err := m.logits(s.noise, M)
	if err != nil {
		r.Err = err
		return r
	}
	kl, joint := make([]float64, M), make([]float64, M)
	conf, accTrue := make([]float64, M), make([]float64, M)
	correct := make([]bool, M)
	lseIn, lseOut, pyIn, pyOut := make([]float64, M), make([]float64, M), make([]float64, M), make([]float64, M)
	hit := 0
	for i := range M {
		fi := f[i*K : (i+1)*K]
		l := logSumExp(fi)
		lseIn[i] = l
		best := 0
		for y := range K {
			if fi[y] > fi[best] {
				best = y
			}
			if py := s.post[i*K+y]; py > 0 {
				kl[i] += py * (s.lj[i*K+y] - s.logPx[i] - (fi[y] - l))
			}
		}
		conf[i] = math.Exp(fi[best] - l)
		pyIn[i] = conf[i]
		accTrue[i] = s.post[i*K+best]
		correct[i] = best == int(s.y[i])
		if correct[i] {
			hit++
		}
		y := s.y[i]
		joint[i] = s.lj[i*K+int(y)] - fi[y]
		fo := fo[i*K : (i+1)*K]
		lseOut[i] = logSumExp(fo)
		mx := fo[0]
		for _, v := range fo {
			mx = max(mx, v)
		}
		pyOut[i] = math.Exp(mx - lseOut[i])
	}
	r.KLCond, r.KLCondSE = meanSE(kl)
	r.Acc = float64(hit) / float64(M)
	r.ECE = prob.ECE(conf, correct, tasks.ECEBins)
	ones := make([]float64, M)
	for i := range ones {
		ones[i] = 1
	}
	r.ECETrue = prob.ECEWeighted(conf, accTrue, ones, tasks.ECEBins)
	r.AUCPx, r.AUCPy = auroc(lseIn, lseOut), auroc(pyIn, pyOut)
	r.Joint, r.JointSE = meanSE(joint)
	marg := make([]float64, M)
	for i := range M {
		marg[i] = s.logPx[i] - lseIn[i]
	}
	r.Marg, r.MargSE = meanSE(marg)
	if !finiteAll(f) {
		return r
	}
	r.Spread, r.SpreadSE = prob.SDSE(joint)
	r.Fisher, r.FisherSE = s.fisher(m)
	if _, exactZ := m.(interface{ exactLogZ() float64 }); exactZ { // no AIS: the caller has the exact KL
		return r
	}
	if s.cal != nil && !s.cal.Accepted && exact == nil {
		// The schedule failed on the truth: a learned model's forward AIS would not be
		// believed (kl_joint_lower stays NaN), so it is not run (at D = 256 it is most
		// of the evaluation's cost).
		return r
	}
	fw, err := ais.Forward(ctx, ais.FromBatch(boxed{m}), s.base, s.aisOptions(prob.Seed(s.seed, tagAIS, prob.SeedString("model"))))
	if err != nil {
		r.Err = err
		return r
	}
	r.LogZ, r.LogZSE, r.ESS, r.Chains = fw.LogZ, fw.SE, fw.ESS, s.aisOptions(0).Chains
	var up ais.Estimate
	if exact != nil {
		if up, err = ais.Reverse(ctx, ais.FromBatch(boxed{m}), s.base, exact, s.aisOptions(prob.Seed(s.seed, tagAIS, prob.SeedString("model reverse")))); err == nil {
			r.LogZUp, r.LogZUpSE = up.LogZ, up.SE
		}
	}
	lo, hi := ais.KLBounds(r.Joint, r.JointSE, fw, up)
	r.KLLower, r.KLLowerSE = lo.Value, lo.SE
	if exact != nil && err == nil {
		r.KLUpper, r.KLUpperSE = hi.Value, hi.SE
	}
	return r
}

// fisher is the Fisher divergence E_p‖∇ₓ log p(x) − ∇ₓ ℓ(x)‖² of a model (ℓ = LSE_y
// f(x)[y], its input gradient from LogDensityBatch) over the task's exact draws, with
// its standard error; NaN where the model gives no finite gradient. The draws go to the
// model evalChunk at a time.
func (s *evalSet) fisher(m model) (float64, float64) {
	M, D := len(s.y), s.D
	out, gm, gt := make([]float64, evalChunk), make([]float64, evalChunk*D), make([]float64, D)
	div := make([]float64, M)
	for i := 0; i < M; i += evalChunk {
		c := min(evalChunk, M-i)
		m.LogDensityBatch(s.x[i*D:(i+c)*D], c, out[:c], gm[:c*D])
		for j := range c {
			if math.IsNaN(out[j]) {
				return math.NaN(), math.NaN()
			}
			s.den.eval(s.x[(i+j)*D:(i+j+1)*D], nil, gt)
			var d2 float64
			for k, g := range gm[j*D : (j+1)*D] {
				d := gt[k] - g
				d2 += d * d
			}
			div[i+j] = d2
		}
	}
	if !finiteAll(div) {
		return math.NaN(), math.NaN()
	}
	return prob.MeanSE(div)
}

// fillZFree writes a model's Z-free divergences into its row: after the row's run
// columns (finishRow: tasks.SetRunColumns clears them for the kinds that do not measure
// them).
func (r result) fillZFree(row *schemas.ResultRow) {
	row.FisherDiv, row.FisherDivSE, row.LogRatioSD, row.LogRatioSDSE = r.Fisher, r.FisherSE, r.Spread, r.SpreadSE
}

func finiteAll(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// ModelESSShare is the model-side gate of the AIS lower bound: a learned model's
// forward AIS must keep an effective sample size (Σw)²/Σw² of at least this share of
// its chains (25.6 of the default 256) for its kl_joint_lower to be reported. Below it
// the estimate of log Z_θ rests on a handful of chains and its bound says nothing (the
// review measured ESS 1.1–4.1 of 256 on CNNs whose bounds sat near a flat density's).
const ModelESSShare = 0.1

// fill writes a model's measures into its row: kl_joint_lower only where the task's
// calibration accepted the schedule and the model's own AIS passed ModelESSShare
// (ais_refused says which failed).
func (r result) fill(row *schemas.ResultRow, cal *calibration) {
	row.KLConditional, row.KLConditionalSE, row.Accuracy = r.KLCond, r.KLCondSE, r.Acc
	row.ECE, row.CalibrationErrorTrue, row.AUROCPx, row.AUROCPy = r.ECE, r.ECETrue, r.AUCPx, r.AUCPy
	row.LogZAIS, row.LogZAISSE, row.AISESS = r.LogZ, r.LogZSE, r.ESS
	row.KLJointUpper = r.KLUpper
	if cal != nil && cal.Accepted && !math.IsNaN(r.ESS) {
		if gate := ModelESSShare * float64(r.Chains); r.ESS >= gate {
			row.KLJointLower, row.KLJointLowerSE = r.KLLower, r.KLLowerSE
		} else {
			row.KLJointUpper = math.NaN()
			row.AISRefused = fmt.Sprintf("the model's forward AIS kept an effective sample size of %.3g of %d chains, below the gate of %.3g (%g of them): its joint-KL bounds are not reported (log_z_ais is, for diagnosis)", r.ESS, r.Chains, gate, ModelESSShare)
		}
	}
	if r.Err != nil {
		row.AISRefused = "evaluation failed: " + r.Err.Error()
	}
}

package kernel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The MFA model (issue 44, item 1): a tractable-Z JEM at any D. Per class y, C
// components of a factor-analysis Gaussian with d factors, read as a classifier's logits
//
//	f(x)[y] = a_y + log Σ_c w_yc N(x; μ_yc, Λ_yc Λ_ycᵀ + diag ψ_yc),   w_y = softmax(b_y),
//
// so q(x, y) = exp f(x)[y] / Z with Z = Σ_y exp a_y exactly (each class's mixture is a
// normalised density on ℝ^D): exact JEM trains it with its exact log Z
// (Spec2D.Exact), and every recipe's Objective trains the same family treating Z as
// unknown, through the same lanes as the block trainers (TrainMFA). The truth of the
// image tasks (models/prob/mfa) is a member of the family when C and d are large
// enough, so exact JEM's excess is its optimisation and estimation error alone.
//
// Parameters (float32, MFASpec's layout): a [K], b [K·C], μ [K·C][D], Λ [K·C][D][d]
// (row i of Λ is pixel i's loadings), ρ [K·C][D] with ψ = exp ρ. Evaluation
// (MFAModel) recomputes the density in float64 from the trained float32 parameters;
// log N uses the Woodbury identity and the determinant lemma with M = I + ΛᵀΨ⁻¹Λ =
// LLᵀ and A = L⁻¹ΛᵀΨ⁻¹: (x−μ)ᵀΣ⁻¹(x−μ) = Σ_i r_i²/ψ_i − ‖A r‖², log det Σ = Σ_i ρ_i
// + 2 Σ_j log L_jj, so a component costs O(D·d) a point.

// MFASpec is the MFA model's shape.
type MFASpec struct {
	K       int // classes
	C       int // components a class
	Factors int // d: factors a component
	Dim     int // D: coordinates of x
}

// Limits of an MFA model.
const (
	MaxMFAComponents = 32
	MaxMFAFactors    = 64
	MaxMFADim        = 4096
)

// Validate reports the first problem with the shape, or nil.
func (s MFASpec) Validate() error {
	switch {
	case s.K < 2 || s.K > 256:
		return fmt.Errorf("kernel: MFA model needs 2 <= K <= 256 classes, got %d", s.K)
	case s.C < 1 || s.C > MaxMFAComponents:
		return fmt.Errorf("kernel: MFA model needs 1 to %d components a class, got %d", MaxMFAComponents, s.C)
	case s.Factors < 0 || s.Factors > MaxMFAFactors:
		return fmt.Errorf("kernel: MFA model needs 0 to %d factors, got %d", MaxMFAFactors, s.Factors)
	case s.Dim < 2 || s.Dim > MaxMFADim || s.Dim%2 != 0:
		return fmt.Errorf("kernel: MFA model needs an even dimension in [2, %d], got %d", MaxMFADim, s.Dim)
	}
	return nil
}

// comps is K·C.
func (s MFASpec) comps() int { return s.K * s.C }

// NumParams is the number of parameters.
func (s MFASpec) NumParams() int {
	kc := s.comps()
	return s.K + kc + kc*s.Dim*(s.Factors+2)
}

// off are the offsets of a, b, μ, Λ and ρ in the parameters.
func (s MFASpec) off() (a, b, mu, lam, rho int) {
	kc, D := s.comps(), s.Dim
	b = s.K
	mu = b + kc
	lam = mu + kc*D
	rho = lam + kc*D*s.Factors
	return 0, b, mu, lam, rho
}

// InitMFA draws a run's initial parameters from its seed and the training draws x
// [n][D] (row-major) with classes y: a = 0 and b = 0 (uniform class and component
// weights), μ_yc a draw of class y chosen at random (the class mean where it has none),
// Λ entries N(0, 0.01²), and ψ the class's per-coordinate variance (at least 1e-3).
// It is the shared start of every method of a task.
func InitMFA(sp MFASpec, seed uint64, x []float32, y []int32) []float32 {
	rng := rand.New(rand.NewPCG(seed, 0x6d6661)) // "mfa"
	D := sp.Dim
	theta := make([]float32, sp.NumParams())
	_, _, oMu, oLam, oRho := sp.off()
	n := len(y)
	for k := range sp.K {
		var idx []int
		for i := range n {
			if int(y[i]) == k {
				idx = append(idx, i)
			}
		}
		mean, vr := make([]float64, D), make([]float64, D)
		for _, i := range idx {
			for c := range D {
				mean[c] += float64(x[i*D+c])
			}
		}
		for c := range D {
			mean[c] /= float64(max(1, len(idx)))
		}
		for _, i := range idx {
			for c := range D {
				d := float64(x[i*D+c]) - mean[c]
				vr[c] += d * d
			}
		}
		for c := range D {
			vr[c] = max(1e-3, vr[c]/float64(max(1, len(idx)-1)))
		}
		for c := range sp.C {
			j := k*sp.C + c
			mu := theta[oMu+j*D : oMu+(j+1)*D]
			if len(idx) > 0 {
				i := idx[rng.IntN(len(idx))]
				copy(mu, x[i*D:(i+1)*D])
			} else {
				for c := range D {
					mu[c] = float32(mean[c])
				}
			}
			for i := range D * sp.Factors {
				theta[oLam+j*D*sp.Factors+i] = float32(0.01 * rng.NormFloat64())
			}
			for c := range D {
				theta[oRho+j*D+c] = float32(math.Log(vr[c]))
			}
		}
	}
	return theta
}

// mfaComp is one component's quantities at the current parameters (float64), rebuilt
// from the parameters by prep.
type mfaComp struct {
	psi, ip []float64 // ψ, 1/ψ [D]
	A       []float64 // L⁻¹ΛᵀΨ⁻¹ [d][D]
	sl      []float64 // Σ⁻¹Λ = Ψ⁻¹ΛM⁻¹ [D][d]
	dsi     []float64 // diag Σ⁻¹ [D]
	cst     float64   // log w − ½(D log 2π + log det Σ)
	logw    float64
}

// mfaPrep holds every component's quantities and the Cholesky scratch.
type mfaPrep struct {
	sp    MFASpec
	comps []mfaComp
	M, B  []float64 // d×d, d×D scratch
}

func newMFAPrep(sp MFASpec) *mfaPrep {
	D, d := sp.Dim, sp.Factors
	p := &mfaPrep{sp: sp, comps: make([]mfaComp, sp.comps()), M: make([]float64, d*d), B: make([]float64, d*D)}
	for j := range p.comps {
		p.comps[j] = mfaComp{psi: make([]float64, D), ip: make([]float64, D), A: make([]float64, d*D), sl: make([]float64, D*d), dsi: make([]float64, D)}
	}
	return p
}

// prep rebuilds every component's quantities from theta; false if some are not finite
// (a diverged step).
func (p *mfaPrep) prep(theta []float32) bool {
	ClearUpper() // scalar float64 code (exp, log): see package avx
	sp := p.sp
	D, d, C := sp.Dim, sp.Factors, sp.C
	_, oB, _, oLam, oRho := sp.off()
	ok := true
	for k := range sp.K {
		b := theta[oB+k*C : oB+(k+1)*C]
		lz := lse32as64(b)
		for c := range C {
			j := k*C + c
			cp := &p.comps[j]
			cp.logw = float64(b[c]) - lz
			lam := theta[oLam+j*D*d : oLam+(j+1)*D*d]
			rho := theta[oRho+j*D : oRho+(j+1)*D]
			logdet := 0.0
			for i := range D {
				r := float64(rho[i])
				cp.psi[i], cp.ip[i] = math.Exp(r), math.Exp(-r)
				logdet += r
			}
			// M = I + ΛᵀΨ⁻¹Λ, then its Cholesky factor in place (lower).
			M := p.M
			clear(M)
			for i := range D {
				li := lam[i*d : (i+1)*d]
				w := cp.ip[i]
				for a := range d {
					va := float64(li[a]) * w
					for bb := 0; bb <= a; bb++ {
						M[a*d+bb] += va * float64(li[bb])
					}
				}
			}
			for a := range d {
				M[a*d+a]++
			}
			if !choleskyLower(M, d) {
				ok = false
			}
			for a := range d {
				logdet += 2 * math.Log(M[a*d+a])
			}
			// A = L⁻¹ ΛᵀΨ⁻¹ (forward substitution, column by column of D).
			A := cp.A
			for i := range D {
				for a := range d {
					s := float64(lam[i*d+a]) * cp.ip[i]
					for bb := range a {
						s -= M[a*d+bb] * A[bb*D+i]
					}
					A[a*D+i] = s / M[a*d+a]
				}
			}
			// Bt = L⁻ᵀ A (back substitution): Σ⁻¹Λ = Btᵀ.
			Bt := p.B
			for i := range D {
				for a := d - 1; a >= 0; a-- {
					s := A[a*D+i]
					for bb := a + 1; bb < d; bb++ {
						s -= M[bb*d+a] * Bt[bb*D+i]
					}
					Bt[a*D+i] = s / M[a*d+a]
				}
				for a := range d {
					cp.sl[i*d+a] = Bt[a*D+i]
				}
				s := cp.ip[i]
				for a := range d {
					s -= A[a*D+i] * A[a*D+i]
				}
				cp.dsi[i] = s
			}
			cp.cst = cp.logw - 0.5*(float64(D)*math.Log(2*math.Pi)+logdet)
			if math.IsNaN(cp.cst) || math.IsInf(cp.cst, 0) {
				ok = false
			}
		}
	}
	return ok
}

// choleskyLower factors the symmetric positive definite a (n×n, lower triangle read)
// in place into its lower Cholesky factor; false if a pivot is not positive.
func choleskyLower(a []float64, n int) bool {
	for j := range n {
		s := a[j*n+j]
		for k := range j {
			s -= a[j*n+k] * a[j*n+k]
		}
		if !(s > 0) {
			return false
		}
		a[j*n+j] = math.Sqrt(s)
		for i := j + 1; i < n; i++ {
			t := a[i*n+j]
			for k := range j {
				t -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = t / a[j*n+j]
		}
	}
	return true
}

// mfaNet is the MFA model on lanes [D][P] for the trainer (lanesNet).
type mfaNet struct {
	sp    MFASpec
	np    int // parameters padded to a multiple of VW
	pr    *mfaPrep
	f, g  []float32
	ok    bool      // the last prep's quantities are finite
	R     []float32 // [KC][D][P]: x − μ
	U     []float32 // [KC][d][P]: A r
	lc    []float32 // [KC][P]: log w + log N
	gam   []float32 // [KC][P]: responsibility within the class
	s, t  []float32 // [D][P], [d][P] scratch
	om    []float32 // [P] scratch
	P     int       // lanes of the last forward
	theta []float32
}

func newMFANet(sp MFASpec, pmax int) *mfaNet {
	kc, D, d := sp.comps(), sp.Dim, sp.Factors
	np := (sp.NumParams() + VW - 1) / VW * VW
	return &mfaNet{sp: sp, np: np, pr: newMFAPrep(sp), f: make([]float32, sp.K*pmax), g: make([]float32, np),
		R: make([]float32, kc*D*pmax), U: make([]float32, kc*d*pmax), lc: make([]float32, kc*pmax), gam: make([]float32, kc*pmax),
		s: make([]float32, D*pmax), t: make([]float32, d*pmax), om: make([]float32, pmax)}
}

func (n *mfaNet) logits() []float32   { return n.f }
func (n *mfaNet) setGrad(g []float32) { n.g = g }
func (n *mfaNet) padded() int         { return n.np }

// forward computes the logits n.f [K][P] of the points x [D][P].
func (n *mfaNet) forward(theta, x []float32, P int) {
	sp := n.sp
	D, d, C := sp.Dim, sp.Factors, sp.C
	n.P, n.theta = P, theta
	n.ok = n.pr.prep(theta)
	_, _, oMu, _, _ := sp.off()
	for j := range sp.comps() {
		ClearUpper() // the scalar loops below after a preemption: see package avx
		cp := &n.pr.comps[j]
		mu := theta[oMu+j*D : oMu+(j+1)*D]
		R := n.R[j*D*P : (j+1)*D*P]
		U := n.U[j*d*P : (j+1)*d*P]
		lc := n.lc[j*P : (j+1)*P]
		clear(U)
		clear(lc)
		for i := range D {
			ri := R[i*P : (i+1)*P]
			xi := x[i*P : (i+1)*P]
			m := mu[i]
			ip := float32(cp.ip[i])
			for p := range ri {
				r := xi[p] - m
				ri[p] = r
				lc[p] += r * r * ip
			}
			for a := range d {
				vScaleAdd(U[a*P:(a+1)*P], ri, float32(cp.A[a*D+i]), U[a*P:(a+1)*P])
			}
		}
		for a := range d {
			ua := U[a*P : (a+1)*P]
			for p, u := range ua {
				lc[p] -= u * u
			}
		}
		cst := float32(cp.cst)
		for p := range lc {
			lc[p] = cst - 0.5*lc[p]
		}
	}
	oA := 0
	ClearUpper()
	for y := range sp.K {
		ay := theta[oA+y]
		fy := n.f[y*P : (y+1)*P]
		for p := range P {
			mx := n.lc[(y*C)*P+p]
			for c := 1; c < C; c++ {
				mx = max(mx, n.lc[(y*C+c)*P+p])
			}
			var s float32
			for c := range C {
				e := Exp32(n.lc[(y*C+c)*P+p] - mx)
				n.gam[(y*C+c)*P+p] = e
				s += e
			}
			for c := range C {
				n.gam[(y*C+c)*P+p] /= s
			}
			fy[p] = ay + mx + Log32(s)
		}
	}
	if !n.ok { // a non-finite step: the divergence guard sees it in the logits
		for i := range n.f[:sp.K*P] {
			n.f[i] = float32(math.NaN())
		}
	}
}

// backward back-propagates delta = dL/df [K][P] from the last forward: into the
// parameter gradient n.g (cleared first) if param, and into dx [D][P] if dx != nil.
func (n *mfaNet) backward(theta, delta []float32, P int, param bool, dx []float32) {
	sp := n.sp
	D, d, C := sp.Dim, sp.Factors, sp.C
	_, oB, oMu, oLam, oRho := sp.off()
	if param {
		clear(n.g)
	}
	if dx != nil {
		clear(dx[:D*P])
	}
	for y := range sp.K {
		dy := delta[y*P : (y+1)*P]
		var sumDy float32
		for _, v := range dy {
			sumDy += v
		}
		if param {
			n.g[y] += sumDy
		}
		for c := range C {
			ClearUpper() // the scalar loops below after a preemption: see package avx
			j := y*C + c
			cp := &n.pr.comps[j]
			gam := n.gam[j*P : (j+1)*P]
			om := n.om[:P]
			var Om, maxAbs float32
			for p := range P {
				om[p] = dy[p] * gam[p]
				Om += om[p]
				maxAbs = max(maxAbs, abs32(om[p]))
			}
			if param {
				n.g[oB+j] += Om - float32(math.Exp(cp.logw))*sumDy
			}
			if maxAbs == 0 {
				continue
			}
			R := n.R[j*D*P : (j+1)*D*P]
			U := n.U[j*d*P : (j+1)*d*P]
			s := n.s[:D*P]
			// s = Σ⁻¹ r = r/ψ − Aᵀ(A r)
			for i := range D {
				si := s[i*P : (i+1)*P]
				ip := float32(cp.ip[i])
				ri := R[i*P : (i+1)*P]
				for p := range si {
					si[p] = ri[p] * ip
				}
				for a := range d {
					vScaleAdd(si, U[a*P:(a+1)*P], -float32(cp.A[a*D+i]), si)
				}
			}
			if dx != nil {
				for i := range D {
					vMulSub(dx[i*P:(i+1)*P], s[i*P:(i+1)*P], om)
				}
			}
			if !param {
				continue
			}
			lam := theta[oLam+j*D*d : oLam+(j+1)*D*d]
			gMu := n.g[oMu+j*D : oMu+(j+1)*D]
			gRho := n.g[oRho+j*D : oRho+(j+1)*D]
			gLam := n.g[oLam+j*D*d : oLam+(j+1)*D*d]
			t := n.t[:d*P]
			clear(t)
			for i := range D {
				si := s[i*P : (i+1)*P]
				s1, s2 := vDot2(om, si)
				gMu[i] += s1
				gRho[i] += float32(0.5 * cp.psi[i] * (float64(s2) - float64(Om)*cp.dsi[i]))
				for a := range d {
					vScaleAdd(t[a*P:(a+1)*P], si, lam[i*d+a], t[a*P:(a+1)*P])
				}
			}
			for a := range d {
				ta := t[a*P : (a+1)*P]
				vMul(ta, ta, om)
			}
			for i := range D {
				si := s[i*P : (i+1)*P]
				for a := range d {
					gLam[i*d+a] += vDot(si, t[a*P:(a+1)*P]) - Om*float32(cp.sl[i*d+a])
				}
			}
		}
	}
}

// logZ is the exact log Z = log Σ_y exp a_y; when g is not nil it adds w·∂log Z/∂a
// to g.
func (n *mfaNet) logZ(theta, g []float32, w float32) float64 {
	K := n.sp.K
	a := theta[:K]
	lz := lse32as64(a)
	if g != nil {
		for y := range K {
			g[y] += w * float32(math.Exp(float64(a[y])-lz))
		}
	}
	return lz
}

// SpecMFA is the MFA model, loss and schedule of a TrainMFA call: a Spec2D (K, the
// baseline, exact JEM with the exact log Z, or an Objective; Hidden, TrainGrid and
// ShiftGrid are not read) and the model's shape.
type SpecMFA struct {
	Spec2D
	MFA MFASpec
}

// Validate reports the first problem with the spec, or nil.
func (s SpecMFA) Validate() error {
	if err := s.MFA.Validate(); err != nil {
		return err
	}
	if s.K != s.MFA.K {
		return fmt.Errorf("kernel: MFA spec has K = %d, its model %d classes", s.K, s.MFA.K)
	}
	sp := s.Spec2D
	sp.Hidden, sp.TrainGrid = nil, 0
	return sp.validate(s.MFA.Dim)
}

// TrainMFA trains every run (X: N×D draws) for spec.Steps steps and returns one
// Result2D per run, in order, the runs spread over GOMAXPROCS goroutines: the block
// trainer's loop (TrainJoint's) with the MFA model in place of the MLP, exact JEM's
// log Z exact.
func TrainMFA(ctx context.Context, spec SpecMFA, runs []RunAdditive) ([]Result2D, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkRunsD(runs, spec.MFA.NumParams(), spec.MFA.Dim, spec.K); err != nil {
		return nil, err
	}
	return trainRuns(ctx, len(runs), func() *trainerAdd { return newTrainerMFA(spec) },
		func(t *trainerAdd, i int) Result2D { return t.train(&runs[i]) }, setCPU2D)
}

func newTrainerMFA(spec SpecMFA) *trainerAdd {
	return newTrainerNets(spec.Spec2D, spec.MFA.Dim/2, spec.MFA.Dim, spec.MFA.NumParams(), func(P int) lanesNet { return newMFANet(spec.MFA, P) })
}

// MFAModel evaluates an MFA model in float64 from its (float32) parameters.
type MFAModel struct {
	sp    MFASpec
	theta []float32
	pr    *mfaPrep
	r     []float64
	ar    []float64
	lc    []float64
}

// NewMFAModel checks the parameters and precomputes every component.
func NewMFAModel(sp MFASpec, theta []float32) (*MFAModel, error) {
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	if len(theta) != sp.NumParams() {
		return nil, fmt.Errorf("kernel: MFA model %+v has %d parameters, got %d", sp, sp.NumParams(), len(theta))
	}
	m := &MFAModel{sp: sp, theta: theta, pr: newMFAPrep(sp), r: make([]float64, sp.Dim), ar: make([]float64, sp.Factors), lc: make([]float64, sp.K*sp.C)}
	if !m.pr.prep(theta) {
		return nil, fmt.Errorf("kernel: MFA model's parameters are not finite")
	}
	return m, nil
}

// Dim is D.
func (m *MFAModel) Dim() int { return m.sp.Dim }

// LogZ is the exact log Z = log Σ_y exp a_y.
func (m *MFAModel) LogZ() float64 { return lse32as64(m.theta[:m.sp.K]) }

// lse32as64 is log Σ exp v in float64 of float32 values.
func lse32as64(v []float32) float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = max(mx, float64(x))
	}
	var z float64
	for _, x := range v {
		z += math.Exp(float64(x) - mx)
	}
	return mx + math.Log(z)
}

// Logits is f(x)[y] at n points x [n][D], row-major [n][K]; when grad is not nil it
// also writes ∇x LSE_y f(x) [n][D]. Not safe for concurrent use.
func (m *MFAModel) Logits(x []float64, n int, grad []float64) []float64 {
	sp := m.sp
	D, d, C, K := sp.Dim, sp.Factors, sp.C, sp.K
	_, _, oMu, _, _ := sp.off()
	out := make([]float64, n*K)
	var gy [][]float64
	if grad != nil {
		clear(grad[:n*D])
		gy = make([][]float64, K*C) // per component: −Σ⁻¹r at this point
		for j := range gy {
			gy[j] = make([]float64, D)
		}
	}
	lcAll := make([]float64, K*C)
	for p := range n {
		// every point: an asynchronous preemption leaves the upper vector state
		// dirty, which slows this scalar float64 code 20–100× (see package avx)
		ClearUpper()
		xp := x[p*D : (p+1)*D]
		for j := range K * C {
			cp := &m.pr.comps[j]
			mu := m.theta[oMu+j*D : oMu+(j+1)*D]
			q := 0.0
			for i := range D {
				r := xp[i] - float64(mu[i])
				m.r[i] = r
				q += r * r * cp.ip[i]
			}
			for a := range d {
				s := 0.0
				row := cp.A[a*D : (a+1)*D]
				for i := range D {
					s += row[i] * m.r[i]
				}
				m.ar[a] = s
				q -= s * s
			}
			lcAll[j] = cp.cst - 0.5*q
			if grad != nil {
				g := gy[j]
				for i := range D {
					s := m.r[i] * cp.ip[i]
					for a := range d {
						s -= cp.A[a*D+i] * m.ar[a]
					}
					g[i] = -s
				}
			}
		}
		for y := range K {
			out[p*K+y] = float64(m.theta[y]) + prob.LogSumExp(lcAll[y*C:(y+1)*C])
		}
		if grad != nil {
			// ∇x LSE_y f = Σ_yc softmax over all components of (a_y + lc) · ∇ log N_yc
			all := m.lc[:K*C]
			for y := range K {
				for c := range C {
					all[y*C+c] = float64(m.theta[y]) + lcAll[y*C+c]
				}
			}
			l := prob.LogSumExp(all)
			g := grad[p*D : (p+1)*D]
			for j := range K * C {
				w := math.Exp(all[j] - l)
				if w == 0 {
					continue
				}
				for i := range D {
					g[i] += w * gy[j][i]
				}
			}
		}
	}
	return out
}

// MFAEvaluator evaluates an MFA model's mean negative log-likelihood at fixed points
// on the trainer's float32 lanes (the held-out NLL and the curve's joint KL at every
// check: thousands of points, each check): points [n][D] are laid out once.
type MFAEvaluator struct {
	sp  MFASpec
	net *mfaNet
	x   []float32 // chunks of [D][mfaChunk]
	y   []int32
	n   int
}

// mfaChunk is the lanes an MFAEvaluator evaluates at a time.
const mfaChunk = 256

// NewMFAEvaluator lays out n points x [n][D] (float64, row-major) with classes y.
func NewMFAEvaluator(sp MFASpec, x []float64, y []int32) *MFAEvaluator {
	D, n := sp.Dim, len(y)
	nc := (n + mfaChunk - 1) / mfaChunk
	e := &MFAEvaluator{sp: sp, net: newMFANet(sp, mfaChunk), x: make([]float32, nc*D*mfaChunk), y: y, n: n}
	for i := range n {
		c, p := i/mfaChunk, i%mfaChunk
		for k := range D {
			e.x[(c*D+k)*mfaChunk+p] = float32(x[i*D+k])
		}
	}
	return e
}

// NLL is the mean of log Z − f(x)[y] over the points at theta (−log q(x, y), exact):
// NaN when there are no points or the parameters are not finite.
func (e *MFAEvaluator) NLL(theta []float32) float64 {
	if e.n == 0 {
		return math.NaN()
	}
	D, K := e.sp.Dim, e.sp.K
	var s float64
	for c := 0; c*mfaChunk < e.n; c++ {
		m := min(mfaChunk, e.n-c*mfaChunk)
		P := (m + VW - 1) / VW * VW
		x := e.x[c*D*mfaChunk : (c+1)*D*mfaChunk]
		if P != mfaChunk { // the last chunk: its lanes contiguous
			xs := e.net.s[:D*P]
			for k := range D {
				copy(xs[k*P:(k+1)*P], x[k*mfaChunk:k*mfaChunk+P])
			}
			x = xs
		}
		e.net.forward(theta, x, P)
		if !e.net.ok {
			return math.NaN()
		}
		for p := range m {
			s -= float64(e.net.f[int(e.y[c*mfaChunk+p])*P+p])
		}
	}
	_ = K
	return s/float64(e.n) + e.net.logZ(theta, nil, 0)
}

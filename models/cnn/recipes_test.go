package cnn

import (
	"context"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph-building style.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// recipeLossGrads runs one step's loss, term and gradients (trainGraph.lossGrads, the
// hand backward pass) of the run's term tm at the parameters theta (the network's, then
// the term's own) on the batch d, from a fixed rng seed: the same draws every call.
func recipeLossGrads(t *testing.T, sp Spec, d Data, tm Term, w float64, theta [][]float32) (loss, term float64, grads [][]float32) {
	t.Helper()
	b, err := newBackend("")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	nt := newNet(sp, d.S, d.K)
	sh := sp.layerShapes(d.S, d.K)
	np := len(sh)
	for range tm.Own() {
		sh = append(sh, []int{})
	}
	N, D := len(d.Y), d.S*d.S
	g := NewGraph(b, "recipe_grads")
	var outs []*tensors.Tensor
	err = catch(func() error {
		p := paramNodes(g, sh, "p")
		x := Parameter(g, "x", shapes.Make(dtypes.Float32, N, D))
		y := Parameter(g, "y", shapes.Make(dtypes.Int32, N))
		s := &StepGraph{G: g, X: x, B: N, D: D, K: d.K, Own: p[np:], nt: nt, p: p[:np], rng: Parameter(g, "rng", RNGStateForGraph(g).Shape())}
		tg := &trainGraph{nt: nt, term: tm, N: N, w: w}
		loss, _, term, grads := tg.lossGrads(s, p, OneHot(y, d.K, dtypes.Float32))
		g.Compile(append([]*Node{loss, term}, grads...)...)
		in := make([]any, 0, len(sh)+3)
		for i, s := range sh {
			in = append(in, tensors.FromFlatDataAndDimensions(append([]float32(nil), theta[i]...), s...))
		}
		yi := make([]int32, N)
		for i, v := range d.Y {
			yi[i] = int32(v)
		}
		st, err := RNGStateFromSeed(42)
		if err != nil {
			return err
		}
		in = append(in, tensors.FromFlatDataAndDimensions(append([]float32(nil), d.X...), N, D), tensors.FromFlatDataAndDimensions(yi, N), st)
		outs = g.Run(in...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	loss = float64(tensors.MustCopyFlatData[float32](outs[0])[0])
	term = float64(tensors.MustCopyFlatData[float32](outs[1])[0])
	for _, o := range outs[2:] {
		grads = append(grads, tensors.MustCopyFlatData[float32](o))
	}
	return loss, term, grads
}

// TestRecipeGradients checks each recipe's parameter gradient (hand backward pass, and
// for dsm autodiff through the hand input gradient) against central finite differences
// of its loss with the same draws, on a tiny CNN.
func TestRecipeGradients(t *testing.T) {
	d := barRing(12, 8, 0.5, 5)
	sp, _ := Parse("cnn:3,4,dense:5")
	p, err := Init(sp, 8, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range p.Tensors {
		for i := range w {
			w[i] *= 2
		}
	}
	gn, err := fitGauss(d.X, len(d.Y), 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name string
		w    float64
		tm   Term
	}{
		{"ed", 1, &edTerm{o: ED{M: 3, T: 0.25, W: 1}}},
		{"ed-w0", 2, &edTerm{o: ED{M: 2, T: 0.25, W: edWZero}}},
		{"dsm", 1, &dsmTerm{o: DSM{Sigma: 0.3}}},
		{"nce", 1, &nceTerm{o: NCE{Nu: 3, Inflate: 1}, noise: &gn, c0: 60}},
	} {
		t.Run(k.name, func(t *testing.T) {
			theta := append([][]float32(nil), p.Tensors...)
			nce := k.name == "nce"
			if nce {
				theta = append(theta, []float32{60})
			}
			loss, term, grads := recipeLossGrads(t, sp, d, k.tm, k.w, theta)
			r := rand.New(rand.NewPCG(7, 7))
			// float32 losses: rounding costs about ulp(loss)/h, truncation h² (dsm's loss is
			// about D/2, whence the large step).
			const h = float32(2e-2)
			var worst, scale float64
			for range 12 {
				i := r.IntN(len(theta))
				if nce && r.IntN(3) == 0 {
					i = len(theta) - 1
				}
				j := r.IntN(len(theta[i]))
				at := func(v float32) float64 {
					th := append([][]float32(nil), theta...)
					th[i] = append([]float32(nil), theta[i]...)
					th[i][j] = v
					l, _, _ := recipeLossGrads(t, sp, d, k.tm, k.w, th)
					return l
				}
				fd := (at(theta[i][j]+h) - at(theta[i][j]-h)) / float64(2*h)
				worst = max(worst, math.Abs(fd-float64(grads[i][j])))
				scale = max(scale, math.Abs(fd))
			}
			t.Logf("%s: loss %.4g (term %.4g), max |grad - finite difference| %.2g over 12 coordinates, max |fd| %.2g", k.name, loss, term, worst, scale)
			if worst > 1e-2*max(scale, 0.1) {
				t.Errorf("gradient and finite differences differ by %g (scale %g)", worst, scale)
			}
		})
	}
}

// knownMix is the known answer of the recipes' tests: a two-component Gaussian mixture
// in D = 16 "pixels" with full covariances (A·Aᵀ + 0.3²I, A 16×3), means ±0.8·u.
type knownMix struct {
	D     int
	w     []float64
	comps []gaussNoise
}

func newKnownMix(t *testing.T, sigma float64) knownMix {
	t.Helper()
	const D = 16
	r := rand.New(rand.NewPCG(11, 12))
	m := knownMix{D: D, w: []float64{0.6, 0.4}}
	for k, sign := range []float64{1, -1} {
		mean := make([]float64, D)
		for d := range mean {
			mean[d] = sign * 0.8 * math.Cos(float64(d*(k+1)))
		}
		A := make([]float64, D*3)
		for i := range A {
			A[i] = 0.5 * r.NormFloat64()
		}
		cov := make([]float64, D*D)
		for a := range D {
			for b := range D {
				for f := range 3 {
					cov[a*D+b] += A[a*3+f] * A[b*3+f]
				}
			}
			cov[a*D+a] += 0.09 + sigma*sigma
		}
		gn, err := newGauss(mean, cov, D)
		if err != nil || gn.ridge != 0 {
			t.Fatal(err, gn.ridge)
		}
		m.comps = append(m.comps, gn)
	}
	return m
}

// draws are n exact draws, row-major [n, D].
func (m knownMix) draws(r *rand.Rand, n int) []float32 {
	D := m.D
	x := make([]float32, n*D)
	z := make([]float64, D)
	for i := range n {
		c := m.comps[0]
		if r.Float64() >= m.w[0] {
			c = m.comps[1]
		}
		for d := range z {
			z[d] = r.NormFloat64()
		}
		for b := range D { // x_b = μ_b + Σ_a z_a Lᵀ[a][b]
			v := float64(c.mean[b])
			for a := range D {
				v += z[a] * float64(c.lT[a*D+b])
			}
			x[i*D+b] = float32(v)
		}
	}
	return x
}

// logP is the mixture's log density at the rows of x [n, D], [n].
func (m knownMix) logP(x *Node) *Node {
	var parts []*Node
	for k, c := range m.comps {
		parts = append(parts, InsertAxes(AddScalar(c.logPdf(x), math.Log(m.w[k])), -1))
	}
	return logSumExp(Concatenate(parts, -1))
}

// knownAnswer runs the recipe's term on R batches of B exact draws with the energy
// β·log p (dsm: β·log p_σ, the mixture mix) and returns the mean and standard error of
// dL/dβ and (nce) dL/dc at the given β and c.
func knownAnswer(t *testing.T, k Objective, mix, truth knownMix, noise *gaussNoise, beta, c float64, R, B int) (dBeta, seBeta, dC, seC float64) {
	t.Helper()
	b, err := newBackend("")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	D := mix.D
	g := NewGraph(b, "known_answer")
	err = catch(func() error {
		bt := Parameter(g, "beta", shapes.Make(dtypes.Float32))
		cn := Parameter(g, "c", shapes.Make(dtypes.Float32))
		x := Parameter(g, "x", shapes.Make(dtypes.Float32, B, D))
		s := &StepGraph{G: g, rng: Parameter(g, "rng", RNGStateForGraph(g).Shape())}
		energy := func(u *Node) *Node { return Mul(mix.logP(u), bt) }
		var term *Node
		switch k := k.(type) {
		case DSM:
			eps := s.Normal(B, D)
			xt := Identity(StopGradient(Add(x, MulScalar(eps, k.Sigma))))
			s1 := Gradient(ReduceAllSum(mix.logP(xt)), xt)[0]
			term = dsmLoss(Mul(StopGradient(s1), bt), eps, k.Sigma)
		case ED:
			neg := edNegatives(s, x, k)
			term = edLoss(energy(x), energy(neg), k)
		case NCE:
			y, lpn := noise.draw(s, k.Nu*B)
			logNu := math.Log(float64(k.Nu))
			term = nceLoss(energy(x), energy(y), AddScalar(noise.logPdf(x), logNu), AddScalar(lpn, logNu), cn)
		}
		gr := Gradient(term, bt, cn)
		g.Compile(gr[0], gr[1])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(21, 22))
	var sb, sb2, sc, sc2 float64
	for rep := range R {
		x := truth.draws(r, B)
		st, err := RNGStateFromSeed(int64(1000 + rep))
		if err != nil {
			t.Fatal(err)
		}
		var outs []*tensors.Tensor
		if err := catch(func() error {
			outs = g.Run(float32(beta), float32(c), tensors.FromFlatDataAndDimensions(x, B, D), st)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		gb := float64(tensors.MustCopyFlatData[float32](outs[0])[0])
		gc := float64(tensors.MustCopyFlatData[float32](outs[1])[0])
		sb, sb2, sc, sc2 = sb+gb, sb2+gb*gb, sc+gc, sc2+gc*gc
	}
	n := float64(R)
	dBeta, dC = sb/n, sc/n
	return dBeta, math.Sqrt(max(sb2/n-dBeta*dBeta, 0) / (n - 1)), dC, math.Sqrt(max(sc2/n-dC*dC, 0) / (n - 1))
}

// TestRecipesKnownAnswer: on exact draws of a known mixture in D = 16 with the energy
// β·log p (dsm: β·log p_σ, the truth convolved with its noise), each recipe's term has
// dL/dβ = 0 at β = 1 within 3.5 standard errors (nce: dL/dc = 0 too, at c = 0, the
// exact log Z), and its sign says β = 1 is the minimum: negative at β = 0.8, positive
// at β = 1.25. 64 batches of 256 draws (JEMCHECK_SLOW=1: 256 batches).
func TestRecipesKnownAnswer(t *testing.T) {
	testenv.Slow(t, "every CNN recipe trained on a known energy, 5 s")
	R, B := 64, 256
	if os.Getenv("JEMCHECK_SLOW") == "1" {
		R = 256
	}
	const sigma = 0.3
	truth := newKnownMix(t, 0)
	smooth := newKnownMix(t, sigma)
	gn, err := fitGauss(truth.draws(rand.New(rand.NewPCG(5, 5)), 4096), 4096, truth.D, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		k    Objective
		mix  knownMix
	}{
		{"ed-M4-t0.05", ED{M: 4, T: 0.05, W: 1}, truth},
		{"ed-M16-t0.1", ED{M: 16, T: 0.1, W: 1}, truth},
		{"dsm-sigma0.3", DSM{Sigma: sigma}, smooth},
		{"nce-nu10", NCE{Nu: 10, Inflate: 1}, truth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g1, s1, c1, sc1 := knownAnswer(t, tc.k, tc.mix, truth, &gn, 1, 0, R, B)
			gLo, sLo, _, _ := knownAnswer(t, tc.k, tc.mix, truth, &gn, 0.8, 0, R, B)
			gHi, sHi, _, _ := knownAnswer(t, tc.k, tc.mix, truth, &gn, 1.25, 0, R, B)
			t.Logf("%s: dL/dβ at β=1: %.4f ± %.4f; β=0.8: %.4f ± %.4f; β=1.25: %.4f ± %.4f", tc.name, g1, s1, gLo, sLo, gHi, sHi)
			if math.Abs(g1) > 3.5*s1 {
				t.Errorf("dL/dβ at β = 1 is %.4g ± %.4g, not 0", g1, s1)
			}
			if gLo > -3*sLo || gHi < 3*sHi {
				t.Errorf("β = 1 is not the minimum: dL/dβ %.4g at 0.8, %.4g at 1.25", gLo, gHi)
			}
			if _, ok := tc.k.(NCE); ok {
				t.Logf("%s: dL/dc at (1, 0): %.4f ± %.4f", tc.name, c1, sc1)
				if math.Abs(c1) > 3.5*sc1 {
					t.Errorf("dL/dc at the exact log Z is %.4g ± %.4g, not 0", c1, sc1)
				}
			}
			if _, ok := tc.k.(DSM); ok { // against the clean log p the minimiser moves (DSM fits p_σ)
				gc, sc, _, _ := knownAnswer(t, tc.k, truth, truth, &gn, 1, 0, R, B)
				t.Logf("%s: with the clean log p, dL/dβ at β=1: %.4f ± %.4f", tc.name, gc, sc)
			}
		})
	}
}

// TestTrainRecipes trains each recipe a few steps on 8×8 bar/ring images: the losses
// stay finite, the mean loss of the last 5 steps is under that of the first 5, the
// method reports its stats, and equal seeds give equal parameters.
func TestTrainRecipes(t *testing.T) {
	d := barRing(256, 8, 0.5, 4)
	sp, _ := Parse("cnn:4,8")
	for _, o := range []TrainOptions{
		{Objective: ED{M: 4, T: 0.05}},
		{Objective: DSM{Sigma: 0.3}},
		{Objective: NCE{Nu: 4}},
	} {
		name := o.Objective.Name()
		t.Run(name, func(t *testing.T) {
			o.Steps, o.Batch, o.LR, o.Seed = 30, 32, 1e-2, 1
			p, st, err := Train(context.Background(), sp, d, o)
			if err != nil {
				t.Fatal(err)
			}
			if st.Diverged || st.Steps != o.Steps || len(st.Term) != o.Steps {
				t.Fatalf("diverged %v, %d steps, %d terms", st.Diverged, st.Steps, len(st.Term))
			}
			mean := func(v []float32) float64 {
				s := 0.0
				for _, x := range v {
					s += float64(x)
				}
				return s / float64(len(v))
			}
			first, last := mean(st.Loss[:5]), mean(st.Loss[len(st.Loss)-5:])
			t.Logf("%s: loss %.4f -> %.4f (ce %.4f -> %.4f, term %.4f -> %.4f), stats %v, %.2fs", name, first, last,
				mean(st.CE[:5]), mean(st.CE[len(st.CE)-5:]), mean(st.Term[:5]), mean(st.Term[len(st.Term)-5:]), st.MethodStats, st.Seconds)
			if !(last < first) {
				t.Errorf("loss did not improve: %g -> %g", first, last)
			}
			for k, v := range st.MethodStats {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("stat %s = %v", k, v)
				}
			}
			if _, ok := st.MethodStats[name+"_loss"]; !ok || name == "nce" && len(st.MethodStats) != 5 {
				t.Errorf("stats %v", st.MethodStats)
			}
			o.Steps = 3
			p1, _, err1 := Train(context.Background(), sp, d, o)
			p2, _, err2 := Train(context.Background(), sp, d, o)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for i := range p1.Tensors {
				if !slices.Equal(p1.Tensors[i], p2.Tensors[i]) {
					t.Fatal("equal seeds gave different parameters")
				}
			}
			_ = p
		})
	}
}

// TestRecipeOptions: the recipes' options are checked.
func TestRecipeOptions(t *testing.T) {
	d := barRing(8, 8, 0.5, 6)
	sp, _ := Parse("cnn:3")
	for _, tc := range []struct {
		opts TrainOptions
		err  string
	}{
		{TrainOptions{Objective: ED{M: 65}}, "ED options"},
		{TrainOptions{Objective: ED{T: -1}}, "ED options"},
		{TrainOptions{Objective: DSM{Sigma: math.Inf(1)}}, "Sigma"},
		{TrainOptions{Objective: DSM{}, Autodiff: true}, "Pad"},
		{TrainOptions{Objective: NCE{Nu: -2}}, "NCE options"},
		{TrainOptions{Objective: NCE{}, PxWeight: -1}, "PxWeight"},
		{TrainOptions{Objective: SGLD{L2: -0.1}}, "SGLD options"},
		{TrainOptions{Objective: SGLD{ReinitFreq: 2}}, "SGLD options"},
	} {
		tc.opts.Steps = 1
		if _, _, err := Train(context.Background(), sp, d, tc.opts); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: error %v, want one containing %q", tc.opts, err, tc.err)
		}
	}
}

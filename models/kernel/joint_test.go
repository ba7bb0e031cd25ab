package kernel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refLossJoint is the float64 loss of the joint trainer's current lanes: the
// baseline's or testObjective's (its parameter at 0: (c − 1)² = 1).
func refLossJoint(th []float64, t *trainerAdd) float64 {
	spec := t.spec
	B, P, K, d := t.B, t.P, t.K, t.win
	ls := layersIn(d, spec.Hidden, K)
	w := float64(spec.PxWeight)
	at := func(p int) []float64 {
		x := make([]float64, d)
		for c := range d {
			x[c] = float64(t.x[0][c*P+p])
		}
		return refMLP(th, ls, x)
	}
	loss := 0.0
	for p := range B {
		f := at(p)
		l := refLSE(f)
		loss += (l - f[t.yd[p]]) / float64(B)
		if spec.Objective != nil {
			loss -= w * l / float64(B)
		}
	}
	if spec.Objective != nil {
		for p := B; p < P; p++ {
			loss += w * refLSE(at(p)) / float64(B)
		}
		loss += w
	}
	return loss
}

// TestJointGradients: the joint trainer's loss, parameter gradient (an objective's
// through objLoss) and the input gradient of LSE_y f at D-dimensional points (an
// objective's Step.LSE: the samplers' drift), against central finite differences of a
// float64 reference MLP.
func TestJointGradients(t *testing.T) {
	cases := []struct {
		name string
		spec SpecJoint
	}{
		{"baseline/D=4", SpecJoint{Spec2D{Hidden: []int{6}, K: 3, Batch: 16, Box: 4}, 4}},
		{"baseline/D=10/linear", SpecJoint{Spec2D{K: 2, Batch: 16, Box: 4}, 10}},
		{"objective/D=6/two layers", SpecJoint{Spec2D{Hidden: []int{5, 4}, K: 3, Batch: 16, Box: 4, PxWeight: 0.8, Objective: testObj(0, false)}, 6}},
		{"objective/D=2", SpecJoint{Spec2D{Hidden: []int{6}, K: 2, Batch: 16, Box: 3, PxWeight: 1, Objective: testObj(0, false)}, 2}},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			tr := newTrainerJoint(c.spec)
			rng := rand.New(rand.NewPCG(uint64(ci+1), 3))
			th := make([]float64, tr.np)
			for i := range th {
				th[i] = float64(float32(rng.NormFloat64() * 0.5))
				tr.theta[i] = float32(th[i])
			}
			B, P, d := tr.B, tr.P, c.spec.Dim
			for p := range P {
				for cc := range d {
					tr.x[0][cc*P+p] = float32(rng.Float64()*4 - 2)
				}
				if p < B {
					tr.yd[p] = int32(rng.IntN(c.spec.K))
				}
			}
			if tr.obj != nil {
				tr.st = Step{B: B, P: P, Dim: d, Box: c.spec.Box, X: tr.X, Y: tr.yd, Extra: tr.st.Extra, ExtraGrad: tr.st.ExtraGrad}
			}
			tr.nets[0].forward(tr.th(0), tr.x[0], P)
			tr.sumLogits(P)
			loss := tr.loss()
			tr.backward()
			if want := refLossJoint(th, tr); math.Abs(float64(loss)-want) > 2e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss %v, reference %v", loss, want)
			}
			worst := checkFD(t, "dL/dtheta", th, func() float64 { return refLossJoint(th, tr) }, func(j int) float64 { return float64(tr.g[j]) }, 2e-5)
			t.Logf("parameter gradient: max |kernel - finite difference| = %.3g", worst)
			ls := layersIn(d, c.spec.Hidden, c.spec.K)
			worst = inputGradAt(t, tr, func(x []float64) float64 { return refLSE(refMLP(th, ls, x)) })
			t.Logf("input gradient: max |kernel - finite difference| = %.3g", worst)
		})
	}
}

// TestPointLogits: the joint and the additive models' logits at D-dimensional points
// (over a chunk boundary) against the float64 reference.
func TestPointLogits(t *testing.T) {
	const n, K = 1030, 3
	hidden := []int{7, 5}
	for _, c := range []struct {
		name     string
		additive bool
		dim      int
	}{{"joint/D=2", false, 2}, {"joint/D=8", false, 8}, {"additive/B=1", true, 2}, {"additive/B=3", true, 6}} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(c.dim)))
			x := make([]float64, n*c.dim)
			for i := range x {
				x[i] = rng.Float64()*6 - 3
			}
			var theta []float32
			var got []float64
			var err error
			if c.additive {
				theta = InitAdditive(3, hidden, K, c.dim/2)
				got, err = AdditivePointLogits(hidden, K, c.dim/2, theta, x, n)
			} else {
				theta = InitJoint(3, hidden, K, c.dim)
				got, err = JointPointLogits(hidden, K, c.dim, theta, x, n)
			}
			if err != nil {
				t.Fatal(err)
			}
			th := make([]float64, len(theta))
			for i, v := range theta {
				th[i] = float64(v)
			}
			lse := RowLSE(got, K)
			for i := range n {
				var want []float64
				xi := x[i*c.dim : (i+1)*c.dim]
				if c.additive {
					want = refAdd(th, hidden, K, c.dim/2, func(b int) (float64, float64) { return xi[2*b], xi[2*b+1] })
				} else {
					want = refMLP(th, layersIn(c.dim, hidden, K), xi)
				}
				for y := range K {
					if math.Abs(got[i*K+y]-want[y]) > 1e-5*(1+math.Abs(want[y])) {
						t.Fatalf("point %d class %d: %v, reference %v", i, y, got[i*K+y], want[y])
					}
				}
				if math.Abs(lse[i]-refLSE(want)) > 1e-5*(1+math.Abs(lse[i])) {
					t.Fatalf("point %d: LSE %v, reference %v", i, lse[i], refLSE(want))
				}
			}
		})
	}
}

// TestJointTwoDimsIsTrain2D: the joint model of D = 2 is the 2-D MLP, and TrainJoint
// trains it as Train2D, bit for bit, for the baseline and an objective.
func TestJointTwoDimsIsTrain2D(t *testing.T) {
	x0, x1, xy, d := gmmDraws2D()
	hidden := []int{8, 8}
	for _, c := range []struct {
		name string
		s    Spec2D
	}{
		{"baseline", Spec2D{Hidden: hidden, K: 3, Steps: 60, Batch: 32, Box: 5}},
		{"objective", Spec2D{Hidden: hidden, K: 3, Steps: 60, Batch: 32, Box: 5, PxWeight: 1, KeepBuffer: true, Objective: testObj(5, true)}},
	} {
		s := c.s
		t.Run(c.name, func(t *testing.T) {
			theta := InitJoint(5, hidden, 3, 2)
			if !slices.Equal(theta, InitMLP2D(5, hidden, 3)) {
				t.Fatal("InitJoint of D = 2 is not InitMLP2D")
			}
			want, err := Train2D(context.Background(), s, []Run2D{{Seed: 9, Theta: theta, LR: 0.01, X0: x0, X1: x1, Y: d.Y}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := TrainJoint(context.Background(), SpecJoint{s, 2}, []RunAdditive{{Seed: 9, Theta: theta, LR: 0.01, X: xy, Y: d.Y}})
			if err != nil {
				t.Fatal(err)
			}
			w, g := want[0], got[0]
			if !slices.Equal(w.Theta, g.Theta) || w.Loss != g.Loss || !slices.Equal(w.Buffer, g.Buffer) || w.InBox != g.InBox || !slices.Equal(w.Extra, g.Extra) {
				t.Fatalf("D = 2 differs from Train2D: loss %v vs %v, in box %v vs %v", g.Loss, w.Loss, g.InBox, w.InBox)
			}
		})
	}
}

// TestSGLDStepsGaussian: the SGLD sampler in D dimensions with the Langevin noise
// (std = √(2·lr)) samples a known energy, the Gaussian E(x) = Σ_i (x_i − μ_i)²/(2σ_i²):
// after burn-in the chains' means and variances per coordinate are μ_i and σ_i²
// (within 5 standard errors plus the discretisation's O(lr) bias).
func TestSGLDStepsGaussian(t *testing.T) {
	cases := []struct {
		name   string
		dim    int
		mu, sd func(i int) float64
	}{
		{"standard/D=8", 8, func(int) float64 { return 0 }, func(int) float64 { return 1 }},
		{"shifted and scaled/D=16", 16, func(i int) float64 { return float64(i%5) - 2 }, func(i int) float64 { return 0.5 + 0.1*float64(i%4) }},
	}
	const chains, steps, lr = 2000, 1500, 0.005
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.dim
			x, dx, noise := make([]float32, d*chains), make([]float32, d*chains), make([]float32, d*chains)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range x {
				x[i] = float32(rng.Float64()*2 - 1)
			}
			grad := func() { // ∇ log density, layout [d][chains] as the trainers'
				for i := range d {
					mu, v := c.mu(i), c.sd(i)*c.sd(i)
					for p := range chains {
						dx[i*chains+p] = float32(-(float64(x[i*chains+p]) - mu) / v)
					}
				}
			}
			o := SGLDOptions{Steps: steps, LR: lr, Std: float32(math.Sqrt(2 * lr))}
			SGLDSteps(o, 100, x, dx, noise, rng, grad)
			worst := 0.0
			for i := range d {
				var s, s2 float64
				for _, v := range x[i*chains : (i+1)*chains] {
					s += float64(v)
					s2 += float64(v) * float64(v)
				}
				mean := s / chains
				vr := s2/chains - mean*mean
				want := c.sd(i) * c.sd(i)
				zMean := (mean - c.mu(i)) / math.Sqrt(want/chains)
				relVar := vr/want - 1
				worst = max(worst, math.Abs(zMean))
				if math.Abs(zMean) > 5 || math.Abs(relVar) > 5*math.Sqrt(2.0/chains)+lr/want {
					t.Errorf("coordinate %d: mean %.4f (want %.4f, z %.2f), variance %.4f (want %.4f)", i, mean, c.mu(i), zMean, vr, want)
				}
			}
			t.Logf("worst |z| of the means: %.2f", worst)
		})
	}
}

// TestJointValidate: the joint model refuses exact jem (naming the exact reference) and
// a bad dimension, and takes the baseline and an objective.
func TestJointValidate(t *testing.T) {
	ok := Spec2D{Hidden: []int{4}, K: 2, Batch: 16, Box: 4}
	obj := ok
	obj.Objective = testObj(1, false)
	for _, c := range []struct {
		name, want string
		spec       SpecJoint
	}{
		{"jem", "additive model is the exact reference", SpecJoint{Spec2D{Hidden: []int{4}, K: 2, Exact: true, Batch: 16, Box: 4}, 4}},
		{"odd dimension", "even dimension", SpecJoint{ok, 3}},
		{"too many dimensions", "even dimension", SpecJoint{ok, MaxJointDim + 2}},
		{"ok", "", SpecJoint{ok, 4}},
		{"objective", "", SpecJoint{obj, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

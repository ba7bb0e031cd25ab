package kernel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// refLogits2D is a float64 reference of the MLP 2-hidden…-K (tanh) at one point.
func refLogits2D(th []float64, hidden []int, K int, x0, x1 float64) []float64 {
	return refMLP(th, layers2D(hidden, K), []float64{x0, x1})
}

// refMLP is the float64 MLP of layers ls (tanh between them) at the point h.
func refMLP(th []float64, ls []dims, h []float64) []float64 {
	o := 0
	for l, d := range ls {
		W, b := th[o:o+d.in*d.out], th[o+d.in*d.out:o+d.in*d.out+d.out]
		o += d.in*d.out + d.out
		z := make([]float64, d.out)
		for j := range d.out {
			s := b[j]
			for i := range d.in {
				s += h[i] * W[i*d.out+j]
			}
			if l < len(ls)-1 {
				s = math.Tanh(s)
			}
			z[j] = s
		}
		h = z
	}
	return h
}

// refLoss2D is the float64 loss of the trainer's current points t.x (data, then the
// test objective's negatives or grid nodes) and labels: the baseline's, exact JEM's or
// testObjective's (its parameter at 0: (c − 1)² = 1).
func refLoss2D(th []float64, t *trainer2D) float64 {
	spec := t.spec
	B, P, K := t.B, t.P, t.K
	w := float64(spec.PxWeight)
	at := func(p int) []float64 {
		return refLogits2D(th, spec.Hidden, K, float64(t.x[p]), float64(t.x[P+p]))
	}
	loss := 0.0
	for p := range B {
		f := at(p)
		l := refLSE(f)
		loss += (l - f[t.yd[p]]) / float64(B)
		if spec.Exact || spec.Objective != nil {
			loss -= w * l / float64(B)
		}
	}
	switch {
	case spec.Objective != nil:
		for p := B; p < P; p++ {
			loss += w * refLSE(at(p)) / float64(B)
		}
		loss += w
	case spec.Exact:
		var all []float64
		for p := B; p < P; p++ {
			all = append(all, at(p)...)
		}
		h := 2 * float64(spec.Box) / float64(t.gt)
		loss += w * (refLSE(all) + math.Log(h*h))
	}
	return loss
}

// fixture2D makes a trainer with random parameters, data and negatives/grid in t.x (its
// objective's Step set up for objLoss).
func fixture2D(t *testing.T, spec Spec2D, seed uint64) (*trainer2D, []float64) {
	t.Helper()
	if err := spec.validate(2); err != nil {
		t.Fatal(err)
	}
	tr := newTrainer2D(spec)
	rng := rand.New(rand.NewPCG(seed, 3))
	np := NumParams2D(spec.Hidden, spec.K)
	th := make([]float64, np)
	for i := range th {
		th[i] = rng.NormFloat64() * 0.7
		tr.theta[i] = float32(th[i])
		th[i] = float64(tr.theta[i])
	}
	B, P := tr.B, tr.P
	for p := range B {
		tr.x[p], tr.x[P+p] = float32(rng.Float64()*4-2), float32(rng.Float64()*4-2)
		tr.yd[p] = int32(rng.IntN(spec.K))
	}
	switch {
	case spec.Objective != nil:
		for p := B; p < P; p++ {
			tr.x[p], tr.x[P+p] = float32(rng.Float64()*8-4), float32(rng.Float64()*8-4)
		}
		tr.st = Step{B: B, P: P, Dim: 2, Box: spec.Box, X: tr.x, Y: tr.yd, Extra: tr.st.Extra, ExtraGrad: tr.st.ExtraGrad}
	case spec.Exact:
		tr.bufRng = rand.New(rand.NewPCG(seed, 4))
		tr.gridNodes()
	}
	return tr, th
}

// loss is the trainer's loss and dL/df after its forward pass: objLoss for an
// objective, lossGrad otherwise.
func (t *trainer2D) loss() float32 {
	if t.obj != nil {
		return t.objLoss()
	}
	return t.lossGrad()
}

// testObj is a spec's Objective field of a testObjective of the given moves.
func testObj(steps int, keep bool) func() Objective {
	return func() Objective { return &testObjective{Steps: steps, Keep: keep} }
}

// TestTrain2DGradients: the parameter gradient and loss of the baseline, exact JEM and an
// objective (testObjective: the contrastive loss of sgld's), and the input gradient of
// LSE_y f(x), against central finite differences of a float64 reference, for MLPs of 0
// to 3 hidden layers.
func TestTrain2DGradients(t *testing.T) {
	cases := []struct {
		name string
		spec Spec2D
	}{
		{"baseline/8,8", Spec2D{Hidden: []int{8, 8}, K: 3, Batch: 16, Box: 4}},
		{"jem/5/grid8", Spec2D{Hidden: []int{5}, K: 2, Exact: true, Batch: 16, Box: 4, PxWeight: 1, TrainGrid: 8}},
		{"jem/6,4,3/shifted", Spec2D{Hidden: []int{6, 4, 3}, K: 4, Exact: true, Batch: 32, Box: 3, PxWeight: 0.6, TrainGrid: 4, ShiftGrid: true}},
		{"objective/8,8", Spec2D{Hidden: []int{8, 8}, K: 3, Batch: 16, Box: 4, PxWeight: 0.7, Objective: testObj(0, false)}},
		{"objective/linear", Spec2D{K: 3, Batch: 16, Box: 4, PxWeight: 1, Objective: testObj(0, false)}},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, th := fixture2D(t, c.spec, uint64(ci+1))
			tr.net.forward(tr.theta, tr.x, tr.P)
			loss := tr.loss()
			tr.net.backward(tr.theta, tr.delta, tr.P, true, nil)
			want := refLoss2D(th, tr)
			if math.Abs(float64(loss)-want) > 2e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss %v, reference %v", loss, want)
			}
			worst := checkFD(t, "dL/dtheta", th, func() float64 { return refLoss2D(th, tr) }, func(j int) float64 { return float64(tr.net.g[j]) }, 2e-5)
			t.Logf("parameter gradient: max |kernel - finite difference| = %.3g", worst)
			const h = 1e-5
			// Input gradient of LSE_y f at the data points.
			B := tr.B
			xs := slices.Clone(tr.x[:B])
			xs = append(xs, tr.x[tr.P:tr.P+B]...)
			dx, dxE, e := make([]float32, 2*B), make([]float32, 2*B), make([]float32, B)
			tr.net.inputGrad(tr.theta, xs, dx, B, c.spec.K)
			tr.energy(xs, B, e, dxE) // an objective's Step.LSE
			if !slices.Equal(dx, dxE) {
				t.Error("Step.LSE's input gradient differs from inputGrad's")
			}
			worst = 0
			for p := range B {
				for i := range 2 {
					x := []float64{float64(xs[p]), float64(xs[B+p])}
					x[i] += h
					lp := refLSE(refLogits2D(th, c.spec.Hidden, c.spec.K, x[0], x[1]))
					x[i] -= 2 * h
					lm := refLSE(refLogits2D(th, c.spec.Hidden, c.spec.K, x[0], x[1]))
					fd := (lp - lm) / (2 * h)
					d := math.Abs(float64(dx[i*B+p]) - fd)
					worst = max(worst, d)
					if d > 2e-5+1e-4*math.Abs(fd) {
						t.Errorf("dLSE/dx[%d] of point %d = %v, finite difference %v", i, p, dx[i*B+p], fd)
					}
				}
			}
			t.Logf("input gradient: max |kernel - finite difference| = %.3g", worst)
		})
	}
}

// TestTrain2DMatchesSGLDStep: for 2 hidden layers the generic loops give the SGLD step
// kernel's input gradient bit for bit (SGLD.inputGrad), and through an objective of the
// same loss (testObjective: sgld's, plus its parameter's constant term) its loss and
// parameter gradient (SGLD.gradient) to float32 rounding: objLoss sums the terms in
// another order.
func TestTrain2DMatchesSGLDStep(t *testing.T) {
	const w = 0.8
	spec2 := Spec2D{Hidden: []int{8, 8}, K: 3, Batch: 32, Box: 4, PxWeight: w, Objective: testObj(0, false)}
	tr, _ := fixture2D(t, spec2, 9)
	k, err := NewSGLD(SGLDSpec{H: 8, K: 3, B: 32, PxWeight: w})
	if err != nil {
		t.Fatal(err)
	}
	B, P := tr.B, tr.P
	xd := append(slices.Clone(tr.x[:B]), tr.x[P:P+B]...)
	xn := append(slices.Clone(tr.x[B:P]), tr.x[P+B:]...)
	lossK := k.gradient(tr.theta, xd, tr.yd, xn) + w // the objective's (c − 1)² at c = 0
	tr.net.forward(tr.theta, tr.x, P)
	loss := tr.loss()
	tr.net.backward(tr.theta, tr.delta, P, true, nil)
	var worst float64
	for i, g := range tr.net.g {
		worst = max(worst, math.Abs(float64(g-k.g[i])))
	}
	t.Logf("loss %v vs %v; max |Δ gradient| %.3g", loss, lossK, worst)
	if math.Abs(float64(loss-lossK)) > 1e-5*math.Max(1, math.Abs(float64(lossK))) || worst > 1e-5 {
		t.Errorf("loss %v vs %v; max |Δ gradient| %.3g", loss, lossK, worst)
	}
	dxK, dx := make([]float32, 2*B), make([]float32, 2*B)
	k.inputGrad(tr.theta, xn, dxK, B)
	tr.net.inputGrad(tr.theta, xn, dx, B, 3)
	if !slices.Equal(dx, dxK) {
		t.Error("input gradients differ from SGLD.inputGrad")
	}
}

// gmmRuns makes R runs of random gmm:3,2 tasks, n draws each, with their seeds and
// initial parameters.
func gmmRuns(R, n int, hidden []int, lr float32) ([]Run2D, []prob.Task2D) {
	spec, _ := prob.ParseTaskSpec("gmm:3,2")
	runs := make([]Run2D, R)
	tasks := make([]prob.Task2D, R)
	for i := range runs {
		tasks[i] = spec.Draw(prob.Seed(7, uint64(i)))
		d := tasks[i].Sample(prob.Seed(8, uint64(i)), n)
		r := Run2D{Seed: prob.Seed(9, uint64(i)), Theta: InitMLP2D(uint64(i), hidden, 3), LR: lr, Y: d.Y}
		for j := range d.Y {
			r.X0 = append(r.X0, float32(d.X0[j]))
			r.X1 = append(r.X1, float32(d.X1[j]))
		}
		runs[i] = r
	}
	return runs, tasks
}

// TestTrain2DDeterminism: a run's result is the same alone (R=1) as in a block of
// runs (R=5) and on a second call, for the baseline, exact JEM and an objective (its
// negatives from the run's streams, kept as the buffer); different seeds differ.
func TestTrain2DDeterminism(t *testing.T) {
	hidden := []int{8, 8}
	runs, _ := gmmRuns(5, 200, hidden, 0.01)
	specs := []struct {
		name string
		spec Spec2D
	}{
		{"baseline", Spec2D{Hidden: hidden, K: 3, Steps: 20, Batch: 16, Box: 4}},
		{"jem", Spec2D{Hidden: hidden, K: 3, Exact: true, Steps: 20, Batch: 16, Box: 4, PxWeight: 1, TrainGrid: 8, ShiftGrid: true}},
		{"objective", Spec2D{Hidden: hidden, K: 3, Steps: 20, Batch: 16, Box: 4, PxWeight: 1, KeepBuffer: true, Objective: testObj(3, true)}},
	}
	ctx := context.Background()
	for _, c := range specs {
		spec := c.spec
		t.Run(c.name, func(t *testing.T) {
			all, err := Train2D(ctx, spec, runs)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Train2D(ctx, spec, runs)
			for i := range runs {
				one, err := Train2D(ctx, spec, runs[i:i+1])
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range []Result2D{one[0], again[i]} {
					if !slices.Equal(o.Theta, all[i].Theta) || o.Loss != all[i].Loss || !slices.Equal(o.Buffer, all[i].Buffer) {
						t.Errorf("run %d: alone or again differs from its block result", i)
					}
				}
				if slices.Equal(all[i].Theta, runs[i].Theta) || all[i].Diverged {
					t.Errorf("run %d did not train (diverged %v)", i, all[i].Diverged)
				}
			}
			if slices.Equal(all[0].Theta, all[1].Theta) {
				t.Error("two runs gave the same parameters")
			}
			if spec.Objective != nil && (len(all[0].Buffer) != 32 || all[0].InBox <= 0) {
				t.Errorf("buffer %d values, in box %v", len(all[0].Buffer), all[0].InBox)
			}
		})
	}
}

// gridKL trains nothing: it evaluates theta on the grid and returns the exact KLs
// against the task's truth.
func gridKL(t *testing.T, hidden []int, theta []float32, task prob.Task2D, g prob.Grid) (j, m, c float64) {
	t.Helper()
	lg, err := GridLogits(hidden, task.K, theta, g.G, g.Box)
	if err != nil {
		t.Fatal(err)
	}
	return prob.GridKL(task.Truth(g), prob.GridJoint(lg), task.K)
}

// TestExactJEMRecoversMixture: exact grid JEM on draws of a known 2-component mixture
// gets close to it on the 64×64 grid (and far closer than cross-entropy); the oracle
// (fresh draws) too.
func TestExactJEMRecoversMixture(t *testing.T) {
	task, err := prob.NewMixture(0, []prob.Component{
		{Y: 0, Weight: 0.4, Mu0: -1, Mu1: 0.5, SD: 0.6},
		{Y: 1, Weight: 0.6, Mu0: 1.2, Mu1: -0.3, SD: 0.8},
	})
	if err != nil {
		t.Fatal(err)
	}
	hidden := []int{16, 16}
	d := task.Sample(3, 4000)
	r := Run2D{Seed: 1, Theta: InitMLP2D(5, hidden, 2), LR: 0.003, Y: d.Y}
	for j := range d.Y {
		r.X0 = append(r.X0, float32(d.X0[j]))
		r.X1 = append(r.X1, float32(d.X1[j]))
	}
	oracle := r
	oracle.Fresh = func(rng *rand.Rand, x0, x1 []float32, y []int32) {
		s := task.Sample(rng.Uint64(), len(y))
		for i := range y {
			x0[i], x1[i], y[i] = float32(s.X0[i]), float32(s.X1[i]), s.Y[i]
		}
	}
	// A 16×16 training grid: the midpoint rule is spectrally accurate for densities
	// smooth on the scale of a cell (h = 0.5 here, sd ≥ 0.6), so Z is as good as on the
	// 64×64 grid at a sixteenth of the cost.
	spec := Spec2D{Hidden: hidden, K: 2, Exact: true, Steps: 1500, Batch: 64, Box: 4, PxWeight: 1, TrainGrid: 16}
	res, err := Train2D(context.Background(), spec, []Run2D{r, oracle})
	if err != nil {
		t.Fatal(err)
	}
	spec.Exact = false
	base, err := Train2D(context.Background(), spec, []Run2D{r})
	if err != nil {
		t.Fatal(err)
	}
	g := prob.DefaultGrid
	jj, jm, jc := gridKL(t, hidden, res[0].Theta, task, g)
	oj, _, _ := gridKL(t, hidden, res[1].Theta, task, g)
	bj, _, _ := gridKL(t, hidden, base[0].Theta, task, g)
	t.Logf("KL joint: jem %.4f (marginal %.4f, conditional %.4f), oracle %.4f, baseline %.4f", jj, jm, jc, oj, bj)
	if jj > 0.03 || oj > 0.03 || bj < 10*jj || math.Abs(jj-(jm+jc)) > 1e-9 {
		t.Errorf("KL joint: jem %v, oracle %v, baseline %v", jj, oj, bj)
	}
}

// TestTrain2DDivergence: a run whose energy exceeds MaxEnergy, or whose step goes
// non-finite, is frozen with the step recorded and observed no further; its block-mates
// are unaffected (with an objective, whose moves read the model, and the baseline).
func TestTrain2DDivergence(t *testing.T) {
	hidden := []int{8, 8}
	runs, _ := gmmRuns(3, 200, hidden, 0.01)
	spec := Spec2D{Hidden: hidden, K: 3, Steps: 15, Batch: 16, Box: 4, PxWeight: 1, MaxEnergy: 50,
		Objective: testObj(2, false), ObserveEvery: 1}
	ctx := context.Background()
	clean, err := Train2D(ctx, spec, runs)
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(runs)
	// Run 0: an output bias of 100 puts LSE f above MaxEnergy at once (a finite blow-up).
	bad[0].Theta = slices.Clone(runs[0].Theta)
	bad[0].Theta[len(bad[0].Theta)-1] = 100
	// Run 2: an infinite learning rate makes the first Adam step non-finite.
	bad[2].LR = float32(math.Inf(1))
	observed := make([]int, 3)
	for i := range bad {
		bad[i].Observe = func(step int, _ []float32) { observed[i] = step }
	}
	res, err := Train2D(ctx, spec, bad)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if !res[i].Diverged || res[i].DivergedStep != 1 || !slices.Equal(res[i].Theta, bad[i].Theta) || observed[i] != 0 {
			t.Errorf("run %d: diverged %v at step %d, parameters kept %v, observed to step %d",
				i, res[i].Diverged, res[i].DivergedStep, slices.Equal(res[i].Theta, bad[i].Theta), observed[i])
		}
	}
	if res[1].Diverged || !slices.Equal(res[1].Theta, clean[1].Theta) || observed[1] != spec.Steps {
		t.Errorf("the healthy run changed: diverged %v, same %v, observed to step %d", res[1].Diverged, slices.Equal(res[1].Theta, clean[1].Theta), observed[1])
	}
	// A finite blow-up mid-run: cross-entropy sharpens the logits until |mean LSE f|
	// passes a threshold set just above its start.
	spec.Objective, spec.MaxEnergy, spec.Steps = nil, 3, 300
	fast := slices.Clone(runs[:1])
	fast[0].LR = 0.05
	mid, err := Train2D(ctx, spec, fast)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("baseline with MaxEnergy 3: diverged %v at step %d", mid[0].Diverged, mid[0].DivergedStep)
	if !mid[0].Diverged || mid[0].DivergedStep < 2 {
		t.Errorf("diverged %v at step %d, want a step > 1", mid[0].Diverged, mid[0].DivergedStep)
	}
}

// TestGridLogits: GridLogits agrees with the float64 reference at the cell centres.
func TestGridLogits(t *testing.T) {
	hidden := []int{6, 5}
	theta := InitMLP2D(3, hidden, 3)
	th := make([]float64, len(theta))
	for i, v := range theta {
		th[i] = float64(v)
	}
	g := prob.Grid{G: 37, Box: 3}
	lg, err := GridLogits(hidden, 3, theta, g.G, g.Box)
	if err != nil {
		t.Fatal(err)
	}
	x0, x1 := g.Centres()
	for c := range g.Cells() {
		f := refLogits2D(th, hidden, 3, float64(float32(x0[c])), float64(float32(x1[c])))
		for y := range 3 {
			if math.Abs(lg[c*3+y]-f[y]) > 1e-5 {
				t.Fatalf("cell %d y %d: %v, reference %v", c, y, lg[c*3+y], f[y])
			}
		}
	}
	if _, err := GridLogits(hidden, 3, theta[1:], 4, 1); err == nil {
		t.Error("a short theta was accepted")
	}
}

// TestCellLogits: the model's cell masses are the integral of exp f over each cell,
// against a float64 reference integrated by a fine midpoint rule per cell; the
// weights sum to one (a constant model's cell logit is that constant).
func TestCellLogits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hidden []int
		scale  float32
		G      int
		tol    float64 // the rule's error grows with the model's curvature across a cell
	}{{"linear", nil, 1, 6, 2e-5}, {"mlp-6-5", []int{6, 5}, 1, 6, 2e-5}, {"mlp-sharp", []int{8}, 4, 36, 2e-4}} {
		t.Run(tc.name, func(t *testing.T) {
			theta := InitMLP2D(5, tc.hidden, 3)
			for i := range theta {
				theta[i] *= tc.scale
			}
			th := make([]float64, len(theta))
			for i, v := range theta {
				th[i] = float64(v)
			}
			g := prob.Grid{G: tc.G, Box: 3}
			lg, err := CellLogits(tc.hidden, 3, theta, g.G, g.Box)
			if err != nil {
				t.Fatal(err)
			}
			const m = 48
			h := g.Step()
			for c := 0; c < g.Cells(); c += 1 + g.Cells()/150 { // about 150 cells
				i, j := c/g.G, c%g.G
				s := make([]float64, 3)
				for a := range m {
					for b := range m {
						x0 := -g.Box + (float64(i)+(float64(a)+0.5)/m)*h
						x1 := -g.Box + (float64(j)+(float64(b)+0.5)/m)*h
						f := refLogits2D(th, tc.hidden, 3, x0, x1)
						for y := range 3 {
							s[y] += math.Exp(f[y]) / (m * m)
						}
					}
				}
				for y := range 3 {
					if want := math.Log(s[y]); math.Abs(lg[c*3+y]-want) > tc.tol {
						t.Fatalf("cell %d y %d: %v, midpoint reference %v", c, y, lg[c*3+y], want)
					}
				}
			}
		})
	}
	if _, err := CellLogits([]int{4}, 3, make([]float32, 3), 4, 1); err == nil {
		t.Error("a short theta was accepted")
	}
}

// TestSpec2DValidation: bad specs are refused, and InitMLP2D follows the models
// convention (zero biases, Glorot bounds).
func TestSpec2DValidation(t *testing.T) {
	ok := Spec2D{Hidden: []int{8}, K: 3, Steps: 1, Batch: 16, Box: 4, PxWeight: 1, Objective: testObj(1, false)}
	if err := ok.validate(2); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*Spec2D){
		"batch 20":      func(s *Spec2D) { s.Batch = 20 },
		"K 1":           func(s *Spec2D) { s.K = 1 },
		"wide":          func(s *Spec2D) { s.Hidden = []int{300} },
		"box 0":         func(s *Spec2D) { s.Box = 0 },
		"px weight NaN": func(s *Spec2D) { s.PxWeight = float32(math.NaN()) },
		"decay 2":       func(s *Spec2D) { s.Decay = 2 },
		"grid 6":        func(s *Spec2D) { s.Objective, s.Exact, s.TrainGrid = nil, true, 6 },
		"lanes 20":      func(s *Spec2D) { s.Objective = func() Objective { return wideObjective{P: 20} } },
	} {
		s := ok
		f(&s)
		if s.validate(2) == nil {
			t.Errorf("%s: validated", name)
		}
	}
	if _, err := Train2D(context.Background(), ok, []Run2D{{Theta: InitMLP2D(1, ok.Hidden, 3)}}); err == nil {
		t.Error("a run without draws was accepted")
	}
	for name, f := range map[string]func(*Spec2D){
		"baseline":   func(s *Spec2D) { s.Objective = nil },
		"exact jem":  func(s *Spec2D) { s.Objective, s.Exact, s.TrainGrid = nil, true, 16 },
		"grid 6 off": func(s *Spec2D) { s.Objective, s.TrainGrid = nil, 6 }, // read by exact JEM only
	} {
		s := ok
		f(&s)
		if err := s.validate(2); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	th := InitMLP2D(4, []int{32, 32}, 3)
	if len(th) != NumParams2D([]int{32, 32}, 3) || th[2*32] != 0 || th[len(th)-1] != 0 {
		t.Error("biases not zero")
	}
	lim := float32(math.Sqrt(6.0 / 34))
	for _, v := range th[:64] {
		if abs32(v) > lim {
			t.Errorf("first-layer weight %v beyond the Glorot bound %v", v, lim)
		}
	}
}

// TestDecayScale: the learning rate's factor under Spec2D.Decay: constant before the
// decay's share of the steps, then linear to 1/span at the last step.
func TestDecayScale(t *testing.T) {
	for _, tc := range []struct {
		name        string
		decay       float32
		steps, step int
		want        float64
	}{
		{"off", 0, 100, 100, 1},
		{"before", 0.5, 100, 10, 1},
		{"at-start", 0.5, 100, 51, 1},
		{"halfway", 0.5, 100, 76, 0.5},
		{"last", 0.5, 100, 100, 0.02},
		{"whole-run-first", 1, 10, 1, 1},
		{"whole-run-last", 1, 10, 10, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec2D{Steps: tc.steps, Decay: tc.decay}
			if got := s.decayScale(tc.step); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("decayScale(%d) = %v, want %v", tc.step, got, tc.want)
			}
		})
	}
}

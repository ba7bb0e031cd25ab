package kernel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// refAdd is the float64 additive model's logits at block points: Σ_b g_b(x_b).
func refAdd(th []float64, hidden []int, K, nb int, x func(b int) (float64, float64)) []float64 {
	np := NumParams2D(hidden, K)
	f := make([]float64, K)
	for b := range nb {
		x0, x1 := x(b)
		g := refLogits2D(th[b*np:(b+1)*np], hidden, K, x0, x1)
		for y := range K {
			f[y] += g[y]
		}
	}
	return f
}

// refLossAdd is the float64 loss of the additive trainer's current lanes: the
// baseline's, exact JEM's or testObjective's (its parameter at 0: (c − 1)² = 1).
func refLossAdd(th []float64, t *trainerAdd) float64 {
	spec := t.spec
	B, P, K, nb := t.B, t.P, t.K, t.nb
	np := t.np
	w := float64(spec.PxWeight)
	at := func(p int) []float64 {
		return refAdd(th, spec.Hidden, K, nb, func(b int) (float64, float64) { return float64(t.x[b][p]), float64(t.x[b][P+p]) })
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
	case spec.Exact: // log Z = LSE_y Σ_b log(h² Σ_c exp g_b(node_c)[y]), each block on its own nodes
		h := 2 * float64(spec.Box) / float64(t.gt)
		ly := make([]float64, K)
		for b := range nb {
			col := make([][]float64, K)
			for p := B; p < P; p++ {
				g := refLogits2D(th[b*np:(b+1)*np], spec.Hidden, K, float64(t.x[b][p]), float64(t.x[b][P+p]))
				for y := range K {
					col[y] = append(col[y], g[y])
				}
			}
			for y := range K {
				ly[y] += refLSE(col[y]) + math.Log(h*h)
			}
		}
		loss += w * refLSE(ly)
	}
	return loss
}

// fixtureAdd makes an additive trainer with random parameters, data and negatives or
// grid nodes in its lanes (its objective's Step set up for objLoss).
func fixtureAdd(t *testing.T, spec SpecAdditive, seed uint64) (*trainerAdd, []float64) {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	tr := newTrainerAdd(spec)
	rng := rand.New(rand.NewPCG(seed, 3))
	th := make([]float64, spec.Blocks*tr.np)
	for i := range th {
		th[i] = float64(float32(rng.NormFloat64() * 0.7))
	}
	for b := range spec.Blocks {
		for i := range tr.np {
			tr.theta[b*tr.npad+i] = float32(th[b*tr.np+i])
		}
	}
	B, P := tr.B, tr.P
	for p := range B {
		for _, x := range tr.x {
			x[p], x[P+p] = float32(rng.Float64()*4-2), float32(rng.Float64()*4-2)
		}
		tr.yd[p] = int32(rng.IntN(spec.K))
	}
	switch {
	case spec.Objective != nil:
		for p := B; p < P; p++ {
			for _, x := range tr.x {
				x[p], x[P+p] = float32(rng.Float64()*8-4), float32(rng.Float64()*8-4)
			}
		}
		tr.st = Step{B: B, P: P, Dim: 2 * tr.nb, Box: spec.Box, X: tr.X, Y: tr.yd, Extra: tr.st.Extra, ExtraGrad: tr.st.ExtraGrad}
	case spec.Exact:
		tr.bufRng = rand.New(rand.NewPCG(seed, 4))
		tr.gridNodes()
	}
	return tr, th
}

// loss is the trainer's loss and dL/dF after its forward passes (sumLogits done):
// objLoss for an objective, lossGrad otherwise.
func (t *trainerAdd) loss() float32 {
	if t.obj == nil {
		return t.lossGrad()
	}
	K, P := t.K, t.P
	loss, _, _ := objLoss(t.obj, &t.st, t.F[:K*P], t.s[:K*P], t.delta, t.lse, t.coef, t.spec.PxWeight)
	return loss
}

// inputGradAt checks the input gradient of LSE_y f of the trainer's model (energy: an
// objective's Step.LSE) at the data points against central finite differences of
// lse(x), and returns the largest difference.
func inputGradAt(t *testing.T, tr *trainerAdd, lse func(x []float64) float64) float64 {
	t.Helper()
	B, P, d := tr.B, tr.P, 2*tr.nb
	xs := make([]float32, d*B)
	for c := range d {
		copy(xs[c*B:(c+1)*B], tr.X[c*P:c*P+B])
	}
	e, dx := make([]float32, B), make([]float32, d*B)
	tr.energy(xs, B, e, dx)
	worst := 0.0
	for p := range B {
		x := make([]float64, d)
		for i := range x {
			x[i] = float64(xs[i*B+p])
		}
		if got, want := float64(e[p]), lse(x); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Errorf("LSE at point %d: %v, reference %v", p, got, want)
		}
		worst = max(worst, checkFD(t, "dLSE/dx", x, func() float64 { return lse(x) }, func(c int) float64 { return float64(dx[c*B+p]) }, 2e-5))
	}
	return worst
}

// TestAdditiveGradients: the additive trainer's loss and parameter gradient (exact
// JEM's per-block log Z gradient Σ_y w_y E_{q_b(·|y)}[∇g_b[y]] included; an objective's
// through objLoss) and the input gradient of LSE_y f at 2B-dimensional points (an
// objective's Step.LSE), against central finite differences of a float64 reference.
func TestAdditiveGradients(t *testing.T) {
	cases := []struct {
		name string
		spec SpecAdditive
	}{
		{"baseline/3 blocks", SpecAdditive{Spec2D{Hidden: []int{6}, K: 3, Batch: 16, Box: 4}, 3}},
		{"jem/1 block", SpecAdditive{Spec2D{Hidden: []int{5}, K: 2, Exact: true, Batch: 16, Box: 4, PxWeight: 1, TrainGrid: 8}, 1}},
		{"jem/3 blocks/shifted", SpecAdditive{Spec2D{Hidden: []int{5, 4}, K: 3, Exact: true, Batch: 16, Box: 3, PxWeight: 0.7, TrainGrid: 4, ShiftGrid: true}, 3}},
		{"objective/2 blocks", SpecAdditive{Spec2D{Hidden: []int{6}, K: 3, Batch: 16, Box: 4, PxWeight: 1, Objective: testObj(0, false)}, 2}},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, th := fixtureAdd(t, c.spec, uint64(ci+1))
			for b, net := range tr.nets {
				net.forward(tr.th(b), tr.x[b], tr.P)
			}
			tr.sumLogits(tr.P)
			loss := tr.loss()
			tr.backward()
			want := refLossAdd(th, tr)
			if math.Abs(float64(loss)-want) > 2e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss %v, reference %v", loss, want)
			}
			worst := checkFD(t, "dL/dtheta", th, func() float64 { return refLossAdd(th, tr) }, func(j int) float64 { return float64(tr.g[(j/tr.np)*tr.npad+j%tr.np]) }, 2e-5)
			t.Logf("parameter gradient: max |kernel - finite difference| = %.3g", worst)
			nb := tr.nb
			worst = inputGradAt(t, tr, func(x []float64) float64 {
				return refLSE(refAdd(th, c.spec.Hidden, c.spec.K, nb, func(b int) (float64, float64) { return x[2*b], x[2*b+1] }))
			})
			t.Logf("input gradient: max |kernel - finite difference| = %.3g", worst)
		})
	}
}

// gmmDraws2D are 300 draws of a gmm:3,2 task: coordinates x0, x1, pairs xy [300][2].
func gmmDraws2D() (x0, x1, xy []float32, d prob.Draws) {
	d = prob.TaskSpec{Kind: "gmm", K: 3, C: 2}.Draw(11).Sample(12, 300)
	x0, x1, xy = make([]float32, 300), make([]float32, 300), make([]float32, 600)
	for i := range d.Y {
		x0[i], x1[i] = float32(d.X0[i]), float32(d.X1[i])
		xy[2*i], xy[2*i+1] = x0[i], x1[i]
	}
	return x0, x1, xy, d
}

// TestAdditiveOneBlockIsTrain2D: with one block the additive trainer is Train2D, bit for
// bit, for the baseline, exact JEM and an objective: the same parameters, loss, buffer,
// objective parameter and observations from the same run.
func TestAdditiveOneBlockIsTrain2D(t *testing.T) {
	x0, x1, xy, d := gmmDraws2D()
	hidden := []int{8, 8}
	for _, c := range []struct {
		name string
		s    Spec2D
	}{
		{"baseline", Spec2D{Hidden: hidden, K: 3, Steps: 60, Batch: 32, Box: 5}},
		{"jem", Spec2D{Hidden: hidden, K: 3, Exact: true, Steps: 60, Batch: 304, Box: 5, PxWeight: 1, TrainGrid: 8, ShiftGrid: true, ObserveEvery: 20}},
		{"objective", Spec2D{Hidden: hidden, K: 3, Steps: 60, Batch: 32, Box: 5, PxWeight: 1, KeepBuffer: true, ObserveEvery: 20, Objective: testObj(5, true)}},
	} {
		s := c.s
		t.Run(c.name, func(t *testing.T) {
			theta := InitAdditive(5, hidden, 3, 1)
			if !slices.Equal(theta, InitMLP2D(5, hidden, 3)) {
				t.Fatal("InitAdditive of one block is not InitMLP2D")
			}
			var obs2, obsA [][]float32
			r2 := Run2D{Seed: 9, Theta: theta, LR: 0.01, X0: x0, X1: x1, Y: d.Y,
				Observe: func(_ int, th []float32) { obs2 = append(obs2, slices.Clone(th)) }}
			rA := RunAdditive{Seed: 9, Theta: theta, LR: 0.01, X: xy, Y: d.Y,
				Observe: func(_ int, th []float32) { obsA = append(obsA, slices.Clone(th)) }}
			want, err := Train2D(context.Background(), s, []Run2D{r2})
			if err != nil {
				t.Fatal(err)
			}
			got, err := TrainAdditive(context.Background(), SpecAdditive{s, 1}, []RunAdditive{rA})
			if err != nil {
				t.Fatal(err)
			}
			w, g := want[0], got[0]
			if !slices.Equal(w.Theta, g.Theta) || w.Loss != g.Loss || w.Diverged != g.Diverged || !slices.Equal(w.Buffer, g.Buffer) || w.InBox != g.InBox || !slices.Equal(w.Extra, g.Extra) {
				t.Fatalf("one block differs from Train2D: loss %v vs %v, diverged %v vs %v, in box %v vs %v", g.Loss, w.Loss, g.Diverged, w.Diverged, g.InBox, w.InBox)
			}
			if len(obs2) != len(obsA) {
				t.Fatalf("%d observations, Train2D %d", len(obsA), len(obs2))
			}
			for i := range obs2 {
				if !slices.Equal(obs2[i], obsA[i]) {
					t.Fatalf("observation %d differs", i)
				}
			}
		})
	}
}

// TestAdditiveExactJEMFits: exact JEM on two Gaussian blocks lowers the exact joint KL
// of the additive model well below its start, and below the baseline's.
func TestAdditiveExactJEMFits(t *testing.T) {
	spec, _ := prob.ParseBlocksSpec("blocks:2,gmm:2,1")
	task := spec.Draw(3)
	g := prob.Grid{G: 16, Box: 5}
	truth := task.Truth(g)
	xs, ys := task.Sample(4, 512)
	x := make([]float32, len(xs))
	for i, v := range xs {
		x[i] = float32(v)
	}
	hidden := []int{8}
	theta := InitAdditive(1, hidden, 2, 2)
	kl := func(th []float32) float64 {
		l, err := AdditiveCellLogits(hidden, 2, 2, th, g.G, g.Box)
		if err != nil {
			t.Fatal(err)
		}
		return prob.BlocksJointKL(truth, l)
	}
	start := kl(theta)
	res := map[bool]float64{}
	for _, m := range []bool{false, true} {
		s := SpecAdditive{Spec2D{Hidden: hidden, K: 2, Exact: m, Steps: 300, Batch: 512, Box: 5, PxWeight: 1, TrainGrid: 16, ShiftGrid: true}, 2}
		out, err := TrainAdditive(context.Background(), s, []RunAdditive{{Seed: 2, Theta: theta, LR: 0.03, X: x, Y: ys}})
		if err != nil {
			t.Fatal(err)
		}
		res[m] = kl(out[0].Theta)
	}
	t.Logf("joint KL: start %.4f, baseline %.4f, jem %.4f", start, res[false], res[true])
	if !(res[true] < 0.2*start && res[true] < res[false]) {
		t.Errorf("exact JEM joint KL %v (start %v, baseline %v)", res[true], start, res[false])
	}
}

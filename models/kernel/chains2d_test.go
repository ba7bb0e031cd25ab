package kernel

import (
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// pairs packs chains' ends as [2][n] for hist.
func pairs(x0, x1 []float32) []float32 { return append(slices.Clone(x0), x1...) }

// tvSE is the TV of the histogram h of n independent points from ref and its delta-
// method standard error (the multinomial's): Var = (Σ s²h − (Σ s h)²)/(4n), s = sign(h − ref).
func tvSE(h, ref []float64, n int) (tv, se float64) {
	var s1, s2 float64
	for i := range h {
		tv += math.Abs(h[i]-ref[i]) / 2
		s := 1.0
		if h[i] < ref[i] {
			s = -1
		}
		s1 += s * h[i]
		s2 += h[i]
	}
	return tv, math.Sqrt(max(0, s2-s1*s1) / (4 * float64(n)))
}

// TestChainsKnownAnswer: on an energy that is the exact log density of a known
// mixture, the long chain (MALA at temperature 1, two grid cells per move, 500 moves
// from uniform) samples it: its TV from the exact cell masses is within the floor of
// as many exact draws plus 1.96 standard errors; 0 moves from uniform are the
// uniform's TV; the same seed gives the same bits.
func TestChainsKnownAnswer(t *testing.T) {
	const n = 2000
	truth := testMixture.cells(kaCells, kaBox)
	floor := prob.TVFloor(truth, n)
	en := testMixture.energy(1)
	long := LongChain2D(2*kaBox/64.0, 500)
	x0, x1, acc, err := long.Sample(en, n, kaBox, Draws2D{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	tv, se := tvSE(hist(pairs(x0, x1), nil, n, kaCells, kaBox), truth, n)
	t.Logf("long chain: TV %.4f ± %.4f (floor %.4f), acceptance %.3f", tv, se, floor, acc)
	if tv > floor+1.96*se {
		t.Errorf("long chain's TV %.4f > floor %.4f + 1.96·%.4f", tv, floor, se)
	}
	if !(acc > 0.8 && acc <= 1) {
		t.Errorf("acceptance %.3f, want > 0.8 at two cells per move", acc)
	}

	short := Chain2D{Start: StartUniform, Steps: 0, Step: 1, Std: 0.01}
	u0, u1, _, err := short.Sample(en, n, kaBox, Draws2D{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	uni := make([]float64, kaCells*kaCells)
	for i := range uni {
		uni[i] = 1 / float64(len(uni))
	}
	got, _ := tvSE(hist(pairs(u0, u1), nil, n, kaCells, kaBox), truth, n)
	want := prob.TotalVariation(uni, truth)
	uf := prob.TVFloor(uni, n)
	t.Logf("0 moves: TV %.4f, the uniform's %.4f (its floor %.4f)", got, want, uf)
	if math.Abs(got-want) > 2*uf {
		t.Errorf("0 moves from uniform: TV %.4f, want the uniform's %.4f within 2×%.4f", got, want, uf)
	}

	for _, c := range []Chain2D{long, {Start: StartUniform, Steps: 20, Step: 0.05, Std: 0.3, Clamp: true},
		{Start: StartUniform, Steps: 20, Step: 0.01, Std: float32(math.Sqrt(0.02)), Weighted: true}} {
		c.Steps = min(c.Steps, 50)
		a0, a1, _, err := c.Sample(en, 100, kaBox, Draws2D{}, 3)
		if err != nil {
			t.Fatal(err)
		}
		b0, b1, _, _ := c.Sample(en, 100, kaBox, Draws2D{}, 3)
		c0, _, _, _ := c.Sample(en, 100, kaBox, Draws2D{}, 4)
		if !slices.Equal(a0, b0) || !slices.Equal(a1, b1) {
			t.Errorf("%+v: the same seed gave different chains", c)
		}
		if slices.Equal(a0, c0) {
			t.Errorf("%+v: another seed gave the same chains", c)
		}
	}
}

// TestChainsStarts: the class-wise Gaussian and noised-data starts read the draws
// (0 moves: the start's own spread), a tethered MH chain stays near its anchors, and
// Validate refuses bad settings.
func TestChainsStarts(t *testing.T) {
	rng := prob.NewRand(1)
	a, b := testMixture.sample(rng, 500)
	d := Draws2D{X0: f32s(a), X1: f32s(b), Y: make([]int32, 500), K: 2}
	for i := range d.Y {
		d.Y[i] = int32(i % 2)
	}
	en := testMixture.energy(1)
	for _, c := range []Chain2D{{Start: StartClassGauss}, {Start: StartNoisedData, Sigma: 0.1},
		{Start: StartNoisedData, Sigma: 0.1, Steps: 30, Step: 0.5 * 0.5 * 0.01, Std: 0.05, MH: true}} {
		x0, x1, _, err := c.Sample(en, 512, kaBox, d, 5)
		if err != nil {
			t.Fatal(err)
		}
		var m0, m1, dm0, dm1 float64
		for i := range x0 {
			m0 += float64(x0[i]) / 512
			m1 += float64(x1[i]) / 512
		}
		for i := range d.X0 {
			dm0 += float64(d.X0[i]) / 500
			dm1 += float64(d.X1[i]) / 500
		}
		if math.Hypot(m0-dm0, m1-dm1) > 0.2 {
			t.Errorf("%+v: mean (%.3f, %.3f), the draws' (%.3f, %.3f)", c, m0, m1, dm0, dm1)
		}
	}
	if _, _, _, err := (Chain2D{Start: StartClassGauss}).Sample(en, 16, kaBox, Draws2D{}, 1); err == nil {
		t.Error("class-wise start without draws: no error")
	}
	for _, c := range []Chain2D{{Steps: -1}, {Step: float32(math.NaN())}, {Steps: 3, MH: true}, {Sigma: 1},
		{Start: StartNoisedData}, {Steps: 1, Std: 1, MH: true, Weighted: true}} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestModelEnergy2D: the model's energy on more lanes than a chunk is EnergyGrad2D's.
func TestModelEnergy2D(t *testing.T) {
	hidden := []int{8, 8}
	theta := InitMLP2D(3, hidden, 3)
	const P = 2*promiseChunk + 32
	rng := prob.NewRand(2)
	x := make([]float32, 2*P)
	for i := range x {
		x[i] = float32(4*rng.Float64() - 2)
	}
	en, err := ModelEnergy2D(hidden, 3, theta)
	if err != nil {
		t.Fatal(err)
	}
	e, g := make([]float32, P), make([]float32, 2*P)
	en(x, P, e, g)
	lse, g0, g1, err := EnergyGrad2D(hidden, 3, theta, x[:P], x[P:])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e, lse) || !slices.Equal(g[:P], g0) || !slices.Equal(g[P:], g1) {
		t.Error("ModelEnergy2D differs from EnergyGrad2D")
	}
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

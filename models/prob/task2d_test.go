package prob

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseTaskSpec(t *testing.T) {
	cases := []struct {
		name, in string
		want     TaskSpec
		wantErr  string
	}{
		{"gmm 3,2", "gmm:3,2", TaskSpec{Kind: "gmm", K: 3, C: 2}, ""},
		{"gmm 2,1", "gmm:2,1", TaskSpec{Kind: "gmm", K: 2, C: 1}, ""},
		{"gmm max", "gmm:64,64", TaskSpec{Kind: "gmm", K: 64, C: 64}, ""},
		{"moons", "moons:0.1", TaskSpec{Kind: "moons", K: 2, Sigma: 0.1}, ""},
		{"circles", "circles:0.05", TaskSpec{Kind: "circles", K: 2, Sigma: 0.05}, ""},
		{"gmm bare", "gmm", TaskSpec{}, "gmm needs classes and components: gmm:K,C"},
		{"gmm empty", "gmm:", TaskSpec{}, "gmm needs classes and components"},
		{"gmm one number", "gmm:3", TaskSpec{}, "want gmm:K,C (two integers)"},
		{"gmm K not int", "gmm:a,2", TaskSpec{}, `K "a" is not an integer`},
		{"gmm C not int", "gmm:3,2.5", TaskSpec{}, `C "2.5" is not an integer`},
		{"gmm K 1", "gmm:1,2", TaskSpec{}, "K must be in [2, 64], got 1"},
		{"gmm K big", "gmm:65,2", TaskSpec{}, "K must be in [2, 64], got 65"},
		{"gmm C 0", "gmm:3,0", TaskSpec{}, "C must be in [1, 64], got 0"},
		{"gmm three numbers", "gmm:3,2,1", TaskSpec{}, `C "2,1" is not an integer`},
		{"moons bare", "moons", TaskSpec{}, "moons needs a noise level: moons:SIGMA"},
		{"circles empty", "circles:", TaskSpec{}, "circles needs a noise level"},
		{"moons nan", "moons:NaN", TaskSpec{}, "SIGMA must be finite and > 0, got NaN"},
		{"moons zero", "moons:0", TaskSpec{}, "SIGMA must be finite and > 0, got 0"},
		{"moons negative", "moons:-0.1", TaskSpec{}, "SIGMA must be finite and > 0, got -0.1"},
		{"moons inf", "moons:inf", TaskSpec{}, "SIGMA must be finite and > 0, got +Inf"},
		{"moons text", "moons:x", TaskSpec{}, `SIGMA "x" is not a number`},
		{"unknown", "spiral:0.1", TaskSpec{}, `unknown task "spiral:0.1"`},
		{"table", "table", TaskSpec{}, `unknown task "table"`},
		{"empty", "", TaskSpec{}, `unknown task ""`},
		{"case", "GMM:3,2", TaskSpec{}, `unknown task "GMM:3,2"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseTaskSpec(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %+v, error %v, want an error containing %q", s, err, c.wantErr)
				}
				return
			}
			if err != nil || s != c.want {
				t.Fatalf("got %+v, %v, want %+v", s, err, c.want)
			}
			if s.String() != c.in {
				t.Fatalf("String() = %q, want %q", s.String(), c.in)
			}
		})
	}
}

func TestNewMixtureErrors(t *testing.T) {
	ok := []Component{{Y: 0, Weight: 0.5, SD: 1}, {Y: 1, Weight: 0.5, Mu0: 1, SD: 0.5}}
	with := func(i int, f func(*Component)) []Component {
		c := slices.Clone(ok)
		f(&c[i])
		return c
	}
	cases := []struct {
		name    string
		comps   []Component
		wantErr string
	}{
		{"valid", ok, ""},
		{"empty", nil, "task 7: no components"},
		{"negative y", with(1, func(c *Component) { c.Y = -1 }), "component 1 (y=-1): y must be in [0, 64)"},
		{"nan weight", with(0, func(c *Component) { c.Weight = math.NaN() }), "component 0 (y=0): weight is NaN"},
		{"negative weight", with(0, func(c *Component) { c.Weight = -0.5 }), "weight is -0.5, want finite and >= 0"},
		{"inf mean", with(1, func(c *Component) { c.Mu1 = math.Inf(1) }), "component 1 (y=1): mean (1, +Inf) is not finite"},
		{"zero sd", with(1, func(c *Component) { c.SD = 0 }), "component 1 (y=1): sd is 0, want finite and > 0"},
		{"nan sd", with(0, func(c *Component) { c.SD = math.NaN() }), "sd is NaN"},
		{"bad sum", with(0, func(c *Component) { c.Weight = 0.6 }), "weights sum to 1.1, want 1 within"},
		{"one class", []Component{{Y: 0, Weight: 1, SD: 1}}, "has only class 0, want at least 2 classes"},
		{"empty class", []Component{{Y: 0, Weight: 0.5, SD: 1}, {Y: 2, Weight: 0.5, SD: 1}}, "class 1 has no weight (classes are 0..2)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, err := NewMixture(7, c.comps)
			if c.wantErr == "" {
				if err != nil || task.K != 2 || task.Kind != "mixture" {
					t.Fatalf("got %+v, %v", task, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func testTasks(t *testing.T) map[string]Task2D {
	t.Helper()
	tasks := map[string]Task2D{}
	for _, s := range []string{"gmm:3,2", "gmm:2,1", "moons:0.1", "circles:0.05"} {
		spec, err := ParseTaskSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		tasks[s] = spec.Draw(11)
	}
	mix, err := NewMixture(1, []Component{{Y: 0, Weight: 0.3, Mu0: -1, Mu1: 0.5, SD: 0.4}, {Y: 1, Weight: 0.7, Mu0: 1, Mu1: -0.5, SD: 0.7}})
	if err != nil {
		t.Fatal(err)
	}
	tasks["mixture"] = mix
	return tasks
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, v := range xs {
		s += v
	}
	return s
}

// TestTask2DTruth: the truth is a normalised [G²][K] table of exact cell masses;
// where the grid resolves the task the rule's masses of the density agree with it to
// MaxResolutionFloor (the centre density to much less); nearly all mass is in the box.
func TestTask2DTruth(t *testing.T) {
	for name, task := range testTasks(t) {
		t.Run(name, func(t *testing.T) {
			g := Grid{G: 64, Box: 5}
			m := task.Truth(g)
			r := task.RuleTruth(g)
			c := task.CentreTruth(g)
			if len(m) != g.Cells()*task.K || len(r) != len(m) || len(c) != len(m) {
				t.Fatalf("lengths %d, %d, %d, want %d", len(m), len(r), len(c), g.Cells()*task.K)
			}
			for _, tab := range [][]float64{m, r, c} {
				if s := sum(tab); math.Abs(s-1) > 1e-12 {
					t.Errorf("sums to %v", s)
				}
				if slices.Min(tab) < 0 {
					t.Errorf("negative cell %v", slices.Min(tab))
				}
			}
			if out := task.OutsideMass(g.Box); out > MaxOutsideMass {
				t.Errorf("outside mass %v", out)
			}
			if bm := task.BoxMass(g); math.Abs(bm+task.OutsideMass(g.Box)-1) > 1e-9 {
				t.Errorf("box mass %v + outside %v != 1", bm, task.OutsideMass(g.Box))
			}
			klRule, klCentre := klTiny(m, r), klTiny(m, c)
			t.Logf("KL(cell mass ‖ rule) %.3g, KL(cell mass ‖ centre density) %.3g, sd/h %.2f", klRule, klCentre, task.MinSD()/g.Step())
			if task.MinSD() >= MinResolution*g.Step() && klRule > MaxResolutionFloor {
				t.Errorf("KL(mass‖rule) %v over %v on a resolving grid", klRule, MaxResolutionFloor)
			}
			if klRule > klCentre {
				t.Errorf("the rule (%v) is no closer than the centre (%v)", klRule, klCentre)
			}
			// The class marginal of the truth is the class weights (up to the outside mass).
			w := make([]float64, task.K)
			for _, comp := range task.Components(0) {
				w[comp.Y] += comp.Weight
			}
			py := make([]float64, task.K)
			for i, v := range m {
				py[i%task.K] += v
			}
			for y := range w {
				if math.Abs(py[y]-w[y]) > 1e-6 {
					t.Errorf("class %d mass %.9f, weight %.9f", y, py[y], w[y])
				}
			}
		})
	}
}

// TestTruthNarrowComponents: components far narrower than a cell, anywhere in the box,
// still give each class its weight (the audit's 0.007/0.86 and 0.62/0.38 for weights
// ½/½ came from the density at the cell centres).
func TestTruthNarrowComponents(t *testing.T) {
	cases := []struct {
		name  string
		comps []Component
	}{
		{"narrow-off-centre", []Component{{Y: 0, Weight: 0.5, Mu0: 0.03, Mu1: -0.07, SD: 0.01}, {Y: 1, Weight: 0.5, Mu0: 1.51, Mu1: 2.2, SD: 0.02}}},
		{"narrow-on-edge", []Component{{Y: 0, Weight: 0.5, Mu0: 0.125, Mu1: 0.125, SD: 0.001}, {Y: 1, Weight: 0.5, Mu0: -1, Mu1: 1, SD: 0.5}}},
		{"three-classes-mixed-widths", []Component{{Y: 0, Weight: 0.2, Mu0: 0, Mu1: 0, SD: 0.003}, {Y: 1, Weight: 0.3, Mu0: 1.1, Mu1: -0.4, SD: 0.05}, {Y: 2, Weight: 0.5, Mu0: -2, Mu1: 0, SD: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task, err := NewMixture(1, tc.comps)
			if err != nil {
				t.Fatal(err)
			}
			g := Grid{G: 16, Box: 8}
			m := task.Truth(g)
			py := make([]float64, task.K)
			for i, v := range m {
				py[i%task.K] += v
			}
			for _, c := range tc.comps {
				py[c.Y] -= c.Weight
			}
			for y, d := range py {
				if math.Abs(d) > 1e-6 {
					t.Errorf("class %d mass off its weight by %g", y, d)
				}
			}
		})
	}
	// circles:0.02 at G=16 (the audit's 0.16/0.84): each class's mass is its weight.
	spec, _ := ParseTaskSpec("circles:0.02")
	task := spec.Draw(3)
	m := task.Truth(Grid{G: 16, Box: 5})
	p0 := 0.0
	for i := 0; i < len(m); i += 2 {
		p0 += m[i]
	}
	if math.Abs(p0-task.classWeight(0)) > 1e-6 {
		t.Errorf("circles:0.02 G=16: class 0 mass %v, weight %v", p0, task.classWeight(0))
	}
}

// TestResolutionFloor: a Gaussian of sd ≥ MinResolution cell widths, at any offset
// within a cell, has its rule masses within MaxResolutionFloor of its exact masses; at
// a quarter of a cell the rule cannot resolve it.
func TestResolutionFloor(t *testing.T) {
	g := Grid{G: 32, Box: 4}
	h := g.Step()
	for _, tc := range []struct {
		name    string
		ratio   float64
		resolve bool
	}{{"at-the-limit", MinResolution, true}, {"one-cell", 1, true}, {"quarter-cell", 0.25, false}} {
		t.Run(tc.name, func(t *testing.T) {
			worst := 0.0
			for _, off := range []float64{0, 0.1, 0.25, 0.37, 0.5} {
				task, err := NewMixture(1, []Component{{Y: 0, Weight: 0.5, Mu0: off * h, Mu1: 0.3 * off * h, SD: tc.ratio * h}, {Y: 1, Weight: 0.5, Mu0: -1 + off*h, Mu1: 1, SD: tc.ratio * h}})
				if err != nil {
					t.Fatal(err)
				}
				worst = max(worst, klTiny(task.Truth(g), task.RuleTruth(g)))
			}
			t.Logf("sd/h %.2f: worst KL(mass‖rule) %.3g", tc.ratio, worst)
			if got := worst <= MaxResolutionFloor; got != tc.resolve {
				t.Errorf("sd/h %.2f: KL %.3g, resolved %v, want %v", tc.ratio, worst, got, tc.resolve)
			}
		})
	}
}

// TestOutsideMass: a component's mass outside the box is its Gaussian tails; HoldingBox
// finds the least box (in halves) that holds the task to MaxOutsideMass.
func TestOutsideMass(t *testing.T) {
	task, err := NewMixture(1, []Component{{Y: 0, Weight: 0.5, Mu0: 0, Mu1: 0, SD: 1}, {Y: 1, Weight: 0.5, Mu0: 3, Mu1: 0, SD: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	// Component 0: 1 − (1 − 2Φ(−2))² at box 2; component 1: its x0 tails at 2 and 10 sd.
	a := math.Erfc(2 / math.Sqrt2)
	want := 0.5*(2*a-a*a) + 0.5*(0.5*math.Erfc(-2/math.Sqrt2)+0.5*math.Erfc(10/math.Sqrt2)+2*(0.5*math.Erfc(4/math.Sqrt2))-(0.5*math.Erfc(-2/math.Sqrt2)+0.5*math.Erfc(10/math.Sqrt2))*(math.Erfc(4/math.Sqrt2)))
	if got := task.OutsideMass(2); math.Abs(got-want) > 1e-12 {
		t.Errorf("outside mass at box 2: %v, want %v", got, want)
	}
	b := task.HoldingBox()
	if task.OutsideMass(b) > MaxOutsideMass || task.OutsideMass(b-0.5) <= MaxOutsideMass {
		t.Errorf("holding box %v: outside %v, at %v: %v", b, task.OutsideMass(b), b-0.5, task.OutsideMass(b-0.5))
	}
}

// TestShapesVary: moons and circles tasks of different seeds are different
// distributions (rotation, scale, noise, class weights), each within ShapeVariation.
func TestShapesVary(t *testing.T) {
	for _, s := range []string{"moons:0.1", "circles:0.1"} {
		spec, _ := ParseTaskSpec(s)
		a, b := spec.Draw(1), spec.Draw(2)
		g := Grid{G: 32, Box: 5}
		if kl := klTiny(a.Truth(g), b.Truth(g)); kl < 1e-3 {
			t.Errorf("%s: tasks of seeds 1 and 2 have KL %v", s, kl)
		}
		for seed := range uint64(50) {
			sh := spec.Draw(seed).shape
			if sh.Angle < 0 || sh.Angle >= 2*math.Pi || math.Abs(sh.Scale-1) > ShapeVariation || math.Abs(sh.Noise-1) > ShapeVariation || math.Abs(sh.W0-0.5) > ShapeVariation {
				t.Errorf("%s seed %d: shape %+v out of range", s, seed, sh)
			}
		}
	}
}

// klTiny is KL(p‖q) over the cells where both are above 1e-280 (far-tail cells where one
// of them underflows carry no measurable mass).
func klTiny(p, q []float64) float64 {
	s := 0.0
	for i := range p {
		if p[i] > 1e-280 && q[i] > 1e-280 {
			s += p[i] * math.Log(p[i]/q[i])
		}
	}
	return s
}

// TestTask2DGaussianCellMass: a cell's mass equals the closed-form erf product of the
// component, and a 2-D numerical integral of the density over the cell.
func TestTask2DGaussianCellMass(t *testing.T) {
	task, err := NewMixture(0, []Component{{Y: 0, Weight: 0.4, Mu0: 0.3, Mu1: -0.7, SD: 0.5}, {Y: 1, Weight: 0.6, Mu0: -1.1, Mu1: 1.3, SD: 0.8}})
	if err != nil {
		t.Fatal(err)
	}
	g := Grid{G: 16, Box: 3}
	raw := task.rawMass(g)
	phi := func(z float64) float64 { return 0.5 * (1 + math.Erf(z/math.Sqrt2)) }
	box := [2]float64{}
	for _, c := range task.comps {
		f0 := phi((g.Box-c.Mu0)/c.SD) - phi((-g.Box-c.Mu0)/c.SD)
		f1 := phi((g.Box-c.Mu1)/c.SD) - phi((-g.Box-c.Mu1)/c.SD)
		box[c.Y] = c.Weight * f0 * f1
	}
	if bm := task.BoxMass(g); math.Abs(bm-(box[0]+box[1])) > 1e-14 {
		t.Errorf("box mass %v, erf product %v", bm, box[0]+box[1])
	}
	h := g.Step()
	for _, cell := range [][2]int{{0, 0}, {7, 5}, {9, 2}, {4, 13}, {15, 15}} {
		i, j := cell[0], cell[1]
		lo0, lo1 := -g.Box+float64(i)*h, -g.Box+float64(j)*h
		for _, c := range task.comps {
			want := c.Weight * (phi((lo0+h-c.Mu0)/c.SD) - phi((lo0-c.Mu0)/c.SD)) * (phi((lo1+h-c.Mu1)/c.SD) - phi((lo1-c.Mu1)/c.SD))
			got := raw[(i*g.G+j)*task.K+c.Y]
			if math.Abs(got-want) > 1e-15+1e-12*want {
				t.Errorf("cell (%d,%d) y=%d: mass %v, erf product %v", i, j, c.Y, got, want)
			}
			// Composite Simpson in 2-D (n×n intervals) of the density.
			const n = 64
			s := 0.0
			for a := 0; a <= n; a++ {
				for b := 0; b <= n; b++ {
					wa, wb := simpsonW(a, n), simpsonW(b, n)
					s += wa * wb * MixtureDensity(task.comps, lo0+float64(a)*h/n, lo1+float64(b)*h/n, c.Y)
				}
			}
			s *= (h / n / 3) * (h / n / 3)
			if math.Abs(s-want) > 1e-12+1e-8*want {
				t.Errorf("cell (%d,%d) y=%d: Simpson %v, erf product %v", i, j, c.Y, s, want)
			}
		}
	}
}

func simpsonW(i, n int) float64 {
	switch {
	case i == 0 || i == n:
		return 1
	case i%2 == 1:
		return 4
	}
	return 2
}

// TestTask2DQuadratureConverges: the moons/circles truth with the default quadrature
// agrees with one on 4× the nodes, and the density at a point with a brute-force
// midpoint integral over the angle.
func TestTask2DQuadratureConverges(t *testing.T) {
	g := DefaultGrid
	for _, s := range []string{"moons:0.1", "circles:0.05", "moons:0.3"} {
		t.Run(s, func(t *testing.T) {
			spec, _ := ParseTaskSpec(s)
			task := spec.Draw(0)
			def := task.Components(0)
			n0 := len(def) / 2
			coarse := normalised(gridSum(task.Components(n0/8), g, 2, centreAxis(g)))
			p := normalised(gridSum(def, g, 2, centreAxis(g)))
			fine := normalised(gridSum(task.Components(4*n0), g, 2, centreAxis(g)))
			worst, worstCoarse := 0.0, 0.0
			for i := range p {
				worst = max(worst, math.Abs(p[i]-fine[i]))
				worstCoarse = max(worstCoarse, math.Abs(coarse[i]-fine[i]))
			}
			t.Logf("%d nodes per class: max |Δp| against 4× nodes %.3g (an eighth of the nodes: %.3g)", n0, worst, worstCoarse)
			if worst > 1e-14 {
				t.Errorf("default quadrature off by %v", worst)
			}
			// Independent brute force at a few points: midpoint rule, 200000 angles.
			for _, pt := range [][2]float64{{0.1, 0.2}, {-1.9, 0.4}, {1.0, -1.0}, {2.2, 0.1}} {
				for y := range 2 {
					const m = 200000
					bf := 0.0
					sd := task.noiseSD()
					for a := range m {
						c0, c1 := task.curve(y, task.span()*(float64(a)+0.5)/m)
						d0, d1 := (pt[0]-c0)/sd, (pt[1]-c1)/sd
						bf += math.Exp(-0.5*(d0*d0+d1*d1)) / (2 * math.Pi * sd * sd)
					}
					bf *= task.classWeight(y) / m
					got := task.Density(pt[0], pt[1], y)
					if math.Abs(got-bf) > 1e-7*bf {
						t.Errorf("density at %v y=%d: %v, brute force %v", pt, y, got, bf)
					}
				}
			}
		})
	}
}

func centreAxis(g Grid) func(mu, sd float64, dst []float64) {
	return func(mu, sd float64, dst []float64) {
		for i := range dst {
			d := (g.Centre(i) - mu) / sd
			dst[i] = math.Exp(-0.5*d*d) / (math.Sqrt(2*math.Pi) * sd)
		}
	}
}

// TestTask2DSample: same seed, same draws; the draws' histogram on a coarse grid
// matches the exact cell masses.
func TestTask2DSample(t *testing.T) {
	for name, task := range testTasks(t) {
		t.Run(name, func(t *testing.T) {
			a, b := task.Sample(5, 1000), task.Sample(5, 1000)
			c := task.Sample(6, 1000)
			if !slices.Equal(a.X0, b.X0) || !slices.Equal(a.X1, b.X1) || !slices.Equal(a.Y, b.Y) {
				t.Fatal("same seed, different draws")
			}
			if slices.Equal(a.X0, c.X0) {
				t.Fatal("different seeds, same draws")
			}
			const n = 200000
			g := Grid{G: 8, Box: 4}
			d := task.Sample(9, n)
			h := make([]float64, g.Cells()*task.K)
			in := 0
			for i := range n {
				if cell := g.Cell(d.X0[i], d.X1[i]); cell >= 0 {
					h[cell*task.K+int(d.Y[i])]++
					in++
				}
			}
			for i := range h {
				h[i] /= float64(in)
			}
			m := task.Truth(g)
			tv := 0.0
			for i := range h {
				tv += math.Abs(h[i]-m[i]) / 2
			}
			// E[TV] ≤ Σ sqrt(p(1-p)/n)/2 ≈ sqrt(cells/n)/2 = 0.02 at most; a tight bound is far less.
			bound := 0.0
			for _, v := range m {
				bound += math.Sqrt(v*(1-v)/n) / 2
			}
			if tv > 2*bound+1e-3 {
				t.Errorf("TV(draws, truth) = %v, bound %v", tv, 2*bound)
			}
			if frac := float64(in) / n; math.Abs(frac-task.BoxMass(g)) > 5*math.Sqrt(0.25/n)+1e-3 {
				t.Errorf("share in box %v, box mass %v", frac, task.BoxMass(g))
			}
		})
	}
}

func TestGridAndKL(t *testing.T) {
	g := Grid{G: 4, Box: 2}
	if g.Step() != 1 || g.CellArea() != 1 || g.Centre(0) != -1.5 || g.Centre(3) != 1.5 {
		t.Fatalf("step %v area %v centres %v %v", g.Step(), g.CellArea(), g.Centre(0), g.Centre(3))
	}
	x0, x1 := g.Centres()
	for c := range g.Cells() {
		if g.Cell(x0[c], x1[c]) != c {
			t.Errorf("cell %d: centre (%v,%v) maps to %d", c, x0[c], x1[c], g.Cell(x0[c], x1[c]))
		}
	}
	if g.Cell(2.01, 0) != -1 || g.Cell(0, -2.5) != -1 || g.Cell(math.NaN(), 0) != -1 {
		t.Error("a point outside the box has a cell")
	}
	for _, bad := range []Grid{{G: 1, Box: 4}, {G: 64, Box: 0}, {G: 64, Box: math.Inf(1)}, {G: 5000, Box: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	task := testTasks(t)["gmm:3,2"]
	p := task.Truth(DefaultGrid)
	j, m, c := GridKL(p, p, 3)
	if j != 0 || m != 0 || c != 0 {
		t.Errorf("KL(p‖p) = %v %v %v", j, m, c)
	}
	logits := make([]float64, len(p))
	for i := range logits {
		logits[i] = 0.3 * math.Sin(float64(i))
	}
	q := GridJoint(logits)
	j, m, c = GridKL(p, q, 3)
	if j <= 0 || math.Abs(j-(m+c)) > 1e-12 {
		t.Errorf("joint %v != marginal %v + conditional %v", j, m, c)
	}
}

// TestMixtureLogDensity: the log-space sum equals the log of MixtureDensity where that
// is finite, per class and over the classes, and stays finite far from every component.
func TestMixtureLogDensity(t *testing.T) {
	spec, _ := ParseTaskSpec("moons:0.1")
	comps := spec.Draw(4).Components(0)
	for _, pt := range [][2]float64{{0, 0}, {1.3, -0.2}, {-2, 1}, {4.5, 4.5}} {
		tot := 0.0
		for y := range 2 {
			d := MixtureDensity(comps, pt[0], pt[1], y)
			tot += d
			if got := MixtureLogDensity(comps, pt[0], pt[1], y); d > 1e-280 && math.Abs(got-math.Log(d)) > 1e-9*math.Max(1, math.Abs(got)) {
				t.Errorf("%v y=%d: %v, log density %v", pt, y, got, math.Log(d))
			}
		}
		if got := MixtureLogDensity(comps, pt[0], pt[1], -1); math.Abs(got-math.Log(tot)) > 1e-9*math.Max(1, math.Abs(got)) {
			t.Errorf("%v: log p(x) %v, want %v", pt, got, math.Log(tot))
		}
	}
	if got := MixtureLogDensity(comps, 300, 300, -1); math.IsInf(got, 0) || math.IsNaN(got) {
		t.Errorf("far point: %v", got)
	}
}

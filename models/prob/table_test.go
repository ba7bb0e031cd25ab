package prob

import (
	"math"
	"strings"
	"testing"
)

func TestNewTable(t *testing.T) {
	cases := []struct {
		name    string
		x, k    int
		p       []float64
		wantErr string // "" means valid
	}{
		{"valid 2x2", 2, 2, []float64{0.1, 0.2, 0.3, 0.4}, ""},
		{"valid within tolerance", 1, 2, []float64{0.5, 0.5 + 5e-7}, ""},
		{"valid with zero cell", 1, 3, []float64{0, 0.5, 0.5}, ""},
		{"X zero", 0, 2, []float64{}, "table 3: X must be at least 1, got 0"},
		{"K one", 2, 1, []float64{0.5, 0.5}, "table 3: K must be at least 2, got 1"},
		{"wrong length", 2, 2, []float64{0.5, 0.5}, "table 3: has 2 cells, want X·K = 2·2 = 4"},
		{"NaN", 2, 2, []float64{0.25, 0.25, math.NaN(), 0.5}, "table 3: cell (x=1,y=0) is NaN"},
		{"+Inf", 2, 2, []float64{0.25, math.Inf(1), 0.25, 0.5}, "table 3: cell (x=0,y=1) is +Inf"},
		{"-Inf", 2, 2, []float64{0.25, 0.25, 0.25, math.Inf(-1)}, "table 3: cell (x=1,y=1) is -Inf"},
		{"negative", 2, 2, []float64{0.6, -0.1, 0.25, 0.25}, "table 3: cell (x=0,y=1) is negative (-0.1)"},
		{"unnormalised", 2, 2, []float64{0.25, 0.25, 0.25, 0.27}, "table 3: sums to 1.02, want 1 within 1e-06"},
		{"just outside tolerance", 1, 2, []float64{0.5, 0.5 + 2e-6}, "table 3: sums to 1.000002, want 1 within 1e-06"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab, err := NewTable(3, c.x, c.k, c.p)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %q, want none", err)
				}
				if tab.ID != 3 || tab.X != c.x || tab.K != c.k || len(tab.P) != len(c.p) {
					t.Fatalf("got %+v, want id 3, X=%d, K=%d", tab, c.x, c.k)
				}
				c.p[0] = 99 // NewTable must have copied
				if tab.P[0] == 99 {
					t.Fatalf("got a table aliasing its input, want a copy")
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want %q", c.wantErr)
			}
			if err.Error() != c.wantErr {
				t.Fatalf("got error %q, want %q", err, c.wantErr)
			}
		})
	}
}

func TestParseGenerator(t *testing.T) {
	cases := []struct {
		in      string
		want    Generator
		wantErr string
	}{
		{"uniform", Generator{Kind: "uniform"}, ""},
		{"dirichlet:0.5", Generator{Kind: "dirichlet", Alpha: 0.5}, ""},
		{"dirichlet:1", Generator{Kind: "dirichlet", Alpha: 1}, ""},
		{"dirichlet:1e-3", Generator{Kind: "dirichlet", Alpha: 1e-3}, ""},
		{"dirichlet:0", Generator{}, "ALPHA must be finite and > 0, got 0"},
		{"dirichlet:-1", Generator{}, "ALPHA must be finite and > 0, got -1"},
		{"dirichlet:inf", Generator{}, "ALPHA must be finite and > 0, got +Inf"},
		{"dirichlet:NaN", Generator{}, "ALPHA must be finite and > 0, got NaN"},
		{"dirichlet:x", Generator{}, `ALPHA "x" is not a number`},
		{"dirichlet:", Generator{}, `ALPHA "" is not a number`},
		{"dirichlet", Generator{}, "needs a concentration"},
		{"gauss", Generator{}, `unknown generator "gauss": want uniform or dirichlet:ALPHA`},
		{"Uniform", Generator{}, `unknown generator "Uniform"`},
		{"", Generator{}, `unknown generator ""`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			g, err := ParseGenerator(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if g != c.want {
				t.Fatalf("got %+v, want %+v", g, c.want)
			}
			if g.String() != c.in && c.in != "dirichlet:1e-3" {
				t.Fatalf("got String() %q, want %q", g.String(), c.in)
			}
			back, err := ParseGenerator(g.String())
			if err != nil || back != g {
				t.Fatalf("got round trip %+v, %v, want %+v", back, err, g)
			}
		})
	}
}

func TestGeneratorDraw(t *testing.T) {
	cases := []struct {
		name string
		gen  string
		x, k int
	}{
		{"uniform 3x4", "uniform", 3, 4},
		{"dirichlet 1", "dirichlet:1", 5, 3},
		{"dirichlet 0.3", "dirichlet:0.3", 4, 4},
		{"dirichlet 5", "dirichlet:5", 2, 2},
		{"dirichlet tiny", "dirichlet:1e-4", 10, 10},
		{"dirichlet very tiny", "dirichlet:1e-300", 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ParseGenerator(c.gen)
			if err != nil {
				t.Fatal(err)
			}
			rng := NewRand(Seed(1, SeedString(c.name)))
			for range 200 {
				p := g.Draw(rng, c.x, c.k)
				if _, err := NewTable(0, c.x, c.k, p); err != nil {
					t.Fatalf("got invalid table %v: %v", p, err)
				}
			}
			again := g.Draw(NewRand(Seed(1, SeedString(c.name))), c.x, c.k)
			first := g.Draw(NewRand(Seed(1, SeedString(c.name))), c.x, c.k)
			for i := range again {
				if again[i] != first[i] {
					t.Fatalf("got different draws for the same seed: %v vs %v", again, first)
				}
			}
		})
	}
}

// TestDirichletMoments checks the cell means 1/n and variances (1/n)(1−1/n)/(nα+1) of a
// symmetric Dirichlet, which exercise both Gamma branches (α < 1 and α ≥ 1).
func TestDirichletMoments(t *testing.T) {
	for _, alpha := range []float64{0.2, 1, 3} {
		t.Run(Generator{Kind: "dirichlet", Alpha: alpha}.String(), func(t *testing.T) {
			g := Generator{Kind: "dirichlet", Alpha: alpha}
			rng := NewRand(Seed(7, math.Float64bits(alpha)))
			const reps, n = 40000, 4
			var sum, sumSq [n]float64
			for range reps {
				p := g.Draw(rng, 2, 2)
				for i, v := range p {
					sum[i] += v
					sumSq[i] += v * v
				}
			}
			wantMean := 1.0 / n
			wantVar := wantMean * (1 - wantMean) / (n*alpha + 1)
			for i := range n {
				mean := sum[i] / reps
				variance := sumSq[i]/reps - mean*mean
				if math.Abs(mean-wantMean) > 5*math.Sqrt(wantVar/reps) {
					t.Errorf("cell %d: got mean %.5f, want %.5f", i, mean, wantMean)
				}
				if math.Abs(variance/wantVar-1) > 0.05 {
					t.Errorf("cell %d: got variance %.5f, want %.5f", i, variance, wantVar)
				}
			}
		})
	}
}

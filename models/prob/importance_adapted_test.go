package prob

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// gaussModel is a known-answer energy on ℝ^{2B}: K classes, class y's logit
// f(x)[y] = log π_y + Σ_d log N(x_d; m_yd, s²), so Σ_y exp f is a Gaussian mixture whose
// mass on the box [−box, box]^{2B} is exactly Σ_y π_y Π_d [Φ((box − m_yd)/s) − Φ((−box − m_yd)/s)].
type gaussModel struct {
	d, k  int
	prior []float64
	mean  []float64 // [k][d]
	sd    float64
}

// logits are f at n points x [n][d], [n][k].
func (m gaussModel) logits(x []float64, n int) []float64 {
	out := make([]float64, n*m.k)
	c := -0.5*math.Log(2*math.Pi) - math.Log(m.sd)
	for i := range n {
		for y := range m.k {
			v := math.Log(m.prior[y])
			for j := range m.d {
				z := (x[i*m.d+j] - m.mean[y*m.d+j]) / m.sd
				v += c - 0.5*z*z
			}
			out[i*m.k+y] = v
		}
	}
	return out
}

// lse is LSE_y f at n points.
func (m gaussModel) lse(x []float64, n int) []float64 {
	l := m.logits(x, n)
	out := make([]float64, n)
	for i := range n {
		out[i] = LogSumExp(l[i*m.k : (i+1)*m.k])
	}
	return out
}

// logZ is log ∫_box Σ_y exp f exactly.
func (m gaussModel) logZ(box float64) float64 {
	ly := make([]float64, m.k)
	for y := range m.k {
		v := math.Log(m.prior[y])
		for j := range m.d {
			mu := m.mean[y*m.d+j]
			v += math.Log(0.5 * (math.Erf((box-mu)/(m.sd*math.Sqrt2)) - math.Erf((-box-mu)/(m.sd*math.Sqrt2))))
		}
		ly[y] = v
	}
	return LogSumExp(ly)
}

// TestAdaptedProposalKnownZ: the adapted proposal's known answer. A two-class Gaussian
// mixture energy in D = 8 and 16 whose classes are wider (sd 1.3) than a narrow
// "truth" proposal (the same means, sd 0.6, defensive blocks as the block tasks') that
// therefore refuses it (k̂ > ½ or ESS < MinESS); chains on the energy from the narrow
// proposal's draws, a block mixture fitted to them, and fresh draws pooled ½/½ with
// the narrow proposal's give an accepted estimate within 3 SE of the exact log Z.
func TestAdaptedProposalKnownZ(t *testing.T) {
	const box = 5.0
	for _, c := range []struct {
		name string
		B    int
	}{{"D=8", 4}, {"D=16", 8}} {
		t.Run(c.name, func(t *testing.T) {
			d := 2 * c.B
			m := gaussModel{d: d, k: 2, prior: []float64{0.4, 0.6}, mean: make([]float64, 2*d), sd: 1.3}
			rng := NewRand(Seed(11, uint64(c.B)))
			for i := range m.mean {
				m.mean[i] = 2 * (2*rng.Float64() - 1)
			}
			narrow := m
			narrow.sd = 0.6
			eps := BlockDefensiveShare(c.B)
			// The narrow proposal r₀: narrow's class mixture with defensive blocks, as a BlockMixture.
			r0 := BlockMixture{B: c.B, K: 2, C: 1, Eps: eps, Box: box, W: narrow.prior, A: []float64{}, Mu: []float64{}, L: []float64{}}
			for y := range 2 {
				for b := range c.B {
					r0.A = append(r0.A, 1)
					r0.Mu = append(r0.Mu, m.mean[y*d+2*b], m.mean[y*d+2*b+1])
					r0.L = append(r0.L, narrow.sd, 0, narrow.sd)
				}
			}
			const n = 20000
			x0 := r0.Sample(Seed(12), n)
			logw := func(x []float64, lr func(x []float64) float64) []float64 {
				f := m.lse(x, len(x)/d)
				out := make([]float64, len(f))
				for i := range f {
					xi := x[i*d : (i+1)*d]
					out[i] = math.Inf(-1)
					if inBoxAll(xi, box) {
						out[i] = f[i] - lr(xi)
					}
				}
				return out
			}
			truthOnly := ImportanceLogZ(logw(x0, r0.LogDensity))
			if !truthOnly.Refused() {
				t.Errorf("the narrow proposal alone is not refused: ESS %.0f, k̂ %.2f", truthOnly.ESS, truthOnly.K)
			}
			states := MetropolisChains(Seed(13), d, box, x0[:256*d], 200, 3, m.lse) // fewer than DefaultAdapt's: the test's time
			ns := len(states) / d
			l := m.logits(states, ns)
			resp := make([]float64, len(l))
			for i := range ns {
				s := LogSumExp(l[i*2 : i*2+2])
				resp[2*i], resp[2*i+1] = math.Exp(l[2*i]-s), math.Exp(l[2*i+1]-s)
			}
			g, err := FitBlockMixture(Seed(14), states, resp, ns, c.B, 2, DefaultAdapt.Comps, eps, box, DefaultAdapt.Inflate)
			if err != nil {
				t.Fatal(err)
			}
			mix := func(x []float64) float64 {
				return LogSumExp([]float64{math.Log(0.5) + r0.LogDensity(x), math.Log(0.5) + g.LogDensity(x)})
			}
			xg := g.Sample(Seed(15), n)
			lw := append(logw(x0, mix), logw(xg, mix)...)
			e := ImportanceLogZ(lw)
			want := m.logZ(box)
			if e.Refused() {
				t.Fatalf("adapted estimate refused: %s (ESS %.0f, k̂ %.2f)", e.Reason, e.ESS, e.K)
			}
			if z := (e.LogZ - want) / e.SE; math.Abs(z) > 3 {
				t.Errorf("log Ẑ %.4f ± %.4f, exact %.4f: z = %.2f", e.LogZ, e.SE, want, z)
			}
			t.Logf("narrow alone: ESS %.0f k̂ %.2f (%s); adapted: log Ẑ %.4f ± %.4f (exact %.4f), ESS %.0f, k̂ %.2f", truthOnly.ESS, truthOnly.K, truthOnly.Reason, e.LogZ, e.SE, want, e.ESS, e.K)
		})
	}
}

// TestProposalDensities: each adapted proposal part's density and draws agree with its
// parameters in D = 2: the density integrates to 1 over the box (Monte Carlo over
// uniform draws; the Gaussians' mass outside it is below 1e-9), and the draws' mean
// of the first coordinate is the part's.
func TestProposalDensities(t *testing.T) {
	const box = 6.0
	mix := BlockMixture{B: 1, K: 2, C: 2, Eps: 0.05, Box: box, W: []float64{0.3, 0.7},
		A:  []float64{0.5, 0.5, 0.2, 0.8},
		Mu: []float64{-1, 0, 1, 1, 0, -2, 2, 0},
		L:  []float64{0.5, 0, 0.5, 0.7, 0.2, 0.4, 0.6, -0.1, 0.5, 0.3, 0, 0.3}}
	// A class-wise full Gaussian and a histogram fitted to the same 3 states a class.
	states := []float64{-1, 0, -0.5, 0.4, -1.2, -0.3, 2, 1, 2.4, 0.6, 1.7, 1.5}
	resp := []float64{1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}
	full, err := FitGaussClasses(states, resp, 6, 2, 2, box, 1)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := FitBlockHistogram(states, resp, 6, 1, 2, 4, 0.05, box)
	if err != nil {
		t.Fatal(err)
	}
	// The histogram's mean: its cells' centres weighted by their probabilities.
	histMean := 0.0
	for y, wy := range hist.W {
		for c, p := range hist.P[y*16 : (y+1)*16] {
			histMean += wy * p * (-box + (float64(c/4)+0.5)*3)
		}
	}
	cases := []struct {
		name string
		g    interface {
			Sample(seed uint64, n int) []float64
			LogDensity(x []float64) float64
		}
		mean float64
	}{
		{"block mixture", mix, 0.95 * (0.3*(0.5*-1+0.5*1) + 0.7*(0.2*0+0.8*2))},
		{"class-wise full Gaussians", full, 0.5*(-2.7/3) + 0.5*(6.1/3)},
		{"block histogram", hist, histMean},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := NewRand(3)
			const n = 200000
			var s, s2 float64
			for range n {
				x := []float64{(2*rng.Float64() - 1) * box, (2*rng.Float64() - 1) * box}
				v := math.Exp(c.g.LogDensity(x)) * 4 * box * box
				s += v
				s2 += v * v
			}
			m := s / n
			if se := math.Sqrt((s2/n - m*m) / n); math.Abs(m-1) > 4*se {
				t.Errorf("integral over the box %.4f ± %.4f, want 1", m, se)
			}
			x := c.g.Sample(4, 100000)
			s, s2 = 0, 0
			for i := 0; i < len(x); i += 2 {
				s += x[i]
				s2 += x[i] * x[i]
			}
			m = s / 100000
			if se := math.Sqrt((s2/100000 - m*m) / 100000); math.Abs(m-c.mean) > 4*se {
				t.Errorf("draws' mean %.4f ± %.4f, want %.4f", m, se, c.mean)
			}
		})
	}
}

// TestConditionalHistogramKnownAnswer: for a model additive over blocks, f(x)[y] =
// log π_y + Σ_b h_yb(x_b), FitConditionalHistogram gives its exact class-wise block
// marginals at the cells' centres, softmax_c h_yb(centre c), whatever the anchors (every
// anchor's conditional is the marginal); W is the mean of q(y|anchor); with eps the
// cells keep a uniform share; a model that fails is an error, an anchor with non-finite
// logits has no weight; and it fits a joint model (a correlated Gaussian) with the
// class weights of its anchors.
func TestConditionalHistogramKnownAnswer(t *testing.T) {
	const B, K, G, box = 3, 2, 8, 4.0
	h := func(y, b int, x0, x1 float64) float64 { // a different bump per class and block
		m0, m1 := float64(y)-0.5+0.3*float64(b), 0.7*float64(b)-1
		return -((x0-m0)*(x0-m0) + 0.5*(x1-m1)*(x1-m1)) / (1 + float64(y))
	}
	prior := []float64{0.3, 0.7}
	calls := 0
	logits := func(x []float64, n int) ([]float64, error) {
		calls++
		out := make([]float64, n*K)
		for i := range n {
			for y := range K {
				v := math.Log(prior[y])
				for b := range B {
					v += h(y, b, x[i*2*B+2*b], x[i*2*B+2*b+1])
				}
				out[i*K+y] = v
			}
		}
		return out, nil
	}
	anchors := []float64{0, 0, 0, 0, 0, 0, 1, -2, 3, 0.5, -1, 2, -3, 3, 0.2, 0.1, 2, -2}
	const A = 3
	g, err := FitConditionalHistogram(anchors, A, B, K, G, 0, box, nil, logits)
	if err != nil {
		t.Fatal(err)
	}
	if calls != A*(B+1) {
		t.Errorf("%d model calls, want one an anchor and block and one an anchor (%d)", calls, A*(B+1))
	}
	w := 2 * box / G
	for y := range K {
		for b := range B {
			want := make([]float64, G*G)
			for c := range want {
				want[c] = h(y, b, -box+(float64(c/G)+0.5)*w, -box+(float64(c%G)+0.5)*w)
			}
			want = Softmax(want)
			for c, p := range g.P[(y*B+b)*G*G : (y*B+b+1)*G*G] {
				if math.Abs(p-want[c]) > 1e-12 {
					t.Fatalf("class %d block %d cell %d: %v, want %v", y, b, c, p, want[c])
				}
			}
		}
	}
	var wy [K]float64
	for a := range A {
		l, _ := logits(anchors[a*2*B:(a+1)*2*B], 1)
		for y, v := range Softmax(l) {
			wy[y] += v / A
		}
	}
	for y := range K {
		if math.Abs(g.W[y]-wy[y]) > 1e-12 {
			t.Errorf("W[%d] %v, want the anchors' mean q(y|a) %v", y, g.W[y], wy[y])
		}
	}
	// Class weights given: W is them, normalised.
	gw, err := FitConditionalHistogram(anchors, A, B, K, G, 0, box, []float64{1, 3}, logits)
	if err != nil || gw.W[0] != 0.25 || gw.W[1] != 0.75 || gw.P[7] != g.P[7] {
		t.Errorf("class weights 1, 3: W %v (want 0.25, 0.75), P[7] %v (want %v), %v", gw.W, gw.P[7], g.P[7], err)
	}
	// A uniform share: every cell at least eps/G².
	ge, err := FitConditionalHistogram(anchors, A, B, K, G, 0.1, box, nil, logits)
	if err != nil {
		t.Fatal(err)
	}
	for c, p := range ge.P {
		if want := 0.9*g.P[c] + 0.1/(G*G); math.Abs(p-want) > 1e-12 {
			t.Fatalf("eps 0.1: cell %d %v, want %v", c, p, want)
		}
	}
	// Its draws and density agree: the density integrates to 1 over the box.
	rng := NewRand(5)
	var s float64
	const n = 100000
	vol := math.Pow(2*box, 2*B)
	for range n {
		x := make([]float64, 2*B)
		for i := range x {
			x[i] = (2*rng.Float64() - 1) * box
		}
		s += math.Exp(ge.LogDensity(x)) * vol
	}
	if m := s / n; math.Abs(m-1) > 0.05 {
		t.Errorf("density integrates to %.4f over the box, want 1", m)
	}
	// Failures.
	if _, err := FitConditionalHistogram(anchors, A, B, K, G, 0, box, nil, func([]float64, int) ([]float64, error) {
		return nil, errors.New("model down")
	}); err == nil || !strings.Contains(err.Error(), "model down") {
		t.Errorf("a failing model: %v", err)
	}
	if _, err := FitConditionalHistogram(anchors[:5], A, B, K, G, 0, box, nil, logits); err == nil {
		t.Error("anchors of the wrong length accepted")
	}
	nan := func(x []float64, n int) ([]float64, error) {
		out, _ := logits(x, n)
		if n == 1 && x[0] == anchors[0] && x[1] == anchors[1] && x[2] == anchors[2] { // the first anchor
			for i := range out {
				out[i] = math.NaN()
			}
		}
		return out, nil
	}
	gn, err := FitConditionalHistogram(anchors, A, B, K, G, 0, box, nil, nan)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(gn.P[5]-g.P[5]) > 1e-12 {
		t.Errorf("an anchor with NaN logits changed the marginals: %v, want %v", gn.P[5], g.P[5])
	}
}

package mfa

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// denseLogN computes log N(x; μ, ΛΛᵀ + diag ψ) the slow way: build Σ densely, Cholesky
// it, log det from the diagonal, solve for the quadratic form. It also returns log det Σ.
func denseLogN(cp ComponentParams, x []float64) (logN, logDet float64) {
	D, d := len(cp.Mean), cp.Factors
	sig := make([]float64, D*D)
	for i := range D {
		for j := 0; j <= i; j++ {
			var s float64
			for k := range d {
				s += cp.Loadings[i*d+k] * cp.Loadings[j*d+k]
			}
			sig[i*D+j] = s
		}
		sig[i*D+i] += cp.Psi[i]
	}
	if err := cholesky(sig, D); err != nil {
		panic(err)
	}
	for i := range D {
		logDet += 2 * math.Log(sig[i*D+i])
	}
	// forward solve L u = x − μ; quad = ‖u‖².
	u := make([]float64, D)
	var quad float64
	for i := range D {
		v := x[i] - cp.Mean[i]
		for k := range i {
			v -= sig[i*D+k] * u[k]
		}
		u[i] = v / sig[i*D+i]
		quad += u[i] * u[i]
	}
	return -0.5 * (float64(D)*math.Log(2*math.Pi) + logDet + quad), logDet
}

func denseLogJoint(p Params, x []float64) []float64 {
	out := make([]float64, p.K)
	for y, cl := range p.Classes {
		lc := make([]float64, len(cl.Components))
		for c, cp := range cl.Components {
			l, _ := denseLogN(cp, x)
			lc[c] = math.Log(p.Pi[y]) + math.Log(cp.Weight) + l
		}
		out[y] = logSumExp(lc)
	}
	return out
}

func mustNew(t testing.TB, seed uint64, spec Spec) *Truth {
	t.Helper()
	tr, err := New(seed, spec)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type tcase struct {
	name    string
	seed    uint64
	S, K    int
	factors int
}

var cases = []tcase{
	{"S8_K2_seed1", 1, 8, 2, 8},
	{"S8_K3_seed2", 2, 8, 3, 16},
	{"S8_K4_seed3_nofactors", 3, 8, 4, 0},
	{"S16_K2_seed4", 4, 16, 2, 8},
	{"S16_K4_seed5", 5, 16, 4, 8},
}

func (c tcase) spec() Spec {
	s := DefaultSpec(c.S, c.K)
	s.Factors = c.factors
	return s
}

// Test 1: the Woodbury evaluation agrees with a dense Cholesky of Σ = ΛΛᵀ + diag ψ.
func TestLogJointMatchesDense(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustNew(t, tc.seed, tc.spec())
			p := tr.Params()
			e := tr.NewEvaluator()
			rng := prob.NewRand(prob.Seed(tc.seed, 99))
			x, _ := tr.Sample(rng, 4)
			D := tr.D()
			// add a far point: a class mean plus a large offset
			far := tr.ClassMean(0)
			for i := range far {
				far[i] += 0.7 * math.Sin(float64(i))
			}
			x = append(x, far...)
			var worst, worstDet float64
			got := make([]float64, tc.K)
			for n := range len(x) / D {
				xi := x[n*D : (n+1)*D]
				e.LogJoint(xi, got)
				want := denseLogJoint(p, xi)
				for y := range got {
					worst = math.Max(worst, math.Abs(got[y]-want[y])/math.Abs(want[y]))
				}
				for y, cl := range p.Classes {
					for c, cp := range cl.Components {
						l, ld := denseLogN(cp, xi)
						worst = math.Max(worst, math.Abs(e.LogComponent(xi, y, c)-l)/math.Abs(l))
						worstDet = math.Max(worstDet, math.Abs(tr.LogDetCov(y, c)-ld)/math.Abs(ld))
					}
				}
			}
			t.Logf("max relative error vs dense: log p(x,y) and log N %.2e, log det Σ %.2e", worst, worstDet)
			if worst > 1e-9 || worstDet > 1e-9 {
				t.Errorf("relative error %.3g (log density), %.3g (log det), want ≤ 1e-9", worst, worstDet)
			}
			// LogMarginal and Posterior are consistent with LogJoint.
			xi := x[:D]
			e.LogJoint(xi, got)
			lm := logSumExp(got)
			if v := e.LogMarginal(xi); v != lm {
				t.Errorf("LogMarginal %v, logsumexp LogJoint %v", v, lm)
			}
			post := make([]float64, tc.K)
			if v := tr.Posterior(xi, post); v != lm {
				t.Errorf("Posterior returned %v, want log p(x) %v", v, lm)
			}
			var s float64
			for y := range post {
				s += post[y]
				if d := math.Abs(post[y] - math.Exp(got[y]-lm)); d > 1e-15 {
					t.Errorf("posterior[%d] off by %g", y, d)
				}
			}
			if math.Abs(s-1) > 1e-12 {
				t.Errorf("posterior sums to %v", s)
			}
		})
	}
}

// componentCov is the dense Σ of cp.
func componentCov(cp ComponentParams) []float64 {
	D, d := len(cp.Mean), cp.Factors
	sig := make([]float64, D*D)
	for i := range D {
		for j := range D {
			var s float64
			for k := range d {
				s += cp.Loadings[i*d+k] * cp.Loadings[j*d+k]
			}
			sig[i*D+j] = s
		}
		sig[i*D+i] += cp.Psi[i]
	}
	return sig
}

// momentCheck compares the sample mean and covariance of n draws (from draw) with mu and
// sig: every mean and covariance entry as a z-score against its Gaussian-theory SE
// (mean: √(Σii/n); covariance: √((Σii Σjj + Σij²)/n), exact for Gaussian draws and a
// close approximation for the mixture); fails if max |z| > zmax or the mean's χ²_D is off.
func momentCheck(t *testing.T, D, n int, mu, sig []float64, draw func(x []float64), zmax float64) {
	t.Helper()
	sum := make([]float64, D)
	cross := make([]float64, D*D)
	x := make([]float64, D)
	r := make([]float64, D)
	for range n {
		draw(x)
		for i := range D {
			r[i] = x[i] - mu[i] // centred at the true mean: unbiased for Σ with divisor n
			sum[i] += r[i]
		}
		for i := range D {
			ri := r[i]
			row := cross[i*D : i*D+i+1]
			for j := range row {
				row[j] += ri * r[j]
			}
		}
	}
	fn := float64(n)
	var maxMean, maxCov, chi2 float64
	for i := range D {
		z := sum[i] / fn / math.Sqrt(sig[i*D+i]/fn)
		chi2 += z * z
		maxMean = math.Max(maxMean, math.Abs(z))
		for j := 0; j <= i; j++ {
			se := math.Sqrt((sig[i*D+i]*sig[j*D+j] + sig[i*D+j]*sig[i*D+j]) / fn)
			maxCov = math.Max(maxCov, math.Abs(cross[i*D+j]/fn-sig[i*D+j])/se)
		}
	}
	chiZ := (chi2 - float64(D)) / math.Sqrt(2*float64(D))
	t.Logf("n=%d D=%d: mean max|z| %.2f (χ² z %.2f), covariance max|z| %.2f over %d entries", n, D, maxMean, chiZ, maxCov, D*(D+1)/2)
	if maxMean > zmax || maxCov > zmax+0.5 || math.Abs(chiZ) > 5 {
		t.Errorf("moments off: mean max|z| %.2f, covariance max|z| %.2f (limits %.1f, %.1f), χ² z %.2f (limit 5)", maxMean, maxCov, zmax, zmax+0.5, chiZ)
	}
}

// Test 2: exact draws have the truth's moments, and labels have frequencies π.
func TestDrawsMatchMoments(t *testing.T) {
	for _, tc := range cases[:3] {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustNew(t, tc.seed, tc.spec())
			p := tr.Params()
			D := tr.D()
			rng := prob.NewRand(prob.Seed(tc.seed, 7))
			// one component (the last: a cross-fade one when ambiguity > 0)
			y := tc.K - 1
			c := tr.Components(y) - 1
			cp := p.Classes[y].Components[c]
			t.Run("component", func(t *testing.T) {
				momentCheck(t, D, 20000, cp.Mean, componentCov(cp), func(x []float64) { tr.SampleComponent(rng, y, c, x) }, 4.5)
			})
			// the class-0 mixture: mean Σ w μ, covariance Σ w (Σ_c + μ_c μ_cᵀ) − m mᵀ
			t.Run("class_mixture", func(t *testing.T) {
				m := tr.ClassMean(0)
				sig := make([]float64, D*D)
				for _, cp := range p.Classes[0].Components {
					cs := componentCov(cp)
					for i := range D {
						for j := range D {
							sig[i*D+j] += cp.Weight * (cs[i*D+j] + cp.Mean[i]*cp.Mean[j])
						}
					}
				}
				for i := range D {
					for j := range D {
						sig[i*D+j] -= m[i] * m[j]
					}
				}
				cs := p.Classes[0].Components
				draw := func(x []float64) {
					cc := categorical(rng, func(i int) float64 { return cs[i].Weight }, len(cs))
					tr.SampleComponent(rng, 0, cc, x)
				}
				// the mixture is not Gaussian: its covariance SE is wider than the
				// Gaussian formula, so the covariance limit is looser here.
				momentCheck(t, D, 20000, m, sig, draw, 6)
			})
			t.Run("labels", func(t *testing.T) {
				const n = 40000
				_, ys := tr.Sample(rng, n)
				counts := make([]float64, tc.K)
				for _, v := range ys {
					counts[v]++
				}
				var chi2, maxZ float64
				for k, pk := range p.Pi {
					e := n * pk
					chi2 += (counts[k] - e) * (counts[k] - e) / e
					maxZ = math.Max(maxZ, math.Abs(counts[k]-e)/math.Sqrt(e*(1-pk)))
				}
				df := float64(tc.K - 1)
				t.Logf("labels: χ² = %.2f on %v df, max|z| = %.2f", chi2, df, maxZ)
				if maxZ > 4 || chi2 > df+6*math.Sqrt(2*df) {
					t.Errorf("label frequencies off π: χ² %.2f (df %v), max|z| %.2f", chi2, df, maxZ)
				}
			})
		})
	}
}

// Test 3: E[log N(x; μ, Σ)] over draws from N(μ, Σ) is −½(D log 2π + log det Σ + D),
// and Var = D/2 (the quadratic form is χ²_D).
func TestExpectedLogDensity(t *testing.T) {
	for _, tc := range []tcase{cases[0], cases[2], cases[4]} {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustNew(t, tc.seed, tc.spec())
			e := tr.NewEvaluator()
			rng := prob.NewRand(prob.Seed(tc.seed, 3))
			D := tr.D()
			x := make([]float64, D)
			const n = 4000
			for _, yc := range [][2]int{{0, 0}, {tc.K - 1, tr.Components(tc.K-1) - 1}} {
				y, c := yc[0], yc[1]
				var s, s2 float64
				for range n {
					tr.SampleComponent(rng, y, c, x)
					l := e.LogComponent(x, y, c)
					s += l
					s2 += l * l
				}
				mean := s / n
				v := s2/n - mean*mean
				want := -0.5 * (float64(D)*math.Log(2*math.Pi) + tr.LogDetCov(y, c) + float64(D))
				se := math.Sqrt(float64(D) / 2 / n)
				t.Logf("component (%d,%d): E[log N] = %.4f, closed form %.4f, diff %.2f SE (SE %.4f); var %.2f vs D/2 = %v", y, c, mean, want, (mean-want)/se, se, v, D/2)
				if math.Abs(mean-want) > 4*se {
					t.Errorf("E[log N] %.4f vs %.4f: %.1f SE", mean, want, (mean-want)/se)
				}
				if math.Abs(v/(float64(D)/2)-1) > 0.15 {
					t.Errorf("Var[log N] %.2f, want D/2 = %v", v, D/2)
				}
			}
		})
	}
}

// Test 4: the Bayes accuracy by two routes (hits of the argmax posterior; mean max
// posterior) agrees within its paired SE, and the default spec is hard but not trivial.
func TestBayesAccuracyRoutes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seed    uint64
		S, K, n int
	}{
		{"S8_K2", 11, 8, 2, 3000},
		{"S8_K4", 12, 8, 4, 3000},
		{"S16_K3", 13, 16, 3, 3000},
		{"S16_K10", 14, 16, 10, 2000},
		{"S28_K4", 15, 28, 4, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustNew(t, tc.seed, DefaultSpec(tc.S, tc.K))
			e := tr.NewEvaluator()
			rng := prob.NewRand(prob.Seed(tc.seed, 5))
			x := make([]float64, tr.D())
			post := make([]float64, tc.K)
			var hit, mp, dsum, d2 float64
			for range tc.n {
				y := tr.SampleOne(rng, x)
				e.Posterior(x, post)
				best := 0
				for k := range post {
					if post[k] > post[best] {
						best = k
					}
				}
				h := 0.0
				if best == y {
					h = 1
				}
				hit += h
				mp += post[best]
				dsum += h - post[best]
				d2 += (h - post[best]) * (h - post[best])
			}
			n := float64(tc.n)
			hit, mp = hit/n, mp/n
			dm := dsum / n
			dse := math.Sqrt((d2/n - dm*dm) / n)
			acc := tr.BayesAccuracy(prob.NewRand(prob.Seed(tc.seed, 5)), tc.n)
			if acc.Hit != hit || math.Abs(acc.MaxPost-mp) > 1e-12 {
				t.Errorf("BayesAccuracy %+v disagrees with the same draws here (hit %v, max post %v)", acc, hit, mp)
			}
			t.Logf("Bayes accuracy: hits %.4f ± %.4f, mean max posterior %.4f ± %.4f, paired diff %.4f ± %.4f; H(Y|X) %.3f ± %.3f nats",
				hit, acc.HitSE, mp, acc.MaxPostSE, dm, dse, acc.NLL, acc.NLLSE)
			if math.Abs(dm) > 4*dse {
				t.Errorf("routes disagree: hits − max posterior = %.4f, SE %.4f", dm, dse)
			}
			if mp < 0.85 || mp > 0.99 || hit < 1/float64(tc.K)+0.3 {
				t.Errorf("default spec Bayes accuracy %.4f (hits %.4f), want in [0.85, 0.99]", mp, hit)
			}
		})
	}
}

// Test 5: FromParams(Params()) evaluates identically (also through JSON), and the seed
// determines everything.
func TestParamsRoundTripAndDeterminism(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustNew(t, tc.seed, tc.spec())
			p := tr.Params()
			tr2, err := FromParams(p)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var pj Params
			if err := json.Unmarshal(raw, &pj); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pj, p) {
				t.Fatal("JSON round trip changed the params")
			}
			tr3, err := FromParams(pj)
			if err != nil {
				t.Fatal(err)
			}
			x, _ := tr.Sample(prob.NewRand(1), 5)
			D := tr.D()
			a, b, c := make([]float64, tc.K), make([]float64, tc.K), make([]float64, tc.K)
			for n := range 5 {
				xi := x[n*D : (n+1)*D]
				tr.LogJoint(xi, a)
				tr2.LogJoint(xi, b)
				tr3.LogJoint(xi, c)
				if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a, c) {
					t.Fatalf("LogJoint differs: New %v, FromParams %v, via JSON %v", a, b, c)
				}
			}
			// same seed → identical; different seed → different.
			if !reflect.DeepEqual(mustNew(t, tc.seed, tc.spec()).Params(), p) {
				t.Error("same seed gave different params")
			}
			q := mustNew(t, tc.seed+1000, tc.spec()).Params()
			if reflect.DeepEqual(q.Classes, p.Classes) {
				t.Error("different seed gave identical params")
			}
			// Params is a copy: mutating it leaves the truth alone.
			p.Classes[0].Components[0].Mean[0] += 1
			tr.LogJoint(x[:D], b)
			tr2.LogJoint(x[:D], c)
			if !reflect.DeepEqual(b, c) {
				t.Error("mutating Params() changed the truth")
			}
		})
	}
}

// Test 6: bad specs and bad params give clear errors.
func TestValidation(t *testing.T) {
	good := DefaultSpec(16, 4)
	mod := func(f func(*Spec)) Spec { s := good; f(&s); return s }
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"S_small", mod(func(s *Spec) { s.S = 3 }), "image side S = 3 out of range [4, 32]"},
		{"S_large", mod(func(s *Spec) { s.S = 33 }), "image side S = 33"},
		{"K_one", mod(func(s *Spec) { s.K = 1 }), "number of classes K = 1 out of range [2, 10]"},
		{"K_large", mod(func(s *Spec) { s.K = 11 }), "K = 11"},
		{"components_zero", mod(func(s *Spec) { s.Components = 0 }), "components per class = 0 out of range [1, 8]"},
		{"components_large", mod(func(s *Spec) { s.Components = 9 }), "components per class = 9"},
		{"factors_negative", mod(func(s *Spec) { s.Factors = -1 }), "factors per component = -1 out of range [0, 16]"},
		{"factors_large", mod(func(s *Spec) { s.Factors = 17 }), "factors per component = 17"},
		{"noise_zero", mod(func(s *Spec) { s.Noise = 0 }), "pixel noise sd = 0 must be in (0, 10]"},
		{"noise_nan", mod(func(s *Spec) { s.Noise = math.NaN() }), "pixel noise sd = NaN"},
		{"ambiguity_negative", mod(func(s *Spec) { s.Ambiguity = -0.1 }), "ambiguity = -0.1 must be in [0, 0.9]"},
		{"ambiguity_large", mod(func(s *Spec) { s.Ambiguity = 0.95 }), "ambiguity = 0.95"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(1, tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("default spec invalid: %v", err)
	}
	for _, S := range []int{4, 8, 16, 28, 32} {
		for _, K := range []int{2, 10} {
			if _, err := New(3, DefaultSpec(S, K)); err != nil {
				t.Errorf("DefaultSpec(%d, %d): %v", S, K, err)
			}
		}
	}
	base := mustNew(t, 2, DefaultSpec(8, 3)).Params()
	for _, tc := range []struct {
		name string
		f    func(p *Params)
		want string
	}{
		{"pi_length", func(p *Params) { p.Pi = p.Pi[:2] }, "len(pi) = 2, want K = 3"},
		{"pi_sum", func(p *Params) { p.Pi[0] += 0.1 }, "pi sums to"},
		{"pi_negative", func(p *Params) { p.Pi[1] = -p.Pi[1] }, "pi[1]"},
		{"classes", func(p *Params) { p.Classes = p.Classes[:2] }, "2 classes, want K = 3"},
		{"no_components", func(p *Params) { p.Classes[1].Components = nil }, "class 1 has no components"},
		{"weights_sum", func(p *Params) { p.Classes[0].Components[0].Weight *= 2 }, "class 0 component weights sum to"},
		{"mean_nan", func(p *Params) { p.Classes[2].Components[1].Mean[5] = math.NaN() }, "class 2 component 1: mean[5] = NaN is not finite"},
		{"mean_length", func(p *Params) { p.Classes[0].Components[0].Mean = p.Classes[0].Components[0].Mean[:10] }, "len(mean) = 10, want D = 64"},
		{"loadings_inf", func(p *Params) { p.Classes[0].Components[0].Loadings[3] = math.Inf(1) }, "loadings[3] = +Inf is not finite"},
		{"loadings_length", func(p *Params) { p.Classes[0].Components[0].Factors++ }, "len(loadings) = 512, want D×factors = 576"},
		{"psi_zero", func(p *Params) { p.Classes[1].Components[0].Psi[7] = 0 }, "class 1 component 0: psi[7] = 0 must be positive and finite"},
		{"psi_nan", func(p *Params) { p.Classes[1].Components[0].Psi[7] = math.NaN() }, "psi[7] = NaN"},
		{"S_zero", func(p *Params) { p.S = 0 }, "image side S = 0"},
	} {
		t.Run("params_"+tc.name, func(t *testing.T) {
			p := base.clone()
			tc.f(&p)
			_, err := FromParams(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("FromParams: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSampleShapesAndNoAllocs(t *testing.T) {
	tr := mustNew(t, 9, DefaultSpec(8, 4))
	x, y := tr.Sample(prob.NewRand(2), 50)
	if len(x) != 50*64 || len(y) != 50 {
		t.Fatalf("Sample lengths %d, %d", len(x), len(y))
	}
	for _, v := range y {
		if v < 0 || int(v) >= tr.K() {
			t.Fatalf("label %d out of range", v)
		}
	}
	if tr.S() != 8 || tr.D() != 64 || tr.K() != 4 || tr.Components(0) != 5 {
		t.Errorf("S %d D %d K %d components %d", tr.S(), tr.D(), tr.K(), tr.Components(0))
	}
	e := tr.NewEvaluator()
	out := make([]float64, 4)
	if a := testing.AllocsPerRun(20, func() { e.LogJoint(x[:64], out); e.Posterior(x[64:128], out); e.LogMarginal(x[:64]) }); a != 0 {
		t.Errorf("Evaluator allocates %v times per call", a)
	}
	// K = 2 has one cross-fade pair; weights still sum to 1.
	tr2 := mustNew(t, 9, DefaultSpec(8, 2))
	if tr2.Components(0) != 4 {
		t.Errorf("K=2: %d components per class, want 3 + 1", tr2.Components(0))
	}
	sp := DefaultSpec(8, 3)
	sp.Ambiguity = 0
	if tr3 := mustNew(t, 9, sp); tr3.Components(1) != 3 {
		t.Errorf("ambiguity 0: %d components, want 3", tr3.Components(1))
	}
}

func BenchmarkLogJoint(b *testing.B) {
	for _, S := range []int{16, 28} {
		for _, K := range []int{4, 10} {
			b.Run(fmt.Sprintf("S%d_K%d", S, K), func(b *testing.B) {
				tr := mustNew(b, 1, DefaultSpec(S, K))
				x, _ := tr.Sample(rand.New(rand.NewPCG(1, 2)), 1)
				e := tr.NewEvaluator()
				out := make([]float64, K)
				b.ReportAllocs()
				for b.Loop() {
					e.LogJoint(x, out)
				}
			})
		}
	}
}

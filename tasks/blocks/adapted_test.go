package blocks

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/tasks"
)

// gaussLogits is a known-answer model on ℝ^D: K classes, class y's logit
// f(x)[y] = log π_y + Σ_d log N(x_d; m_yd, sd²), whose log Z on the box [−box, box]^D
// is exact (logZ).
type gaussLogits struct {
	d, k  int
	prior []float64
	mean  []float64 // [k][d]
	sd    float64
}

// at is f at n points x [n][d], [n][k].
func (m gaussLogits) at(x []float64, n int) ([]float64, error) {
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
	return out, nil
}

// logZ is log ∫_box Σ_y exp f exactly: Σ_y π_y Π_d [Φ((box − m)/sd) − Φ((−box − m)/sd)].
func (m gaussLogits) logZ(box float64) float64 {
	ly := make([]float64, m.k)
	for y := range m.k {
		v := math.Log(m.prior[y])
		for j := range m.d {
			mu := m.mean[y*m.d+j]
			v += math.Log(0.5 * (math.Erf((box-mu)/(m.sd*math.Sqrt2)) - math.Erf((-box-mu)/(m.sd*math.Sqrt2))))
		}
		ly[y] = v
	}
	return prob.LogSumExp(ly)
}

// TestAdaptedLogZKnownAnswer: the adapted estimate's known answer at D = 8 and 16. A
// Gaussian-mixture model (3 classes, unit-free means in [−2, 2], sd 1.3: wider than
// and away from the task's truth) whose log Z on the box is exact: the truth
// proposal alone refuses it (EvaluateLogits: k̂ > ½ or ESS < 100); AdaptedLogZ with
// prob.DefaultAdapt accepts it, agrees with the exact log Z within 3 of its SEs, and
// is deterministic in its seed (checked at D = 8); EvaluateLogitsWith then gives the KLs from it.
func TestAdaptedLogZKnownAnswer(t *testing.T) {
	for _, task := range []string{"blocks:4,gmm:3,2", "blocks:8,gmm:3,2"} {
		t.Run(task, func(t *testing.T) {
			p, s, truth := evalFixture(t, task)
			m := gaussLogits{d: s.Dim, k: s.K, prior: []float64{0.2, 0.3, 0.5}, mean: make([]float64, s.K*s.Dim), sd: 1.3}
			rng := prob.NewRand(prob.Seed(21, uint64(s.Dim)))
			for i := range m.mean {
				m.mean[i] = 2 * (2*rng.Float64() - 1)
			}
			logits, _ := m.at(s.X, s.M+s.N)
			truthOnly, err := EvaluateLogits(s, logits)
			if err != nil {
				t.Fatal(err)
			}
			if !truthOnly.Refused() {
				t.Errorf("the truth proposal alone is not refused: ESS %.0f, k̂ %.2f", truthOnly.IS.ESS, truthOnly.IS.K)
			}
			seed := prob.Seed(tasks.TableSeed(7, tasks.Table{Point: p}), tagAdapt)
			lse0 := make([]float64, s.N)
			for j := range s.N {
				lse0[j] = prob.LogSumExp(logits[(s.M+j)*s.K : (s.M+j+1)*s.K])
			}
			e, err := s.AdaptedLogZ(seed, truth, prob.DefaultAdapt, lse0, m.at)
			if err != nil {
				t.Fatal(err)
			}
			want := m.logZ(truth.Grid.Box)
			t.Logf("truth proposal: ESS %.0f, k̂ %.2f (%s); adapted: log Ẑ %.4f ± %.4f, exact %.4f, ESS %.0f, k̂ %.2f",
				truthOnly.IS.ESS, truthOnly.IS.K, truthOnly.IS.Reason, e.LogZ, e.SE, want, e.ESS, e.K)
			if e.Refused() {
				t.Fatalf("adapted estimate refused: %s", e.Reason)
			}
			if z := (e.LogZ - want) / e.SE; math.Abs(z) > 3 {
				t.Errorf("log Ẑ %.4f ± %.4f, exact %.4f: z = %.2f", e.LogZ, e.SE, want, z)
			}
			if s.Dim == 8 { // once: the test's time
				again, _ := s.AdaptedLogZ(seed, truth, prob.DefaultAdapt, lse0, m.at)
				if again.LogZ != e.LogZ || again.SE != e.SE {
					t.Errorf("not deterministic: %v ± %v, then %v ± %v", e.LogZ, e.SE, again.LogZ, again.SE)
				}
			}
			ev, err := EvaluateLogitsWith(s, logits, &e)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Refused() || ev.KLJoint != ev.MC.Joint+e.LogZ || ev.KLJointSE != math.Hypot(ev.MC.JointSE, e.SE) {
				t.Errorf("KLs from the adapted estimate: refused %v, kl_joint %v (MC %v + log Ẑ %v), SE %v", ev.Refused(), ev.KLJoint, ev.MC.Joint, e.LogZ, ev.KLJointSE)
			}
		})
	}
}

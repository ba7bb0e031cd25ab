package kernel

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// TestBitsLogZ: the enumerated log Z equals the log-sum-exp of every cell's logit, and
// its gradient the finite differences of log Z.
func TestBitsLogZ(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      int
		hidden []int
	}{{"D=3 linear", 3, nil}, {"D=5 mlp", 5, []int{8}}, {"D=11 mlp two chunks", 11, []int{6, 5}}} {
		t.Run(c.name, func(t *testing.T) {
			spec := SpecBits{D: c.d, K: 3, Hidden: c.hidden, Exact: true, Steps: 1, Batch: 16, PxWeight: 1}
			tr := newTrainerBits(spec)
			theta := InitMLPBits(5, c.d, c.hidden, 3)
			copy(tr.theta, theta)
			clear(tr.grad)
			lz := tr.logZ(tr.theta, 1, true)
			lg, err := BitsLogits(c.d, c.hidden, 3, theta)
			if err != nil {
				t.Fatal(err)
			}
			q := prob.Softmax(lg)
			_ = q
			m := math.Inf(-1)
			for _, v := range lg {
				m = max(m, v)
			}
			var s float64
			for _, v := range lg {
				s += math.Exp(v - m)
			}
			if want := m + math.Log(s); math.Abs(lz-want) > 1e-4 {
				t.Fatalf("log Z = %v, log-sum-exp of the logits %v", lz, want)
			}
			for _, i := range []int{0, len(theta) / 2, len(theta) - 1} {
				const h = 1e-2
				th := append([]float32(nil), tr.theta...)
				th[i] += h
				up := tr.logZ(th, 1, false)
				th[i] -= 2 * h
				down := tr.logZ(th, 1, false)
				fd := (up - down) / (2 * h)
				if g := float64(tr.grad[i]); math.Abs(g-fd) > 2e-3+2e-2*math.Abs(fd) {
					t.Fatalf("∂log Z/∂θ[%d] = %v, finite differences %v", i, g, fd)
				}
			}
		})
	}
}

// TestBitsExactLearns: on a known truth exact JEM learns a joint much closer than the
// baseline's (which leaves q(x) to chance). The recipes' own versions of this test
// live in their packages (methods/pcd, ed, nce, snl).
func TestBitsExactLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 runs")
	}
	const d, k = 6, 2
	task := prob.DrawBits(9, d, k, 2)
	truth := task.Truth()
	xs, ys := task.Sample(4, 4000)
	hidden := []int{32}
	kl := map[bool]float64{}
	for _, exact := range []bool{false, true} {
		spec := SpecBits{D: d, K: k, Hidden: hidden, Exact: exact, Steps: 800, Batch: 64, PxWeight: 1}
		res, err := TrainBits(context.Background(), spec, []RunBits{{Seed: 1, Theta: InitMLPBits(2, d, hidden, k), LR: 0.01, X: xs, Y: ys}})
		if err != nil {
			t.Fatal(err)
		}
		lg, _ := BitsLogits(d, hidden, k, res[0].Theta)
		kl[exact] = prob.KL(truth, prob.Softmax(lg))
	}
	t.Logf("joint KL: baseline %.3f, exact jem %.3f", kl[false], kl[true])
	if !(kl[true] < 0.5*kl[false] && kl[true] < 0.15) {
		t.Errorf("exact jem's KL %v: want under half the baseline's %v and under 0.15", kl[true], kl[false])
	}
}

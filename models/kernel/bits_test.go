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
			spec := SpecBits{D: c.d, K: 3, Hidden: c.hidden, Method: JEMBits, Steps: 1, Batch: 16, PxWeight: 1}
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

// TestPCDBitsKnownAnswer: with the parameters fixed (lr 0) the persistent chains'
// states are draws of q(x) ∝ Σ_y exp f(x)[y], for both proposals.
func TestPCDBitsKnownAnswer(t *testing.T) {
	const d, k = 5, 2
	hidden := []int{8}
	theta := InitMLPBits(11, d, hidden, k)
	for i := range theta { // a peaked q(x): scaled weights
		theta[i] *= 3
	}
	lg, _ := BitsLogits(d, hidden, k, theta)
	qx := prob.Marginal(prob.Softmax(lg), 1<<d, k)
	for _, gwg := range []bool{false, true} {
		spec := SpecBits{D: d, K: k, Hidden: hidden, Method: PCDBits, Steps: 400, Batch: 64, PxWeight: 1,
			Buffer: 4096, ChainSteps: 2, GWG: gwg}
		res, err := TrainBits(context.Background(), spec, []RunBits{{Seed: 3, Theta: theta, LR: 0, X: []uint32{1}, Y: []int32{0}}})
		if err != nil {
			t.Fatal(err)
		}
		hist := make([]float64, 1<<d)
		for _, s := range res[0].Buffer {
			hist[s] += 1 / float64(len(res[0].Buffer))
		}
		// Every chain took about 400·64/4096·2 = 12.5 flips: mixed on 5 bits; the TV
		// of 4096 draws over 32 states is about 0.04.
		if tv := prob.TotalVariation(hist, qx); tv > 0.07 {
			t.Fatalf("gwg=%v: TV(chains, q) = %v (acceptance %v)", gwg, tv, res[0].Accept)
		}
	}
}

// TestBitsRecipesLearn: on a known truth every JEM recipe learns a joint much closer
// than the baseline's (which leaves q(x) to chance), and exact JEM the closest.
func TestBitsRecipesLearn(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 4 runs")
	}
	const d, k = 6, 2
	task := prob.DrawBits(9, d, k, 2)
	truth := task.Truth()
	xs, ys := task.Sample(4, 4000)
	hidden := []int{32}
	kl := map[MethodBits]float64{}
	for _, m := range []MethodBits{BaselineBits, JEMBits, PCDBits, EDBits} {
		spec := SpecBits{D: d, K: k, Hidden: hidden, Method: m, Steps: 800, Batch: 64, PxWeight: 1,
			Buffer: 1000, Reinit: 0.05, ChainSteps: 4, ED: EDOptions{M: 8, T: 0.1, W: 1}}
		res, err := TrainBits(context.Background(), spec, []RunBits{{Seed: 1, Theta: InitMLPBits(2, d, hidden, k), LR: 0.01, X: xs, Y: ys}})
		if err != nil {
			t.Fatal(err)
		}
		lg, _ := BitsLogits(d, hidden, k, res[0].Theta)
		kl[m] = prob.KL(truth, prob.Softmax(lg))
	}
	t.Logf("joint KL: baseline %.3f jem %.3f pcd %.3f ed %.3f", kl[BaselineBits], kl[JEMBits], kl[PCDBits], kl[EDBits])
	for _, m := range []MethodBits{JEMBits, PCDBits, EDBits} {
		if !(kl[m] < 0.5*kl[BaselineBits]) {
			t.Errorf("method %d: joint KL %v, not under half the baseline's %v", m, kl[m], kl[BaselineBits])
		}
	}
	if !(kl[JEMBits] <= kl[PCDBits]+0.02 && kl[JEMBits] < 0.15) {
		t.Errorf("exact jem's KL %v: want the least (pcd %v) and under 0.15", kl[JEMBits], kl[PCDBits])
	}
}

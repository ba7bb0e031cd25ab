package pcd

import (
	"context"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// bitsSpec is the binary spec of pcd's hook at grid g.
func bitsSpec(t *testing.T, g schemas.Grid, s kernel.SpecBits) kernel.SpecBits {
	t.Helper()
	if err := bits(g, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBitsKnownAnswer: with the parameters fixed (lr 0) the persistent chains' states
// are draws of q(x) ∝ Σ_y exp f(x)[y], for both proposals; the acceptance is reported
// in Stats too.
func TestBitsKnownAnswer(t *testing.T) {
	const d, k = 5, 2
	hidden := []int{8}
	theta := kernel.InitMLPBits(11, d, hidden, k)
	for i := range theta { // a peaked q(x): scaled weights
		theta[i] *= 3
	}
	lg, _ := kernel.BitsLogits(d, hidden, k, theta)
	qx := prob.Marginal(prob.Softmax(lg), 1<<d, k)
	for _, c := range []struct{ name, proposal string }{{"uniform", "uniform"}, {"gwg", "gwg"}} {
		t.Run(c.name, func(t *testing.T) {
			g := schemas.Grid{Proposal: c.proposal, BufferSize: 4096, ChainSteps: 2}
			spec := bitsSpec(t, g, kernel.SpecBits{D: d, K: k, Hidden: hidden, Steps: 400, Batch: 64, PxWeight: 1})
			res, err := kernel.TrainBits(context.Background(), spec, []kernel.RunBits{{Seed: 3, Theta: theta, LR: 0, X: []uint32{1}, Y: []int32{0}}})
			if err != nil {
				t.Fatal(err)
			}
			hist := make([]float64, 1<<d)
			for _, s := range res[0].Buffer {
				hist[s] += 1 / float64(len(res[0].Buffer))
			}
			// Every chain took about 400·64/4096·2 = 12.5 flips: mixed on 5 bits; the
			// TV of 4096 draws over 32 states is about 0.04.
			if tv := prob.TotalVariation(hist, qx); tv > 0.07 {
				t.Fatalf("TV(chains, q) = %v (acceptance %v)", tv, res[0].Accept)
			}
			if !(res[0].Accept > 0 && res[0].Accept < 1) || res[0].Stats["accept"] != res[0].Accept {
				t.Errorf("acceptance %v, stats %v", res[0].Accept, res[0].Stats)
			}
		})
	}
}

// TestBitsLearns: on a known truth pcd learns a joint much closer than the baseline's
// (which leaves q(x) to chance), for both proposals.
func TestBitsLearns(t *testing.T) {
	const d, k = 6, 2
	task := prob.DrawBits(9, d, k, 2)
	truth := task.Truth()
	xs, ys := task.Sample(4, 4000)
	hidden := []int{32}
	run := kernel.RunBits{Seed: 1, Theta: kernel.InitMLPBits(2, d, hidden, k), LR: 0.01, X: xs, Y: ys}
	base := kernel.SpecBits{D: d, K: k, Hidden: hidden, Steps: 800, Batch: 64, PxWeight: 1}
	kl := func(s kernel.SpecBits) float64 {
		res, err := kernel.TrainBits(context.Background(), s, []kernel.RunBits{run})
		if err != nil {
			t.Fatal(err)
		}
		lg, _ := kernel.BitsLogits(d, hidden, k, res[0].Theta)
		return prob.KL(truth, prob.Softmax(lg))
	}
	klBase := kl(base)
	for _, c := range []struct{ name, proposal string }{{"uniform", "uniform"}, {"gwg", "gwg"}} {
		t.Run(c.name, func(t *testing.T) {
			g := schemas.Grid{Proposal: c.proposal, BufferSize: 1000, ReinitFreq: 0.05, ChainSteps: 4}
			klPCD := kl(bitsSpec(t, g, base))
			t.Logf("joint KL: baseline %.3f pcd %.3f", klBase, klPCD)
			if !(klPCD < 0.5*klBase) {
				t.Errorf("joint KL %v, not under half the baseline's %v", klPCD, klBase)
			}
		})
	}
}

// TestBitsHook: the binary hook takes the uniform and gwg proposals and refuses the
// others, a buffer smaller than the batch and no chain steps.
func TestBitsHook(t *testing.T) {
	for _, c := range []struct {
		name string
		g    schemas.Grid
		ok   bool
	}{
		{"uniform", schemas.Grid{Proposal: "uniform", BufferSize: 64, ChainSteps: 1}, true},
		{"gwg", schemas.Grid{Proposal: "gwg", BufferSize: 100, ChainSteps: 5, ReinitFreq: 1}, true},
		{"neighbour", schemas.Grid{Proposal: "neighbour", BufferSize: 100, ChainSteps: 5}, false},
		{"small buffer", schemas.Grid{Proposal: "uniform", BufferSize: 63, ChainSteps: 5}, false},
		{"no steps", schemas.Grid{Proposal: "uniform", BufferSize: 100, ChainSteps: 0}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := kernel.SpecBits{D: 4, K: 2, Steps: 1, Batch: 64}
			err := bits(c.g, &s)
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
			if c.ok {
				if err := s.Validate(); err != nil || s.Objective == nil {
					t.Fatalf("spec %+v: %v", s, err)
				}
			}
		})
	}
}

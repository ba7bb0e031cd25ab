package mala

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/internal/knownblocks"
	"github.com/jemcheck/jemcheck/internal/knownmix"
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestHooks: mala trains on the plane and on block tasks through one hook that sets
// its objective and keeps its buffer, refuses a buffer smaller than the batch, and
// keeps its plane.sampler hook (MALA from uniform at the run's adapted step).
func TestHooks(t *testing.T) {
	m, ok := methods.Lookup(Name)
	if !ok {
		t.Fatal("mala is not registered")
	}
	for kind, plug := range map[string]methods.Plug[func(schemas.Grid, *kernel.Spec2D) error]{methods.KindPlane: methods.Plane, methods.KindBlocks: methods.Blocks} {
		h, ok := plug.Of(m.Name)
		if !ok {
			t.Fatalf("no %s hook", kind)
		}
		s := knownmix.SmokeSpec(10)
		if err := h(schemas.DefaultGrid(), &s); err != nil || s.Objective == nil || !s.KeepBuffer {
			t.Fatalf("%s hook: %v, objective set %v, keep buffer %v", kind, err, s.Objective != nil, s.KeepBuffer)
		}
		s.Batch = 20000
		if err := h(schemas.DefaultGrid(), &s); err == nil {
			t.Errorf("%s hook accepts buffer_size 10000 for batch 20000", kind)
		}
	}
	sm, ok := methods.PlaneSampler.Of(m.Name)
	if !ok {
		t.Fatal("no plane.sampler hook")
	}
	if c := sm(schemas.DefaultGrid()); !c.MH || !c.Adapted || c.Steps != 20 || c.Validate() != nil {
		t.Errorf("sampler %+v", c)
	}
}

// TestTrain: mala trains a 2-D run through its hook without diverging, two runs of one
// seed agree bit for bit, the final buffer is [buffer_size][2] with its chains in the
// box, η adapted (its mean acceptance over the run, from η = 0.01, between ½ and
// 0.95), and the model's cell TV from the truth (20×20 cells) falls below ⅗ of the
// initial model's and below the baseline's of the same schedule.
func TestTrain(t *testing.T) {
	g := schemas.DefaultGrid()
	g.BufferSize = 1000
	spec := knownmix.SmokeSpec(300)
	if err := spec2D(g, &spec); err != nil {
		t.Fatal(err)
	}
	r, theta0 := knownmix.Train(t, spec, knownmix.Standard, 3)
	rb, _ := knownmix.Train(t, knownmix.SmokeSpec(300), knownmix.Standard, 3)
	tv0, err := knownmix.Standard.ModelTV(spec.Hidden, 2, theta0, 20, knownmix.Box)
	if err != nil {
		t.Fatal(err)
	}
	tv, _ := knownmix.Standard.ModelTV(spec.Hidden, 2, r.Theta, 20, knownmix.Box)
	tvb, _ := knownmix.Standard.ModelTV(spec.Hidden, 2, rb.Theta, 20, knownmix.Box)
	t.Logf("loss %.4f, η %.4g, acceptance %.3f, buffer %d in box %.3f, cell TV %.4f (initial %.4f, baseline %.4f), stats %v",
		r.Loss, r.StepSize, r.Accept, len(r.Buffer), r.InBox, tv, tv0, tvb, r.Stats)
	if len(r.Buffer) != 2*g.BufferSize || r.InBox != 1 {
		t.Errorf("buffer of %d values, %.3f in the box", len(r.Buffer), r.InBox)
	}
	if !(r.StepSize > 0) || r.StepSize == g.StepSize || !(r.Accept > 0.5 && r.Accept < 0.95) {
		t.Errorf("η %v (initial %v), acceptance %v", r.StepSize, g.StepSize, r.Accept)
	}
	if r.Stats["mala_step"] != r.StepSize || r.Stats["mala_accept"] != r.Accept {
		t.Errorf("stats %v", r.Stats)
	}
	if !(tv < 0.6*tv0 && tv < tvb) {
		t.Errorf("cell TV %.4f, initial %.4f, baseline %.4f", tv, tv0, tvb)
	}
}

// TestBlocks: on the 2-block task, mala (its defaults) trains the block-additive model
// (TrainAdditive, D = 4) to an exact joint KL under a fifth of the initial model's and
// half the baseline's, within 0.1 nats of exact JEM's (the schedule of
// TestAdditiveExactJEMFits: 300 steps of batch 512; mala 0.084, jem 0.037); and the joint MLP (TrainJoint) on a 4-block task (D = 8)
// stays finite, its buffer [buffer_size][8].
func TestBlocks(t *testing.T) {
	b := knownblocks.New(t, "blocks:2,gmm:2,1", 3, 4, 512)
	theta := kernel.InitAdditive(1, knownblocks.Hidden, 2, 2)
	kl := func(th []float32) float64 { return b.KL(t, th) }
	base := kernel.Spec2D{TrainGrid: 16, ShiftGrid: true} // 300 steps of batch 512 (knownblocks)
	train := func(s kernel.Spec2D) kernel.Result2D { return b.TrainAdditive(t, s, theta, 300) }
	s := base
	klBase := kl(train(s).Theta)
	s.Exact = true
	klJEM := kl(train(s).Theta)
	s = base
	gr := schemas.DefaultGrid()
	if err := spec2D(gr, &s); err != nil {
		t.Fatal(err)
	}
	r := train(s)
	klM := kl(r.Theta)
	start := kl(theta)
	t.Logf("joint KL: start %.4f, baseline %.4f, jem %.4f, mala %.4f (η %.4g, acceptance %.3f, buffer in box %.3f)",
		start, klBase, klJEM, klM, r.StepSize, r.Accept, r.InBox)
	if !(klM < 0.2*start && klM < 0.5*klBase && klM < klJEM+0.1) {
		t.Errorf("mala's joint KL %.4f: start %.4f, baseline %.4f, exact jem %.4f", klM, start, klBase, klJEM)
	}
	if len(r.Buffer) != 4*gr.BufferSize {
		t.Errorf("buffer of %d values, want %d × 4", len(r.Buffer), gr.BufferSize)
	}

	// The joint MLP in D = 8.
	spec8, _ := prob.ParseBlocksSpec("blocks:4,gmm:2,1")
	xs, ys := spec8.Draw(5).Sample(6, 256)
	x8 := make([]float32, len(xs))
	for i, v := range xs {
		x8[i] = float32(v)
	}
	sj := kernel.SpecJoint{Spec2D: kernel.Spec2D{Hidden: []int{16}, K: 2, Steps: 50, Batch: 64, Box: 5, PxWeight: 1}, Dim: 8}
	if err := spec2D(gr, &sj.Spec2D); err != nil {
		t.Fatal(err)
	}
	out, err := kernel.TrainJoint(context.Background(), sj, []kernel.RunAdditive{{Seed: 7, Theta: kernel.InitJoint(8, sj.Hidden, 2, 8), LR: 3e-3, X: x8, Y: ys}})
	if err != nil {
		t.Fatal(err)
	}
	j := out[0]
	t.Logf("joint D=8: loss %.4f, η %.4g, acceptance %.3f, buffer in box %.3f", j.Loss, j.StepSize, j.Accept, j.InBox)
	if j.Diverged || math.IsNaN(float64(j.Loss)) || slices.ContainsFunc(j.Theta, func(v float32) bool { return v-v != 0 }) {
		t.Errorf("joint run: diverged %v at %d, loss %v", j.Diverged, j.DivergedStep, j.Loss)
	}
	if len(j.Buffer) != 8*gr.BufferSize || !(j.StepSize > 0) {
		t.Errorf("joint run: buffer of %d values, η %v", len(j.Buffer), j.StepSize)
	}
}

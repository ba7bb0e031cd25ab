package jarzynski

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

// TestHooks: jarzynski trains on the plane and on block tasks through one hook that
// sets its objective, and keeps its plane.sampler hook (weighted walkers from uniform
// at the run's adapted step).
func TestHooks(t *testing.T) {
	m, ok := methods.Lookup(Name)
	if !ok {
		t.Fatal("jarzynski is not registered")
	}
	for kind, plug := range map[string]methods.Plug[func(schemas.Grid, *kernel.Spec2D) error]{methods.KindPlane: methods.Plane, methods.KindBlocks: methods.Blocks} {
		h, ok := plug.Of(m.Name)
		if !ok {
			t.Fatalf("no %s hook", kind)
		}
		s := knownmix.SmokeSpec(10)
		if err := h(schemas.DefaultGrid(), &s); err != nil || s.Objective == nil {
			t.Fatalf("%s hook: %v, objective set %v", kind, err, s.Objective != nil)
		}
		g := schemas.DefaultGrid()
		g.ESSResample = 2
		if err := h(g, &s); err == nil {
			t.Errorf("%s hook accepts ess_resample 2", kind)
		}
	}
	sm, ok := methods.PlaneSampler.Of(m.Name)
	if !ok {
		t.Fatal("no plane.sampler hook")
	}
	if c := sm(schemas.DefaultGrid()); !c.Weighted || !c.Adapted || c.Steps != 20 || c.Validate() != nil {
		t.Errorf("sampler %+v", c)
	}
}

// TestTrain: jarzynski trains a 2-D run through its hook without diverging, two runs of
// one seed agree bit for bit, η adapted (its mean min(1, ratio) over the run, from
// η = 0.01, between ½ and 0.95), its diagnostics reported, and the model's cell TV
// from the truth (20×20 cells) falls below ¾ of the initial model's and below the
// baseline's of the same schedule (0.57 against 0.82 and 0.93).
func TestTrain(t *testing.T) {
	g := schemas.DefaultGrid()
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
	t.Logf("loss %.4f, η %.4g, acceptance %.3f, resamplings %d, cell TV %.4f (initial %.4f, baseline %.4f), stats %v",
		r.Loss, r.StepSize, r.Accept, r.Resamples, tv, tv0, tvb, r.Stats)
	if !(r.StepSize > 0) || r.StepSize == g.StepSize || !(r.Accept > 0.5 && r.Accept < 0.95) || r.Resamples < 1 {
		t.Errorf("η %v (initial %v), acceptance %v, resamplings %d", r.StepSize, g.StepSize, r.Accept, r.Resamples)
	}
	if r.Stats["jarzynski_step"] != r.StepSize || r.Stats["jarzynski_accept"] != r.Accept || r.Stats["jarzynski_resamples"] != float64(r.Resamples) ||
		!(r.Stats["jarzynski_ess"] > 0 && r.Stats["jarzynski_ess"] <= 1) || r.Buffer != nil {
		t.Errorf("stats %v, buffer of %d values", r.Stats, len(r.Buffer))
	}
	if !(tv < 0.75*tv0 && tv < tvb) {
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
	t.Logf("joint KL: start %.4f, baseline %.4f, jem %.4f, jarzynski %.4f (η %.4g, acceptance %.3f, %d resamplings, stats %v)",
		start, klBase, klJEM, klM, r.StepSize, r.Accept, r.Resamples, r.Stats)
	if !(klM < 0.1*start && klM < 0.1*klBase && klM < klJEM+0.5) {
		t.Errorf("jarzynski's joint KL %.4f: start %.4f, baseline %.4f, exact jem %.4f", klM, start, klBase, klJEM)
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
	t.Logf("joint D=8: loss %.4f, η %.4g, acceptance %.3f, %d resamplings, stats %v", j.Loss, j.StepSize, j.Accept, j.Resamples, j.Stats)
	if j.Diverged || math.IsNaN(float64(j.Loss)) || slices.ContainsFunc(j.Theta, func(v float32) bool { return v-v != 0 }) {
		t.Errorf("joint run: diverged %v at %d, loss %v", j.Diverged, j.DivergedStep, j.Loss)
	}
	if !(j.StepSize > 0) {
		t.Errorf("joint run: η %v", j.StepSize)
	}
}

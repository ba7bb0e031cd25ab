package kernel

import "testing"

// TestGradEvalsPerStep counts the passes a training step makes: the parameter pass over
// the trainer's P lanes, plus every call of the model's energy with its gradient (the
// Langevin recipes' chains), plus sgld's B·steps input gradients (sgldSteps calls the
// network directly); the count per step must equal GradEvalsPerStep.
func TestGradEvalsPerStep(t *testing.T) {
	const B, steps = 32, 7
	n := 64
	X0, X1, Y := make([]float32, n), make([]float32, n), make([]int32, n)
	for i := range n {
		X0[i], X1[i] = float32(i%8)-4, float32(i/8)-4
		Y[i] = int32(i % 2)
	}
	lo := LangevinOptions{Steps: 3, Step: 0.01, Adapt: true, Buffer: 256, Reinit: 0.05, Noise: true, L2: 0.1, ESS: 0.5}
	sg := OfficialSGLD()
	sg.Steps, sg.Buffer = 4, 256
	cases := []struct {
		name string
		m    Method2D
		want int64
	}{
		{"baseline", Baseline2D, B},
		{"jem", JEM2D, B + 16*16},
		{"sgld", SGLD2D, 2*B + B*4},
		{"mala", MALA2D, 2*B + B*(1+3)},
		{"jarzynski", Jarzynski2D, 2*B + B*(1+3)},
		{"shortrun", ShortRun2D, 2*B + B*3},
		{"ed", ED2D, B * (1 + 4)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec2D{Hidden: []int{8}, K: 2, Method: tc.m, Steps: steps, Batch: B, PxWeight: 1, Box: 5, TrainGrid: 16,
				SGLD: sg, Langevin: lo, ED: DefaultED()}
			if err := spec.validate(); err != nil {
				t.Fatal(err)
			}
			if got := spec.GradEvalsPerStep(); got != tc.want {
				t.Fatalf("GradEvalsPerStep = %d, want %d", got, tc.want)
			}
			tr := newTrainer2D(spec)
			var calls int64
			en := tr.en
			tr.en = func(x []float32, P int, e, grad []float32) {
				if grad != nil {
					calls += int64(P)
				}
				en(x, P, e, grad)
			}
			run := Run2D{Seed: 5, Theta: InitMLP2D(6, spec.Hidden, 2), LR: 1e-3, X0: X0, X1: X1, Y: Y}
			res := tr.train(&run)
			if res.Diverged {
				t.Fatalf("diverged at step %d", res.DivergedStep)
			}
			if tc.m == Jarzynski2D {
				calls -= B // the walkers' first energy, before training (walkersUniform)
			}
			perStep := int64(tr.P) + calls/steps
			if tc.m == SGLD2D {
				perStep += int64(B * sg.Steps)
			}
			if perStep != tc.want || calls%steps != 0 {
				t.Errorf("counted %d passes a step (%d energy passes over %d steps), want %d", perStep, calls, steps, tc.want)
			}
		})
	}
}

package kernel

import "testing"

// TestGradEvalsPerStep counts the passes a training step makes: the parameter pass over
// the trainer's P lanes plus every evaluation of the model with its gradient through
// Step.LSE (a test objective's moves); the count per step must equal GradEvalsPerStep.
func TestGradEvalsPerStep(t *testing.T) {
	const B, steps = 32, 7
	n := 64
	X0, X1, Y := make([]float32, n), make([]float32, n), make([]int32, n)
	for i := range n {
		X0[i], X1[i] = float32(i%8)-4, float32(i/8)-4
		Y[i] = int32(i % 2)
	}
	cases := []struct {
		name  string
		exact bool
		obj   *testObjective
		want  int64
	}{
		{"baseline", false, nil, B},
		{"jem", true, nil, B + 16*16},
		{"objective", false, &testObjective{Steps: 4}, 2*B + B*4},
		{"objective without moves", false, &testObjective{}, 2 * B},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec2D{Hidden: []int{8}, K: 2, Exact: tc.exact, Steps: steps, Batch: B, PxWeight: 1, Box: 5, TrainGrid: 16}
			if tc.obj != nil {
				spec.Objective = func() Objective { return tc.obj }
			}
			if err := spec.validate(2); err != nil {
				t.Fatal(err)
			}
			if got := spec.GradEvalsPerStep(2); got != tc.want {
				t.Fatalf("GradEvalsPerStep = %d, want %d", got, tc.want)
			}
			tr := newTrainer2D(spec)
			run := Run2D{Seed: 5, Theta: InitMLP2D(6, spec.Hidden, 2), LR: 1e-3, X0: X0, X1: X1, Y: Y}
			res := tr.train(&run)
			if res.Diverged {
				t.Fatalf("diverged at step %d", res.DivergedStep)
			}
			var calls int64
			if tc.obj != nil {
				calls = tc.obj.Calls
			}
			perStep := int64(tr.P) + calls/steps
			if perStep != tc.want || calls%steps != 0 {
				t.Errorf("counted %d passes a step (%d gradient evaluations over %d steps), want %d", perStep, calls, steps, tc.want)
			}
		})
	}
}

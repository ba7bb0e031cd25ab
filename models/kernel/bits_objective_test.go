package kernel

import (
	"context"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// ceObjective is the cross-entropy alone (P = B, no loss of its own): the generic path
// must train it as the baseline (a spec with neither Exact nor Objective) does.
type ceObjective struct{}

func (ceObjective) Lanes(B, _ int) int                       { return B }
func (ceObjective) Params() int                              { return 0 }
func (ceObjective) GradEvals(int) int64                      { return 0 }
func (ceObjective) Begin(*Step)                              {}
func (ceObjective) Fill(*Step)                               {}
func (ceObjective) Loss(*Step, []float32, []float32) float32 { return 0 }
func (ceObjective) End(*Step, *Result2D)                     {}

// wideObjective is ceObjective with P lanes whatever the batch (Validate's bound).
type wideObjective struct {
	ceObjective
	P int
}

func (o wideObjective) Lanes(int, int) int { return o.P }

// probeObjective checks what a binary run shows an objective: it has one parameter
// with a constant gradient, evaluates the model at the data lanes in Fill (gradient
// included), and reports in End whether the lanes were binary and st.Data the draws'
// bits, its parameter, and the last step's data lanes as its buffer.
type probeObjective struct {
	lse, grad []float32
	ok        bool
}

func (o *probeObjective) Lanes(B, _ int) int { return B + VW }
func (*probeObjective) Params() int          { return 1 }
func (*probeObjective) GradEvals(int) int64  { return 0 }
func (o *probeObjective) Begin(st *Step) {
	o.lse, o.grad = make([]float32, st.P), make([]float32, st.Dim*st.P)
	o.ok = st.Binary && st.Dim > 0 && len(st.Data) == st.Dim
	for c := range st.Data {
		for _, v := range st.Data[c] {
			o.ok = o.ok && (v == 0 || v == 1)
		}
	}
}
func (o *probeObjective) Fill(st *Step) {
	for c := range st.Dim { // the extra lanes: all zeros
		clear(st.Coord(c)[st.B:])
	}
	st.LSE(st.X, st.P, o.lse, o.grad)
	for _, v := range o.lse[:st.P] {
		o.ok = o.ok && !math.IsNaN(float64(v))
	}
}
func (o *probeObjective) Loss(st *Step, lse, coef []float32) float32 {
	st.ExtraGrad[0] = 1
	return 0
}
func (o *probeObjective) End(st *Step, res *Result2D) {
	res.Stats = map[string]float64{"ok": b2f(o.ok), "steps": float64(st.Step)}
	res.Accept = 0.25
	res.Buffer = make([]float32, st.B*st.Dim)
	for p := range st.B {
		for c := range st.Dim {
			res.Buffer[p*st.Dim+c] = st.X[c*st.P+p]
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestBitsObjective: TrainBits runs an Objective on binary lanes: the cross-entropy
// alone written as an objective trains as the kernel's baseline (to float32 rounding;
// bit for bit where the arithmetic is the same), and an
// objective sees binary lanes and draws, steps its own parameter with Adam and hands
// its Stats, Accept and buffer (as states) to the result.
func TestBitsObjective(t *testing.T) {
	const d, k = 6, 3
	task := prob.DrawBits(9, d, k, 2)
	xs, ys := task.Sample(4, 1000)
	hidden := []int{16}
	run := RunBits{Seed: 5, Theta: InitMLPBits(2, d, hidden, k), LR: 0.01, X: xs, Y: ys}
	for _, c := range []struct {
		name string
		obj  func() Objective
	}{
		{"ce is baseline", func() Objective { return ceObjective{} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := SpecBits{D: d, K: k, Hidden: hidden, Steps: 200, Batch: 32, PxWeight: 1}
			want, err := TrainBits(context.Background(), spec, []RunBits{run})
			if err != nil {
				t.Fatal(err)
			}
			spec.Objective = c.obj
			got, err := TrainBits(context.Background(), spec, []RunBits{run})
			if err != nil {
				t.Fatal(err)
			}
			var worst float64
			for i := range want[0].Theta {
				worst = max(worst, math.Abs(float64(want[0].Theta[i]-got[0].Theta[i])))
			}
			t.Logf("max |Δθ| after %d steps: %.3g; loss %.6f vs %.6f", spec.Steps, worst, want[0].Loss, got[0].Loss)
			if worst > 1e-3 || math.Abs(float64(want[0].Loss-got[0].Loss)) > 1e-3 || got[0].Diverged {
				t.Errorf("the objective's run differs from the method's: max |Δθ| %.3g, loss %v vs %v", worst, got[0].Loss, want[0].Loss)
			}
		})
	}
	t.Run("probe", func(t *testing.T) {
		spec := SpecBits{D: d, K: k, Hidden: hidden, Steps: 50, Batch: 32, PxWeight: 1,
			Objective: func() Objective { return &probeObjective{} }}
		res, err := TrainBits(context.Background(), spec, []RunBits{run, run})
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if r.Stats["ok"] != 1 || r.Stats["steps"] != 50 || r.Accept != 0.25 {
			t.Errorf("stats %v, accept %v: want ok, 50 steps, 0.25", r.Stats, r.Accept)
		}
		// Adam on a constant gradient 1 moves the parameter down by about lr a step.
		if len(r.Extra) != 1 || !(r.Extra[0] < -0.4 && r.Extra[0] > -0.6) {
			t.Errorf("extra %v: want about −50·0.01", r.Extra)
		}
		if len(r.Buffer) != 32 {
			t.Fatalf("buffer of %d states, want 32", len(r.Buffer))
		}
		seen := map[uint32]bool{}
		for _, s := range xs {
			seen[s] = true
		}
		for _, s := range r.Buffer {
			if !seen[s] {
				t.Errorf("buffer state %d is no draw's", s)
			}
		}
		if !equalF32(res[0].Theta, res[1].Theta) {
			t.Error("two runs of one seed differ")
		}
	})
	t.Run("validate", func(t *testing.T) {
		spec := SpecBits{D: d, K: k, Hidden: hidden, Steps: 1, Batch: 32,
			Objective: func() Objective { return wideObjective{P: 32 * 4097} }}
		if err := spec.Validate(); err == nil {
			t.Error("an objective of 32·4097 lanes passed")
		}
		spec.Objective = func() Objective { return ceObjective{} }
		if err := spec.Validate(); err != nil {
			t.Error(err)
		}
	})
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

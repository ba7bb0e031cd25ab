package tasks

import (
	"encoding/json"
	"math"
	"testing"
)

// TestSelector checks the selection rules on scripted held-out NLLs: heldout keeps the
// check of least NLL (the earlier on a tie, the last step when it is best, never a NaN
// check), last keeps the last step; a rise of more than UnstableNats from the best is
// flagged unstable under either rule.
func TestSelector(t *testing.T) {
	cases := []struct {
		name       string
		rule       string
		nlls       []float64 // at steps 10, 20, …; the last is the final step's
		wantStep   int64
		wantNLL    float64
		wantUnstab bool
	}{
		{"improves-to-the-end", SelectHeldout, []float64{3, 2.5, 2.2, 2.1}, 40, 2.1, false},
		{"overfits-a-little", SelectHeldout, []float64{3, 2.1, 2.2, 2.3}, 20, 2.1, false},
		{"collapses", SelectHeldout, []float64{3, 2.1, 2.5, 9}, 20, 2.1, true},
		{"tie-keeps-earlier", SelectHeldout, []float64{3, 2, 2, 2.1}, 20, 2, false},
		{"nan-check", SelectHeldout, []float64{3, math.NaN(), 2.5, 2.6}, 30, 2.5, false},
		{"last", SelectLast, []float64{3, 2.1, 2.2, 2.3}, 40, 2.3, false},
		{"last-collapses", SelectLast, []float64{3, 2.1, 2.5, 9}, 40, 9, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Selector{Rule: tc.rule}
			n := len(tc.nlls)
			for i, v := range tc.nlls[:n-1] {
				s.Observe(10*(i+1), v, int64(100*(i+1)), []float32{float32(i)}, []float64{float64(i)})
			}
			tr := TrainedRun{Logits: []float64{-1}, Theta: []float32{-1}}
			s.Apply(&tr, tc.nlls[n-1], 10*n, int64(100*n))
			if tr.SelectedStep != tc.wantStep || !(tr.HeldoutNLL == tc.wantNLL) || tr.Unstable != tc.wantUnstab {
				t.Errorf("selected step %d (NLL %v, unstable %v), want %d (%v, %v)", tr.SelectedStep, tr.HeldoutNLL, tr.Unstable, tc.wantStep, tc.wantNLL, tc.wantUnstab)
			}
			if tr.GradEvalsSelected != 10*tr.SelectedStep || tr.GradEvals != int64(100*n) {
				t.Errorf("grad evals %d selected, %d in all; want %d, %d", tr.GradEvalsSelected, tr.GradEvals, 10*tr.SelectedStep, 100*n)
			}
			wantLogit := float64(tc.wantStep/10 - 1)
			if tc.wantStep == int64(10*n) {
				wantLogit = -1
			}
			if tr.Logits[0] != wantLogit {
				t.Errorf("kept the logits of check %v, want %v", tr.Logits[0], wantLogit)
			}
		})
	}
}

// TestFlagAgainstBaseline: a run whose final held-out NLL ends above the baseline's on
// the same task is unstable; the baseline itself and runs without a selection are not.
func TestFlagAgainstBaseline(t *testing.T) {
	runs := []*TrainedRun{
		{SelectedStep: 10, HeldoutNLLFinal: 2.0}, // baseline
		{SelectedStep: 10, HeldoutNLLFinal: 1.5},
		{SelectedStep: 10, HeldoutNLLFinal: 2.5},
		{HeldoutNLLFinal: 9},
	}
	FlagAgainstBaseline(runs, 0)
	got := []bool{runs[0].Unstable, runs[1].Unstable, runs[2].Unstable, runs[3].Unstable}
	want := []bool{false, false, true, false}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("run %d unstable %v, want %v", i, got[i], want[i])
		}
	}
}

// TestCurveGap: the first third's best minus the overall best, 0 when the first third
// holds the best, NaN without a check in the first third.
func TestCurveGap(t *testing.T) {
	c := func(steps []int, kls []float64) []CurvePoint {
		out := make([]CurvePoint, len(steps))
		for i := range steps {
			out[i] = CurvePoint{Step: steps[i], KLJoint: kls[i]}
		}
		return out
	}
	cases := []struct {
		name  string
		curve []CurvePoint
		want  float64
	}{
		{"improves", c([]int{10, 30, 60, 90}, []float64{0.5, 0.3, 0.2, 0.05}), 0.25},
		{"overfits", c([]int{10, 30, 60, 90}, []float64{0.5, 0.1, 0.2, 0.4}), 0},
		{"no-first-third", c([]int{60, 90}, []float64{0.5, 0.1}), math.NaN()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CurveGap(tc.curve, 90)
			if !(math.Abs(got-tc.want) < 1e-12) && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Errorf("CurveGap = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFinish: the selection is read off the curve's end (EndCurve appends the last
// step only when no check fell on it); the baseline is never unstable; a reference
// gets its curve's gap; a block's runs are flagged against their own task's baseline.
func TestFinish(t *testing.T) {
	curve := []CurvePoint{{Step: 10, HeldoutNLL: 2, KLJoint: 0.5, GradEvals: 100}, {Step: 20, HeldoutNLL: 3, KLJoint: 0.2, GradEvals: 200}}
	calls := 0
	at := func() CurvePoint { calls++; return CurvePoint{Step: 30, HeldoutNLL: 9, KLJoint: 0.1, GradEvals: 300} }
	if got := EndCurve(curve[:2], 20, at); len(got) != 2 || calls != 0 {
		t.Errorf("EndCurve appended to a curve ending at the last step (%d points, %d calls)", len(got), calls)
	}
	full := EndCurve(curve[:2:2], 30, at)
	cases := []struct {
		name         string
		method       string
		wantUnstable bool
		wantGap      bool
	}{
		{"sampler", "sgld", true, false},
		{"baseline", "baseline", false, false},
		{"reference", "jem", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Selector{Rule: SelectHeldout}
			for _, c := range full[:2] {
				s.Observe(c.Step, c.HeldoutNLL, c.GradEvals, []float32{float32(c.Step)}, []float64{c.KLJoint})
			}
			tr := TrainedRun{Curve: full, Logits: []float64{0.1}, RefGap: math.NaN()}
			s.Finish(&tr, tc.method, 30)
			if tr.SelectedStep != 10 || tr.HeldoutNLLFinal != 9 || tr.GradEvals != 300 || tr.Unstable != tc.wantUnstable || math.IsNaN(tr.RefGap) == tc.wantGap {
				t.Errorf("%+v", tr)
			}
		})
	}
	runs := []TrainedRun{{SelectedStep: 1, HeldoutNLLFinal: 2}, {SelectedStep: 1, HeldoutNLLFinal: 3}, // task 0: baseline, ed
		{SelectedStep: 1, HeldoutNLLFinal: 5}, {SelectedStep: 1, HeldoutNLLFinal: 3}} // task 1
	FlagBlockAgainstBaseline(runs, []string{"baseline", "ed"})
	if !runs[1].Unstable || runs[3].Unstable || runs[0].Unstable || runs[2].Unstable {
		t.Errorf("flags %v %v %v %v, want only task 0's ed", runs[0].Unstable, runs[1].Unstable, runs[2].Unstable, runs[3].Unstable)
	}
}

// TestStatsJSON: a run's method_stats column is what encoding/json writes for the map,
// byte for byte (sorted keys, floats in its format, null where not finite), on values
// across the float formats' switches (1e-6 and 1e21).
func TestStatsJSON(t *testing.T) {
	tests := []struct {
		name  string
		stats map[string]float64
	}{
		{"none", nil},
		{"one", map[string]float64{"log_z": -1.25}},
		{"sorted keys", map[string]float64{"z": 1, "a": 2, "m_3": 3, "b.c": 4}},
		{"formats", map[string]float64{"tiny": 1.5e-7, "edge": 1e-6, "under": 9.99e-7, "big": 1e21, "below": 9.9e20,
			"neg": -3.25e-9, "zero": 0, "negzero": math.Copysign(0, -1), "third": 1.0 / 3, "int": 42}},
		{"not finite", map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "ninf": math.Inf(-1), "ok": 0.5}},
		{"a key encoding/json escapes", map[string]float64{"a<b": 1, "ok": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := ""
			if len(tt.stats) > 0 {
				m := map[string]any{}
				for k, v := range tt.stats {
					m[k] = v
					if math.IsNaN(v) || math.IsInf(v, 0) {
						m[k] = nil
					}
				}
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				want = string(b)
			}
			if got := StatsJSON(tt.stats); got != want {
				t.Errorf("StatsJSON = %s, want encoding/json's %s", got, want)
			}
		})
	}
}

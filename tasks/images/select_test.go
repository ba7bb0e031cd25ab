package images

import (
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestCNNSelection: a CNN run is checked at the cadence and its last step, the held-out
// rule keeps the check of least held-out conditional NLL (its parameters, step and NLL),
// the curve's conditional NLL recomputes from the kept parameters, and rule "last" keeps
// the last step.
func TestCNNSelection(t *testing.T) {
	p := tasks.Point{Grid: schemas.DefaultGrid(), Tables: 1}
	p.Task, p.Methods = "images:8,2", []string{"baseline", "dsm"}
	given := map[string]bool{"methods": true, "steps": true, "samples": true}
	p.Steps, p.Samples = 14, 200
	Kind{}.Defaults(&p, func(a string) bool { return given[a] })
	p.Resolve()
	p.Tables = 1
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, rule string
	}{{"held-out", tasks.SelectHeldout}, {"last", tasks.SelectLast}} {
		t.Run(c.name, func(t *testing.T) {
			if c.rule == tasks.SelectLast {
				testenv.Slow(t, "a second block of CNN runs, 1 s")
			}
			o := tasks.Options{Seed: 3, TrainBatch: 64, Select: c.rule, Holdout: 0.2, EvalEvery: 3}
			b, tb := tasktest.Train(t, p, o)
			src := &source{env: tasks.Env{Options: o}, p: p}
			var err error
			if src.spec, err = parseTask(p.Task); err != nil {
				t.Fatal(err)
			}
			src.cal = map[int64]*calibration{}
			tr, x, y, n, err := src.trainDraws(b.Table(p, 0))
			if err != nil {
				t.Fatal(err)
			}
			held := newHeldout(tr, x[n*tr.D():], y[n:])
			for j, r := range tb.Runs {
				steps := make([]int, len(r.Curve))
				best := 0
				for k, cp := range r.Curve {
					steps[k] = cp.Step
					if cp.HeldoutNLL < r.Curve[best].HeldoutNLL {
						best = k
					}
					if !(cp.KLConditional > 0) || !(cp.HeldoutNLL > 0) || !math.IsNaN(cp.KLJoint) {
						t.Errorf("%s: check %+v", p.Methods[j], cp)
					}
				}
				if want := []int{3, 6, 9, 12, 14}; !slices.Equal(steps, want) {
					t.Fatalf("%s: checks at %v, want %v", p.Methods[j], steps, want)
				}
				want := r.Curve[best]
				if c.rule == tasks.SelectLast {
					want = r.Curve[len(r.Curve)-1]
				}
				if r.SelectedStep != int64(want.Step) || r.HeldoutNLL != want.HeldoutNLL || r.HeldoutNLLFinal != r.Curve[len(r.Curve)-1].HeldoutNLL {
					t.Errorf("%s: selected step %d NLL %g (final %g), want step %d NLL %g", p.Methods[j], r.SelectedStep, r.HeldoutNLL, r.HeldoutNLLFinal, want.Step, want.HeldoutNLL)
				}
				params, err := src.unflatten(r.Theta)
				if err != nil {
					t.Fatal(err)
				}
				got, err := held.check(o.Backend, params)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(got.HeldoutNLL-r.HeldoutNLL) > 1e-6 {
					t.Errorf("%s: the kept parameters' held-out NLL %g, the row's %g", p.Methods[j], got.HeldoutNLL, r.HeldoutNLL)
				}
			}
		})
	}
}

// TestModelESSGate: the AIS lower bound is reported only where the task's calibration
// accepted and the model's own forward AIS kept ModelESSShare of its chains.
func TestModelESSGate(t *testing.T) {
	acc, ref := &calibration{Accepted: true}, &calibration{Reason: "refused"}
	for _, c := range []struct {
		name  string
		cal   *calibration
		ess   float64
		lower bool
	}{
		{"accepted, ESS 30 of 256", acc, 30, true},
		{"accepted, ESS 25.5 of 256", acc, 25.5, false},
		{"accepted, ESS 1.1 of 256", acc, 1.1, false},
		{"refused on the truth", ref, 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := result{KLLower: 134, KLLowerSE: 1, KLUpper: 140, ESS: c.ess, Chains: 256}
			row := schemas.ResultRow{KLJointLower: math.NaN(), KLJointLowerSE: math.NaN()}
			r.fill(&row, c.cal)
			if got := !math.IsNaN(row.KLJointLower); got != c.lower {
				t.Errorf("lower bound reported %v (%g), want %v; ais_refused %q", got, row.KLJointLower, c.lower, row.AISRefused)
			}
			if c.cal.Accepted && !c.lower && row.AISRefused == "" {
				t.Error("no reason given")
			}
		})
	}
}

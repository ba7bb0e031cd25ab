package bits

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestMethodStats: a binary run's method stats reach its row (method_stats): pcd's
// acceptance from its objective, none for the baseline.
func TestMethodStats(t *testing.T) {
	p := point("bits:5,2")
	p.Methods = []string{"baseline", "pcd"}
	_, rb, _ := trainTwo(t, p, tasks.Options{Seed: 5, TrainBatch: 64})
	for _, row := range rb.Rows {
		var st map[string]float64
		if row.MethodStats != "" {
			if err := json.Unmarshal([]byte(row.MethodStats), &st); err != nil {
				t.Fatalf("%s: method_stats %q: %v", row.Method, row.MethodStats, err)
			}
		}
		a, ok := st["accept"]
		switch row.Method {
		case "pcd":
			if !ok || !(a > 0 && a <= 1) {
				t.Errorf("pcd: method_stats %q, want an acceptance in (0, 1]", row.MethodStats)
			}
		default:
			if ok {
				t.Errorf("%s: method_stats %q has an acceptance", row.Method, row.MethodStats)
			}
		}
	}
}

// logZObjective reports a learned log Z of 1.5 and nothing else (the cross-entropy
// alone trains).
type logZObjective struct{}

func (logZObjective) Lanes(B int) int                                 { return B }
func (logZObjective) Params() int                                     { return 0 }
func (logZObjective) GradEvals(int) int64                             { return 0 }
func (logZObjective) Begin(*kernel.Step)                              {}
func (logZObjective) Fill(*kernel.Step)                               {}
func (logZObjective) Loss(*kernel.Step, []float32, []float32) float32 { return 0 }
func (logZObjective) End(_ *kernel.Step, res *kernel.Result2D) {
	res.Stats = map[string]float64{"log_z_learned": 1.5}
}

// TestHookTypes: a binary hook of the binary type or of the plane's type (setting an
// objective, with the point's settings) both give the kernel's spec; a plane-type hook
// that sets no objective is refused; the exact log Z joins a learned one.
func TestHookTypes(t *testing.T) {
	p := point("bits:5,2")
	var seen kernel.Spec2D
	for _, c := range []struct {
		name string
		hook any
		err  string
	}{
		{"binary", func(_ schemas.Grid, s *kernel.SpecBits) error { s.Method = kernel.JEMBits; return nil }, ""},
		{"plane objective", func(_ schemas.Grid, s *kernel.Spec2D) error {
			seen = *s
			s.Objective, s.PxWeight = func() kernel.Objective { return logZObjective{} }, 0.5
			return nil
		}, ""},
		{"plane without objective", func(_ schemas.Grid, s *kernel.Spec2D) error { s.Method = kernel.ED2D; return nil }, "set no objective"},
		{"no hook", nil, "no trainer for binary tables"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := specHook(p, "m", c.hook)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if c.name == "plane objective" {
				if s.Objective == nil || s.PxWeight != 0.5 || seen.K != 2 || seen.Steps != p.Steps || seen.Batch != 64 || seen.PxWeight != 1 {
					t.Fatalf("spec %+v after a hook that saw %+v", s, seen)
				}
			}
		})
	}
	lg := []float64{0, 1, 2, 3}
	st := exactLogZ(map[string]float64{"log_z_learned": 1.5}, lg)
	if want := lse(lg); st["log_z_exact"] != want {
		t.Errorf("log_z_exact %v, want %v", st["log_z_exact"], want)
	}
	if st := exactLogZ(map[string]float64{"accept": 0.5}, lg); len(st) != 1 {
		t.Errorf("stats without a learned log Z gained %v", st)
	}
}

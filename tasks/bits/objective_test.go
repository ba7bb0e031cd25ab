package bits

import (
	"encoding/json"
	"testing"

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

// TestExactLogZ: the exact log Z (the log-sum-exp of every cell's logit) joins a
// method's learned one in its stats, and only then.
func TestExactLogZ(t *testing.T) {
	lg := []float64{0, 1, 2, 3}
	st := exactLogZ(map[string]float64{"log_z_learned": 1.5}, lg)
	if want := lse(lg); st["log_z_exact"] != want {
		t.Errorf("log_z_exact %v, want %v", st["log_z_exact"], want)
	}
	if st := exactLogZ(map[string]float64{"accept": 0.5}, lg); len(st) != 1 {
		t.Errorf("stats without a learned log Z gained %v", st)
	}
}

package bits

import (
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/tasks"
)

// A task's truth rides with its first method's run only (the writer does not read it,
// the report takes it from that run): each element carried on would copy it, 2^21
// cells at D = 20.
func TestEvaluateTruthOnce(t *testing.T) {
	p := point("bits:5,2")
	src, _, lb := trainTwo(t, p, tasks.Options{Seed: 3, TrainBatch: 64, ReportTables: 3})
	m := len(p.Methods)
	for r, l := range lb.Runs {
		if len(l.Logits) != p.XValues*p.Classes || len(l.Q) != len(l.Logits) {
			t.Errorf("run %d: %d logits, %d q", r, len(l.Logits), len(l.Q))
		}
		_, truth, _ := src.Truth(int64(r / m))
		switch {
		case r%m == 0 && !slices.Equal(l.P, truth):
			t.Errorf("run %d (%s), the task's first: truth not carried", r, l.Method)
		case r%m != 0 && l.P != nil:
			t.Errorf("run %d (%s): carries the truth again", r, l.Method)
		}
	}
}

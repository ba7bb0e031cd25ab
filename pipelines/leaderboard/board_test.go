package main

import (
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// synth builds runs of one family: exact jem at KL 0.05 on each of n units, and each
// recipe at jem + its offset + symmetric noise; costs and curves as given.
func synth(n int, offsets map[string]float64, evals map[string]int64) []run {
	var out []run
	for k := range n {
		u := schemas.ResultRow{Task: "gmm:3,2", Replicate: int64(k % 3), TableID: int64(k)}
		j := u
		j.Method, j.KLJoint, j.GradEvals = "jem", 0.05, 1000
		out = append(out, run{ResultRow: j})
		for m, off := range offsets {
			r := u
			r.Method, r.KLJoint, r.GradEvals = m, 0.05+off+0.002*math.Sin(float64(3*k)), evals[m]
			// a curve: two checks, the cheaper one worse on held-out NLL and KL
			r.SelectedStep = 2
			out = append(out, run{ResultRow: r, Curve: []schemas.CurveRow{
				{Step: 1, GradEvals: evals[m] / 2, HeldoutNLL: 3, KLJoint: r.KLJoint + 1},
				{Step: 2, GradEvals: evals[m], HeldoutNLL: 2, KLJoint: r.KLJoint}}})
		}
	}
	return out
}

// TestBoard: two recipes that tie share rank 1, a clearly worse one ranks 3; the
// excess is the paired mean; the budget-matched view takes the cheaper checks of the
// dearer recipes; the frontier holds the recipes no other beats on both axes.
func TestBoard(t *testing.T) {
	runs := synth(30, map[string]float64{"ed": 0.003, "mala": 0.003, "sgld": 2}, map[string]int64{"ed": 100, "mala": 200, "sgld": 200})
	entries, jem, err := entriesOf(runs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs := boards(entries, jem, 1)
	if len(bs) != 1 {
		t.Fatalf("%d boards, want 1 (one family)", len(bs))
	}
	b := bs[0]
	if b.Budget != 100 {
		t.Errorf("budget %v, want 100 (ed's)", b.Budget)
	}
	got := map[string]Row{}
	for _, r := range b.Rows {
		got[r.Entry] = r
	}
	cases := []struct {
		entry        string
		rank         int
		excess       float64
		budgetExcess float64
		frontier     bool
	}{
		{"ed", 1, 0.003, 0.003, true},
		{"mala", 1, 0.003, 1.003, false},
		{"sgld", 3, 2, 3, false},
	}
	for _, tc := range cases {
		t.Run(tc.entry, func(t *testing.T) {
			r := got[tc.entry]
			if r.Rank != tc.rank || math.Abs(r.Excess-tc.excess) > 1e-3 || math.Abs(r.BudgetExcess-tc.budgetExcess) > 1e-3 || r.Frontier != tc.frontier {
				t.Errorf("%+v, want rank %d excess %v budget excess %v frontier %v", r, tc.rank, tc.excess, tc.budgetExcess, tc.frontier)
			}
			if !(r.Lo <= r.Excess && r.Excess <= r.Hi) || r.Units != 30 {
				t.Errorf("CI [%v, %v] around %v over %d units", r.Lo, r.Hi, r.Excess, r.Units)
			}
		})
	}
}

// TestPick: a recipe's setting of least mean excess over jem (averaged over families)
// is picked; the setting's options are those that vary among its runs.
func TestPick(t *testing.T) {
	var runs []run
	for k := range 4 {
		for _, fam := range []string{"gmm:3,2", "moons:0.1"} {
			u := schemas.ResultRow{Task: fam, TableID: int64(k)}
			j := u
			j.Method, j.KLJoint = "jem", 0.05
			runs = append(runs, run{ResultRow: j})
			for _, c := range []struct {
				t, kl float64
			}{{0.25, 0.2}, {1, 0.07}, {4, 0.09}, {8, 0.01}} {
				r := u
				r.Method, r.EDT, r.EDNegatives, r.KLJoint = "ed", c.t, 4, c.kl
				r.Unstable = c.t == 8     // the best score, but it collapses: not picked
				r.KLMarginal = math.NaN() // a NaN column (e.g. a block task's) must not hide the options
				runs = append(runs, run{ResultRow: r})
			}
		}
	}
	scores, picks, err := pick(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := tunedText(picks["ed"]); got != "ed_t=1" {
		t.Errorf("pick %q, want ed_t=1 (scores %+v)", got, scores)
	}
	for _, sc := range scores {
		if sc.Values["ed_t"] == "" {
			t.Errorf("a setting without its ed_t: %+v", sc)
		}
	}
	if len(scores) != 4 || math.Abs(scores[1].Score-0.02) > 1e-12 {
		t.Errorf("scores %+v", scores)
	}
}

// TestTaskList splits task specs that hold commas.
func TestTaskList(t *testing.T) {
	got := taskList("gmm:3,2,moons:0.1;circles:0.1")
	want := []string{"gmm:3,2", "moons:0.1", "circles:0.1"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%v, want %v", got, want)
		}
	}
}

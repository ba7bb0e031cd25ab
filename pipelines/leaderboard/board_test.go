package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
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
	entries, jem, err := entriesOf(metrics[0], runs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs := boards(metrics[0], entries, jem, 1)
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
		bestSet      bool
		overBest     float64
	}{
		{"ed", 1, 0.003, 0.003, true, true, 0},
		{"mala", 1, 0.003, 1.003, false, true, 0},
		{"sgld", 3, 2, 3, false, false, 1.997},
	}
	// ed and mala tie exactly: the best is the first in the methods' order, mala
	if b.Best != "mala" || b.Friedman.K != 3 || b.Friedman.N != 30 || !(b.Friedman.P < 0.05) || !(b.MDE >= 0) || b.Tasks != 30 {
		t.Errorf("best %q, Friedman %+v, MDE %v at %d units", b.Best, b.Friedman, b.MDE, b.Tasks)
	}
	for _, tc := range cases {
		t.Run(tc.entry, func(t *testing.T) {
			r := got[tc.entry]
			if r.Rank != tc.rank || math.Abs(r.Excess-tc.excess) > 1e-3 || math.Abs(r.BudgetExcess-tc.budgetExcess) > 1e-3 || r.Frontier != tc.frontier {
				t.Errorf("%+v, want rank %d excess %v budget excess %v frontier %v", r, tc.rank, tc.excess, tc.budgetExcess, tc.frontier)
			}
			if r.BestSet != tc.bestSet || math.Abs(r.OverBest-tc.overBest) > 1e-9 || r.BestSet != (r.PHolm >= 0.05) {
				t.Errorf("in the best's set %v (Holm p %v), over the best %v; want %v, %v", r.BestSet, r.PHolm, r.OverBest, tc.bestSet, tc.overBest)
			}
			if !(r.Lo <= r.Excess && r.Excess <= r.Hi) || r.Units != 30 {
				t.Errorf("CI [%v, %v] around %v over %d units", r.Lo, r.Hi, r.Excess, r.Units)
			}
		})
	}
}

// TestPick: a recipe's setting of least mean held-out NLL less jem's (averaged over
// families) is picked, never by the truth's excess, which is reported beside with the
// setting it would pick; the setting's options are those that vary among its runs; a
// collapsing setting is not picked. Exact jem's own rate and batch are tuned alike,
// against its runs at the recipes' rate and batch: a better held-out NLL at another
// setting is its pick.
func TestPick(t *testing.T) {
	var runs []run
	for k := range 4 {
		for _, fam := range []string{"gmm:3,2", "moons:0.1"} {
			u := schemas.ResultRow{Task: fam, TableID: int64(k), LR: 0.003, BatchSize: 64}
			for _, c := range []struct {
				lr      float64
				batch   int64
				nll, kl float64
			}{{0.003, 64, 1.0, 0.05}, {0.01, 64, 0.98, 0.04}, {0.01, 256, 0.99, 0.03}} {
				j := u
				j.Method, j.LR, j.BatchSize, j.HeldoutNLL, j.KLJoint = "jem", c.lr, c.batch, c.nll, c.kl
				runs = append(runs, run{ResultRow: j})
			}
			for _, c := range []struct {
				t, nll, kl float64
			}{{0.25, 1.2, 0.2}, {1, 1.02, 0.07}, {4, 1.04, 0.06}, {8, 1.0, 0.01}} {
				r := u
				r.Method, r.EDT, r.EDNegatives, r.HeldoutNLL, r.KLJoint = "ed", c.t, 4, c.nll, c.kl
				r.Unstable = c.t == 8     // the best score, but it collapses: not picked
				r.KLMarginal = math.NaN() // a NaN column (e.g. a block task's) must not hide the options
				runs = append(runs, run{ResultRow: r})
			}
		}
	}
	scores, picks, truth, err := pick(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := tunedText(picks["ed"]); got != "ed_t=1" {
		t.Errorf("pick %q, want ed_t=1 by held-out NLL (scores %+v)", got, scores)
	}
	if got := tunedText(truth["ed"]); got != "ed_t=4" {
		t.Errorf("the truth's pick %q, want ed_t=4", got)
	}
	if got := tunedText(picks["jem"]); got != "batch_size=64, lr=0.01" {
		t.Errorf("jem's pick %q, want batch_size=64, lr=0.01", got)
	}
	var ed []Scored
	for _, sc := range scores {
		if sc.Method == "ed" {
			ed = append(ed, sc)
			if sc.Values["ed_t"] == "" {
				t.Errorf("a setting without its ed_t: %+v", sc)
			}
		}
	}
	if len(ed) != 4 || math.Abs(ed[1].Score-0.02) > 1e-12 || math.Abs(ed[1].TruthScore-0.02) > 1e-12 {
		t.Errorf("ed's scores %+v", ed)
	}
	var md bytes.Buffer
	writeScores(&md, scores, picks, truth)
	if !strings.Contains(md.String(), "the same setting for 0 of 2 methods") {
		t.Errorf("table:\n%s", md.String())
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

// TestWriteBoards: the Markdown board marks the best's set, gives each recipe's excess
// over the best with its Holm p, the Friedman test with the critical difference and the
// groups closer than it, and the smallest detectable difference.
func TestWriteBoards(t *testing.T) {
	runs := synth(30, map[string]float64{"ed": 0.003, "mala": 0.003, "sgld": 2}, map[string]int64{"ed": 100, "mala": 200, "sgld": 200})
	entries, jem, err := entriesOf(metrics[0], runs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	writeBoards(&md, boards(metrics[0], entries, jem, 1))
	out := md.String()
	cases := []struct{ name, want string }{
		{"best-set", "Indistinguishable from the best (mala; ≈ in the rank column): {mala, ed}"},
		{"best-row", "| 1 ≈ | mala | +0.00297 [+0.0025, +0.00344] | best | — | — |"},
		{"tied-row", "| 1 ≈ | ed ◆ | +0.00297 [+0.00251, +0.00345] | 0 [0, 0] | 1 | 0 |"},
		{"worse-row", "| 3 | sgld | +2 [+2, +2] | +2 [+2, +2] |"},
		{"friedman", "Friedman test over the 3 ranked recipes on the 30 tasks × seeds every one has: χ² = "},
		{"cd", "Nemenyi critical difference CD = 0.605 average ranks (α = 0.05)"},
		{"cd-groups", "average ranks (1 = best): mala 1.50, ed 1.50, sgld 3.00; not distinguishable (average ranks closer than CD): {mala, ed}."},
		{"mde", "At n = 30 tasks × seeds the board can detect a difference from the best of "},
		{"cd-figure", "![critical-difference diagram of "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(out, tc.want) {
				t.Errorf("the board lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestCostCurve: an entry's cost curve is, check by check, its runs' mean gradient
// evaluations and mean KL less exact jem's (synth's two checks: KL + 1 at half the
// evaluations, then the final KL), the last point its excess; exact jem has no curve
// there; the figure is drawn and named as report publishes it.
func TestCostCurve(t *testing.T) {
	runs := synth(30, map[string]float64{"ed": 0.003, "sgld": 2}, map[string]int64{"ed": 100, "sgld": 200})
	entries, jem, err := entriesOf(metrics[0], runs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := boards(metrics[0], entries, jem, 1)[0]
	for _, r := range b.Rows {
		switch r.Entry {
		case "jem":
			if len(r.CostEvals) != 0 {
				t.Errorf("jem: cost curve %v without curves", r.CostEvals)
			}
		case "ed", "sgld":
			ev := map[string]float64{"ed": 100, "sgld": 200}[r.Entry]
			if len(r.CostEvals) != 2 || r.CostEvals[0] != ev/2 || r.CostEvals[1] != ev ||
				math.Abs(r.CostExcess[0]-(r.Excess+1)) > 1e-12 || math.Abs(r.CostExcess[1]-r.Excess) > 1e-12 {
				t.Errorf("%s: cost curve %v, %v; want [%v %v], [excess+1 excess] (excess %v)", r.Entry, r.CostEvals, r.CostExcess, ev/2, ev, r.Excess)
			}
		}
	}
	svg, err := costFigure(b)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("sgld")) {
		t.Errorf("cost figure %.60q, %v", svg, err)
	}
	if f := costFile(b.Family); f != "leaderboard-cost-gmm-3-2.svg" || !stages.LeaderboardOutputs.MatchString(f) {
		t.Errorf("costFile = %q", f)
	}
}

// TestCDFile: every board's diagram has a name report may publish, from its family.
func TestCDFile(t *testing.T) {
	for _, tc := range []struct{ family, want string }{
		{"all", "leaderboard-cd-all.svg"},
		{"gmm:3,2", "leaderboard-cd-gmm-3-2.svg"},
		{"moons:0.25", "leaderboard-cd-moons-0-25.svg"},
		{"Blocks:2,GMM:2,2 ", "leaderboard-cd-blocks-2-gmm-2-2.svg"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			got := cdFile(tc.family)
			if got != tc.want || !stages.LeaderboardOutputs.MatchString(got) {
				t.Errorf("cdFile(%q) = %q (an output name: %v), want %q", tc.family, got, stages.LeaderboardOutputs.MatchString(got), tc.want)
			}
		})
	}
	runs := synth(30, map[string]float64{"ed": 0.003, "mala": 0.003, "sgld": 2}, map[string]int64{"ed": 100, "mala": 200, "sgld": 200})
	entries, jem, err := entriesOf(metrics[0], runs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range boards(metrics[0], entries, jem, 1) {
		svg, err := cdFigure(b)
		if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("sgld")) {
			t.Errorf("%s: diagram %.60q, %v", b.Family, svg, err)
		}
	}
}

// TestStatsTextUndetectable: a board whose tasks are too few for the signed-rank test
// to reject at α/(k−1) says that no difference is detectable (9 tasks, 22 comparisons:
// 2/2⁹ = 0.0039 > 0.05/22), instead of giving a finite MDE.
func TestStatsTextUndetectable(t *testing.T) {
	cases := []struct {
		name string
		b    Board
		want string
	}{
		{"undetectable", Board{Best: "a", Tasks: 9, MDE: math.Inf(1), Rows: rowsNamed(23)},
			"At n = 9 tasks × seeds the board cannot detect any difference from the best: the exact signed-rank test's smallest p there, 2/2^9 = 0.00391, exceeds α/(k−1) = 0.00227"},
		{"detectable", Board{Best: "a", Tasks: 30, MDE: 0.0123, Rows: rowsNamed(3)},
			"At n = 30 tasks × seeds the board can detect a difference from the best of 0.0123 nats (80% power, family-wise α = 0.05, Bonferroni over the 2 comparisons with the best;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := statsText(tc.b); !strings.Contains(got, tc.want) {
				t.Errorf("%s\nlacks %q", got, tc.want)
			}
		})
	}
}

// rowsNamed are k ranked rows, r1..rk.
func rowsNamed(k int) []Row {
	rows := make([]Row, k)
	for i := range rows {
		rows[i] = Row{Rank: i + 1, Entry: "r" + strconv.Itoa(i+1), AvgRank: math.NaN()}
	}
	return rows
}

// TestBoardMetric: a board by a measure against the truth itself needs no exact jem:
// each recipe's mean value, paired by task, ranks it (the baseline a reference); an
// unknown metric is refused by name.
func TestBoardMetric(t *testing.T) {
	var runs []run
	for k := range 12 {
		u := schemas.ResultRow{Task: "images:8,2", TableID: int64(k)}
		for m, v := range map[string]float64{"baseline": 0.15, "sgld": 0.42, "dsm": 0.30, "ed": 0.301} {
			r := u
			r.Method, r.KLConditional, r.KLJoint = m, v+0.01*math.Sin(float64(5*k+len(m))), math.NaN()
			runs = append(runs, run{ResultRow: r})
		}
	}
	if _, _, err := entriesOf(metrics[0], runs, nil, nil); err == nil {
		t.Error("kl_joint without exact jem: no error")
	}
	m, ok := metricNamed("kl_conditional")
	if !ok {
		t.Fatal("no kl_conditional metric")
	}
	entries, units, err := entriesOf(m, runs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs := boards(m, entries, units, 1)
	if len(bs) != 1 || bs[0].Metric != "kl_conditional" || !math.IsNaN(bs[0].JEMKL) {
		t.Fatalf("boards %+v", bs)
	}
	got := map[string]Row{}
	for _, r := range bs[0].Rows {
		got[r.Entry] = r
	}
	if r := got["dsm"]; r.Rank != 1 || !r.BestSet || math.Abs(r.Excess-prob.Mean(valuesOf(runs, "dsm"))) > 1e-12 || r.Units != 12 {
		t.Errorf("dsm: %+v", r)
	}
	if r := got["sgld"]; r.Rank != 3 || r.BestSet {
		t.Errorf("sgld: rank %d, best set %v", r.Rank, r.BestSet)
	}
	if r := got["baseline"]; r.Rank != 0 || math.Abs(r.Excess-prob.Mean(valuesOf(runs, "baseline"))) > 1e-12 {
		t.Errorf("baseline: %+v", r)
	}
	var md bytes.Buffer
	writeBoards(&md, bs)
	if !strings.Contains(md.String(), "ranked by kl_conditional") {
		t.Errorf("board text:\n%s", md.String())
	}
	if _, ok := metricNamed("accuracy"); ok {
		t.Error("accuracy (higher is better) accepted as a metric")
	}
}

func valuesOf(runs []run, method string) []float64 {
	var out []float64
	for _, r := range runs {
		if r.Method == method {
			out = append(out, r.KLConditional)
		}
	}
	return out
}

// TestTunedYardstick: exact jem in a tuned folder (the yardstick at its own tuned rate
// and batch) is an entry, "jem tuned", a reference beside the recipes with its excess
// over jem at the board's settings; the default folder's jem stays the yardstick.
func TestTunedYardstick(t *testing.T) {
	runs := synth(30, map[string]float64{"ed": 0.003}, map[string]int64{"ed": 100})
	var tuned []run
	for _, r := range runs {
		if r.Method == "jem" {
			r.KLJoint -= 0.01
			r.LR = 0.01
			tuned = append(tuned, r)
		}
	}
	entries, jem, err := entriesOf(metrics[0], runs, tuned, map[string]map[string]string{"jem": {"lr": "0.01"}})
	if err != nil {
		t.Fatal(err)
	}
	var got *entry
	for _, e := range entries {
		if e.Name == "jem tuned" {
			got = e
		}
	}
	if got == nil || got.Sampler || len(got.runs) != 30 || tunedText(got.Tuned) != "lr=0.01" || len(jem) != 30 {
		t.Fatalf("jem tuned entry %+v, %d yardstick units", got, len(jem))
	}
	found := false
	for _, b := range boards(metrics[0], entries, jem, 1) {
		for _, r := range b.Rows {
			if r.Entry == "jem tuned" {
				found = true
				if math.Abs(r.Excess+0.01) > 1e-9 {
					t.Errorf("jem tuned: excess %v over jem, want -0.01", r.Excess)
				}
			}
		}
	}
	if !found {
		t.Error("no jem tuned row on the board")
	}
}

// TestPickPerTask: with --per_task each task's tuning runs are scored alone, so two
// dimensions whose best settings differ get their own picks, each written as a tuned
// spec of that task alone; the report's tuned entry shows, on each task's board, the
// values its runs there trained at.
func TestPickPerTask(t *testing.T) {
	var runs []run
	for k := range 4 {
		for _, task := range []string{"bits:8,2", "bits:16,2"} {
			u := schemas.ResultRow{Task: task, TableID: int64(k), LR: 0.003, BatchSize: 64}
			j := u
			j.Method, j.HeldoutNLL, j.KLJoint = "jem", 1, 0.05
			runs = append(runs, run{ResultRow: j})
			for _, tt := range []float64{1, 4} {
				r := u
				r.Method, r.EDT, r.EDNegatives, r.HeldoutNLL, r.KLJoint = "ed", tt, 4, 1.1, 0.1
				if (task == "bits:8,2") == (tt == 1) { // D = 8 is best at t = 1, D = 16 at t = 4
					r.HeldoutNLL, r.KLJoint = 1.01, 0.06
				}
				runs = append(runs, run{ResultRow: r})
			}
		}
	}
	files := map[string][]byte{}
	var out bytes.Buffer
	cfg := config{Tables: 30, Replicates: 1}
	if err := pickPerTask(runs, cfg, &out, files, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var p struct {
		PicksByTask map[string]map[string]map[string]string `json:"picks_by_task"`
	}
	if err := json.Unmarshal(files["picks.json"], &p); err != nil {
		t.Fatal(err)
	}
	if a, b := tunedText(p.PicksByTask["bits:8,2"]["ed"]), tunedText(p.PicksByTask["bits:16,2"]["ed"]); a != "ed_t=1" || b != "ed_t=4" {
		t.Errorf("picks %q at D = 8 and %q at D = 16, want ed_t=1 and ed_t=4", a, b)
	}
	spec := string(files["tuned-ed-bits-16-2.yaml"])
	if !strings.Contains(spec, "ed_t: 4") || !strings.Contains(spec, `task: ["bits:16,2"]`) || strings.Contains(spec, "bits:8,2") {
		t.Errorf("D = 16's tuned spec:\n%s", spec)
	}
	if !strings.Contains(out.String(), "### bits:16,2") || !strings.Contains(out.String(), "for 2 of 2 (method, task) pairs") {
		t.Errorf("scores:\n%s", out.String())
	}
	// The report: one "ed tuned" entry whose row shows each board's own values.
	var tuned []run
	for _, r := range runs {
		if r.Method == "ed" && (r.Task == "bits:8,2") == (r.EDT == 1) {
			tuned = append(tuned, r)
		}
	}
	entries, jem, err := entriesOf(metrics[0], runs, tuned, map[string]map[string]string{"ed": {"ed_t": "4"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range boards(metrics[0], entries, jem, 1) {
		for _, r := range b.Rows {
			want := map[string]string{"bits:8,2": "ed_t=1", "bits:16,2": "ed_t=4"}[b.Family]
			if r.Entry == "ed tuned" && want != "" && r.Tuned != want {
				t.Errorf("%s: ed tuned shows %q, want %q", b.Family, r.Tuned, want)
			}
		}
	}
}

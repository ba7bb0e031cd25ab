package main

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

// entry is one row of a leaderboard: a recipe at its defaults or its tuned options,
// or a reference (jem-converged, baseline).
type entry struct {
	Name    string            // "sgld", "sgld tuned"
	Method  string            // the method
	Tuned   map[string]string // the tuned options' values (nil at the defaults)
	Sampler bool              // a recipe ranked on the board (not a reference)
	runs    map[unit]run
}

// tunedOf is the values of the entry's tuned options a run trained at (the
// yardstick's: its rate and batch).
func (e *entry) tunedOf(r run) map[string]string {
	if e.Method == methods.Yardstick() {
		return map[string]string{"lr": fmtG(r.LR), "batch_size": fmtG(float64(r.BatchSize))}
	}
	return optionValues(r.ResultRow, slices.Sorted(maps.Keys(e.Tuned)))
}

// Row is an entry's line on one family's board.
type Row struct {
	Rank int `json:"rank"` // competition rank by mean excess, 1 = best (0: a reference, not ranked)
	// BestSet: not distinguishable from the board's best recipe (Holm-adjusted paired
	// Wilcoxon p against the best ≥ verdict.RankAlpha; the best itself is in the set).
	BestSet bool `json:"indistinguishable_from_best"`
	// OverBest is the mean paired excess over the best recipe's on the units both
	// have, with its paired-bootstrap 95% CI; PBest the Wilcoxon p of those differences
	// and PHolm it Holm-adjusted over the comparisons with the best; MDE the smallest
	// difference from the best the board can detect (80% power); AvgRank the Friedman
	// average rank on the units every ranked recipe has.
	OverBest   float64 `json:"over_best"`
	OverBestLo float64 `json:"over_best_lo"`
	OverBestHi float64 `json:"over_best_hi"`
	PBest      float64 `json:"p_vs_best"`
	PHolm      float64 `json:"p_vs_best_holm"`
	MDE        float64 `json:"mde"`
	AvgRank    float64 `json:"avg_rank"`
	Entry      string  `json:"entry"`
	Tuned      string  `json:"tuned,omitempty"`
	Units      int     `json:"units"`     // tasks × run seeds paired with exact jem
	KL         float64 `json:"kl_joint"`  // mean joint KL at the selected iterate
	Excess     float64 `json:"excess"`    // mean paired excess over exact jem, nats
	Lo         float64 `json:"excess_lo"` // bootstrap 95% CI of the mean
	Hi         float64 `json:"excess_hi"`
	// Budget-matched: each run's iterate of least held-out NLL among its curve's
	// checks within the family's budget (Board.Budget gradient evaluations), less exact
	// jem's KL (NaN when no check fits the budget).
	BudgetExcess float64 `json:"budget_excess"`
	Unstable     int     `json:"unstable"`      // runs flagged unstable (collapse); -1 where the rule does not apply (no log q(x): baseline)
	Diverged     int     `json:"diverged"`      // runs whose divergence guard fired
	GradEvals    float64 `json:"grad_evals"`    // mean per run, all steps
	CPUSeconds   float64 `json:"cpu_seconds"`   // mean per run (NaN without --timings)
	SelectedStep float64 `json:"selected_step"` // mean
	Frontier     bool    `json:"frontier"`      // no other recipe has both less excess and fewer evaluations
	// CostEvals and CostExcess are the entry's cost curve (costCurve): at each training
	// check its mean gradient evaluations per run and mean excess joint KL over exact
	// jem's final, over the tasks every run of it has that check.
	CostEvals  []float64 `json:"cost_evals"`
	CostExcess []float64 `json:"cost_excess"`
}

// Board is one family's leaderboard (or all families pooled: Family "all").
type Board struct {
	Family string  `json:"family"`
	Metric string  `json:"metric"`       // what the board ranks (metric.Name): kl_joint, its excess over exact jem
	JEMKL  float64 `json:"jem_kl_joint"` // exact jem's mean joint KL (the yardstick; NaN when the metric is not the joint KL)
	Budget float64 `json:"budget"`       // the budget-matched view's gradient evaluations per run
	Rows   []Row   `json:"rows"`
	// Best is the ranked recipe of least mean excess, Friedman the Friedman test of the
	// ranked recipes with the Nemenyi critical difference, and MDE the board's typical
	// detectable difference from the best at its Tasks units (verdict.Ranking).
	Best     string           `json:"best"`
	Friedman verdict.Friedman `json:"friedman"`
	Tasks    int              `json:"mde_units"`
	MDE      float64          `json:"mde"`
	// IS is the board's importance-sampling coverage of the exact log Z (block tasks;
	// nil where no run has both).
	IS *ISCoverage `json:"is_coverage,omitempty"`
}

// bootstrapReps is the bootstrap's resamples for a mean's 95% CI.
const bootstrapReps = 2000

// boards builds the leaderboard of every family and of all families pooled by m:
// entries' excess over exact jem (jem's rows among the runs) paired by unit, or (a
// metric that is not an excess) their values paired by unit, jem holding every unit.
func boards(m metric, entries []*entry, jem map[unit]run, seed uint64) []Board {
	fams := map[string]bool{}
	for u := range jem {
		fams[u.Task] = true
	}
	var names []string
	for f := range fams {
		names = append(names, f)
	}
	slices.Sort(names)
	var out []Board
	for _, f := range names {
		out = append(out, board(m, f, entries, jem, func(u unit) bool { return u.Task == f }, seed))
	}
	if len(names) > 1 {
		out = append(out, board(m, "all", entries, jem, func(unit) bool { return true }, seed))
	}
	return out
}

// board is the leaderboard over the units keep selects.
func board(m metric, family string, entries []*entry, jem map[unit]run, keep func(unit) bool, seed uint64) Board {
	ref := func(u unit) float64 { // what a run's value is paired against
		if m.Excess {
			return jem[u].KLJoint
		}
		return 0
	}
	var units []unit
	for u := range jem {
		if keep(u) {
			units = append(units, u)
		}
	}
	slices.SortFunc(units, func(a, b unit) int {
		return cmp.Or(cmp.Compare(a.Task, b.Task), cmp.Compare(a.Replicate, b.Replicate), cmp.Compare(a.TableID, b.TableID))
	})
	b := Board{Family: family, Metric: m.Name, Budget: math.Inf(1), JEMKL: math.NaN()}
	if m.Excess {
		var jkl []float64
		for _, u := range units {
			jkl = append(jkl, jem[u].KLJoint)
		}
		b.JEMKL = prob.Mean(jkl)
	}
	// The budget: the least mean gradient evaluations per run of any ranked recipe (over
	// its runs that did not diverge).
	for _, e := range entries {
		if e.Sampler {
			var ev []float64
			for _, u := range units {
				if r, ok := e.runs[u]; ok && !r.Diverged && r.GradEvals > 0 { // a diverged run spent nothing comparable
					ev = append(ev, float64(r.GradEvals))
				}
			}
			if len(ev) > 0 {
				b.Budget = math.Min(b.Budget, prob.Mean(ev))
			}
		}
	}
	var ranked []string
	var xs [][]float64
	rng := prob.NewRand(seed)
	for _, e := range entries {
		row := Row{Entry: e.Name, Tuned: tunedText(e.Tuned)}
		for _, u := range units { // the values its runs here trained at (a pick per task differs by task)
			if r, ok := e.runs[u]; ok && e.Tuned != nil {
				row.Tuned = tunedText(e.tunedOf(r))
				break
			}
		}
		mt, _ := methods.Lookup(e.Method)
		var ex, kls, bex, ev, cpu, sel []float64
		x := make([]float64, len(units))
		for i, u := range units {
			x[i] = math.NaN()
			r, ok := e.runs[u]
			if !ok {
				continue
			}
			row.Units++
			if r.Unstable {
				row.Unstable++
			}
			if r.Diverged {
				row.Diverged++
			}
			v := m.Value(r.ResultRow)
			d := v - ref(u)
			x[i] = d
			if r.Diverged && math.IsNaN(d) { // counted in Diverged; its value is missing, not a mean's NaN
				continue
			}
			ex, kls = append(ex, d), append(kls, v)
			ev, sel = append(ev, float64(r.GradEvals)), append(sel, float64(r.SelectedStep))
			if r.CPUSeconds > 0 {
				cpu = append(cpu, r.CPUSeconds)
			}
			if m.Excess { // the curves hold the joint KL
				bex = append(bex, atBudget(r, b.Budget)-jem[u].KLJoint)
			}
		}
		if m.Excess {
			row.CostEvals, row.CostExcess = costCurve(e, units, jem)
		}
		if mt.NoPx { // its joint's held-out NLL is not what it trains: never judged unstable
			row.Unstable = -1
		}
		row.KL, row.Excess, row.GradEvals, row.SelectedStep = prob.Mean(kls), prob.Mean(ex), prob.Mean(ev), prob.Mean(sel)
		row.CPUSeconds, row.BudgetExcess = nanMean(cpu), nanMean(bex)
		row.Lo, row.Hi = math.NaN(), math.NaN()
		if len(ex) > 1 && allFinite(ex) {
			row.Lo, row.Hi = prob.BootstrapMeanCI(rng, ex, bootstrapReps, 0.95)
		}
		if e.Sampler {
			ranked = append(ranked, e.Name)
			xs = append(xs, x)
		}
		b.Rows = append(b.Rows, row)
	}
	rk := verdict.Rank(ranked, xs, verdict.RankAlpha, prob.Seed(seed, prob.SeedString("rank "+family)))
	b.Best, b.Friedman, b.Tasks, b.MDE = rk.Best, rk.Friedman, rk.N, rk.MDE
	byName := map[string]verdict.Standing{}
	for _, s := range rk.Standings {
		byName[s.Name] = s
	}
	for i := range b.Rows {
		r := &b.Rows[i]
		r.OverBest, r.OverBestLo, r.OverBestHi, r.PBest, r.PHolm, r.MDE, r.AvgRank = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if s, ok := byName[r.Entry]; ok {
			r.Rank, r.BestSet = s.Rank, s.InBestSet
			r.OverBest, r.OverBestLo, r.OverBestHi, r.PBest, r.PHolm, r.MDE, r.AvgRank = s.OverBest, s.OverBestLo, s.OverBestHi, s.P, s.PHolm, s.MDE, s.AvgRank
		}
	}
	// The frontier: ranked recipes no other ranked recipe beats on both excess and cost.
	for i := range b.Rows {
		r := &b.Rows[i]
		if r.Rank == 0 || math.IsNaN(r.Excess) {
			continue
		}
		r.Frontier = true
		for _, o := range b.Rows {
			if o.Rank > 0 && o.Entry != r.Entry && o.Excess <= r.Excess && o.GradEvals <= r.GradEvals && (o.Excess < r.Excess || o.GradEvals < r.GradEvals) {
				r.Frontier = false
			}
		}
	}
	slices.SortStableFunc(b.Rows, func(a, c Row) int {
		ra, rc := a.Rank, c.Rank
		if ra == 0 {
			ra = math.MaxInt
		}
		if rc == 0 {
			rc = math.MaxInt
		}
		return cmp.Or(cmp.Compare(ra, rc), cmp.Compare(a.Excess, c.Excess))
	})
	return b
}

// costCurve is an entry's cost curve over units: at each check index its runs share
// (the curves of one point have one cadence), the mean gradient evaluations spent by
// then and the mean joint KL then less exact jem's final on the same task, over the
// units whose curve has that check (only the checks every unit with a curve has).
func costCurve(e *entry, units []unit, jem map[unit]run) (evals, excess []float64) {
	var sumE, sumX []float64
	var n []int
	curves := 0
	for _, u := range units {
		r, ok := e.runs[u]
		if !ok || len(r.Curve) == 0 {
			continue
		}
		curves++
		for i, c := range r.Curve {
			if i == len(sumE) {
				sumE, sumX, n = append(sumE, 0), append(sumX, 0), append(n, 0)
			}
			sumE[i] += float64(c.GradEvals)
			sumX[i] += c.KLJoint - jem[u].KLJoint
			n[i]++
		}
	}
	for i := range n {
		if n[i] == curves {
			evals, excess = append(evals, sumE[i]/float64(n[i])), append(excess, sumX[i]/float64(n[i]))
		}
	}
	return evals, excess
}

// atBudget is a run's joint KL at its iterate of least held-out NLL among the curve's
// checks within budget gradient evaluations (NaN when none fits).
func atBudget(r run, budget float64) float64 {
	kl, best := math.NaN(), math.Inf(1)
	for _, c := range r.Curve {
		if float64(c.GradEvals) <= budget && c.HeldoutNLL < best {
			kl, best = c.KLJoint, c.HeldoutNLL
		}
	}
	return kl
}

func nanMean(xs []float64) float64 {
	var s float64
	n := 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func allFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// tunedText is "key=value, …" in key order.
func tunedText(m map[string]string) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}

// entriesOf groups runs into entries: the default folder's methods under their names
// (jem apart: the yardstick), each tuned folder's under "<method> tuned" with the
// tuned options' values (keys: the picked options of that method; "jem tuned" is the
// yardstick at its own tuned rate and batch, an entry beside the recipes).
// Variants' runs (a method at other options than its defaults) are entries named
// "<method> <options that differ from the defaults>".
//
// A metric that is not an excess needs no yardstick: jem's runs (where any) are an
// entry like the others and jem holds every unit of the default folder.
func entriesOf(m metric, def []run, tuned []run, picks map[string]map[string]string, variants ...run) (entries []*entry, jem map[unit]run, err error) {
	jem = map[unit]run{}
	byName := map[string]*entry{}
	add := func(name, method string, t map[string]string, r run) {
		e, ok := byName[name]
		if !ok {
			m, _ := methods.Lookup(method)
			e = &entry{Name: name, Method: method, Tuned: t, Sampler: m.Sampler && !m.External || m.External, runs: map[unit]run{}}
			byName[name] = e
			entries = append(entries, e)
		}
		e.runs[r.unit()] = r
	}
	for _, r := range def {
		if !m.Excess {
			jem[r.unit()] = r
		} else if r.Method == methods.Yardstick() {
			jem[r.unit()] = r
			continue
		}
		add(r.Method, r.Method, nil, r)
	}
	for _, r := range tuned { // exact jem here is the yardstick at its own tuned rate and batch: a reference entry
		add(r.Method+" tuned", r.Method, picks[r.Method], r)
	}
	for _, r := range variants {
		if r.Method == methods.Yardstick() {
			continue
		}
		diff := variantOptions(r)
		vals := slices.Sorted(maps.Values(diff))
		add(r.Method+" "+strings.Join(vals, " "), r.Method, diff, r)
	}
	if len(jem) == 0 {
		return nil, nil, fmt.Errorf("no exact jem runs in the default board: the excess needs them (methods must include jem)")
	}
	slices.SortStableFunc(entries, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(methods.Order(a.Method), methods.Order(b.Method)), cmp.Compare(a.Name, b.Name))
	})
	return entries, jem, nil
}

// variantOptions are a run's method options whose values differ from their defaults.
func variantOptions(r run) map[string]string {
	out := map[string]string{}
	def := schemas.DefaultGrid()
	for k, v := range methods.OptionsOf(r.ResultRow) {
		if a, ok := schemas.AxisByKey(k); ok && fmt.Sprint(a.Field.Get(&def)) != v {
			out[k] = v
		}
	}
	return out
}

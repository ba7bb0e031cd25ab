package verdict

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Summarize aggregates result rows by grid point and method. It is deterministic for
// a given seed.
func Summarize(rows []schemas.ResultRow, seed uint64, th Thresholds, ruleOf func(schemas.Grid) Rule) schemas.Summary {
	byPoint := groupRows(rows, func(r *schemas.ResultRow) int64 { return r.PointID })
	ids := make([]int64, 0, len(byPoint))
	for id := range byPoint {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	points := make([]schemas.PointSummary, 0, len(ids))
	for _, id := range ids {
		points = append(points, summarizePoint(GridOfRows(byPoint[id]), ruleOf(GridOfRows(byPoint[id])), byPoint[id], prob.Seed(seed, prob.SeedString("bootstrap"), uint64(id)), th))
	}
	return SummaryOf(points, seed)
}

// SummaryOf is the run's summary from its points' (by point id), with the verdict over
// all points.
func SummaryOf(points []schemas.PointSummary, seed uint64) schemas.Summary {
	out := schemas.Summary{Seed: seed, Points: points}
	held, undecided, pairs, excluded := 0, 0, 0, 0
	for _, ps := range points {
		if ps.Verdict.Holds {
			held++
		}
		if !ps.Verdict.Decided {
			undecided++
		}
		pairs += ps.Verdict.Pairs
		excluded += ps.Verdict.Excluded
	}
	switch {
	case len(out.Points) == 1:
		out.Verdict = out.Points[0].Verdict
	default:
		reason := fmt.Sprintf("the JEM claim holds at %d of %d grid points", held, len(out.Points))
		if undecided > 0 {
			reason += fmt.Sprintf(" (%d undecided)", undecided)
		}
		out.Verdict = schemas.Verdict{Holds: held == len(out.Points) && held > 0, Decided: undecided == 0 && len(out.Points) > 0,
			Pairs: pairs, Excluded: excluded, Reason: reason}
		out.Verdict.Headline, out.Verdict.Exact, out.Verdict.Level = overall(out.Points)
		if !out.Verdict.Decided && out.Verdict.Level != LevelFails {
			out.Verdict.Level = LevelUndecided
		}
	}
	return out
}

// summarizePoint summarises the rows of the point with values g from its rows.
func summarizePoint(g schemas.Grid, rule Rule, rows []schemas.ResultRow, seed uint64, th Thresholds) schemas.PointSummary {
	ps := pointHeader(rows[0].PointID, g, rows[0].Floor)
	byMethod := groupRows(rows, func(r *schemas.ResultRow) string { return r.Method })
	tables := map[int64]*schemas.ResultRow{} // one row per table for its table-level columns
	for i := range rows {
		r := &rows[i]
		if _, ok := tables[r.TableID]; !ok {
			tables[r.TableID] = r
		}
	}
	ps.Tables = len(tables)
	empty := 0
	ids := make([]int64, 0, len(tables))
	for id := range tables {
		ids = append(ids, id)
	}
	slices.Sort(ids) // a fixed summation order: summary.json is byte-identical across runners
	for _, id := range ids {
		r := tables[id]
		if r.EmptyCells > 0 {
			empty++
		}
		ps.ReferenceExpected += r.KLReferenceExpected / float64(len(tables))
		ps.Reference += r.KLReference / float64(len(tables))
	}
	ps.EmptyCellShare = float64(empty) / float64(len(tables))
	for _, m := range methods.Sorted(maps.Keys(byMethod)) {
		ps.Methods = append(ps.Methods, summarizeMethod(m, byMethod[m], ps.Floor))
	}
	if b, j := byMethod[methods.Baseline()], byMethod[methods.Yardstick()]; len(b) > 0 && len(j) > 0 {
		ps.Comparison = compare(b, j, seed)
	}
	finishPoint(&ps, g, rule, samplerPairsOf(byMethod), seed, th, func() schemas.Verdict { return decide(ps, byMethod[methods.Yardstick()], seed, th) })
	return ps
}

// finishPoint adds the sampler comparisons (graded, jem-converged beside them) and the
// verdict to a point's summary: the Samplers rule's verdict, or the Tables rule's
// (decideTable) with the sampler checks; then exact JEM's own outcome, the level and
// the headline.
func finishPoint(ps *schemas.PointSummary, g schemas.Grid, rule Rule, pairs []SamplerPairs, seed uint64, th Thresholds, decideTable func() schemas.Verdict) {
	for _, sp := range pairs {
		ps.Samplers = append(ps.Samplers, sp.comparisonOf(seed))
	}
	rankSamplers(ps.Samplers, pairs)
	*ps = graded(*ps, th)
	var exact string
	switch {
	case rule == NoReference:
		ps.Verdict = schemas.Verdict{Reason: noExactPrefix + ps.Params.Task +
			" (the model's log Z is intractable at this scale); each method is measured against the truth itself: " +
			"its conditional KL to the Bayes classifier, accuracy against Bayes, ECE, OOD against the true density, " +
			"and a lower bound on its joint KL where the annealed importance sampling passes its calibration on the truth"}
		exact = ExactUndecided
	case rule == Samplers:
		ps.Verdict = decide2D(*ps, pairs, seed, th)
		exact, _ = exact2D(*ps)
	default:
		tv := decideTable()
		switch {
		case tv.Decided && tv.Holds:
			exact = ExactHolds
		case tv.Decided:
			exact = ExactFails
		default:
			exact = ExactUndecided
		}
		ps.Verdict = withSamplers(tv, *ps, pairs, th)
		if note := familyNote(g); note != "" && ps.Verdict.Decided {
			ps.Verdict.Reason += "; note: " + note
		}
	}
	if !ps.Verdict.Decided {
		*ps = ungraded(*ps)
	}
	ps.Verdict = finishVerdict(*ps, exact)
}

// pointHeader is a point's summary before its statistics: its values, floor (the
// rows' floor column) and model family.
func pointHeader(id int64, g schemas.Grid, floor float64) schemas.PointSummary {
	return schemas.PointSummary{PointID: id, Params: g, Floor: floor, Family: FamilyOf(g).String()}
}

// GridOfRows is the grid of a point's rows (for Summarize, which has no points): the
// first row's columns, with the px weight of a row of another method than the baseline
// (whose rows carry 0).
func GridOfRows(rows []schemas.ResultRow) schemas.Grid {
	g := schemas.GridOf(rows[0])
	g.PxWeight = 0
	for i := range rows {
		if rows[i].Method != methods.Baseline() {
			g.PxWeight = rows[i].PxWeight
		}
	}
	return g
}

// groupRows splits rows by key, copying each row once into a slice of exactly its
// group's size (rows are large; growing the groups by append copied them many times).
func groupRows[K comparable](rows []schemas.ResultRow, key func(*schemas.ResultRow) K) map[K][]schemas.ResultRow {
	n := map[K]int{}
	for i := range rows {
		n[key(&rows[i])]++
	}
	out := make(map[K][]schemas.ResultRow, len(n))
	for k, c := range n {
		out[k] = make([]schemas.ResultRow, 0, c)
	}
	for i := range rows {
		k := key(&rows[i])
		out[k] = append(out[k], rows[i])
	}
	return out
}

// bootstrapMaxItems is the number of tables up to which CIs are percentile bootstraps
// (bootstrapReps resamples); above it they are the delta-method normal intervals the
// bootstrap tends to, at O(n) instead of O(reps·n) (2000 resamples of 10⁶ tables would
// cost more than training them).
const bootstrapMaxItems = 20000

// meanCI is the 95% CI of the mean of xs (see bootstrapMaxItems).
func meanCI(seed uint64, xs []float64) (lo, hi float64) {
	if len(xs) > bootstrapMaxItems {
		return prob.NormalMeanCI(xs, 0.95)
	}
	return prob.BootstrapMeanCI(prob.NewRand(seed), xs, bootstrapReps, 0.95)
}

func summarizeMethod(m string, rows []schemas.ResultRow, floor float64) schemas.MethodSummary {
	ms := schemas.MethodSummary{Method: m, Runs: len(rows)}
	vals := make([][]float64, len(distFields))
	var sumScale, sumRef float64
	ok := 0
	for i := range rows {
		r := &rows[i]
		if r.Unstable {
			ms.Unstable++ // counted, and kept in every statistic below
		}
		if r.Diverged {
			ms.Diverged++
			continue
		}
		// A nonfinite run's values enter the distributions (its infinite KLs are
		// counted in Infinite, not dropped); the ratios are over the ordinary runs.
		for f, get := range distFields {
			vals[f] = append(vals[f], get(r))
		}
		if r.Nonfinite {
			ms.Nonfinite++
			continue
		}
		ok++
		sumScale += r.KLReferenceExpected - r.KLApproximation
		sumRef += r.KLReferenceExpected
	}
	for f, d := range distsOf(&ms) {
		*d = dist(vals[f])
	}
	if floor > 0 && ms.KLJoint.Count > 0 {
		ms.FloorRatio = ms.KLJoint.Mean / floor
	}
	if n := float64(ok); n > 0 {
		if sumRef > 0 {
			ms.ReferenceRatio = ms.KLJoint.Mean / (sumRef / n)
		}
		if sumScale > 0 {
			ms.GapRatio = ms.KLOptimisationGap.Mean / (sumScale / n)
		}
	}
	return ms
}

// dist summarises the finite values of xs and counts the infinite ones (the KL of an
// empirical table with an empty cell is +Inf; it is counted in Infinite, not averaged).
func dist(all []float64) schemas.Dist {
	xs := make([]float64, 0, len(all))
	inf := 0
	for _, v := range all {
		switch {
		case math.IsInf(v, 0):
			inf++
		case !math.IsNaN(v):
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return schemas.Dist{Infinite: inf}
	}
	q := prob.Quantiles(xs, 0.5, 0.1, 0.9)
	return schemas.Dist{Count: len(xs), Infinite: inf, Mean: prob.Mean(xs), Median: q[0], P10: q[1], P90: q[2]}
}

// compare pairs baseline and jem runs by table (both converged) and tests whether
// JEM's joint KL is lower. Tables with a diverged (or missing) run are counted as
// excluded.
func compare(base, jem []schemas.ResultRow, seed uint64) *schemas.Comparison {
	diffs, wins, sumB, sumJ, tables := pairDiffs(base, jem)
	return comparison(diffs, int(wins), sumB, sumJ, int(tables), seed)
}

// pairDiffs pairs baseline and jem runs by table: the differences baseline − jem of
// joint KL in table order where both converged with a finite KL, JEM's wins, the sums
// of both KLs over those pairs, and the number of tables with either run. It sorts base
// by table id.
func pairDiffs(base, jem []schemas.ResultRow) (diffs []float64, wins int64, sumB, sumJ float64, tables int64) {
	jemBy := make(map[int64]int, len(jem)) // the (last) jem row of each table
	seen := make(map[int64]bool, max(len(jem), len(base)))
	for i := range jem {
		jemBy[jem[i].TableID] = i
		seen[jem[i].TableID] = true
	}
	for i := range base {
		seen[base[i].TableID] = true
	}
	slices.SortFunc(base, func(a, b schemas.ResultRow) int { return cmp.Compare(a.TableID, b.TableID) })
	for i := range base {
		b := &base[i]
		ji, ok := jemBy[b.TableID]
		if !ok {
			continue
		}
		j := &jem[ji]
		if leftOut(b) || leftOut(j) || math.IsInf(b.KLJoint, 0) || math.IsInf(j.KLJoint, 0) {
			continue
		}
		diffs = append(diffs, b.KLJoint-j.KLJoint)
		sumB += b.KLJoint
		sumJ += j.KLJoint
		if j.KLJoint < b.KLJoint {
			wins++
		}
	}
	return diffs, wins, sumB, sumJ, int64(len(seen))
}

// comparison is the paired comparison from the per-table differences baseline − jem of
// joint KL (in table order), the number of them JEM wins, the sums of both KLs over the
// pairs and the number of tables with a baseline or jem run.
func comparison(diffs []float64, wins int, sumB, sumJ float64, tables int, seed uint64) *schemas.Comparison {
	c := &schemas.Comparison{Pairs: len(diffs), Excluded: tables - len(diffs)}
	if len(diffs) == 0 {
		c.WilcoxonP = 1
		return c
	}
	c.JEMWinShare = float64(wins) / float64(len(diffs))
	c.MeanDiff = prob.Mean(diffs)
	c.DiffCILow, c.DiffCIHigh = meanCI(seed, diffs)
	w := prob.WilcoxonSignedRank(diffs)
	c.WilcoxonW, c.WilcoxonZ, c.WilcoxonP = w.WPlus, w.Z, w.P
	if sumJ > 0 {
		c.BaselineToJEM = sumB / sumJ
	} else if sumB > 0 {
		c.BaselineToJEM = math.MaxFloat64 // JEM exact everywhere; keeps summary.json finite
	}
	return c
}

// Verdict causes (schemas.Verdict.Cause).
const (
	CauseSteps       = "steps"
	CauseMinibatch   = "minibatch"
	CausePxWeight    = "px_weight"
	CauseModelFamily = "model_family"
	CauseTables      = "tables"
)

// Check names (schemas.Check.Name).
const (
	CheckOptimisation  = "optimisation_gap"
	CheckMarginal      = "marginal_gap"
	CheckApproximation = "approximation"
	CheckPaired        = "paired_reference"
	CheckBaseline      = "baseline_vs_jem"
)

// ratioSpec is a check of Σ num / Σ den over the tables.
type ratioSpec struct {
	name, what string
	num, den   []float64
	limit      float64
	deciding   bool
}

// ratioOfSums is Σ num / Σ den (NaN when Σ den is 0).
func ratioOfSums(num, den []float64) float64 {
	var sn, sd float64
	for i := range num {
		sn += num[i]
		sd += den[i]
	}
	if sd == 0 {
		return math.NaN()
	}
	return sn / sd
}

// ratioChecks computes checks over the same tables with one table bootstrap (every
// resample evaluates every ratio, so k checks cost one pass of random draws), or with
// delta-method intervals above bootstrapMaxItems tables.
func ratioChecks(seed uint64, specs []ratioSpec) []schemas.Check {
	nums, dens := make([][]float64, len(specs)), make([][]float64, len(specs))
	for i, sp := range specs {
		nums[i], dens[i] = sp.num, sp.den
	}
	var lo, hi []float64
	if len(specs) > 0 && len(specs[0].num) > bootstrapMaxItems {
		lo, hi = make([]float64, len(specs)), make([]float64, len(specs))
		for i, sp := range specs {
			lo[i], hi[i] = prob.NormalRatioCI(sp.num, sp.den, 0.95)
		}
	} else {
		lo, hi = prob.BootstrapRatiosCI(seed, nums, dens, bootstrapReps, 0.95)
	}
	out := make([]schemas.Check, len(specs))
	for i, sp := range specs {
		var sn, sd float64
		for t := range sp.num {
			sn += sp.num[t]
			sd += sp.den[t]
		}
		out[i] = ratioCheck(sp, sn, sd, lo[i], hi[i])
	}
	return out
}

// momentChecks computes checks from their moments over the tables (a folded point,
// above bootstrapMaxItems tables): delta-method intervals.
func momentChecks(specs []ratioSpec, ms []prob.RatioMoments) []schemas.Check {
	out := make([]schemas.Check, len(specs))
	for i, sp := range specs {
		lo, hi := prob.NormalRatioCIMoments(ms[i], 0.95)
		out[i] = ratioCheck(sp, ms[i].Num, ms[i].Den, lo, hi)
	}
	return out
}

// ratioCheck is the check of Σ num / Σ den = sn/sd with its CI [lo, hi].
func ratioCheck(sp ratioSpec, sn, sd, lo, hi float64) schemas.Check {
	c := schemas.Check{Name: sp.name, What: sp.what, Limit: schemas.Number(sp.limit), Deciding: sp.deciding,
		Value: schemas.Number(math.NaN()), CILow: schemas.Number(math.NaN()), CIHigh: schemas.Number(math.NaN())}
	if !(sd > 0) {
		c.Pass = !(sn > 0) // no statistical error to compare with: only an exact 0 passes
	} else {
		c.Value, c.CILow, c.CIHigh = schemas.Number(sn/sd), schemas.Number(lo), schemas.Number(hi)
		c.Pass = hi <= sp.limit
	}
	return c
}

// decide takes the verdict at one grid point from its converged jem runs.
//
// The claim is that JEM's logits fit the joint. What JEM is responsible for is how far
// its training lands from the optimum of its own loss on its own data, the optimisation
// gap (of the joint, and of the marginal q(x) that only JEM's log q(x) term trains), and
// whether its model family can represent the joint at all. Each is compared with the
// statistical error of the same tables — the exact expected KL of the add-½ estimate
// minus the family's approximation error (for q(x): of the add-½ estimate of p(x)) — as
// a ratio of sums over the tables, and must be at most th.Margin at the upper end of a
// table-bootstrap 95% CI. The estimation error is the data's, not JEM's: it is reported
// (the paired line against the add-½ reference on the same counts) but does not decide.
func decide(ps schemas.PointSummary, jem []schemas.ResultRow, seed uint64, th Thresholds) schemas.Verdict {
	var gap, mgap, approx, scale, mscale, excess, refExcess, joint, refExp []float64
	nonfinite := 0
	for _, r := range jem {
		if r.Diverged {
			continue
		}
		if r.Nonfinite {
			nonfinite++
			continue
		}
		gap = append(gap, r.KLOptimisationGap)
		mgap = append(mgap, r.KLMarginalGap)
		approx = append(approx, r.KLApproximation)
		scale = append(scale, r.KLReferenceExpected-r.KLApproximation)
		mscale = append(mscale, r.KLMarginalReferenceExpected)
		excess = append(excess, r.KLJoint-r.KLApproximation)
		refExcess = append(refExcess, r.KLReference-r.KLApproximation)
		joint = append(joint, r.KLJoint)
		refExp = append(refExp, r.KLReferenceExpected)
	}
	in := verdictInput{total: len(jem), pairs: len(gap), nonfinite: nonfinite, meanJoint: prob.Mean(joint), meanRefExp: prob.Mean(refExp),
		checks: func(specs []ratioSpec) []schemas.Check {
			vecs := [][2][]float64{{gap, scale}, {mgap, mscale}, {approx, scale}, {excess, refExcess}}
			for i := range specs {
				specs[i].num, specs[i].den = vecs[i][0], vecs[i][1]
			}
			return ratioChecks(prob.Seed(seed, prob.SeedString("checks")), specs)
		},
		cond: func() float64 {
			// The conditional's gap is the joint's minus q(x)'s (chain rule), over the
			// conditional's share of the statistical error.
			cgap, cscale := make([]float64, len(gap)), make([]float64, len(gap))
			for i := range gap {
				cgap[i], cscale[i] = gap[i]-mgap[i], scale[i]-mscale[i]
			}
			return ratioOfSums(cgap, cscale)
		}}
	return decideFrom(ps, in, th)
}

// verdictInput is what the verdict needs from a point's jem runs, from their rows
// (decide) or from their folded sums (see PointAcc).
type verdictInput struct {
	total, pairs          int     // jem runs, and those that converged with finite KLs
	nonfinite             int     // jem runs whose KL is not finite (no guard fired)
	meanJoint, meanRefExp float64 // over the converged runs with finite KLs
	// checks fills the ratio checks' values and CIs: specs are, in order, the
	// optimisation gap, q(x)'s gap, the approximation error and the paired line.
	checks func(specs []ratioSpec) []schemas.Check
	// cond is the conditional q(y|x)'s optimisation gap over its statistical error.
	cond func() float64
}

// decideFrom takes the verdict at one grid point (see decide).
func decideFrom(ps schemas.PointSummary, in verdictInput, th Thresholds) schemas.Verdict {
	if in.total == 0 {
		return schemas.Verdict{Reason: "undecided: the verdict needs jem runs"}
	}
	total, pairs := in.total, in.pairs
	excluded := total - pairs - in.nonfinite
	if err := TablesRefusal(ps.Params); err != nil {
		return schemas.Verdict{Pairs: pairs, Excluded: excluded, Reason: "undecided: " + err.Error()}
	}
	if why := tooFewTables(total, "tables"); why != "" {
		return schemas.Verdict{Pairs: pairs, Excluded: excluded, Reason: why}
	}
	if in.nonfinite > 0 {
		return schemas.Verdict{Decided: true, Pairs: pairs, Excluded: excluded, Cause: CauseNonfinite,
			Reason: "FAILS (" + nonfiniteWords(methods.Yardstick(), in.nonfinite, total, "tables") + ")"}
	}
	if pairs == 0 {
		return schemas.Verdict{Excluded: excluded,
			Reason: fmt.Sprintf("undecided: every jem run diverged (%d of %d tables); try a smaller --lr", excluded, total)}
	}
	if share := float64(excluded) / float64(total); share > MaxDivergedShare {
		return schemas.Verdict{Pairs: pairs, Excluded: excluded,
			Reason: fmt.Sprintf("undecided: %d of %d jem runs (%.1f%%) diverged, more than the %g%% a verdict allows "+
				"(the %d converged runs alone are not a fair sample of the tables); try a smaller --lr",
				excluded, total, 100*share, 100*MaxDivergedShare, pairs)}
	}
	d := th.Margin
	checks := in.checks([]ratioSpec{
		{name: CheckOptimisation, what: "JEM's optimisation gap KL(p̂‖q) − min over the family, over the statistical error", limit: d, deciding: true},
		{name: CheckMarginal, what: "the optimisation gap of q(x), over the statistical error of the add-½ estimate of p(x)", limit: d, deciding: true},
		{name: CheckApproximation, what: "the model family's approximation error min KL(p‖·), over the statistical error", limit: d, deciding: true},
		{name: CheckPaired, what: "JEM's excess KL over the family's best, over the add-½ reference's on the same counts", limit: 1 + d},
	})
	opt, marg, app := checks[0], checks[1], checks[2]
	v := schemas.Verdict{Decided: true, Pairs: pairs, Excluded: excluded, Checks: checks}
	if c := ps.Comparison; c != nil && c.Pairs > 0 {
		v.Checks = append(v.Checks, schemas.Check{Name: CheckBaseline, What: "paired Wilcoxon signed-rank test of baseline against JEM joint KL (p-value)",
			Value: schemas.Number(c.WilcoxonP), CILow: schemas.Number(math.NaN()), CIHigh: schemas.Number(math.NaN()),
			Limit: schemas.Number(th.MaxP), Pass: c.WilcoxonP < th.MaxP && c.MeanDiff > 0})
	}
	v.Holds = opt.Pass && marg.Pass && app.Pass
	desc := fmt.Sprintf("JEM's optimisation gap is %s of the statistical error, q(x)'s %s, the family's approximation error %s (each need ≤ %s at the CI's upper end)",
		pctCI(opt), pctCI(marg), pctCI(app), pct(d))
	desc += fmt.Sprintf("; JEM's joint KL %.3g against the exact expected reference %.3g (%.2f×), %.3g%% of tables with an empty cell",
		in.meanJoint, in.meanRefExp, in.meanJoint/in.meanRefExp, 100*ps.EmptyCellShare)
	if c := ps.Comparison; c != nil && c.Pairs > 0 {
		desc += fmt.Sprintf("; secondary: Wilcoxon baseline vs JEM p %s over %d tables", formatP(c.WilcoxonP), c.Pairs)
	}
	if excluded > 0 {
		desc += fmt.Sprintf("; %d of %d jem runs left out as diverged", excluded, total)
	}
	if v.Holds {
		v.Reason = "HOLDS: " + desc
		return v
	}
	v.Cause, v.Reason = failureCause(ps, opt, marg, app, in.cond, d)
	v.Reason = "FAILS (" + v.Reason + "): " + desc
	return v
}

// failureCause names why the claim fails, with the remedy: the model family when it
// cannot represent the tables; otherwise an optimisation gap, from px weight (q(x) lags
// while the conditional has converged), minibatch noise, or too few steps.
func failureCause(ps schemas.PointSummary, opt, marg, app schemas.Check, condRatio func() float64, d float64) (string, string) {
	p := ps.Params
	if !app.Pass {
		why := fmt.Sprintf("model family: %s cannot represent these tables; its best fit of the true tables is %s of the statistical error, "+
			"and more steps do not change that; use --x_encoding=onehot or an mlp", familyWords(p), pct(float64(app.Value)))
		if opt.Pass && marg.Pass {
			why += "; within its family JEM is efficient (its optimisation gap passes)"
		}
		return CauseModelFamily, why
	}
	if p.PxWeight == 0 {
		return CausePxWeight, "px weight: --jem_px_weight=0 leaves q(x) untrained, so JEM is the baseline; use a positive weight (1 is maximum likelihood)"
	}
	// A px weight below 1 slows q(x) alone: it is the cause when q(x) lags further
	// behind than q(y|x).
	cond := condRatio()
	if !marg.Pass && p.PxWeight < 1 && float64(marg.Value) > cond {
		return CausePxWeight, fmt.Sprintf("px weight: q(x) lags behind q(y|x) (optimisation gaps %s and %s of their statistical errors): "+
			"--jem_px_weight=%g slows the marginal; use 1 (maximum likelihood) or more --steps", pct(float64(marg.Value)), pct(cond), p.PxWeight)
	}
	if float64(opt.Value) <= d && float64(marg.Value) <= d {
		return CauseTables, fmt.Sprintf("too few tables: the gaps (%s and %s) are within the margin but their 95%% CIs reach above it; "+
			"use more --tables to decide", pct(float64(opt.Value)), pct(float64(marg.Value)))
	}
	if p.BatchSize > 0 && p.BatchSize < p.Samples {
		return CauseMinibatch, fmt.Sprintf("minibatch noise: Adam at a constant --lr=%g on minibatches of %d of %d draws stalls %s of the statistical error "+
			"from the optimum of its own loss; lower --lr (with more --steps) or train full-batch", p.LR, p.BatchSize, p.Samples, pct(float64(opt.Value)))
	}
	return CauseSteps, fmt.Sprintf("too few steps: after %d steps the optimiser is %s of the statistical error from the optimum of its own loss "+
		"(tables with extreme cell ratios need large logits that Adam approaches slowly); try --steps=%d or a larger --lr",
		p.Steps, pct(math.Max(float64(opt.Value), float64(marg.Value))), 10*p.Steps)
}

// familyWords describes a point's model family for a verdict.
func familyWords(p schemas.Grid) string {
	fam := FamilyOf(p)
	if fam.Complete() {
		return fmt.Sprintf("model %q", p.Model)
	}
	return fmt.Sprintf("the linear model on scalar x (log q(x,y) linear in x: %d of the %d degrees of freedom of a %d×%d joint)",
		fam.Dof(), int(p.XValues*p.Classes)-1, p.XValues, p.Classes)
}

// pct prints a share as a percentage, or as a multiple from 10× up.
func pct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.3g×", v)
	}
	return fmt.Sprintf("%.3g%%", 100*v)
}

// pctCI prints a check's value with its CI as percentages.
func pctCI(c schemas.Check) string {
	if math.IsNaN(float64(c.Value)) {
		return "0 (no statistical error to compare with)"
	}
	return fmt.Sprintf("%s [%s, %s]", pct(float64(c.Value)), pct(float64(c.CILow)), pct(float64(c.CIHigh)))
}

// formatP prints a p-value; one that underflows float64 is shown as a bound, not as 0.
func formatP(p float64) string {
	if p < 1e-300 {
		return "< 1e-300"
	}
	return fmt.Sprintf("= %.2g", p)
}

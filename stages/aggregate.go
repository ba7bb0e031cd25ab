package stages

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*ResultSet)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*schemas.Summary)(nil)).Elem())
	register.DoFn2x0[ResultSet, func(schemas.Summary)](&aggregateFn{})
	register.Emitter1[schemas.Summary]()
}

// bootstrapReps is the number of bootstrap resamples for the CI of the mean difference.
const bootstrapReps = 2000

// MaxDivergedShare is the largest share of a point's baseline/jem pairs (tables) that
// may be left out of the verdict because the baseline or the jem run diverged: above
// it the point is undecided (the converged pairs alone are no longer a fair sample of
// the tables), and the regression check exits 2.
const MaxDivergedShare = 0.10

// Aggregate summarises the results of every grid point: per method the count, mean,
// median, p10 and p90 of each KL, the ratio of mean joint KL to the floor; the paired
// JEM-vs-baseline comparison (win share, Wilcoxon signed-rank test, bootstrap 95% CI of
// the mean difference); and the verdict under opts.Thresholds, which is undecided when a
// method is missing or more than MaxDivergedShare of the pairs diverged.
//
// In: PCollection<ResultSet> (one element). Out: PCollection<schemas.Summary> (one element).
func Aggregate(s beam.Scope, opts Options, pipeline string, results beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Aggregate")
	return beam.ParDo(s, &aggregateFn{Seed: opts.Seed, Pipeline: pipeline, Thresholds: opts.Thresholds}, results)
}

type aggregateFn struct {
	Seed       uint64
	Pipeline   string
	Thresholds Thresholds
}

func (f *aggregateFn) ProcessElement(rs ResultSet, emit func(schemas.Summary)) {
	sum := Summarize(rs.Rows, f.Seed, f.Thresholds)
	sum.Pipeline = f.Pipeline
	progress("aggregate: %d runs over %d points: %s", len(rs.Rows), len(sum.Points), sum.Verdict.Reason)
	emit(sum)
}

// Summarize aggregates result rows by grid point and method. It is deterministic for
// a given seed.
func Summarize(rows []schemas.ResultRow, seed uint64, th Thresholds) schemas.Summary {
	byPoint := groupRows(rows, func(r *schemas.ResultRow) int64 { return r.PointID })
	ids := make([]int64, 0, len(byPoint))
	for id := range byPoint {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := schemas.Summary{Seed: seed}
	held, undecided, pairs, excluded := 0, 0, 0, 0
	for _, id := range ids {
		ps := summarizePoint(byPoint[id], prob.Seed(seed, prob.SeedString("bootstrap"), uint64(id)), th)
		if ps.Verdict.Holds {
			held++
		}
		if !ps.Verdict.Decided {
			undecided++
		}
		pairs += ps.Verdict.Pairs
		excluded += ps.Verdict.Excluded
		out.Points = append(out.Points, ps)
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
	}
	return out
}

func summarizePoint(rows []schemas.ResultRow, seed uint64, th Thresholds) schemas.PointSummary {
	r0 := rows[0]
	ps := schemas.PointSummary{
		PointID: r0.PointID,
		Params: schemas.PointParams{XValues: r0.XValues, Classes: r0.Classes, Encoding: r0.Encoding,
			Generator: r0.Generator, Samples: r0.Samples, Model: r0.Model, LR: r0.LR, Steps: r0.Steps,
			BatchSize: r0.BatchSize, Replicate: r0.Replicate},
		Floor:  r0.Floor,
		Family: rowFamily(r0).String(),
	}
	byMethod := groupRows(rows, func(r *schemas.ResultRow) string { return r.Method })
	tables := map[int64]*schemas.ResultRow{} // one row per table for its table-level columns
	for i := range rows {
		r := &rows[i]
		if _, ok := tables[r.TableID]; !ok {
			tables[r.TableID] = r
		}
		if r.Method != MethodBaseline {
			ps.Params.PxWeight = r.PxWeight
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
	for _, m := range AllMethods {
		if rs, ok := byMethod[m]; ok {
			ps.Methods = append(ps.Methods, summarizeMethod(m, rs, ps.Floor))
		}
	}
	if b, j := byMethod[MethodBaseline], byMethod[MethodJEM]; len(b) > 0 && len(j) > 0 {
		ps.Comparison = compare(b, j, seed)
	}
	ps.Verdict = decide(ps, byMethod[MethodJEM], seed, th)
	if note := familyNote(rowPoint(r0)); note != "" && ps.Verdict.Decided {
		ps.Verdict.Reason += "; note: " + note
	}
	return ps
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

// rowFamily is the model family of a row's point (see familyOf).
func rowFamily(r schemas.ResultRow) prob.Family { return familyOf(rowPoint(r)) }

// rowPoint is the part of a row's point that decides its model family.
func rowPoint(r schemas.ResultRow) Point {
	return Point{XValues: int(r.XValues), Classes: int(r.Classes), Encoding: r.Encoding, Model: r.Model}
}

func summarizeMethod(m string, rows []schemas.ResultRow, floor float64) schemas.MethodSummary {
	ms := schemas.MethodSummary{Method: m, Runs: len(rows)}
	var joint, marg, cond, acc, bayes, emp, approx, gap, est, mgap []float64
	var sumScale, sumRef float64
	for _, r := range rows {
		if r.Diverged {
			ms.Diverged++
			continue
		}
		joint = append(joint, r.KLJoint)
		marg = append(marg, r.KLMarginal)
		cond = append(cond, r.KLConditional)
		acc = append(acc, r.Accuracy)
		bayes = append(bayes, r.BayesAccuracy)
		emp = append(emp, r.KLEmpirical)
		approx = append(approx, r.KLApproximation)
		gap = append(gap, r.KLOptimisationGap)
		est = append(est, r.KLEstimation)
		mgap = append(mgap, r.KLMarginalGap)
		sumScale += r.KLReferenceExpected - r.KLApproximation
		sumRef += r.KLReferenceExpected
	}
	ms.KLJoint, ms.KLMarginal, ms.KLConditional = dist(joint), dist(marg), dist(cond)
	ms.Accuracy, ms.BayesAccuracy, ms.KLEmpirical = dist(acc), dist(bayes), dist(emp)
	ms.KLApproximation, ms.KLOptimisationGap, ms.KLEstimation, ms.KLMarginalGap = dist(approx), dist(gap), dist(est), dist(mgap)
	if floor > 0 && len(joint) > 0 {
		ms.FloorRatio = ms.KLJoint.Mean / floor
	}
	if n := float64(len(joint)); n > 0 {
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
	return schemas.Dist{Count: len(xs), Infinite: inf, Mean: prob.Mean(xs), Median: prob.Quantile(xs, 0.5),
		P10: prob.Quantile(xs, 0.1), P90: prob.Quantile(xs, 0.9)}
}

// compare pairs baseline and jem runs by table (both converged) and tests whether
// JEM's joint KL is lower. Tables with a diverged (or missing) run are counted as
// excluded.
func compare(base, jem []schemas.ResultRow, seed uint64) *schemas.Comparison {
	jemBy := map[int64]schemas.ResultRow{}
	tables := map[int64]bool{}
	for _, r := range jem {
		jemBy[r.TableID] = r
		tables[r.TableID] = true
	}
	for _, r := range base {
		tables[r.TableID] = true
	}
	slices.SortFunc(base, func(a, b schemas.ResultRow) int { return cmp.Compare(a.TableID, b.TableID) })
	var diffs []float64
	var sumB, sumJ float64
	wins := 0
	for _, b := range base {
		j, ok := jemBy[b.TableID]
		if !ok || b.Diverged || j.Diverged || math.IsInf(b.KLJoint, 0) || math.IsInf(j.KLJoint, 0) {
			continue
		}
		diffs = append(diffs, b.KLJoint-j.KLJoint)
		sumB += b.KLJoint
		sumJ += j.KLJoint
		if j.KLJoint < b.KLJoint {
			wins++
		}
	}
	c := &schemas.Comparison{Pairs: len(diffs), Excluded: len(tables) - len(diffs)}
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
		lo, hi = prob.BootstrapRatiosCI(prob.NewRand(seed), nums, dens, bootstrapReps, 0.95)
	}
	out := make([]schemas.Check, len(specs))
	for i, sp := range specs {
		var sn, sd float64
		for t := range sp.num {
			sn += sp.num[t]
			sd += sp.den[t]
		}
		c := schemas.Check{Name: sp.name, What: sp.what, Limit: schemas.Number(sp.limit), Deciding: sp.deciding,
			Value: schemas.Number(math.NaN()), CILow: schemas.Number(math.NaN()), CIHigh: schemas.Number(math.NaN())}
		if !(sd > 0) {
			c.Pass = !(sn > 0) // no statistical error to compare with: only an exact 0 passes
		} else {
			c.Value, c.CILow, c.CIHigh = schemas.Number(sn/sd), schemas.Number(lo[i]), schemas.Number(hi[i])
			c.Pass = hi[i] <= sp.limit
		}
		out[i] = c
	}
	return out
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
	if len(jem) == 0 {
		return schemas.Verdict{Reason: "undecided: the verdict needs jem runs"}
	}
	var gap, mgap, approx, scale, mscale, excess, refExcess, joint, refExp []float64
	for _, r := range jem {
		if r.Diverged {
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
	total, pairs := len(jem), len(gap)
	excluded := total - pairs
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
	checks := ratioChecks(prob.Seed(seed, prob.SeedString("checks")), []ratioSpec{
		{CheckOptimisation, "JEM's optimisation gap KL(p̂‖q) − min over the family, over the statistical error", gap, scale, d, true},
		{CheckMarginal, "the optimisation gap of q(x), over the statistical error of the add-½ estimate of p(x)", mgap, mscale, d, true},
		{CheckApproximation, "the model family's approximation error min KL(p‖·), over the statistical error", approx, scale, d, true},
		{CheckPaired, "JEM's excess KL over the family's best, over the add-½ reference's on the same counts", excess, refExcess, 1 + d, false},
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
		prob.Mean(joint), prob.Mean(refExp), prob.Mean(joint)/prob.Mean(refExp), 100*ps.EmptyCellShare)
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
	v.Cause, v.Reason = failureCause(ps, opt, marg, app, gap, mgap, scale, mscale, d)
	v.Reason = "FAILS (" + v.Reason + "): " + desc
	return v
}

// failureCause names why the claim fails, with the remedy: the model family when it
// cannot represent the tables; otherwise an optimisation gap, from px weight (q(x) lags
// while the conditional has converged), minibatch noise, or too few steps.
func failureCause(ps schemas.PointSummary, opt, marg, app schemas.Check, gap, mgap, scale, mscale []float64, d float64) (string, string) {
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
	// The conditional's gap is the joint's minus q(x)'s (chain rule), over the
	// conditional's share of the statistical error. A px weight below 1 slows q(x)
	// alone: it is the cause when q(x) lags further behind than q(y|x).
	cgap, cscale := make([]float64, len(gap)), make([]float64, len(gap))
	for i := range gap {
		cgap[i], cscale[i] = gap[i]-mgap[i], scale[i]-mscale[i]
	}
	cond := ratioOfSums(cgap, cscale)
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
func familyWords(p schemas.PointParams) string {
	fam := familyOf(Point{XValues: int(p.XValues), Classes: int(p.Classes), Encoding: p.Encoding, Model: p.Model}) // p is a summary's params
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

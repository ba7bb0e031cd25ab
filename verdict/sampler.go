package verdict

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
)

// # The sampler against exact JEM
//
// A sampler method (sgld on 2-D tasks, pcd and pcd-exact on tables) trains JEM with a
// sampled log-Z gradient; exact jem trains the same model on the same data with the
// exact one (on 2-D tasks the same initial parameters too). Paired by task, the
// sampler's excess joint KL over exact JEM is what the sampler costs. The verdict's
// sampler check is that excess as a share of exact JEM's KL (a ratio of sums over the
// tasks, with its table-bootstrap 95% CI), which must be at most the margin; regress
// can also gate on the excess in nats (--max_sampler_excess).

// SamplerPairs are a sampler method's runs paired with exact jem's by table, in table
// order, where both converged with finite KLs: the differences sampler − jem of the
// joint and the marginal KL and jem's KLs; Tables counts the tables with either run,
// Nonfinite those where the sampler's KL is not finite (no guard fired) and exact jem's
// converged with a finite KL: the sampler's excess there is +Inf, counted against it.
type SamplerPairs struct {
	Method        string
	Diffs, MDiffs []float64
	Exact, ExactM []float64
	IDs           []int64 // the table of each pair (within one point)
	Tables        int64
	Nonfinite     int64
	// ConvDiffs are the joint-KL differences method − jem-converged (the converged
	// yardstick) by table, where both ran with finite KLs; on jem-converged's own pairs,
	// exact jem − jem-converged (how far the shared-budget yardstick is from converged).
	ConvDiffs []float64
}

// pairSampler pairs the sampler's rows with jem's by table id. Both are sorted by table
// id first (the pairs are in table order).
func pairSampler(method string, jem, sampler []schemas.ResultRow) SamplerPairs {
	sp := SamplerPairs{Method: method}
	byTable := make(map[int64]*schemas.ResultRow, len(jem))
	seen := map[int64]bool{}
	for i := range jem {
		byTable[jem[i].TableID] = &jem[i]
		seen[jem[i].TableID] = true
	}
	rows := slices.Clone(sampler)
	slices.SortFunc(rows, func(a, b schemas.ResultRow) int { return cmp.Compare(a.TableID, b.TableID) })
	for i := range rows {
		s := &rows[i]
		seen[s.TableID] = true
		j, ok := byTable[s.TableID]
		if !ok || s.Diverged || leftOut(j) || !finite([]float64{j.KLJoint, j.KLMarginal}) {
			continue // no exact reference to compare with: left out (diverged)
		}
		if s.Nonfinite || !finite([]float64{s.KLJoint, s.KLMarginal}) {
			sp.Nonfinite++
			continue
		}
		sp.Diffs = append(sp.Diffs, s.KLJoint-j.KLJoint)
		sp.IDs = append(sp.IDs, s.TableID)
		sp.MDiffs = append(sp.MDiffs, s.KLMarginal-j.KLMarginal)
		sp.Exact = append(sp.Exact, j.KLJoint)
		sp.ExactM = append(sp.ExactM, j.KLMarginal)
	}
	sp.Tables = int64(len(seen))
	return sp
}

// samplerPairsOf pairs every sampler method present in byMethod with jem, and
// jem-converged (a reference shown beside them with its own excess, never judged).
func samplerPairsOf(byMethod map[string][]schemas.ResultRow) []SamplerPairs {
	jem, ok := byMethod[methods.Yardstick()]
	if !ok {
		return nil
	}
	conv := convergedYardstick(byMethod)
	var out []SamplerPairs
	for _, m := range methods.Sorted(maps.Keys(byMethod)) {
		if methods.IsSampler(m) || methods.Has(m, func(x methods.Method) bool { return x.Comparable }) {
			sp := pairSampler(m, jem, byMethod[m])
			switch {
			case conv == "":
			case m == conv:
				sp.ConvDiffs = pairSampler(methods.Yardstick(), byMethod[conv], jem).Diffs
			default:
				sp.ConvDiffs = pairSampler(m, byMethod[conv], byMethod[m]).Diffs
			}
			out = append(out, sp)
		}
	}
	return out
}

// convergedYardstick is the point's converged yardstick among its methods: the exact
// reference trained on full batches until its convergence rule holds (jem-converged),
// or "" when it did not run.
func convergedYardstick(byMethod map[string][]schemas.ResultRow) string {
	for _, m := range methods.Sorted(maps.Keys(byMethod)) {
		if methods.Has(m, isConvergedYardstick) {
			return m
		}
	}
	return ""
}

// isConvergedYardstick says whether a method is the converged yardstick: an exact
// reference on full batches (jem-converged).
func isConvergedYardstick(m methods.Method) bool { return m.Reference && m.FullBatch }

// appendPairs concatenates the pairs of o to those of the same method in a.
func appendPairs(a []SamplerPairs, o []SamplerPairs) []SamplerPairs {
	for _, sp := range o {
		i := slices.IndexFunc(a, func(x SamplerPairs) bool { return x.Method == sp.Method })
		if i < 0 {
			a = append(a, SamplerPairs{Method: sp.Method})
			i = len(a) - 1
		}
		a[i].Diffs = append(a[i].Diffs, sp.Diffs...)
		a[i].MDiffs = append(a[i].MDiffs, sp.MDiffs...)
		a[i].Exact = append(a[i].Exact, sp.Exact...)
		a[i].ExactM = append(a[i].ExactM, sp.ExactM...)
		a[i].Tables += sp.Tables
		a[i].Nonfinite += sp.Nonfinite
		a[i].ConvDiffs = append(a[i].ConvDiffs, sp.ConvDiffs...)
	}
	slices.SortFunc(a, func(x, y SamplerPairs) int {
		return methods.Compare(x.Method, y.Method)
	})
	return a
}

// comparisonOf summarises a sampler's pairs: mean excesses with CIs, the share of
// tasks where the sampler is worse and the Wilcoxon test of the joint differences.
func (sp SamplerPairs) comparisonOf(seed uint64) schemas.SamplerComparison {
	n := len(sp.Diffs)
	c := schemas.SamplerComparison{Method: sp.Method, Pairs: n, Nonfinite: int(sp.Nonfinite), Excluded: int(sp.Tables) - n - int(sp.Nonfinite), WilcoxonP: 1,
		Reference: !methods.IsSampler(sp.Method), MatchesWithin: math.NaN()}
	sp.overConverged(&c, seed)
	if n == 0 {
		nan := math.NaN()
		c.MeanExact, c.MeanSampler, c.Excess, c.ExcessCILow, c.ExcessCIHigh = nan, nan, nan, nan, nan
		c.MarginalExcess, c.MarginalCILow, c.MarginalCIHigh, c.WorseShare, c.ExcessRatio = nan, nan, nan, nan, nan
		return c
	}
	seed = prob.Seed(seed, prob.SeedString("sampler"), prob.SeedString(sp.Method))
	c.MeanExact = prob.Mean(sp.Exact)
	c.Excess = prob.Mean(sp.Diffs)
	c.MeanSampler = c.MeanExact + c.Excess
	c.ExcessCILow, c.ExcessCIHigh = meanCI(seed, sp.Diffs)
	c.MarginalExcess = prob.Mean(sp.MDiffs)
	c.MarginalCILow, c.MarginalCIHigh = meanCI(prob.Seed(seed, 1), sp.MDiffs)
	worse := 0
	for _, d := range sp.Diffs {
		if d > 0 {
			worse++
		}
	}
	c.WorseShare = float64(worse) / float64(n)
	c.WilcoxonP = prob.WilcoxonSignedRank(sp.Diffs).P
	if c.MeanExact > 0 {
		c.ExcessRatio = c.Excess / c.MeanExact
	} else {
		c.ExcessRatio = math.NaN()
	}
	return c
}

// overConverged sets c's comparison with the converged yardstick from sp.ConvDiffs:
// a recipe's excess over it with its 95% CI, flagged BelowConverged when the CI's upper
// end is below 0; on jem-converged's own entry, exact jem's excess over it. NaN where
// there are no such pairs.
func (sp SamplerPairs) overConverged(c *schemas.SamplerComparison, seed uint64) {
	nan := schemas.Number(math.NaN())
	c.OverConverged, c.OverConvergedLo, c.OverConvergedHi = nan, nan, nan
	c.JemOverConverged, c.JemOverConvergedLo, c.JemOverConvergedHi = nan, nan, nan
	if len(sp.ConvDiffs) == 0 {
		return
	}
	mean := schemas.Number(prob.Mean(sp.ConvDiffs))
	lo, hi := meanCI(prob.Seed(seed, prob.SeedString("converged"), prob.SeedString(sp.Method)), sp.ConvDiffs)
	if methods.Has(sp.Method, isConvergedYardstick) {
		c.JemOverConverged, c.JemOverConvergedLo, c.JemOverConvergedHi = mean, schemas.Number(lo), schemas.Number(hi)
		return
	}
	c.OverConverged, c.OverConvergedLo, c.OverConvergedHi = mean, schemas.Number(lo), schemas.Number(hi)
	c.ConvergedPairs, c.BelowConverged = len(sp.ConvDiffs), hi < 0
}

// convergedWords describes a comparison's part against the converged yardstick: a
// recipe's excess over it (flagged when below it), or on jem-converged's own entry
// exact jem's; "" without it.
func convergedWords(c schemas.SamplerComparison) string {
	switch {
	case !math.IsNaN(float64(c.JemOverConverged)):
		return fmt.Sprintf("; exact JEM at the shared budget is %s nats [95%% CI %s, %s] over this converged yardstick",
			nats(float64(c.JemOverConverged), true), nats(float64(c.JemOverConvergedLo), false), nats(float64(c.JemOverConvergedHi), false))
	case math.IsNaN(float64(c.OverConverged)):
		return ""
	}
	s := fmt.Sprintf("; over the converged yardstick (jem-converged) %s nats [95%% CI %s, %s] on %d tasks", nats(float64(c.OverConverged), true),
		nats(float64(c.OverConvergedLo), false), nats(float64(c.OverConvergedHi), false), c.ConvergedPairs)
	if c.BelowConverged {
		s += ": " + BelowConvergedWords
	}
	return s
}

// BelowConvergedWords flag a recipe whose excess over the converged yardstick has its
// CI's upper end below 0: exact JEM trained to convergence is the family's best on
// these draws, so a recipe below it is suspect, not a win.
const BelowConvergedWords = "BELOW the converged yardstick (suspect: a yardstick not converged, or chance; not a win)"

// CheckSamplerPrefix names a sampler's verdict check: sampler_excess_<method>.
const CheckSamplerPrefix = "sampler_excess_"

// samplerChecks are the verdict's sampler checks, one per sampler method (not
// jem-converged, which is shown, never judged), from the point's graded comparisons:
// the mean excess joint KL over exact JEM's in nats with its 95% CI, against the upper
// end of the "matches" band (deciding: it passes when the recipe matches exact JEM, see
// gradeOf); when the sampler's KL is not finite on some tasks where exact JEM's is,
// their share (deciding, limit 0: the excess there is +Inf); and with
// th.MaxSamplerExcess, the excess against that gate in nats.
func samplerChecks(ps schemas.PointSummary, th Thresholds) []schemas.Check {
	var out []schemas.Check
	nan := schemas.Number(math.NaN())
	for _, c := range ps.Samplers {
		if c.Reference {
			continue
		}
		if c.Nonfinite > 0 {
			n := c.Pairs + c.Nonfinite
			out = append(out, schemas.Check{Name: CheckNonfinitePrefix + c.Method, Deciding: true,
				What:  fmt.Sprintf("share of the tasks where %s's KL is infinite (no guard fired) and exact JEM's is finite: its excess there is +Inf", c.Method),
				Value: schemas.Number(float64(c.Nonfinite) / float64(n)), CILow: nan, CIHigh: nan})
		}
		ck := schemas.Check{Name: CheckSamplerPrefix + c.Method, Deciding: true, Value: nan, CILow: nan, CIHigh: nan,
			Limit: schemas.Number(c.MatchesWithin), Pass: c.Grade == GradeMatches || c.Grade == GradeNone,
			What: fmt.Sprintf("%s's mean excess joint KL over exact JEM's on the same tasks, in nats: it matches exact JEM when its CI's upper end is "+
				"within the reference's own statistical error (this limit); graded beyond it in bands of %g and %g nat", c.Method, BandClose, BandFar)}
		if c.Pairs > 0 {
			ck.Value, ck.CILow, ck.CIHigh = schemas.Number(c.Excess), schemas.Number(c.ExcessCILow), schemas.Number(c.ExcessCIHigh)
		}
		out = append(out, ck)
		if th.MaxSamplerExcess > 0 {
			ck := schemas.Check{Name: CheckSamplerNatsPrefix + c.Method, Deciding: true,
				What:  fmt.Sprintf("%s's mean excess joint KL over exact JEM's in nats (--max_sampler_excess)", c.Method),
				Value: schemas.Number(c.Excess), CILow: schemas.Number(c.ExcessCILow), CIHigh: schemas.Number(c.ExcessCIHigh),
				Limit: schemas.Number(th.MaxSamplerExcess)}
			ck.Pass = c.ExcessCIHigh <= th.MaxSamplerExcess
			if c.Pairs == 0 {
				ck.Value, ck.CILow, ck.CIHigh, ck.Pass = nan, nan, nan, c.Nonfinite == 0
			}
			out = append(out, ck)
		}
	}
	return out
}

// CheckSamplerNatsPrefix names a sampler's check against --max_sampler_excess:
// sampler_excess_nats_<method>.
const CheckSamplerNatsPrefix = "sampler_excess_nats_"

// withSamplers adds the sampler checks to a table point's verdict: a decided verdict
// holds only when every sampler matches exact JEM too.
func withSamplers(v schemas.Verdict, ps schemas.PointSummary, pairs []SamplerPairs, th Thresholds) schemas.Verdict {
	if len(pairs) == 0 || !v.Decided {
		return v
	}
	checks := samplerChecks(ps, th)
	v.Checks = append(v.Checks, checks...)
	desc := samplerWords(ps, checks)
	if v.Holds && !allPass(checks) {
		v.Holds = false
		v.Cause = CauseSampler
		why := failingWords(ps)
		if nf := samplersNonfinite(pairs, "tables"); nf != "" {
			v.Cause, why = CauseNonfinite, nf
		}
		v.Reason = "FAILS (sampler: " + why + "): " + strings.TrimPrefix(v.Reason, "HOLDS: ") + "; " + desc
		return v
	}
	if desc != "" {
		v.Reason += "; " + desc
	}
	return v
}

// CauseSampler is the verdict's cause when a sampler does not match exact JEM.
const CauseSampler = "sampler"

// CauseExact is the verdict's cause at a 2-D point when exact JEM itself fails: its
// joint KL is not below the baseline's.
const CauseExact = "exact_jem"

func allPass(cs []schemas.Check) bool {
	for _, c := range cs {
		if !c.Pass {
			return false
		}
	}
	return true
}

// failingWords names the recipes of a point that do not match exact JEM, with their
// grades ("sgld worse than 1 nat, ed within 0.1 nat").
func failingWords(ps schemas.PointSummary) string {
	var parts []string
	for _, c := range ps.Samplers {
		if !c.Reference && c.Grade != GradeMatches && c.Grade != GradeNone {
			parts = append(parts, c.Method+" "+gradeWords(c.Grade))
		}
	}
	if len(parts) == 0 {
		return "the --max_sampler_excess gate"
	}
	return strings.Join(parts, ", ")
}

// samplerWords describes the sampler comparisons of a point, in nats, with each
// recipe's grade (jem-converged as the reference it is).
func samplerWords(ps schemas.PointSummary, checks []schemas.Check) string {
	var parts []string
	for _, c := range ps.Samplers {
		if c.Pairs == 0 {
			parts = append(parts, fmt.Sprintf("%s has no task where both its and exact JEM's KL are finite (%d infinite, %d left out as diverged)",
				c.Method, c.Nonfinite, c.Excluded))
			continue
		}
		s := fmt.Sprintf("%s's joint KL %.3g against exact JEM's %.3g: excess %s nats [95%% CI %s, %s], of which q(x) %s, "+
			"worse on %.0f%% of %d tasks (Wilcoxon p %s)", c.Method, c.MeanSampler, c.MeanExact, nats(c.Excess, true), nats(c.ExcessCILow, false),
			nats(c.ExcessCIHigh, false), nats(c.MarginalExcess, true), 100*c.WorseShare, c.Pairs, formatP(c.WilcoxonP))
		switch {
		case c.Reference:
			s += ": a reference, not judged"
		case c.Grade != "":
			s += fmt.Sprintf(": %s (matches within %s nats)", gradeWords(c.Grade), nats(c.MatchesWithin, false))
		}
		for _, ck := range checks {
			if ck.Name == CheckSamplerNatsPrefix+c.Method {
				s += fmt.Sprintf(" (need ≤ %g nats at the CI's upper end: %s)", float64(ck.Limit), map[bool]string{true: "passes", false: "fails"}[ck.Pass])
			}
		}
		s += convergedWords(c)
		if c.Unstable > 0 {
			s += fmt.Sprintf("; %d of %d runs unstable (kept in these means)", c.Unstable, c.Runs)
		}
		if c.Nonfinite > 0 {
			s += fmt.Sprintf("; on %d more tasks its KL is infinite (counted against it: not in these means)", c.Nonfinite)
		}
		if c.Excluded > 0 {
			s += fmt.Sprintf("; %d tasks left out as diverged", c.Excluded)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// judged are the pairs the verdict judges: the samplers, not jem-converged.
func judged(pairs []SamplerPairs) []SamplerPairs {
	var out []SamplerPairs
	for _, sp := range pairs {
		if methods.IsSampler(sp.Method) {
			out = append(out, sp)
		}
	}
	return out
}

// decide2D takes the verdict at a point of the Samplers rule (2-D, binary-table and
// block tasks). Such a task has no exact expected reference for the statistical error,
// so the table claim's checks do not apply; the point answers two questions. Does exact JEM itself learn the joint (its joint KL
// below the baseline's on the same tasks, when a baseline ran)? And does JEM trained
// with each recipe learn it as well as exact JEM on the same draws: each sampler's
// excess over exact JEM is graded in nats (gradeOf) and must match.
func decide2D(ps schemas.PointSummary, all []SamplerPairs, _ uint64, th Thresholds) schemas.Verdict {
	ps = graded(ps, th)
	pairs := judged(all)
	exact, exactWhy := exact2D(ps)
	if len(pairs) == 0 {
		switch exact {
		case ExactHolds:
			return schemas.Verdict{Decided: true, Holds: true, Pairs: ps.Comparison.Pairs, Excluded: ps.Comparison.Excluded,
				Reason: "HOLDS: on " + ps.Params.Task + ": " + exactWhy}
		case ExactFails:
			return schemas.Verdict{Decided: true, Pairs: ps.Comparison.Pairs, Excluded: ps.Comparison.Excluded, Cause: CauseExact,
				Reason: "FAILS (exact JEM: " + exactWhy + "): on " + ps.Params.Task}
		}
		return schemas.Verdict{Reason: "undecided: this point's verdict compares a sampler with exact JEM (and exact JEM with the baseline); " +
			"run the method jem and a sampler (sgld or another the task kind trains), or baseline and jem on at least 10 tasks"}
	}
	total, paired, nonfinite, tasks := 0, 0, 0, 0
	for _, sp := range pairs {
		total += int(sp.Tables)
		paired += len(sp.Diffs)
		nonfinite += int(sp.Nonfinite)
		tasks = max(tasks, int(sp.Tables))
	}
	excluded := total - paired - nonfinite
	if why := tooFewTables(tasks, "tasks"); why != "" {
		if paired > 0 {
			why += "; so far on " + ps.Params.Task + ": " + samplerWords(ungraded(ps), nil)
		}
		return schemas.Verdict{Pairs: paired, Excluded: excluded, Reason: why}
	}
	exactNote := ""
	switch {
	case exact != "":
		exactNote = "; exact JEM " + exact + ": " + exactWhy
	case methodOf(ps, methods.Yardstick()) != nil:
		// The verdict rests on the recipes alone: say so, so that a HOLDS is never read
		// as exact JEM holding too.
		exactNote = "; exact JEM itself not judged: no baseline ran"
	}
	if nonfinite > 0 {
		checks := samplerChecks(ps, th)
		return schemas.Verdict{Decided: true, Pairs: paired, Excluded: excluded, Checks: checks, Cause: CauseNonfinite,
			Reason: "FAILS (sampler: " + samplersNonfinite(pairs, "tasks") + "): on " + ps.Params.Task + ": " + samplerWords(ps, checks) + exactNote}
	}
	if paired == 0 {
		return schemas.Verdict{Excluded: excluded, Reason: fmt.Sprintf("undecided: no task has both a converged jem and a converged sampler run (%d left out as diverged); try a smaller --lr or --sgld_lr", excluded)}
	}
	if share := float64(excluded) / float64(total); share > MaxDivergedShare {
		return schemas.Verdict{Pairs: paired, Excluded: excluded,
			Reason: fmt.Sprintf("undecided: %d of %d sampler/jem pairs (%.1f%%) diverged, more than the %g%% a verdict allows; try a smaller --lr or --sgld_lr",
				excluded, total, 100*share, 100*MaxDivergedShare)}
	}
	checks := samplerChecks(ps, th)
	v := schemas.Verdict{Decided: true, Pairs: paired, Excluded: excluded, Checks: checks, Holds: allPass(checks) && exact != ExactFails}
	desc := fmt.Sprintf("on %s: %s", ps.Params.Task, samplerWords(ps, checks)) + exactNote
	switch {
	case v.Holds:
		v.Reason = "HOLDS: " + desc
	case exact == ExactFails:
		v.Cause = CauseExact
		v.Reason = "FAILS (exact JEM: " + exactWhy + "): " + desc
	default:
		v.Cause = CauseSampler
		v.Reason = "FAILS (sampler: " + failingWords(ps) + "): " + desc
	}
	return v
}

// samplersNonfinite describes the samplers whose KL is not finite on some tasks where
// exact JEM's is, or "" when none.
func samplersNonfinite(pairs []SamplerPairs, what string) string {
	var parts []string
	for _, sp := range judged(pairs) {
		if sp.Nonfinite > 0 {
			parts = append(parts, nonfiniteWords(sp.Method, int(sp.Nonfinite), len(sp.Diffs)+int(sp.Nonfinite), what))
		}
	}
	return strings.Join(parts, "; ")
}

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
	byPoint := map[int64][]schemas.ResultRow{}
	for _, r := range rows {
		byPoint[r.PointID] = append(byPoint[r.PointID], r)
	}
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
		Floor: r0.Floor,
	}
	byMethod := map[string][]schemas.ResultRow{}
	tables := map[int64]bool{}
	for _, r := range rows {
		byMethod[r.Method] = append(byMethod[r.Method], r)
		tables[r.TableID] = true
		if r.Method != MethodBaseline {
			ps.Params.PxWeight = r.PxWeight
		}
	}
	ps.Tables = len(tables)
	for _, m := range AllMethods {
		if rs, ok := byMethod[m]; ok {
			ps.Methods = append(ps.Methods, summarizeMethod(m, rs, ps.Floor))
		}
	}
	if b, j := byMethod[MethodBaseline], byMethod[MethodJEM]; len(b) > 0 && len(j) > 0 {
		ps.Comparison = compare(b, j, seed)
	}
	ps.Verdict = verdict(ps, th)
	return ps
}

func summarizeMethod(m string, rows []schemas.ResultRow, floor float64) schemas.MethodSummary {
	ms := schemas.MethodSummary{Method: m, Runs: len(rows)}
	var joint, marg, cond, acc, bayes, emp []float64
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
	}
	ms.KLJoint, ms.KLMarginal, ms.KLConditional = dist(joint), dist(marg), dist(cond)
	ms.Accuracy, ms.BayesAccuracy, ms.KLEmpirical = dist(acc), dist(bayes), dist(emp)
	if floor > 0 && len(joint) > 0 {
		ms.FloorRatio = ms.KLJoint.Mean / floor
	}
	return ms
}

// dist summarises the finite values of xs (the KL of an empirical table with an empty
// cell is +Inf; such values are left out and Count says how many were kept).
func dist(all []float64) schemas.Dist {
	xs := make([]float64, 0, len(all))
	for _, v := range all {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return schemas.Dist{}
	}
	return schemas.Dist{Count: len(xs), Mean: prob.Mean(xs), Median: prob.Quantile(xs, 0.5),
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
	c.DiffCILow, c.DiffCIHigh = prob.BootstrapMeanCI(prob.NewRand(seed), diffs, bootstrapReps, 0.95)
	w := prob.WilcoxonSignedRank(diffs)
	c.WilcoxonW, c.WilcoxonZ, c.WilcoxonP = w.WPlus, w.Z, w.P
	if sumJ > 0 {
		c.BaselineToJEM = sumB / sumJ
	} else if sumB > 0 {
		c.BaselineToJEM = math.MaxFloat64 // JEM exact everywhere; keeps summary.json finite
	}
	return c
}

// verdict decides the claim at one grid point. When the oracle (the JEM loss on the
// true table) itself misses the floor, the model family or the optimiser cannot reach
// it on these tables, and the reason says so: JEM cannot be expected to reach it then.
func verdict(ps schemas.PointSummary, th Thresholds) schemas.Verdict {
	v := decide(ps, th)
	for _, m := range ps.Methods {
		if m.Method == MethodOracle && m.KLJoint.Count > 0 && m.KLJoint.Mean > th.FloorFactor*ps.Floor {
			v.Reason += fmt.Sprintf("; note: the oracle's mean joint KL %.3g is itself above %g× the floor: model %q "+
				"with %d steps cannot reach the floor on these tables (try more steps, --x_encoding=onehot or an mlp)",
				m.KLJoint.Mean, th.FloorFactor, ps.Params.Model, ps.Params.Steps)
		}
	}
	return v
}

func decide(ps schemas.PointSummary, th Thresholds) schemas.Verdict {
	var jem, base *schemas.MethodSummary
	for i := range ps.Methods {
		switch ps.Methods[i].Method {
		case MethodJEM:
			jem = &ps.Methods[i]
		case MethodBaseline:
			base = &ps.Methods[i]
		}
	}
	if jem == nil || base == nil || ps.Comparison == nil {
		return schemas.Verdict{Reason: "undecided: the verdict needs both baseline and jem runs"}
	}
	c := ps.Comparison
	total := c.Pairs + c.Excluded
	if jem.KLJoint.Count == 0 || c.Pairs == 0 {
		return schemas.Verdict{Excluded: c.Excluded,
			Reason: fmt.Sprintf("undecided: every jem or baseline run diverged (%d of %d tables); try a smaller --lr", c.Excluded, total)}
	}
	if share := float64(c.Excluded) / float64(total); share > MaxDivergedShare {
		return schemas.Verdict{Pairs: c.Pairs, Excluded: c.Excluded,
			Reason: fmt.Sprintf("undecided: %d of %d tables (%.1f%%) have a diverged baseline or jem run, more than the %g%% a verdict allows "+
				"(the %d converged pairs alone are not a fair sample of the tables); try a smaller --lr",
				c.Excluded, total, 100*share, 100*MaxDivergedShare, c.Pairs)}
	}
	nearFloor := jem.KLJoint.Mean <= th.FloorFactor*ps.Floor
	ratioOK := c.BaselineToJEM >= th.MinRatio
	sig := c.WilcoxonP < th.MaxP && c.MeanDiff > 0
	desc := fmt.Sprintf("JEM mean joint KL %.3g = %.2f× floor %.3g (need ≤ %g×); baseline/JEM = %.3g (need ≥ %g); Wilcoxon p %s over %d tables (need < %g)",
		jem.KLJoint.Mean, jem.FloorRatio, ps.Floor, th.FloorFactor, c.BaselineToJEM, th.MinRatio, formatP(c.WilcoxonP), c.Pairs, th.MaxP)
	if c.Excluded > 0 {
		desc += fmt.Sprintf("; %d of %d tables left out as diverged", c.Excluded, total)
	}
	v := schemas.Verdict{Decided: true, Pairs: c.Pairs, Excluded: c.Excluded}
	if nearFloor && ratioOK && sig {
		v.Holds, v.Reason = true, "HOLDS: "+desc
	} else {
		v.Reason = "FAILS: " + desc
	}
	return v
}

// formatP prints a p-value; one that underflows float64 is shown as a bound, not as 0.
func formatP(p float64) string {
	if p < 1e-300 {
		return "< 1e-300"
	}
	return fmt.Sprintf("= %.2g", p)
}

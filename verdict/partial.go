package verdict

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// PointAcc is Aggregate's accumulator of one grid point: the partial aggregate of the
// result blocks it has seen, mergeable in any order and grouping with the same summary.
//
// Up to bootstrapMaxItems tables it keeps every result row (Exact), and the summary is
// computed from the rows as Summarize does: exact quantiles, table bootstraps. Beyond,
// it folds each block into a fixed-size BlockSums (sums and the moments of the verdict's
// ratios, summed in block order at the end so the result does not depend on how the
// runner bundled the blocks) plus the per-table baseline − jem differences for the
// Wilcoxon test (8 bytes a table), and each distribution into a prob.Sketch (quantiles
// within a factor 1 ± prob.SketchAlpha; counts and means exact). Memory then grows by
// ~8 bytes a table plus ~1 KB a block, not by a result row per run.
type PointAcc struct {
	PointID  int64
	Tables   int64
	Exact    []schemas.ResultBlock // every row, until the point passes bootstrapMaxItems tables
	Folded   bool
	Floor    float64        // the rows' floor column (the same in every row of a point)
	Blocks   []BlockSums    // when folded
	Sketches []MethodSketch // when folded, by method name
}

// BlockSums is one folded result block.
type BlockSums struct {
	Index       int64
	Tables      int64
	Empty       int64   // tables with an empty cell
	Ref, RefExp float64 // Σ kl_reference, Σ kl_reference_expected over the tables
	Methods     []MethodSums
	// The paired comparison: baseline − jem joint KL per table where both converged
	// with a finite KL, in table order; JEM's wins; Σ of both KLs over those pairs;
	// tables with a baseline or jem run.
	Diffs      []float64
	Wins       int64
	SumB, SumJ float64
	Paired     int64
	// The sampler methods' pairs with jem (8 bytes × 4 a task each).
	Samplers []SamplerPairs
}

// MethodSums is one method's runs of a folded block.
type MethodSums struct {
	Method          string
	Runs, Diverged  int64
	Unstable        int64               // runs flagged unstable (in every sum and sketch like the others)
	Nonfinite       int64               // runs whose KL is not finite, no guard fired (in the sketches, not the sums below)
	Sum             []float64           // per distField: Σ of the finite values of the converged runs
	Inf             []int64             // per distField: ±Inf values
	Scale, RefExp   float64             // Σ (kl_reference_expected − kl_approximation), Σ kl_reference_expected
	Joint           float64             // Σ kl_joint (all converged runs, as the verdict's mean)
	Checks          []prob.RatioMoments // the verdict's ratios (checkMoments), converged runs
	OptimisationGap float64             // Σ kl_optimisation_gap, Σ kl_marginal_gap and
	MarginalGap     float64             // Σ kl_marginal_reference_expected: the conditional's
	MarginalScale   float64             // ratio (joint minus q(x), chain rule)
}

// MethodSketch holds one method's distributions (per distField) of a folded point.
type MethodSketch struct {
	Method string
	Dists  []prob.Sketch
}

// distFields are the per-run values whose distributions a MethodSummary reports, in
// the order of distsOf.
var distFields = []func(r *schemas.ResultRow) float64{
	func(r *schemas.ResultRow) float64 { return r.KLJoint },
	func(r *schemas.ResultRow) float64 { return r.KLMarginal },
	func(r *schemas.ResultRow) float64 { return r.KLConditional },
	func(r *schemas.ResultRow) float64 { return r.Accuracy },
	func(r *schemas.ResultRow) float64 { return r.BayesAccuracy },
	func(r *schemas.ResultRow) float64 { return r.KLEmpirical },
	func(r *schemas.ResultRow) float64 { return r.KLApproximation },
	func(r *schemas.ResultRow) float64 { return r.KLOptimisationGap },
	func(r *schemas.ResultRow) float64 { return r.KLEstimation },
	func(r *schemas.ResultRow) float64 { return r.KLMarginalGap },
	func(r *schemas.ResultRow) float64 { return r.AUROCPx },
	func(r *schemas.ResultRow) float64 { return r.AUROCPy },
	func(r *schemas.ResultRow) float64 { return r.AUROCTruePx },
	func(r *schemas.ResultRow) float64 { return r.CalibrationErrorTrue },
	func(r *schemas.ResultRow) float64 { return r.BufferInBox },
	func(r *schemas.ResultRow) float64 { return r.BufferTVTruth },
	func(r *schemas.ResultRow) float64 { return r.BufferTVModel },
	func(r *schemas.ResultRow) float64 { return r.AUROCPxGrad },
	func(r *schemas.ResultRow) float64 { return r.ECE },
	func(r *schemas.ResultRow) float64 { return r.AccClean },
	func(r *schemas.ResultRow) float64 { return r.AccAttacked },
	func(r *schemas.ResultRow) float64 { return r.AccPurified },
	func(r *schemas.ResultRow) float64 { return r.AccBayesPurified },
	func(r *schemas.ResultRow) float64 { return r.SamplesTVNoise },
	func(r *schemas.ResultRow) float64 { return r.SamplesTVBuffer },
	func(r *schemas.ResultRow) float64 { return r.TrainMS },
	func(r *schemas.ResultRow) float64 { return r.KLJointAveraged },
	func(r *schemas.ResultRow) float64 { return r.RefGap },
	func(r *schemas.ResultRow) float64 { return r.BestTemperature },
	func(r *schemas.ResultRow) float64 { return r.KLJointBestTemperature },
	func(r *schemas.ResultRow) float64 { return recorded(float64(r.SelectedStep)) },
	func(r *schemas.ResultRow) float64 { return recorded(float64(r.GradEvals)) },
	func(r *schemas.ResultRow) float64 { return recorded(float64(r.GradEvalsSelected)) },
	func(r *schemas.ResultRow) float64 { return recorded(r.CPUSeconds) },
	func(r *schemas.ResultRow) float64 { return selectedOnly(r, r.HeldoutNLL) },
	func(r *schemas.ResultRow) float64 { return selectedOnly(r, r.HeldoutNLLFinal) },
	func(r *schemas.ResultRow) float64 { return calibrated(r, r.KLJointLower) },
	func(r *schemas.ResultRow) float64 { return calibrated(r, r.KLJointLower-r.KLConditional) },
	func(r *schemas.ResultRow) float64 { return calibrated(r, r.AISESS) },
	func(r *schemas.ResultRow) float64 {
		if r.AISAccepted {
			return calibrated(r, 1)
		}
		return calibrated(r, 0)
	},
	func(r *schemas.ResultRow) float64 { return zfree(r.FisherDiv, r.FisherDivSE) },
	func(r *schemas.ResultRow) float64 { return zfree(r.FisherDivCond, r.FisherDivCondSE) },
	func(r *schemas.ResultRow) float64 { return zfree(r.LogRatioSD, r.LogRatioSDSE) },
}

// zfree is a Z-free divergence's value, NaN (left out) where it was not measured: NaN in
// the row, or 0 with a 0 standard error (a results file written before the columns).
func zfree(v, se float64) float64 {
	if v == 0 && se == 0 {
		return math.NaN()
	}
	return v
}

// calibrated is a column of the bound on the joint KL (image tasks), NaN (left out of
// its distribution) where the run's task had no AIS calibration: another kind's row,
// or a file written before the columns.
func calibrated(r *schemas.ResultRow, v float64) float64 {
	if !r.AISAccepted && r.AISRefused == "" {
		return math.NaN()
	}
	return v
}

// recorded is a protocol column's value, NaN (left out of its distribution) where the
// run did not record it (0 or less: a kind that does not select iterates or count).
func recorded(v float64) float64 {
	if !(v > 0) {
		return math.NaN()
	}
	return v
}

// selectedOnly is a held-out NLL column's value, NaN where the run selected no iterate
// (no held-out draws: the column is not a measurement).
func selectedOnly(r *schemas.ResultRow, v float64) float64 {
	if r.SelectedStep <= 0 {
		return math.NaN()
	}
	return v
}

// distsOf are a method summary's distributions, in the order of distFields.
func distsOf(ms *schemas.MethodSummary) []*schemas.Dist {
	return []*schemas.Dist{&ms.KLJoint, &ms.KLMarginal, &ms.KLConditional, &ms.Accuracy, &ms.BayesAccuracy,
		&ms.KLEmpirical, &ms.KLApproximation, &ms.KLOptimisationGap, &ms.KLEstimation, &ms.KLMarginalGap,
		&ms.AUROCPx, &ms.AUROCPy, &ms.AUROCTruePx, &ms.CalibrationErrorTrue,
		&ms.BufferInBox, &ms.BufferTVTruth, &ms.BufferTVModel,
		&ms.AUROCPxGrad, &ms.ECE, &ms.AccClean, &ms.AccAttacked, &ms.AccPurified, &ms.AccBayesPurified,
		&ms.SamplesTVNoise, &ms.SamplesTVBuffer, &ms.TrainMS, &ms.KLJointAveraged, &ms.RefGap,
		&ms.BestTemperature, &ms.KLJointBestTemperature,
		&ms.SelectedStep, &ms.GradEvals, &ms.GradEvalsSelected, &ms.CPUSeconds, &ms.HeldoutNLL, &ms.HeldoutNLLFinal,
		&ms.KLJointLower, &ms.KLMarginalLower, &ms.AISESS, &ms.AISAccepted,
		&ms.FisherDiv, &ms.FisherDivCond, &ms.LogRatioSD}
}

// checkMoments are the verdict's ratios of one converged run, in the order of
// decideFrom's specs: (gap, scale), (q(x) gap, q(x) scale), (approximation, scale),
// (excess, reference excess).
func checkMoments(r *schemas.ResultRow) [4][2]float64 {
	scale := r.KLReferenceExpected - r.KLApproximation
	return [4][2]float64{
		{r.KLOptimisationGap, scale},
		{r.KLMarginalGap, r.KLMarginalReferenceExpected},
		{r.KLApproximation, scale},
		{r.KLJoint - r.KLApproximation, r.KLReference - r.KLApproximation},
	}
}

// ExactMaxTables is the number of a point's tables up to which PointAcc keeps rows (a
// variable so tests can fold small points).
var ExactMaxTables int64 = bootstrapMaxItems

// Add adds a result block of the point.
func (a *PointAcc) Add(b schemas.ResultBlock) {
	if len(b.Rows) == 0 {
		return
	}
	a.PointID, a.Floor = b.PointID, b.Rows[0].Floor
	a.Tables += distinctTables(b.Rows)
	if !a.Folded {
		a.Exact = append(a.Exact, b)
		if a.Tables > ExactMaxTables {
			a.fold()
		}
		return
	}
	a.addFolded(b)
}

// PartOf is the accumulator of one block of a point of pointTables tables, to be merged
// with its other blocks' (Merge). A point of more than ExactMaxTables tables is folded in
// the end whatever the order, so its block is folded at once (its sums and sketches, as
// Add would fold it): what a runner carries between the steps of a combine is then a
// block's sums, not its rows.
func PartOf(b schemas.ResultBlock, pointTables int64) PointAcc {
	a := PointAcc{Folded: pointTables > ExactMaxTables}
	a.Add(b)
	return a
}

// Merge adds the blocks of o.
func (a *PointAcc) Merge(o PointAcc) {
	if o.Tables == 0 {
		return
	}
	a.PointID, a.Floor = o.PointID, o.Floor
	a.Tables += o.Tables
	if !a.Folded && !o.Folded && a.Tables <= ExactMaxTables {
		a.Exact = append(a.Exact, o.Exact...)
		return
	}
	a.fold()
	for _, b := range o.Exact {
		a.addFolded(b)
	}
	a.Blocks = append(a.Blocks, o.Blocks...)
	a.mergeSketches(o.Sketches)
}

// fold turns the kept rows into block sums.
func (a *PointAcc) fold() {
	if a.Folded {
		return
	}
	a.Folded = true
	for _, b := range a.Exact {
		a.addFolded(b)
	}
	a.Exact = nil
}

func distinctTables(rows []schemas.ResultRow) int64 {
	seen := map[int64]bool{}
	for i := range rows {
		seen[rows[i].TableID] = true
	}
	return int64(len(seen))
}

// addFolded folds one block into the sums and sketches.
func (a *PointAcc) addFolded(b schemas.ResultBlock) {
	// Evaluate emits a block's rows by run id: sort (a copy) only when they are not.
	byRunID := func(x, y schemas.ResultRow) int { return strings.Compare(x.RunID, y.RunID) }
	rows := b.Rows // read only: groupRows copies the rows the sums below sort
	if !slices.IsSortedFunc(rows, byRunID) {
		rows = slices.Clone(b.Rows)
		slices.SortFunc(rows, byRunID)
	}
	bs := BlockSums{Index: b.Index}
	seen := map[int64]bool{}
	byMethod := groupRows(rows, func(r *schemas.ResultRow) string { return r.Method })
	for i := range rows {
		r := &rows[i]
		if seen[r.TableID] {
			continue
		}
		seen[r.TableID] = true
		bs.Tables++
		if r.EmptyCells > 0 {
			bs.Empty++
		}
		bs.Ref += r.KLReference
		bs.RefExp += r.KLReferenceExpected
	}
	var sketches []MethodSketch
	for _, m := range methods.Sorted(maps.Keys(byMethod)) {
		mr := byMethod[m]
		ms := MethodSums{Method: m, Sum: make([]float64, len(distFields)), Inf: make([]int64, len(distFields)),
			Checks: make([]prob.RatioMoments, 4)}
		vals := make([][]float64, len(distFields))
		for i := range mr {
			r := &mr[i]
			ms.Runs++
			if r.Unstable {
				ms.Unstable++
			}
			if r.Diverged {
				ms.Diverged++
				continue
			}
			for f, get := range distFields {
				v := get(r)
				switch {
				case math.IsInf(v, 0):
					ms.Inf[f]++
				case !math.IsNaN(v):
					ms.Sum[f] += v
					vals[f] = append(vals[f], v)
				}
			}
			if r.Nonfinite {
				ms.Nonfinite++
				continue
			}
			ms.Scale += r.KLReferenceExpected - r.KLApproximation
			ms.RefExp += r.KLReferenceExpected
			ms.Joint += r.KLJoint
			ms.OptimisationGap += r.KLOptimisationGap
			ms.MarginalGap += r.KLMarginalGap
			ms.MarginalScale += r.KLMarginalReferenceExpected
			for c, nd := range checkMoments(r) {
				ms.Checks[c].Add(nd[0], nd[1])
			}
		}
		bs.Methods = append(bs.Methods, ms)
		sk := MethodSketch{Method: m, Dists: make([]prob.Sketch, len(distFields))}
		for f := range distFields {
			sk.Dists[f] = prob.NewSketch(vals[f])
		}
		sketches = append(sketches, sk)
	}
	bs.Diffs, bs.Wins, bs.SumB, bs.SumJ, bs.Paired = pairDiffs(byMethod[methods.Baseline()], byMethod[methods.Yardstick()])
	bs.Samplers = samplerPairsOf(byMethod)
	a.Blocks = append(a.Blocks, bs)
	a.mergeSketches(sketches)
}

func (a *PointAcc) mergeSketches(o []MethodSketch) {
	for _, s := range o {
		i := slices.IndexFunc(a.Sketches, func(x MethodSketch) bool { return x.Method == s.Method })
		if i < 0 {
			a.Sketches = append(a.Sketches, MethodSketch{Method: s.Method, Dists: slices.Clone(s.Dists)})
			continue
		}
		for f := range s.Dists {
			a.Sketches[i].Dists[f] = a.Sketches[i].Dists[f].Merge(s.Dists[f])
		}
	}
	slices.SortFunc(a.Sketches, func(x, y MethodSketch) int { return strings.Compare(x.Method, y.Method) })
}

// Summary is the summary of the point, whose values are g.
func (a *PointAcc) Summary(g schemas.Grid, rule Rule, seed uint64, th Thresholds) schemas.PointSummary {
	pointSeed := prob.Seed(seed, prob.SeedString("bootstrap"), uint64(a.PointID))
	if !a.Folded {
		var rows []schemas.ResultRow
		for _, b := range a.Exact {
			rows = append(rows, b.Rows...)
		}
		slices.SortFunc(rows, func(x, y schemas.ResultRow) int { return strings.Compare(x.RunID, y.RunID) })
		return summarizePoint(g, rule, rows, pointSeed, th)
	}
	blocks := slices.Clone(a.Blocks)
	slices.SortFunc(blocks, func(x, y BlockSums) int { return cmp.Compare(x.Index, y.Index) })
	ps := pointHeader(a.PointID, g, a.Floor)
	var empty int64
	var ref, refExp float64
	var diffs []float64
	var wins, paired int64
	var sumB, sumJ float64
	for _, b := range blocks {
		ps.Tables += int(b.Tables)
		empty += b.Empty
		ref += b.Ref
		refExp += b.RefExp
		diffs = append(diffs, b.Diffs...)
		wins += b.Wins
		paired += b.Paired
		sumB += b.SumB
		sumJ += b.SumJ
	}
	if ps.Tables > 0 {
		n := float64(ps.Tables)
		ps.EmptyCellShare, ps.Reference, ps.ReferenceExpected = float64(empty)/n, ref/n, refExp/n
	}
	var jem *MethodSums
	for _, m := range methods.Sorted(func(yield func(string) bool) {
		for _, s := range a.Sketches {
			if !yield(s.Method) {
				return
			}
		}
	}) {
		i := slices.IndexFunc(a.Sketches, func(x MethodSketch) bool { return x.Method == m })
		if i < 0 {
			continue
		}
		tot := MethodSums{Method: m, Sum: make([]float64, len(distFields)), Inf: make([]int64, len(distFields)),
			Checks: make([]prob.RatioMoments, 4)}
		for _, b := range blocks {
			for _, ms := range b.Methods {
				if ms.Method == m {
					tot.add(ms)
				}
			}
		}
		ps.Methods = append(ps.Methods, foldedMethod(tot, a.Sketches[i], ps.Floor))
		if m == methods.Yardstick() {
			jem = &tot
		}
	}
	if slices.ContainsFunc(a.Sketches, func(x MethodSketch) bool { return x.Method == methods.Baseline() }) && jem != nil {
		ps.Comparison = comparison(diffs, int(wins), sumB, sumJ, int(paired), pointSeed)
	}
	in := verdictInput{}
	if jem != nil {
		ok := jem.Runs - jem.Diverged - jem.Nonfinite
		n := float64(ok)
		in = verdictInput{total: int(jem.Runs), pairs: int(ok), nonfinite: int(jem.Nonfinite), meanJoint: jem.Joint / n, meanRefExp: jem.RefExp / n,
			checks: func(specs []ratioSpec) []schemas.Check { return momentChecks(specs, jem.Checks) },
			cond: func() float64 {
				den := jem.Scale - jem.MarginalScale
				if den == 0 {
					return math.NaN()
				}
				return (jem.OptimisationGap - jem.MarginalGap) / den
			}}
	}
	var pairs []SamplerPairs
	for _, b := range blocks {
		pairs = appendPairs(pairs, b.Samplers)
	}
	finishPoint(&ps, g, rule, pairs, pointSeed, th, func() schemas.Verdict { return decideFrom(ps, in, th) })
	return ps
}

// add adds the sums of o (of the same method).
func (m *MethodSums) add(o MethodSums) {
	m.Runs += o.Runs
	m.Diverged += o.Diverged
	m.Unstable += o.Unstable
	m.Nonfinite += o.Nonfinite
	for f := range o.Sum {
		m.Sum[f] += o.Sum[f]
		m.Inf[f] += o.Inf[f]
	}
	m.Scale += o.Scale
	m.RefExp += o.RefExp
	m.Joint += o.Joint
	m.OptimisationGap += o.OptimisationGap
	m.MarginalGap += o.MarginalGap
	m.MarginalScale += o.MarginalScale
	for c := range o.Checks {
		m.Checks[c].Merge(o.Checks[c])
	}
}

// foldedMethod is summarizeMethod from a folded method's sums and sketches.
func foldedMethod(t MethodSums, sk MethodSketch, floor float64) schemas.MethodSummary {
	ms := schemas.MethodSummary{Method: t.Method, Runs: int(t.Runs), Diverged: int(t.Diverged), Nonfinite: int(t.Nonfinite), Unstable: int(t.Unstable)}
	for f, d := range distsOf(&ms) {
		s := sk.Dists[f]
		d.Infinite = int(t.Inf[f])
		if n := s.Count(); n > 0 {
			d.Count, d.Mean = int(n), t.Sum[f]/float64(n)
			d.Median, d.P10, d.P90 = s.Quantile(0.5), s.Quantile(0.1), s.Quantile(0.9)
		}
	}
	converged := float64(t.Runs - t.Diverged - t.Nonfinite)
	if floor > 0 && ms.KLJoint.Count > 0 {
		ms.FloorRatio = ms.KLJoint.Mean / floor
	}
	if converged > 0 {
		if t.RefExp > 0 {
			ms.ReferenceRatio = ms.KLJoint.Mean / (t.RefExp / converged)
		}
		if t.Scale > 0 {
			ms.GapRatio = ms.KLOptimisationGap.Mean / (t.Scale / converged)
		}
	}
	return ms
}

package tasks

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// ECEBins is the number of equal-width confidence bins of the ECE.
const ECEBins = 15

// EvaluateRun measures one run on its task's enumerated support (the X·K cells of a
// table, or of a 2-D task's grid): the exact KLs of the joint, marginal and
// conditional, the accuracies, the best temperature (prob.BestTemperature of the
// logits; NaN when they are missing or not finite), the sampler's and the reference's
// columns, OOD and calibration (with the task's references refs, computed once per
// task), the run's status and the grid's columns. The kind adds what is its own: the
// error split of a table (SplitError) or its absence (NoSplit), and the learned joint's
// extras.
func EvaluateRun(t Trained, refs *Refs) (schemas.ResultRow, Learned) {
	var row schemas.ResultRow
	l := EvaluateRunTo(&row, t, refs)
	return row, l
}

// EvaluateRunTo is EvaluateRun writing the row to *row (a block's row in place: a row is
// about a kilobyte, and a returned one is allocated and copied once more per run).
func EvaluateRunTo(row *schemas.ResultRow, t Trained, refs *Refs) Learned {
	d := t.Job.Dataset
	p := d.Table.Point
	x, k := p.XValues, p.Classes
	truth := d.Table.P
	q := prob.Softmax(t.Logits)
	*row = schemas.ResultRow{
		RunID: t.Job.RunID, TableID: d.Table.ID, Method: t.Job.Method,
		PointID:       p.ID,
		KLJoint:       prob.KL(truth, q),
		KLMarginal:    prob.KL(prob.Marginal(truth, x, k), prob.Marginal(q, x, k)),
		KLConditional: prob.KLConditional(truth, q, x, k),
		Accuracy:      prob.Accuracy(truth, q, x, k),
		BayesAccuracy: prob.BayesAccuracy(truth, x, k),
		FinalLoss:     t.Loss,
		TrainMS:       t.TrainMS,
		DivergedStep:  t.Run.DivergedStep,
		BufferInBox:   math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(),
		RefGap:       math.NaN(),
		KLMarginalSE: math.NaN(), KLConditionalSE: math.NaN(), // exact KLs
		LogZ: math.NaN(), LogZIS: math.NaN(), LogZISSE: math.NaN(), ISESS: math.NaN(), ISKHat: math.NaN(), KLJointIS: math.NaN(), KLJointISSE: math.NaN(),
		LogZAIS: math.NaN(), LogZAISSE: math.NaN(), AISESS: math.NaN(),
	}
	row.BestTemperature, row.KLJointBestTemperature = math.NaN(), math.NaN()
	if t.Logits != nil && finite(t.Logits) {
		row.BestTemperature, row.KLJointBestTemperature = prob.BestTemperature(truth, t.Logits)
	}
	if t.Run.Logits != nil && !math.IsNaN(t.Run.RefGap) {
		row.RefGap = t.Run.RefGap
	}
	SetProtocol(row, t.Run, p)
	if t.Run.Logits != nil && !math.IsNaN(t.Run.KLJointAveraged) {
		row.KLJointAveraged = t.Run.KLJointAveraged
	}
	if methods.IsSampler(t.Job.Method) {
		row.BufferInBox, row.BufferTVTruth, row.BufferTVModel = t.Run.BufferInBox, t.Run.BufferTVTruth, t.Run.BufferTVModel
	}
	promises(row, refs, truth, q)
	row.Diverged, row.Nonfinite = RunStatus(t.Diverged, t.Logits, row.KLJoint, row.KLMarginal, row.KLConditional)
	SetRunColumns(row, &t)
	if t.Logits != nil { // exact over the enumeration, as the KLs are: no SE
		row.LogRatioSD, row.LogRatioSDSE = prob.LogRatioSpread(truth, t.Logits), 0
	}
	l := Learned{RunID: t.Job.RunID, PointID: p.ID, TableID: d.Table.ID, Ordinal: d.Table.Ordinal,
		Method: t.Job.Method, X: x, K: k, Logits: t.Logits, Q: q, P: truth, Buffer: t.Run.Buffer, Curve: t.Run.Curve}
	return l
}

// promises fills the row's OOD and calibration columns (see schemas.ResultRow): OOD is x
// uniform over its X values, the tables' analogue of the paper's uniform noise.
func promises(r *schemas.ResultRow, refs *Refs, truth, q []float64) {
	x, k := refs.fam.X, refs.fam.K
	logQx, maxQy := prob.OODScores(q, x, k)
	r.AUROCPx, r.AUROCPy, r.AUROCTruePx = prob.AUROC(logQx, refs.px, refs.uniform), prob.AUROC(maxQy, refs.px, refs.uniform), refs.aurocTruePx
	r.CalibrationErrorTrue = prob.CalibrationError(truth, q, x, k)
	nan := math.NaN()
	r.AUROCPxGrad, r.AccClean, r.AccAttacked, r.AccPurified, r.AccBayesPurified = nan, nan, nan, nan, nan
	r.SamplesTVNoise, r.SamplesTVBuffer, r.ECE = nan, nan, nan
	if !finite(q) { // a diverged run: no classifier to bin
		return
	}
	conf, acc := make([]float64, x), make([]float64, x)
	for i := range x {
		row, qi := truth[i*k:(i+1)*k], q[i*k:(i+1)*k]
		best := slices.Index(qi, slices.Max(qi))
		s, m := 0.0, 0.0
		for _, v := range qi {
			s += v
		}
		for _, v := range row {
			m += v
		}
		conf[i] = qi[best] / s
		if m > 0 {
			acc[i] = row[best] / m
		}
	}
	r.ECE = prob.ECEWeighted(conf, acc, refs.px, ECEBins)
}

// RunStatus is the one rule for a run's diverged and nonfinite flags, given whether the
// trainer flagged it (a divergence guard fired) and its logits and KLs: diverged is the
// trainer's flag; nonfinite is a run the trainer did not flag whose logits or KLs are not
// finite (q underflowed to 0 where the truth has mass, or the logits overflowed).
func RunStatus(trainer bool, logits []float64, kls ...float64) (diverged, nonfinite bool) {
	return trainer, !trainer && (!finite(logits) || !finite(kls))
}

func finite(xs []float64) bool {
	for _, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// Refs are the parts of the error split and the references that depend only on a
// table, its counts and the model family, not on the run: computed once per table and
// shared by its methods.
type Refs struct {
	fam                 prob.Family
	best                prob.Projection // the family's closest member to the truth
	fit                 prob.Projection // the family's maximum-likelihood fit of the counts
	data                []float64       // the empirical table p̂
	ref, refExpected    float64
	marginalRefExpected float64
	px, uniform         []float64 // p(x), and x uniform: the in- and out-of-distribution x
	aurocTruePx         float64   // the OOD ceiling: the AUROC of p(x) as the score
}

// NewRefs are the references of a table with its counts of n draws under family fam.
func NewRefs(fam prob.Family, truth []float64, counts []int64, n int64) *Refs {
	refExp := 0.0
	if fam.Complete() {
		refExp = prob.ExpectedKLSmoothed(truth, n, prob.SmoothingAdd)
	}
	px := prob.Marginal(truth, fam.X, fam.K)
	return NewRefsFrom(fam, truth, counts, n, px, refExp, prob.ExpectedKLSmoothed(px, n, prob.SmoothingAdd))
}

// NewRefsFrom are NewRefs given the table's marginal p(x) and the expected KLs of the
// add-½ estimates of its joint (refExp, used when the family is complete) and of p(x):
// a kind computes those for a block of tables at once (prob.ExpectedKLSmoothedMany).
func NewRefsFrom(fam prob.Family, truth []float64, counts []int64, n int64, px []float64, refExp, marginalRefExp float64) *Refs {
	r := &Refs{fam: fam, best: fam.Project(truth), data: prob.Empirical(counts)}
	r.fit = fam.Project(r.data)
	r.ref = prob.KL(truth, fam.Project(prob.Smoothed(counts, prob.SmoothingAdd)).Q)
	if fam.Complete() {
		r.refExpected = refExp
	} else {
		r.refExpected = r.best.KL + fam.ExcessTrace(truth, r.best.Q)/(2*float64(n))
	}
	r.px, r.uniform = px, prob.Uniform(fam.X)
	r.marginalRefExpected = marginalRefExp
	r.aurocTruePx = prob.AUROC(r.px, r.px, r.uniform)
	return r
}

// SplitError fills the error split and the references of a run's row:
//
//	kl_joint = KL(p‖q) = A + O + E,
//	A = min_family KL(p‖·)                     (approximation),
//	O = KL(p̂‖q) − min_family KL(p̂‖·)           (optimisation gap on the run's own data),
//	E = kl_joint − A − O                        (estimation: the rest),
//
// with p̂ the empirical table of the counts (the true table for the oracle, which
// trains on it, so its E is 0). The references are the family's fit r of the add-½
// table on the same counts (kl_reference = KL(p‖r), paired with the run) and its
// expectation over N-draw datasets.
func SplitError(row *schemas.ResultRow, refs *Refs, truth, q []float64, oracle bool) {
	x, k := refs.fam.X, refs.fam.K
	data, fit := refs.data, refs.fit
	if oracle {
		data, fit = truth, refs.best
	}
	row.KLApproximation = refs.best.KL
	row.KLOptimisationGap = prob.KL(data, q) - fit.KL
	row.KLEstimation = row.KLJoint - row.KLApproximation - row.KLOptimisationGap
	dx := prob.Marginal(data, x, k)
	row.KLMarginalGap = prob.KL(dx, prob.Marginal(q, x, k)) - prob.KL(dx, prob.Marginal(fit.Q, x, k))
	row.KLReference = refs.ref
	row.KLReferenceExpected = refs.refExpected
	row.KLMarginalReferenceExpected = refs.marginalRefExpected
}

// GridRefs are a 2-D task's references for its runs (see Refs): the OOD scores'
// distributions (x ~ p(x) on the grid, x uniform over the grid's cells) and ceiling.
func GridRefs(truth []float64, x, k int) *Refs {
	r := &Refs{fam: prob.Family{X: x, K: k}}
	r.px, r.uniform = prob.Marginal(truth, x, k), prob.Uniform(x)
	r.aurocTruePx = prob.AUROC(r.px, r.px, r.uniform)
	r.ref, r.refExpected, r.marginalRefExpected = math.NaN(), math.NaN(), math.NaN()
	return r
}

// NoSplit marks a row's error split and references as not applicable (2-D tasks: no
// finite model family, no exact expected reference).
func NoSplit(row *schemas.ResultRow) {
	nan := math.NaN()
	row.Floor, row.KLEmpirical = nan, nan
	row.KLApproximation, row.KLOptimisationGap, row.KLEstimation, row.KLMarginalGap = nan, nan, nan, nan
	row.KLReference, row.KLReferenceExpected, row.KLMarginalReferenceExpected = nan, nan, nan
}

// SetRunColumns writes a run's point columns (its px_weight the one its method trained
// with, TrainedRun.PxWeight, or where the kind did not say the point's, 0 for the method
// that does not train log q(x)) and its method's (SetMethod): every kind's row ends
// with it.
func SetRunColumns(row *schemas.ResultRow, t *Trained) {
	p := &t.Job.Dataset.Table.Point
	px := t.Run.PxWeight
	if math.IsNaN(px) {
		px = p.PxWeight
		if methods.Has(t.Job.Method, func(m methods.Method) bool { return m.NoPx }) {
			px = 0
		}
	}
	p.SetColumns(row, px)
	SetMethod(row, t.Run, p)
	nan := math.NaN() // the Z-free divergences: a kind that measures them sets them after
	row.FisherDiv, row.FisherDivSE, row.FisherDivCond, row.FisherDivCondSE, row.LogRatioSD, row.LogRatioSDSE = nan, nan, nan, nan, nan, nan
}

// SetMethod writes the row's method-owned columns: the run's method options in the
// method's own form (methods.OptionsJSON: encoded once per point, interned) and what the
// method reports of itself (StatsJSON).
func SetMethod(row *schemas.ResultRow, r TrainedRun, p *Point) {
	row.MethodOptions = methods.OptionsJSON(row.Method, &p.Grid)
	row.MethodStats = StatsJSON(r.Stats)
}

// StatsJSON is a run's method stats as the method_stats column: one JSON object with
// sorted keys, a value that is not finite as null ("" for none). It is what
// encoding/json writes for the map, byte for byte, built in one buffer without a map or
// reflection (a run's row is on the per-run path); a key outside [A-Za-z0-9_.-] takes
// encoding/json's own path.
func StatsJSON(stats map[string]float64) string {
	if len(stats) == 0 {
		return ""
	}
	var keyBuf [32]string
	keys := keyBuf[:0]
	for k := range stats {
		if !plainKey(k) {
			return statsJSONSlow(stats)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf [512]byte
	b := append(buf[:0], '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), k...), '"', ':')
		b = appendJSONFloat(b, stats[k])
	}
	return string(append(b, '}'))
}

func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// appendJSONFloat appends v as encoding/json writes a float64 (null where not finite).
func appendJSONFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	f := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	b = strconv.AppendFloat(b, v, f, -1, 64)
	if f == 'e' { // e-09 → e-9, as encoding/json
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func statsJSONSlow(stats map[string]float64) string {
	m := map[string]any{}
	for k, v := range stats {
		m[k] = v
		if math.IsNaN(v) || math.IsInf(v, 0) {
			m[k] = nil
		}
	}
	b, _ := json.Marshal(m) // sorted keys
	return string(b)
}

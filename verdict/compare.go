package verdict

import (
	"encoding/json"
	"iter"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Run is one finished run for a comparison: its name (the output location), its run
// seed and its result rows.
type Run struct {
	Name    string
	Seed    uint64
	Summary schemas.Summary
	Rows    []schemas.ResultRow
}

// Comparison puts runs side by side: per grid point (matched by its values) and
// method, each run's mean joint KL with its 95% CI, and each later run's difference
// from the first. The difference is paired (per task, CI of the mean difference) where
// the tasks are the same: the same run seed and point values, so task t of both runs
// is the same truth and the same draws; else it is the difference of the means with a
// normal (Welch) CI.
type Comparison struct {
	Runs   []string        `json:"runs"`
	Points []ComparedPoint `json:"points"`
}

// ComparedPoint is one grid point's methods across the runs.
type ComparedPoint struct {
	Params   schemas.Grid     `json:"params"`
	Verdicts []string         `json:"verdicts"` // per run: the point's verdict, "" where the run lacks the point
	Methods  []ComparedMethod `json:"methods"`
}

// ComparedMethod is one method of a point across the runs.
type ComparedMethod struct {
	Method string         `json:"method"`
	Runs   []RunStat      `json:"runs"`  // per run (N 0 where the run lacks it)
	Diffs  []ComparedDiff `json:"diffs"` // per later run: its difference from the first
}

// RunStat is a method's mean joint KL in one run, with its 95% CI over tasks.
type RunStat struct {
	N        int     `json:"n"`
	Mean     float64 `json:"mean_kl_joint"`
	Lo       float64 `json:"ci_low"`
	Hi       float64 `json:"ci_high"`
	Marginal float64 `json:"mean_kl_marginal"`
	Accuracy float64 `json:"mean_accuracy"`
}

// ComparedDiff is run i's mean joint KL minus the first run's, with its 95% CI.
type ComparedDiff struct {
	Paired bool    `json:"paired"`
	N      int     `json:"n"` // tasks paired, or the smaller of the two counts
	Mean   float64 `json:"mean"`
	Lo     float64 `json:"ci_low"`
	Hi     float64 `json:"ci_high"`
}

// compareReps is the bootstrap's resamples.
const compareReps = 2000

// Compare compares runs (at least two); the first is the baseline of the differences.
func Compare(runs []Run) Comparison {
	c := Comparison{}
	var order []string
	points := map[string]*ComparedPoint{}
	// rows[point][method][run] are the finite rows, in task order.
	rows := map[string]map[string][][]schemas.ResultRow{}
	paramsOf := func(ps schemas.PointSummary) string { b, _ := json.Marshal(ps.Params); return string(b) }
	for i, r := range runs {
		c.Runs = append(c.Runs, r.Name)
		byID := map[int64]string{}
		for _, ps := range r.Summary.Points {
			k := paramsOf(ps)
			byID[ps.PointID] = k
			if points[k] == nil {
				points[k] = &ComparedPoint{Params: ps.Params, Verdicts: make([]string, len(runs))}
				rows[k] = map[string][][]schemas.ResultRow{}
				order = append(order, k)
			}
			points[k].Verdicts[i] = ps.Verdict.Reason
		}
		for _, row := range r.Rows {
			k, ok := byID[row.PointID]
			if !ok {
				continue
			}
			if rows[k][row.Method] == nil {
				rows[k][row.Method] = make([][]schemas.ResultRow, len(runs))
			}
			rows[k][row.Method][i] = append(rows[k][row.Method][i], row)
		}
	}
	for pi, k := range order {
		cp := points[k]
		for _, m := range methods.Sorted(maps.Keys(rows[k])) {
			per := rows[k][m]
			cm := ComparedMethod{Method: m}
			for i := range runs {
				cm.Runs = append(cm.Runs, runStat(per[i], compareSeed(pi, m, i)))
			}
			for i := 1; i < len(runs); i++ {
				same := runs[i].Seed == runs[0].Seed
				cm.Diffs = append(cm.Diffs, diff(per[0], per[i], same, compareSeed(pi, m, -i)))
			}
			cp.Methods = append(cp.Methods, cm)
		}
		c.Points = append(c.Points, *cp)
	}
	return c
}

func compareSeed(point int, method string, run int) *rand.Rand {
	return rand.New(rand.NewPCG(prob.Seed(uint64(point), prob.SeedString(method), uint64(run+1<<20)), 0xc0))
}

// finiteKL are the joint KLs of the converged runs with a finite KL, by task id.
func finiteKL(rows []schemas.ResultRow) map[int64]schemas.ResultRow {
	out := map[int64]schemas.ResultRow{}
	for _, r := range rows {
		if !r.Diverged && !math.IsNaN(r.KLJoint) && !math.IsInf(r.KLJoint, 0) {
			out[r.TableID] = r
		}
	}
	return out
}

func runStat(rows []schemas.ResultRow, rng *rand.Rand) RunStat {
	ok := finiteKL(rows)
	ids := slices.Sorted(mapsKeys(ok))
	s := RunStat{N: len(ids), Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Marginal: math.NaN(), Accuracy: math.NaN()}
	if len(ids) == 0 {
		return s
	}
	var kl []float64
	var marg, acc float64
	for _, id := range ids {
		kl = append(kl, ok[id].KLJoint)
		marg += ok[id].KLMarginal
		acc += ok[id].Accuracy
	}
	n := float64(len(ids))
	s.Mean, s.Marginal, s.Accuracy = prob.Mean(kl), marg/n, acc/n
	s.Lo, s.Hi = prob.BootstrapMeanCI(rng, kl, compareReps, 0.95)
	return s
}

// diff is b's mean joint KL minus a's: paired over the common tasks when same, else
// the difference of the means with a Welch normal interval.
func diff(a, b []schemas.ResultRow, same bool, rng *rand.Rand) ComparedDiff {
	ka, kb := finiteKL(a), finiteKL(b)
	d := ComparedDiff{Paired: same, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if same {
		var ds []float64
		for _, id := range slices.Sorted(mapsKeys(ka)) {
			if rb, ok := kb[id]; ok {
				ds = append(ds, rb.KLJoint-ka[id].KLJoint)
			}
		}
		d.N = len(ds)
		if d.N > 0 {
			d.Mean = prob.Mean(ds)
			d.Lo, d.Hi = prob.BootstrapMeanCI(rng, ds, compareReps, 0.95)
		}
		return d
	}
	xa, xb := values(ka), values(kb)
	d.N = min(len(xa), len(xb))
	if len(xa) < 2 || len(xb) < 2 {
		return d
	}
	ma, mb := prob.Mean(xa), prob.Mean(xb)
	se := math.Sqrt(variance(xa, ma)/float64(len(xa)) + variance(xb, mb)/float64(len(xb)))
	d.Mean = mb - ma
	d.Lo, d.Hi = d.Mean-1.959964*se, d.Mean+1.959964*se
	return d
}

func values(m map[int64]schemas.ResultRow) []float64 {
	var out []float64
	for _, id := range slices.Sorted(mapsKeys(m)) {
		out = append(out, m[id].KLJoint)
	}
	return out
}

func variance(xs []float64, mean float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += (x - mean) * (x - mean)
	}
	return s / float64(len(xs)-1)
}

func mapsKeys(m map[int64]schemas.ResultRow) iter.Seq[int64] { return maps.Keys(m) }

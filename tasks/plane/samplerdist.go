package plane

import (
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// # The sampler's own distribution (issue 34, item 3)
//
// Every 2-D run whose method trains log q(x) is measured, on its selected model, by
// two sets of Options.Chains independent chains (512 by default, --sampler_chains) (schemas.ResultRow's short_* and
// long_* columns):
//   - the short run: a fresh run of the method's own sampler from its own start (the
//     method's SamplerHook: sgld from uniform, or JEM++'s class-wise Gaussian, with
//     its sgld_steps, lr and noise; mala and jarzynski from uniform with their final
//     adapted step; shortrun from uniform with its step and noise; drl's recovery
//     chains from noised training draws). Short-run samplers may reproduce the data
//     by a dynamical process rather than by the model's equilibrium (Nijkamp et al.,
//     NeurIPS 2019; Agoritsas et al., ICML 2023): short_tv_truth below long_tv_truth
//     is that claim on the run.
//   - the long chain: kernel.LongChain2D, MALA at temperature 1 whose steady state is
//     q, LongSteps moves from uniform, the same for every method: long_tv_truth is
//     how far q is from the truth in sample terms, long_tv_model (against q's exact
//     cell masses) whether the chain reached q.
//
// Both are histogrammed on bufferTV2D's pooled cells plus one bin outside the box.

// SamplerHook is the name of the plug of a method's sampler (methods.PlaneSampler), of type
// func(schemas.Grid) kernel.Chain2D: the sampler its 2-D runs train with, as the
// short run reruns it. A method without it has no short run.
const SamplerHook = methods.KindPlane + ".sampler"

// LongSteps are the long chain's moves.
const LongSteps = 500

var (
	tagShort = prob.SeedString("short-run")
	tagLong  = prob.SeedString("long-chain")
)

// samplerDist are a run's sampler-distribution columns.
type samplerDist struct {
	ShortTruth, ShortModel, ShortTruthSE, ShortModelSE float64
	LongTruth, LongModel, LongTruthSE, LongModelSE     float64
	LongAccept, Floor, FloorModel                      float64
}

// statPrefix marks the Stats keys that carry a run's samplerDist from Train to
// Evaluate (takeSamplerDist removes them before the row's method_stats is written).
const statPrefix = "sampler_dist."

func (d *samplerDist) fields() []*float64 {
	return []*float64{&d.ShortTruth, &d.ShortModel, &d.ShortTruthSE, &d.ShortModelSE,
		&d.LongTruth, &d.LongModel, &d.LongTruthSE, &d.LongModelSE, &d.LongAccept, &d.Floor, &d.FloorModel}
}

var samplerDistNames = []string{"short_tv_truth", "short_tv_model", "short_tv_truth_se", "short_tv_model_se",
	"long_tv_truth", "long_tv_model", "long_tv_truth_se", "long_tv_model_se", "long_accept", "sampler_tv_floor", "sampler_tv_floor_model"}

func nanDist() samplerDist {
	var d samplerDist
	for _, f := range d.fields() {
		*f = math.NaN()
	}
	return d
}

// put writes d into stats (made if nil) and returns it.
func (d samplerDist) put(stats map[string]float64) map[string]float64 {
	if stats == nil {
		stats = map[string]float64{}
	}
	for i, f := range d.fields() {
		stats[statPrefix+samplerDistNames[i]] = *f
	}
	return stats
}

// takeSamplerDist reads a run's samplerDist out of its Stats (NaN where absent) and
// leaves the run with a copy of its Stats without them.
func takeSamplerDist(r *tasks.TrainedRun) samplerDist {
	d := nanDist()
	if len(r.Stats) == 0 {
		return d
	}
	for i, f := range d.fields() {
		if v, ok := r.Stats[statPrefix+samplerDistNames[i]]; ok {
			*f = v
		}
	}
	rest := map[string]float64{}
	for k, v := range r.Stats {
		if !strings.HasPrefix(k, statPrefix) {
			rest[k] = v
		}
	}
	r.Stats = rest
	if len(rest) == 0 {
		r.Stats = nil
	}
	return d
}

// set fills the row's sampler-distribution columns.
func (d samplerDist) set(row *schemas.ResultRow) {
	row.ShortTVTruth, row.ShortTVModel, row.ShortTVTruthSE, row.ShortTVModelSE = d.ShortTruth, d.ShortModel, d.ShortTruthSE, d.ShortModelSE
	row.LongTVTruth, row.LongTVModel, row.LongTVTruthSE, row.LongTVModelSE = d.LongTruth, d.LongModel, d.LongTruthSE, d.LongModelSE
	row.LongAccept, row.SamplerTVFloor, row.SamplerTVFloorModel = d.LongAccept, d.Floor, d.FloorModel
}

// samplerOf is method m's sampler as its hook gives it at p (false: none).
func samplerOf(m string, g schemas.Grid) (kernel.Chain2D, bool) {
	h, ok := methods.PlaneSampler.Of(m)
	if !ok {
		return kernel.Chain2D{}, false
	}
	return h(g), true
}

// sdJob is one run to measure: its selected parameters and cell logits, the truth,
// its training draws, its seed and its final adapted Langevin step (0: none).
type sdJob struct {
	run    *tasks.TrainedRun
	truth  []float64
	draws  kernel.Draws2D
	seed   uint64
	adapt  float64
	logits []float64
	theta  []float32
}

// measureSamplerDist measures the runs of method m at p over the cores and puts each
// run's samplerDist into its Stats. A method that does not train log q(x) is left
// alone (its columns NaN); so is a run whose model is not finite.
func measureSamplerDist(p tasks.Point, m string, chains int, jobs []sdJob) error {
	if methods.Has(m, func(x methods.Method) bool { return x.NoPx }) || len(jobs) == 0 {
		return nil
	}
	short, hasShort := samplerOf(m, p.Grid)
	if hasShort {
		if err := short.Validate(); err != nil {
			return err
		}
	}
	hidden, _ := models.ParseModel(p.Model)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		err1 error
	)
	for range max(1, min(runtime.GOMAXPROCS(0), len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(jobs) {
					return
				}
				j := &jobs[i]
				d, err := samplerDist2D(p, hidden, chains, j, short, hasShort)
				if err != nil {
					mu.Lock()
					err1 = err
					mu.Unlock()
					continue
				}
				j.run.Stats = d.put(j.run.Stats)
			}
		}()
	}
	wg.Wait()
	return err1
}

// samplerDist2D is one run's samplerDist from n chains each (short: the method's sampler,
// when has).
func samplerDist2D(p tasks.Point, hidden []int, n int, j *sdJob, short kernel.Chain2D, has bool) (samplerDist, error) {
	d := nanDist()
	if j.theta == nil || !finiteAll(j.logits) {
		return d, nil
	}
	g := evalGrid(p)
	px, qx := poolMasses(g, p.Classes, j.truth), poolMasses(g, p.Classes, prob.Softmax(j.logits))
	d.Floor, d.FloorModel = prob.TVFloor(px, n), prob.TVFloor(qx, n)
	en, err := kernel.ModelEnergy2D(hidden, p.Classes, j.theta)
	if err != nil {
		return d, err
	}
	measure := func(c kernel.Chain2D, seed uint64) (tt, tm, st, sm, acc float64, err error) {
		x0, x1, acc, err := c.Sample(en, n, float32(p.Box), j.draws, seed)
		if err != nil {
			return
		}
		h := poolHist(g, x0, x1)
		tt, st = tvSE(h, px, n)
		tm, sm = tvSE(h, qx, n)
		return
	}
	if has {
		if d.ShortTruth, d.ShortModel, d.ShortTruthSE, d.ShortModelSE, _, err = measure(short.WithStep(j.adapt), prob.Seed(j.seed, tagShort)); err != nil {
			return nanDist(), err
		}
	}
	long := kernel.LongChain2D(g.Step(), LongSteps)
	if d.LongTruth, d.LongModel, d.LongTruthSE, d.LongModelSE, d.LongAccept, err = measure(long, prob.Seed(j.seed, tagLong)); err != nil {
		return nanDist(), err
	}
	return d, nil
}

// poolCell maps a cell of grid g to its tvPool cell.
func poolCell(g prob.Grid, c, cell int) int {
	i, j := cell/g.G, cell%g.G
	return (i*c/g.G)*c + j*c/g.G
}

// poolMasses are the cell masses m [cell][K] summed over classes on the tvPool grid,
// with a last bin (outside the box) of mass 0.
func poolMasses(g prob.Grid, k int, m []float64) []float64 {
	c := tvPool(g.G)
	out := make([]float64, c*c+1)
	for cell := range g.Cells() {
		for y := range k {
			out[poolCell(g, c, cell)] += m[cell*k+y]
		}
	}
	return out
}

// poolHist is the points' histogram on the tvPool grid, the last bin the share outside
// the box.
func poolHist(g prob.Grid, x0, x1 []float32) []float64 {
	c := tvPool(g.G)
	h := make([]float64, c*c+1)
	for i := range x0 {
		if cell := g.Cell(float64(x0[i]), float64(x1[i])); cell >= 0 {
			h[poolCell(g, c, cell)]++
		} else {
			h[c*c]++
		}
	}
	for i := range h {
		h[i] /= float64(len(x0))
	}
	return h
}

// tvSE is the TV of the histogram h of n independent points from ref and its delta-
// method standard error, the multinomial's: TV = ½Σ|h − ref| has gradient s/2,
// s = sign(h − ref), so Var = (Σ s²h − (Σ s h)²)/(4n).
func tvSE(h, ref []float64, n int) (tv, se float64) {
	var s1, s2 float64
	for i := range h {
		tv += math.Abs(h[i]-ref[i]) / 2
		s := 1.0
		if h[i] < ref[i] {
			s = -1
		}
		s1 += s * h[i]
		s2 += h[i]
	}
	return tv, math.Sqrt(max(0, s2-s1*s1) / (4 * float64(n)))
}

func finiteAll(xs []float64) bool {
	for _, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return len(xs) > 0
}

package ais

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/jemcheck/jemcheck/models/prob"
)

// MixtureBase is a normalised mixture of Bases, p₀(x) = Σ_k w_k p_k(x), typically
// diagonal Gaussians N(μ_k, diag σ_k²) or low-rank ones (LowRank): a Base for targets with several well-separated modes, where one
// Gaussian (FitBase) sends its chains to the modes in the wrong proportions. HMC and
// MALA do not cross between separated modes within one annealing run, so the share of
// chains that ends in each mode is the base's mass there; the forward weights then
// carry the ratio of the target's mass of the mode to the base's, and their spread
// (Pareto k̂, SE) is small only where the two agree. A base fitted per class and cluster
// (FitMixtureBase) puts mass where the target has it. AIS stays unbiased: the base is
// normalised (Σ w_k = 1) and Sample draws exactly (k ~ w, then x ~ p_k).
type MixtureBase struct {
	// Weights are the mixture weights (normalised by NewMixtureBase), Comps the
	// components.
	Weights []float64
	Comps   []Base
	logW    []float64
	cum     []float64 // cumulative weights
	scale   []float64 // √(Σ_k w_k Scale_k²): the within-component RMS scale
}

// NewMixtureBase is Σ_k w_k Comps[k] with w = weights / Σ weights; weights must be
// non-negative and finite with a positive sum, the components of one dimension.
// Components of weight 0 are dropped.
func NewMixtureBase(weights []float64, comps []Base) (*MixtureBase, error) {
	if len(weights) != len(comps) || len(comps) == 0 {
		return nil, fmt.Errorf("ais: mixture base with %d weights and %d components", len(weights), len(comps))
	}
	tot := 0.0
	for k, w := range weights {
		if !(w >= 0) || math.IsInf(w, 0) || comps[k] == nil {
			return nil, fmt.Errorf("ais: mixture base component %d: weight %v", k, w)
		}
		if comps[k].Dim() != comps[0].Dim() {
			return nil, fmt.Errorf("ais: mixture base component %d has D = %d, component 0 %d", k, comps[k].Dim(), comps[0].Dim())
		}
		tot += w
	}
	if !(tot > 0) || math.IsInf(tot, 0) {
		return nil, errors.New("ais: mixture base weights sum to 0")
	}
	m := &MixtureBase{}
	for k, w := range weights {
		if w > 0 {
			m.Weights = append(m.Weights, w/tot)
			m.Comps = append(m.Comps, comps[k])
		}
	}
	d := m.Comps[0].Dim()
	m.scale = make([]float64, d)
	c := 0.0
	for k, w := range m.Weights {
		m.logW = append(m.logW, math.Log(w))
		c += w
		m.cum = append(m.cum, c)
		for j, s := range m.Comps[k].Scale() {
			m.scale[j] += w * s * s
		}
	}
	m.cum[len(m.cum)-1] = 1
	for j := range m.scale {
		m.scale[j] = math.Sqrt(m.scale[j])
	}
	return m, nil
}

// Dim is D.
func (m *MixtureBase) Dim() int { return m.Comps[0].Dim() }

// Scale is the within-component RMS scale √(Σ_k w_k Scale_k²) per coordinate: the length
// scale of one mode, which is what the kernel moves in (a chain stays in its mode).
func (m *MixtureBase) Scale() []float64 { return m.scale }

// LogDensity is log Σ_k w_k p_k(x), its gradient Σ_k r_k·∇ log p_k(x) (r_k the
// responsibilities; components of r_k < 1e-300 skipped) into grad when non-nil.
func (m *MixtureBase) LogDensity(x, grad []float64) float64 {
	var buf [64]float64
	var lc []float64
	if len(m.Comps) <= len(buf) {
		lc = buf[:len(m.Comps)]
	} else {
		lc = make([]float64, len(m.Comps))
	}
	top := math.Inf(-1)
	for k, c := range m.Comps {
		lc[k] = m.logW[k] + c.LogDensity(x, nil)
		top = max(top, lc[k])
	}
	if math.IsInf(top, -1) || math.IsNaN(top) {
		if grad != nil {
			clear(grad)
		}
		return top
	}
	s := 0.0
	for _, v := range lc {
		s += math.Exp(v - top)
	}
	lse := top + math.Log(s)
	if grad != nil {
		clear(grad)
		var gbuf [256]float64
		var g []float64
		if len(x) <= len(gbuf) {
			g = gbuf[:len(x)]
		} else {
			g = make([]float64, len(x))
		}
		for k, c := range m.Comps {
			r := math.Exp(lc[k] - lse)
			if !(r > 1e-300) {
				continue
			}
			c.LogDensity(x, g)
			for j, v := range g {
				grad[j] += r * v
			}
		}
	}
	return lse
}

// Sample writes an exact draw into x: k ~ Weights, then x ~ Comps[k].
func (m *MixtureBase) Sample(rng *rand.Rand, x []float64) {
	u := rng.Float64()
	k, _ := slices.BinarySearch(m.cum, u)
	if u == m.cum[min(k, len(m.cum)-1)] {
		k++ // BinarySearch finds the equal one; the draw u belongs to the next interval
	}
	m.Comps[min(k, len(m.Comps)-1)].Sample(rng, x)
}

// MixtureFit are FitMixtureBase's choices. Zero values take the defaults noted.
type MixtureFit struct {
	// Clusters is the number of k-means clusters per class (default 1: one Gaussian per
	// class). A cluster with fewer than MinSize rows is removed and the class
	// re-clustered, so a class never has more than n_y/MinSize.
	Clusters int
	MinSize  int // smallest cluster (default 50, at least 2)
	// Rank, where positive, makes each component a LowRank Gaussian (probabilistic
	// PCA of its rows with Rank directions, at most rows − 2) instead of a diagonal one.
	Rank    int
	Inflate float64 // each component's sds × Inflate (≤ 0: 1), as in FitBase
	Seed    uint64  // k-means++ seeding; the fit is a function of (data, labels, Seed)
	Iters   int     // Lloyd iterations at most (default 100)
}

// FitMixtureBase fits a MixtureBase to the n = len(data)/d rows of data (row-major):
// the rows of each class (labels[i] ≥ 0; labels nil: all one class) are split into at
// most f.Clusters k-means clusters (k-means++ seeding from f.Seed, Lloyd's iterations),
// and each cluster becomes a diagonal Gaussian with its rows' per-coordinate mean and
// sd × f.Inflate (FitBase's rule) or, with f.Rank > 0, their probabilistic PCA with
// Rank directions (LowRank, every variance × f.Inflate²), of weight its share of the n
// rows. The classes are
// taken in increasing label order.
func FitMixtureBase(data []float64, labels []int, d int, f MixtureFit) (*MixtureBase, error) {
	if d <= 0 || len(data) < 2*d || len(data)%d != 0 {
		return nil, fmt.Errorf("ais: FitMixtureBase needs at least 2 rows of %d, got %d values", d, len(data))
	}
	n := len(data) / d
	if labels != nil && len(labels) != n {
		return nil, fmt.Errorf("ais: FitMixtureBase: %d labels for %d rows", len(labels), n)
	}
	if f.Clusters <= 0 {
		f.Clusters = 1
	}
	if f.MinSize <= 0 {
		f.MinSize = 50
	}
	f.MinSize = max(f.MinSize, 2)
	if f.Iters <= 0 {
		f.Iters = 100
	}
	byClass := map[int][]int{}
	for i := range n {
		y := 0
		if labels != nil {
			y = labels[i]
		}
		if y < 0 {
			return nil, fmt.Errorf("ais: FitMixtureBase: label %d of row %d", y, i)
		}
		byClass[y] = append(byClass[y], i)
	}
	classes := make([]int, 0, len(byClass))
	for y := range byClass {
		classes = append(classes, y)
	}
	slices.Sort(classes)
	var weights []float64
	var comps []Base
	for _, y := range classes {
		rows := byClass[y]
		if len(rows) < 2 {
			return nil, fmt.Errorf("ais: FitMixtureBase: class %d has %d row", y, len(rows))
		}
		rng := prob.NewRand(prob.Seed(f.Seed, uint64(y)))
		for _, cl := range kmeans(data, d, rows, min(f.Clusters, max(1, len(rows)/f.MinSize)), f.MinSize, f.Iters, rng) {
			sub := make([]float64, 0, len(cl)*d)
			for _, i := range cl {
				sub = append(sub, data[i*d:(i+1)*d]...)
			}
			var g Base
			var err error
			if f.Rank > 0 {
				g, err = fitLowRank(sub, d, f.Rank, f.Inflate, rng)
			} else {
				mean, sd := meanSD(sub, d, f.Inflate)
				g, err = NewBase(mean, sd)
			}
			if err != nil {
				return nil, err
			}
			weights = append(weights, float64(len(cl))/float64(n))
			comps = append(comps, g)
		}
	}
	return NewMixtureBase(weights, comps)
}

// kmeans splits rows (indices into data, d columns) into at most c clusters by
// k-means++ seeding and Lloyd's iterations; a cluster under minSize rows (when c > 1)
// drops its centre and the rest are iterated again. Every cluster returned has at least
// 2 rows.
func kmeans(data []float64, d int, rows []int, c, minSize, iters int, rng *rand.Rand) [][]int {
	row := func(i int) []float64 { return data[i*d : (i+1)*d] }
	dist2 := func(a, b []float64) float64 {
		s := 0.0
		for j := range a {
			r := a[j] - b[j]
			s += r * r
		}
		return s
	}
	if c <= 1 {
		return [][]int{rows}
	}
	// k-means++ seeding.
	centres := [][]float64{slices.Clone(row(rows[rng.IntN(len(rows))]))}
	near := make([]float64, len(rows))
	for i, r := range rows {
		near[i] = dist2(row(r), centres[0])
	}
	for len(centres) < c {
		tot := 0.0
		for _, v := range near {
			tot += v
		}
		if !(tot > 0) {
			break
		}
		u, pick := rng.Float64()*tot, len(rows)-1
		for i, v := range near {
			if u -= v; u < 0 {
				pick = i
				break
			}
		}
		ctr := slices.Clone(row(rows[pick]))
		centres = append(centres, ctr)
		for i, r := range rows {
			near[i] = min(near[i], dist2(row(r), ctr))
		}
	}
	assign := make([]int, len(rows))
	for {
		for it := 0; it < iters; it++ {
			changed := it == 0
			for i, r := range rows {
				best, bd := 0, math.Inf(1)
				for k, ctr := range centres {
					if v := dist2(row(r), ctr); v < bd {
						best, bd = k, v
					}
				}
				if assign[i] != best {
					assign[i], changed = best, true
				}
			}
			if !changed {
				break
			}
			count := make([]int, len(centres))
			for k := range centres {
				clear(centres[k])
			}
			for i, r := range rows {
				k := assign[i]
				count[k]++
				for j, v := range row(r) {
					centres[k][j] += v
				}
			}
			for k := range centres {
				if count[k] > 0 {
					for j := range centres[k] {
						centres[k][j] /= float64(count[k])
					}
				}
			}
		}
		clusters := make([][]int, len(centres))
		for i, r := range rows {
			clusters[assign[i]] = append(clusters[assign[i]], r)
		}
		small := -1
		for k, cl := range clusters {
			if len(cl) < max(minSize, 2) && (small < 0 || len(cl) < len(clusters[small])) {
				small = k
			}
		}
		if small < 0 || len(centres) == 1 {
			return clusters
		}
		centres = slices.Delete(centres, small, small+1)
		clear(assign)
	}
}

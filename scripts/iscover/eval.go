package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/blocks"
)

// result is one estimate of one run against the exact log Z.
type result struct {
	task, method, est string
	exact, logZ, se   float64
	ess, k            float64
	refused           bool
	reason            string
}

// eval re-estimates every run's log Z with each estimator and prints the coverage.
func eval(args []string) error {
	fs := flag.NewFlagSet("eval", flag.ExitOnError)
	in := fs.String("in", "", "gob files, comma-separated")
	ms := fs.String("methods", "jem", "methods to evaluate (comma-separated; all: every one)")
	epss := fs.String("eps", "0,auto", "per-block uniform shares of the continuous proposal (auto: prob.BlockDefensiveShare)")
	points := fs.Bool("points", true, "also the fixed evaluation points' estimate (blocks.EvaluateLogits)")
	adapt := fs.Bool("adapted", false, "also the adapted proposal's estimate (blocks.EvalSet.AdaptedLogZ, as a joint model's row), refusals counted as misses")
	aopts := fs.String("adapt", "", "the adapted proposal's options beyond prob.DefaultAdapt, key=value,… (cond, condcells, anchors, hist, histcells, full, chains, steps, keep)")
	hist := fs.Int("hist", 0, "diagnostic: ESS under the exact block histogram at G, 2G, 4G cells")
	contin := fs.Bool("continuous", true, "the continuous path's estimates (prob.BlocksTask.ImportanceLogZ)")
	verbose := fs.Bool("v", false, "a line per run and estimate")
	nDraws := fs.Int("n", blocks.ISDraws, "draws of the continuous path's proposal")
	alpha := fs.Float64("alpha", blocks.ISShare, "the continuous proposal's share of the block-defensive truth (the rest uniform on the box)")
	fs.Parse(args)
	runs, err := load(*in)
	if err != nil {
		return err
	}
	var out []result
	for _, r := range runs {
		if *ms != "all" && !contains(strings.Split(*ms, ","), r.Method) {
			continue
		}
		spec, err := prob.ParseBlocksSpec(r.Task)
		if err != nil {
			return err
		}
		B, K := spec.B, r.K
		joint := strings.HasPrefix(r.Model, "joint:") // no exact log Z: only the adapted estimate's acceptance
		hidden, err := models.ParseModel("mlp:" + strings.TrimPrefix(strings.TrimPrefix(r.Model, "additive:"), "joint:"))
		if err != nil {
			return err
		}
		pm := ""
		if joint {
			pm = r.Model
		}
		p, err := point(r.Task, 1, methods.Yardstick(), r.Steps, pm)
		if err != nil {
			return err
		}
		g := prob.Grid{G: r.Grid, Box: r.Box}
		exact := math.NaN()
		modelLogits := func(x []float64, n int) ([]float64, error) {
			if joint {
				return kernel.JointPointLogits(hidden, K, 2*B, r.Theta, x, n)
			}
			return kernel.AdditivePointLogits(hidden, K, B, r.Theta, x, n)
		}
		if joint {
			if *adapt {
				o, err := adaptOptions(*aopts)
				if err != nil {
					return err
				}
				a, err := adaptedEstimate(r, p, spec.Draw(tasks.TableSeed(r.Seed, tasks.Table{Point: p, Ordinal: r.Ordinal})), K, exact, o, modelLogits)
				if err != nil {
					return err
				}
				a.task, a.method = r.Task, r.Method
				out = append(out, a)
				if *verbose {
					fmt.Fprintf(os.Stderr, "%s %s task %d [%s]: est %.4f ± %.4f ESS %.0f k̂ %.2f refused %v %s\n", a.task, a.method, r.Ordinal, a.est, a.logZ, a.se, a.ess, a.k, a.refused, a.reason)
				}
			}
			continue
		}
		l, err := kernel.AdditiveCellLogits(hidden, K, B, r.Theta, g.G, g.Box)
		if err != nil {
			return err
		}
		lz, _ := prob.BlocksLogZ(l, K)
		exact = lz + float64(B)*math.Log(g.CellArea())
		tableSeed := tasks.TableSeed(r.Seed, tasks.Table{Point: p, Ordinal: r.Ordinal})
		task := spec.Draw(tableSeed)
		lse := func(x []float64, n int) []float64 {
			o, err := kernel.AdditivePointLSE(hidden, K, B, r.Theta, x, n)
			if err != nil {
				panic(err)
			}
			return o
		}
		base := result{task: r.Task, method: r.Method, exact: exact}
		first := len(out)
		// the pipeline's own row, from the binary that trained it
		old := base
		old.est, old.logZ, old.se, old.ess, old.k, old.refused = "pipeline row at training", r.LogZIS, r.LogZISSE, r.ISESS, math.NaN(), math.IsNaN(r.KLJointIS)
		out = append(out, old)
		for _, es := range strings.Split(*epss, ",") {
			if !*contin {
				break
			}
			eps := prob.BlockDefensiveShare(B)
			if es != "auto" {
				if eps, err = strconv.ParseFloat(es, 64); err != nil {
					return err
				}
			}
			lw := task.ImportanceLogWeights(prob.Seed(tableSeed, prob.SeedString("is")), *nDraws, *alpha, eps, r.Box, lse)
			e := prob.ImportanceLogZ(lw)
			// the old rule on the same weights: delta SE, refused at ESS < 100 only
			m := moments(lw)
			o := base
			o.est, o.logZ, o.se, o.ess, o.k = fmt.Sprintf("continuous ε=%.4f n=%d α=%.2f, old rule (ESS ≥ 100)", eps, *nDraws, *alpha), m.LogZ, m.SE, m.ESS, prob.ParetoK(lw)
			o.refused = !(m.ESS >= prob.MinESS)
			out = append(out, o)
			nw := base
			nw.est, nw.logZ, nw.se, nw.ess, nw.k, nw.refused, nw.reason = fmt.Sprintf("continuous ε=%.4f n=%d α=%.2f, new rule (+ k̂ ≤ %.1f)", eps, *nDraws, *alpha, prob.MaxParetoK), e.LogZ, e.SE, e.ESS, e.K, e.Refused(), e.Reason
			out = append(out, nw)
		}
		if *points {
			for _, es := range strings.Split(*epss, ",") {
				eps := prob.BlockDefensiveShare(B)
				if es != "auto" {
					if eps, err = strconv.ParseFloat(es, 64); err != nil {
						return err
					}
				}
				ev, err := blocks.EvalPointsEps(r.Seed, p, r.Ordinal, eps)
				if err != nil {
					return err
				}
				pl, err := kernel.AdditivePointLogits(hidden, K, B, r.Theta, ev.X, ev.M+ev.N)
				if err != nil {
					return err
				}
				e, err := blocks.EvaluateLogits(ev, pl)
				if err != nil {
					return err
				}
				lse := kernel.RowLSE(pl[ev.M*K:], K)
				lw := make([]float64, ev.N)
				for j := range lw {
					lw[j] = lse[j] - ev.LogR[j]
				}
				m := moments(lw)
				o := base
				o.est, o.logZ, o.se, o.ess, o.k = fmt.Sprintf("points ε=%.4f, old rule (ESS ≥ 100)", eps), m.LogZ, m.SE, m.ESS, prob.ParetoK(lw)
				o.refused = !(m.ESS >= prob.MinESS)
				out = append(out, o)
				pt := base
				pt.est, pt.logZ, pt.se, pt.ess, pt.k, pt.refused, pt.reason = fmt.Sprintf("points ε=%.4f, new rule (EvaluateLogits)", eps), e.IS.LogZ, e.IS.SE, e.IS.ESS, e.IS.K, e.Refused(), e.IS.Reason
				out = append(out, pt)
			}
		}
		if *hist > 0 {
			for _, G := range []int{*hist, 2 * *hist, 4 * *hist} {
				ess, kh, lz := exactHist(r, B, hidden, G, 20000)
				fmt.Fprintf(os.Stderr, "%s task %d exact-hist G=%d: ESS %.0f k̂ %.2f log Z %.4f exact %.4f\n", r.Method, r.Ordinal, G, ess, kh, lz, exact)
			}
		}
		if *adapt {
			o, err := adaptOptions(*aopts)
			if err != nil {
				return err
			}
			a, err := adaptedEstimate(r, p, task, K, exact, o, modelLogits)
			if err != nil {
				return err
			}
			a.task, a.method = r.Task, r.Method
			out = append(out, a)
		}
		if *verbose {
			for _, x := range out[first:] {
				fmt.Fprintf(os.Stderr, "%s %s task %d [%s]: exact %.4f est %.4f ± %.4f z %+.2f ESS %.0f k̂ %.2f refused %v %s\n", x.task, x.method, r.Ordinal, x.est,
					x.exact, x.logZ, x.se, (x.logZ-x.exact)/x.se, x.ess, x.k, x.refused, x.reason)
			}
		}
	}
	table(out)
	return nil
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// moments is log Ẑ, its delta-method SE and the ESS of log weights, with no refusal.
func moments(lw []float64) prob.ISEstimate {
	m := math.Inf(-1)
	for _, v := range lw {
		m = max(m, v)
	}
	var s, s2 float64
	for _, v := range lw {
		w := math.Exp(v - m)
		s += w
		s2 += w * w
	}
	n := float64(len(lw))
	mean := s / n
	variance := max(0, s2/n-mean*mean) * n / (n - 1)
	return prob.ISEstimate{LogZ: m + math.Log(mean), SE: math.Sqrt(variance/n) / mean, ESS: s * s / s2, N: len(lw)}
}

// table prints per task, method and estimate: runs, refused, the 95% interval's
// coverage of the exact log Z among those used, mean z, largest |z|, ESS and k̂.
func table(out []result) {
	type key struct{ task, method, est string }
	by := map[key][]result{}
	var keys []key
	for _, r := range out {
		k := key{r.task, r.method, r.est}
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		return keys[i].task < keys[j].task || keys[i].task == keys[j].task && keys[i].method < keys[j].method
	})
	fmt.Println("| task | method | estimate | runs | refused | covered (95%) of used | mean z | max \\|z\\| | mean IS − exact | ESS (min–max) | k̂ (min–max) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		rs := by[k]
		var used, cov int
		var zs, d, worst float64
		essLo, essHi, kLo, kHi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, r := range rs {
			essLo, essHi = min(essLo, r.ess), max(essHi, r.ess)
			if !math.IsNaN(r.k) {
				kLo, kHi = min(kLo, r.k), max(kHi, r.k)
			}
			if r.refused {
				continue
			}
			used++
			z := (r.logZ - r.exact) / r.se
			zs += z
			d += r.logZ - r.exact
			worst = max(worst, math.Abs(z))
			if math.Abs(z) <= 1.96 {
				cov++
			}
		}
		kr := "—"
		if kLo <= kHi {
			kr = fmt.Sprintf("%.2f–%.2f", kLo, kHi)
		}
		fmt.Printf("| `%s` | %s | %s | %d | %d | %d/%d (%.0f%%) | %+.2f | %.2f | %+.4f | %.0f–%.0f | %s |\n", k.task, k.method, k.est, len(rs), len(rs)-used,
			cov, used, 100*float64(cov)/float64(max(1, used)), zs/float64(max(1, used)), worst, d/float64(max(1, used)), essLo, essHi, kr)
	}
}

// adaptedEstimate is a run's log Z estimated as a joint model's row estimates it
// (blocks.EvalSet.AdaptedLogZ with prob.DefaultAdapt at the task's evaluation points,
// seed Seed(tableSeed, "adapt"), the model's logits a black box), against the exact.
func adaptedEstimate(r Run, p tasks.Point, task prob.BlocksTask, K int, exact float64, o prob.AdaptOptions, logits func(x []float64, n int) ([]float64, error)) (result, error) {
	ev, err := blocks.EvalPoints(r.Seed, p, r.Ordinal)
	if err != nil {
		return result{}, err
	}
	pl, err := logits(ev.X, ev.M+ev.N)
	if err != nil {
		return result{}, err
	}
	tableSeed := tasks.TableSeed(r.Seed, tasks.Table{Point: p, Ordinal: r.Ordinal})
	truth := task.Truth(prob.Grid{G: r.Grid, Box: r.Box})
	e, err := ev.AdaptedLogZ(prob.Seed(tableSeed, prob.SeedString("adapt")), truth, o, kernel.RowLSE(pl[ev.M*K:], K), logits)
	kernel.ClearUpper()
	if err != nil {
		return result{}, err
	}
	return result{est: "adapted (as a joint model's row)", exact: exact, logZ: e.LogZ, se: e.SE, ess: e.ESS, k: e.K, refused: e.Refused(), reason: e.Reason}, nil
}

// exactHist (diagnostic) is the ESS and k̂ of an additive model's weights under the
// block histogram of its exact per-class block cell masses at G cells a side (the
// within-cell variation alone).
func exactHist(r Run, B int, hidden []int, G int, n int) (ess, khat, lz float64) {
	K := r.K
	l, err := kernel.AdditiveCellLogits(hidden, K, B, r.Theta, G, r.Box)
	if err != nil {
		panic(err)
	}
	g2 := G * G
	// class weights ∝ Π_b Σ_c exp l_b[c][y]
	lw := make([]float64, K)
	lcum := make([][][]float64, K)
	for y := range K {
		lcum[y] = make([][]float64, B)
		for b := range B {
			m := math.Inf(-1)
			for c := range g2 {
				m = max(m, l[b][c*K+y])
			}
			s := 0.0
			cum := make([]float64, g2)
			for c := range g2 {
				s += math.Exp(l[b][c*K+y] - m)
				cum[c] = s
			}
			for c := range cum {
				cum[c] /= s
			}
			lcum[y][b] = cum
			lw[y] += m + math.Log(s)
		}
	}
	lZ := prob.LogSumExp(lw)
	rng := prob.NewRand(7)
	w := 2 * r.Box / float64(G)
	d := 2 * B
	x := make([]float64, n*d)
	for i := range n {
		u := rng.Float64()
		y := 0
		acc := 0.0
		for yy := range K {
			acc += math.Exp(lw[yy] - lZ)
			if u < acc {
				y = yy
				break
			}
			y = yy
		}
		for b := range B {
			cum := lcum[y][b]
			v := rng.Float64()
			c := sort.SearchFloat64s(cum, v)
			c = min(c, g2-1)
			x[i*d+2*b] = -r.Box + (float64(c/G)+rng.Float64())*w
			x[i*d+2*b+1] = -r.Box + (float64(c%G)+rng.Float64())*w
		}
	}
	lse, err := kernel.AdditivePointLSE(hidden, K, B, r.Theta, x, n)
	if err != nil {
		panic(err)
	}
	kernel.ClearUpper()
	lws := make([]float64, n)
	la := 2 * math.Log(w)
	for i := range n {
		ly := make([]float64, K)
		for y := range K {
			v := lw[y] - lZ
			for b := range B {
				c := min(G-1, int((x[i*d+2*b]+r.Box)/w))*G + min(G-1, int((x[i*d+2*b+1]+r.Box)/w))
				cum := lcum[y][b]
				p := cum[c]
				if c > 0 {
					p -= cum[c-1]
				}
				v += math.Log(p) - la
			}
			ly[y] = v
		}
		lws[i] = lse[i] - prob.LogSumExp(ly)
	}
	e := prob.ImportanceLogZ(lws)
	return e.ESS, e.K, e.LogZ
}

// adaptOptions are prob.DefaultAdapt with the given key=value changes.
func adaptOptions(s string) (prob.AdaptOptions, error) {
	o := prob.DefaultAdapt
	if s == "" {
		return o, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return o, err
		}
		floats := map[string]*float64{"cond": &o.CondShare, "hist": &o.HistShare, "full": &o.FullShare}
		ints := map[string]*int{"condcells": &o.CondCells, "anchors": &o.CondAnchors, "histcells": &o.HistCells, "chains": &o.Chains, "steps": &o.Steps, "keep": &o.Keep}
		if p, ok := floats[k]; ok {
			*p = f
		} else if p, ok := ints[k]; ok {
			*p = int(f)
		} else {
			return o, fmt.Errorf("unknown adapt option %q", k)
		}
	}
	return o, nil
}

package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/verdict"
)

// # Tuning
//
// Every recipe gets the same stated search: its tuning sweep
// (sweeps/leaderboard/tune-<method>.yaml) tries six settings of its key options on
// tuning tasks (4 per family, run seed 101: disjoint from the board's seeds), each
// trained under the same protocol and budget of steps as on the board. A setting's
// score is truth-free: the mean over the tuning tasks of its runs' held-out NLL (at the
// selected iterate) less exact jem's on the same task at the same rate and batch,
// averaged over the families. The setting of least score is the recipe's pick, among
// the settings whose runs collapsed (unstable) at most MaxUnstableShare of the time.
// The yardstick gets the same budget for its own rate and batch (tune-jem.yaml: six
// settings of lr × batch_size), scored alike against its runs at the recipes' rate and
// batch. Beside each score the mean excess joint KL over exact jem (the truth of the
// tuning tasks) is reported, never used to choose, with the setting it would pick.

// MaxUnstableShare is the largest share of unstable (collapsed) tuning runs a setting
// may have and still be picked, while some setting of the recipe has no more.
const MaxUnstableShare = 0.25

// Scored is a setting's tuning score.
type Scored struct {
	Method   string             `json:"method"`
	Values   map[string]string  `json:"values"`
	Score    float64            `json:"score"`     // mean over families of the mean held-out NLL less jem's, nats per draw
	ByFamily map[string]float64 `json:"by_family"` // the same per family
	// TruthScore is the mean over families of the mean excess joint KL over jem (the
	// tuning tasks' truth): reported, not used to pick.
	TruthScore float64 `json:"truth_score"`
	Unstable   int     `json:"unstable"` // runs flagged unstable
	Runs       int     `json:"runs"`
}

// yardstickKeys are the settings the yardstick's tuning varies.
var yardstickKeys = []string{"lr", "batch_size"}

// setting is the rate and batch a run trained at, the key jem's runs pair on.
type setting struct {
	unit
	lr    float64
	batch int64
}

func (r run) setting() setting { return setting{r.unit(), r.LR, r.BatchSize} }

// pick scores every setting of every recipe (and of exact jem) in the tuning runs
// against exact jem's tuning runs at the same rate and batch and returns the scores
// (by method, then score), each method's pick, and the pick the truth would make.
func pick(runs []run) ([]Scored, map[string]map[string]string, map[string]map[string]string, error) {
	jem := map[setting]run{}
	byMethod := map[string][]run{}
	base := map[[2]float64]int{} // the recipes' (lr, batch): jem's own settings pair with it
	for _, r := range runs {
		switch {
		case r.Method == methods.Yardstick():
			jem[r.setting()] = r
			byMethod[r.Method] = append(byMethod[r.Method], r)
		case methods.IsSampler(r.Method):
			byMethod[r.Method] = append(byMethod[r.Method], r)
			base[[2]float64{r.LR, float64(r.BatchSize)}]++
		}
	}
	if len(jem) == 0 {
		return nil, nil, nil, fmt.Errorf("no exact jem runs among the tuning runs: a setting's score is its held-out NLL less jem's")
	}
	var ref [2]float64 // the most common recipe setting (the board's); jem's first without recipes
	if len(base) == 0 {
		r := byMethod[methods.Yardstick()][0]
		ref = [2]float64{r.LR, float64(r.BatchSize)}
	}
	for _, k := range slices.SortedFunc(maps.Keys(base), func(a, b [2]float64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		if base[k] > base[ref] || ref == ([2]float64{}) {
			ref = k
		}
	}
	var out []Scored
	picks, truthPicks := map[string]map[string]string{}, map[string]map[string]string{}
	for _, m := range slices.Sorted(maps.Keys(byMethod)) {
		rs := byMethod[m]
		yard := m == methods.Yardstick()
		keys := variedOptions(m, rs)
		if yard {
			keys = yardstickKeys
		}
		groups := map[string]*Scored{}
		sums := map[string]map[string][4]float64{} // setting → family → (Σ NLL diff, n, Σ KL excess, n)
		for _, r := range rs {
			v := optionValues(r.ResultRow, keys)
			if yard {
				v = map[string]string{"lr": fmtG(r.LR), "batch_size": fmtG(float64(r.BatchSize))}
			}
			id := tunedText(v)
			s, ok := groups[id]
			if !ok {
				s = &Scored{Method: m, Values: v, ByFamily: map[string]float64{}}
				groups[id], sums[id] = s, map[string][4]float64{}
			}
			s.Runs++
			if r.Unstable {
				s.Unstable++
			}
			key := r.setting()
			if yard {
				key.lr, key.batch = ref[0], int64(ref[1])
			}
			j, ok := jem[key]
			if !ok {
				continue
			}
			d, k := r.HeldoutNLL-j.HeldoutNLL, r.KLJoint-j.KLJoint
			if math.IsNaN(d) {
				d = math.Inf(1) // a setting whose run has no finite held-out NLL loses
			}
			if math.IsNaN(k) {
				k = math.Inf(1)
			}
			a := sums[id][r.Task]
			sums[id][r.Task] = [4]float64{a[0] + d, a[1] + 1, a[2] + k, a[3] + 1}
		}
		var scored []Scored
		for id, s := range groups {
			var fam, truth []float64
			for f, a := range sums[id] {
				s.ByFamily[f] = a[0] / a[1]
				fam, truth = append(fam, a[0]/a[1]), append(truth, a[2]/a[3])
			}
			s.Score, s.TruthScore = prob.Mean(fam), prob.Mean(truth)
			if len(fam) == 0 {
				s.Score, s.TruthScore = math.NaN(), math.NaN()
			}
			scored = append(scored, *s)
		}
		slices.SortFunc(scored, func(a, b Scored) int { return verdict.CompareNaNLast(a.Score, b.Score) })
		if v, ok := choose(scored, func(s Scored) float64 { return s.Score }); ok && !(yard && v["lr"] == fmtG(ref[0]) && v["batch_size"] == fmtG(ref[1])) {
			picks[m] = v // (jem's pick at the recipes' own rate and batch is the board's jem: no tuned board)
		}
		if v, ok := choose(scored, func(s Scored) float64 { return s.TruthScore }); ok {
			truthPicks[m] = v
		}
		out = append(out, scored...)
	}
	return out, picks, truthPicks, nil
}

// fmtG is v in Go's shortest 'g' form, as a tuned spec's value.
func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// choose is the values of the setting of least score among those with at most
// MaxUnstableShare of their runs unstable (of all, when none is): a collapse counts
// against a setting. Ties keep the earlier (scored's order).
func choose(scored []Scored, score func(Scored) float64) (map[string]string, bool) {
	best, any := -1, -1
	for i, s := range scored {
		v := score(s)
		if math.IsNaN(v) {
			continue
		}
		if any < 0 || v < score(scored[any]) {
			any = i
		}
		if float64(s.Unstable) <= MaxUnstableShare*float64(s.Runs) && (best < 0 || v < score(scored[best])) {
			best = i
		}
	}
	if best < 0 {
		best = any
	}
	if best < 0 {
		return nil, false
	}
	return scored[best].Values, true
}

// variedOptions are the options of method m (methods.Table) whose values differ among
// its runs: the options its tuning sweep searched.
func variedOptions(m string, rs []run) []string {
	e, _ := methods.Lookup(m)
	var keys []string
	for _, k := range e.Options {
		seen := map[string]bool{}
		for _, r := range rs {
			seen[optionValues(r.ResultRow, []string{k})[k]] = true
		}
		if len(seen) > 1 {
			keys = append(keys, k)
		}
	}
	return keys
}

// writeScores prints the tuning table: each setting's held-out score (which picks,
// ✓) and its truth score (which does not; ◇ marks the setting the truth would pick),
// then how often the two picks agree.
func writeScores(w io.Writer, scores []Scored, picks, truthPicks map[string]map[string]string) {
	fmt.Fprintln(w, "| method | setting | score (mean held-out NLL less jem's, nats per draw) | per family | excess joint KL over jem (truth; not used) | unstable | picked |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, s := range scores {
		var fam []string
		for _, f := range slices.Sorted(maps.Keys(s.ByFamily)) {
			fam = append(fam, fmt.Sprintf("%s %s", f, fmtNum(s.ByFamily[f])))
		}
		mark := ""
		if tunedText(picks[s.Method]) == tunedText(s.Values) {
			mark = "✓"
		}
		if tunedText(truthPicks[s.Method]) == tunedText(s.Values) {
			mark += "◇"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d/%d | %s |\n", s.Method, tunedText(s.Values), fmtNum(s.Score), strings.Join(fam, "; "), fmtNum(s.TruthScore), s.Unstable, s.Runs, mark)
	}
	agree := 0
	for m, v := range picks {
		if tunedText(truthPicks[m]) == tunedText(v) {
			agree++
		}
	}
	fmt.Fprintf(w, "\nPicked by held-out NLL (✓); the truth's excess over jem would pick ◇: the same setting for %d of %d methods.\n", agree, len(picks))
}

// tunedSpec is the sweep spec of a recipe's tuned board: the board's tasks, tables and
// replicates with the recipe alone at its picked options.
func tunedSpec(method string, values map[string]string, tasks []string, tables, replicates int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s at its tuned options (picked by pipelines/leaderboard pick on the tuning tasks)\n", method)
	fmt.Fprintf(&b, "name: leaderboard-tuned-%s\n", method)
	fmt.Fprintf(&b, "description: %s tuned (%s)\n", method, tunedText(values))
	fmt.Fprintf(&b, "tables: %d\nreplicates: %d\nmethods: [%s]\n", tables, replicates, method)
	if len(values) > 0 {
		b.WriteString("defaults:\n")
		for _, k := range slices.Sorted(maps.Keys(values)) {
			fmt.Fprintf(&b, "  %s: %s\n", k, values[k])
		}
	}
	b.WriteString("grid:\n  task: [")
	for i, t := range tasks {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", t)
	}
	b.WriteString("]\n")
	return b.String()
}

// pickPerTask is pick run on each task's tuning runs alone (a ladder's dimensions,
// each its own pick): picks.json holds picks_by_task and truth_picks_by_task, picks.md
// a scores table a task, and every method's pick at each task is a tuned spec of that
// task alone, tuned-<method>-<task>.yaml.
func pickPerTask(runs []run, cfg config, w io.Writer, files map[string][]byte, publish func(inputs ...string) error) error {
	byTask := map[string][]run{}
	for _, r := range runs {
		byTask[r.Task] = append(byTask[r.Task], r)
	}
	picks, truth := map[string]map[string]map[string]string{}, map[string]map[string]map[string]string{}
	var all []Scored
	var md strings.Builder
	agree, n := 0, 0
	for _, t := range slices.Sorted(maps.Keys(byTask)) {
		scores, p, tp, err := pick(byTask[t])
		if err != nil {
			return fmt.Errorf("task %s: %w", t, err)
		}
		fmt.Fprintf(&md, "\n### %s\n\n", t)
		writeScores(&md, scores, p, tp)
		picks[t], truth[t] = p, tp
		all = append(all, scores...)
		for m, v := range p {
			n++
			if tunedText(tp[m]) == tunedText(v) {
				agree++
			}
			files["tuned-"+m+"-"+strings.TrimSuffix(strings.TrimPrefix(cdFile(t), "leaderboard-cd-"), ".svg")+".yaml"] = []byte(tunedSpec(m, v, []string{t}, cfg.Tables, cfg.Replicates))
		}
	}
	fmt.Fprintf(&md, "\nOver the tasks: the held-out pick is the truth's for %d of %d (method, task) pairs.\n", agree, n)
	fmt.Fprint(w, md.String())
	f, err := json.MarshalIndent(map[string]any{"picks_by_task": picks, "truth_picks_by_task": truth, "scores": all}, "", "  ")
	if err != nil {
		return err
	}
	files["picks.json"], files["picks.md"] = f, []byte(md.String())
	return publish(cfg.Tune...)
}

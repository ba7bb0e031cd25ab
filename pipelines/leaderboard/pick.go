package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
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
// score is its mean excess joint KL over exact jem on the same tuning tasks, averaged
// over the families (the truth of the tuning tasks is used to choose, never that of
// a task the board reports). The setting of least score is the recipe's pick, among
// the settings whose runs collapsed (unstable) at most MaxUnstableShare of the time.

// MaxUnstableShare is the largest share of unstable (collapsed) tuning runs a setting
// may have and still be picked, while some setting of the recipe has no more.
const MaxUnstableShare = 0.25

// Scored is a setting's tuning score.
type Scored struct {
	Method   string             `json:"method"`
	Values   map[string]string  `json:"values"`
	Score    float64            `json:"score"`     // mean over families of the mean excess over jem, nats
	ByFamily map[string]float64 `json:"by_family"` // mean excess per family
	Unstable int                `json:"unstable"`  // runs flagged unstable
	Runs     int                `json:"runs"`
}

// pick scores every setting of every recipe in the tuning runs against exact jem's
// tuning runs and returns the scores (by method, then score) and each recipe's pick.
func pick(runs []run) ([]Scored, map[string]map[string]string, error) {
	jem := map[unit]run{}
	byMethod := map[string][]run{}
	for _, r := range runs {
		switch {
		case r.Method == methods.Yardstick():
			jem[r.unit()] = r
		case methods.IsSampler(r.Method):
			byMethod[r.Method] = append(byMethod[r.Method], r)
		}
	}
	if len(jem) == 0 {
		return nil, nil, fmt.Errorf("no exact jem runs among the tuning runs: a setting's score is its excess over jem")
	}
	var out []Scored
	picks := map[string]map[string]string{}
	for _, m := range slices.Sorted(maps.Keys(byMethod)) {
		rs := byMethod[m]
		keys := variedOptions(m, rs)
		groups := map[string]*Scored{}
		sums := map[string]map[string][2]float64{} // setting → family → (sum, n)
		for _, r := range rs {
			v := optionValues(r.ResultRow, keys)
			id := tunedText(v)
			s, ok := groups[id]
			if !ok {
				s = &Scored{Method: m, Values: v, ByFamily: map[string]float64{}}
				groups[id], sums[id] = s, map[string][2]float64{}
			}
			s.Runs++
			if r.Unstable {
				s.Unstable++
			}
			j, ok := jem[r.unit()]
			if !ok {
				continue
			}
			d := r.KLJoint - j.KLJoint
			if math.IsNaN(d) {
				d = math.Inf(1) // a setting whose run has no finite KL loses
			}
			a := sums[id][r.Task]
			sums[id][r.Task] = [2]float64{a[0] + d, a[1] + 1}
		}
		var scored []Scored
		for id, s := range groups {
			var fam []float64
			for f, a := range sums[id] {
				s.ByFamily[f] = a[0] / a[1]
				fam = append(fam, a[0]/a[1])
			}
			s.Score = prob.Mean(fam)
			if len(fam) == 0 {
				s.Score = math.NaN()
			}
			scored = append(scored, *s)
		}
		slices.SortFunc(scored, func(a, b Scored) int { return verdict.CompareNaNLast(a.Score, b.Score) })
		// A collapse counts against a setting: the pick is the best of the settings
		// with at most MaxUnstableShare of their runs unstable (of all, when none is).
		best := -1
		for i, s := range scored {
			if !math.IsNaN(s.Score) && float64(s.Unstable) <= MaxUnstableShare*float64(s.Runs) {
				best = i
				break
			}
		}
		if best < 0 && len(scored) > 0 && !math.IsNaN(scored[0].Score) {
			best = 0
		}
		if best >= 0 {
			picks[m] = scored[best].Values
		}
		out = append(out, scored...)
	}
	return out, picks, nil
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

// writeScores prints the tuning table.
func writeScores(w io.Writer, scores []Scored, picks map[string]map[string]string) {
	fmt.Fprintln(w, "| recipe | setting | score (mean excess over jem, nats) | per family | unstable | picked |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, s := range scores {
		var fam []string
		for _, f := range slices.Sorted(maps.Keys(s.ByFamily)) {
			fam = append(fam, fmt.Sprintf("%s %s", f, fmtNum(s.ByFamily[f])))
		}
		mark := ""
		if tunedText(picks[s.Method]) == tunedText(s.Values) {
			mark = "✓"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d/%d | %s |\n", s.Method, tunedText(s.Values), fmtNum(s.Score), strings.Join(fam, "; "), s.Unstable, s.Runs, mark)
	}
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

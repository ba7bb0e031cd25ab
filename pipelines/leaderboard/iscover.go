package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// ISCoverage is how a board's importance-sampling estimates of log Z fare against the
// exact log Z beside them (block tasks: a joint model's estimator, the proposal adapted
// to the model, run on additive models whose log Z is exact): of Runs runs with both,
// Covered have the exact log Z within 1.96 SE of the estimate, Refused were refused
// (ESS or Pareto k̂: counted as misses), the rest missed. Proposal is the estimates'
// is_proposal ("adapted", "truth", or both joined by "+").
type ISCoverage struct {
	Runs     int    `json:"runs"`
	Covered  int    `json:"covered"`
	Refused  int    `json:"refused"`
	Proposal string `json:"proposal"`
}

// Share is the covered share of the runs, refusals counted as misses (NaN with none).
func (c ISCoverage) Share() float64 {
	if c.Runs == 0 {
		return math.NaN()
	}
	return float64(c.Covered) / float64(c.Runs)
}

// isCoverage is the IS coverage of each task's runs (those with an exact, finite
// log_z and an estimate: is_proposal set).
func isCoverage(runs []run) map[string]ISCoverage {
	out := map[string]ISCoverage{}
	props := map[string][]string{}
	for _, r := range runs {
		if r.ISProposal == "" || math.IsNaN(r.LogZ) || math.IsInf(r.LogZ, 0) {
			continue
		}
		c := out[r.Task]
		c.Runs++
		switch {
		case r.ISRefused != "" || math.IsNaN(r.LogZISSE):
			c.Refused++
		case math.Abs(r.LogZIS-r.LogZ) <= 1.96*r.LogZISSE:
			c.Covered++
		}
		if !slices.Contains(props[r.Task], r.ISProposal) {
			props[r.Task] = append(props[r.Task], r.ISProposal)
		}
		out[r.Task] = c
	}
	for t, c := range out {
		slices.Sort(props[t])
		c.Proposal = strings.Join(props[t], "+")
		out[t] = c
	}
	return out
}

// writeISCoverage is a board's IS coverage line (nothing without one).
func writeISCoverage(w io.Writer, c *ISCoverage) {
	if c == nil || c.Runs == 0 {
		return
	}
	fmt.Fprintf(w, "Importance-sampled log Z against the exact (is_proposal %s): the 95%% interval holds it for %d of %d runs (%.0f%%; %d refused, counted as misses).\n\n",
		c.Proposal, c.Covered, c.Runs, 100*c.Share(), c.Refused)
}

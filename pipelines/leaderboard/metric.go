package main

import (
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// metric is what a board ranks: a result column, lower better. The joint KL is ranked
// as each run's paired excess over exact jem on the same task (the yardstick); where
// no exact jem exists (a CNN on images) a board ranks a measure against the truth
// itself, each recipe's value paired by task with the others'.
type metric struct {
	Name   string // --metric's value (the column, or what it is computed from)
	Header string // the board's column header
	Unit   string // the values' unit ("nats", or "" for a pure number)
	Value  func(schemas.ResultRow) float64
	Excess bool // ranked as the paired excess over exact jem (whose runs the board needs)
}

// metrics are report's --metric values; the first is the default.
var metrics = []metric{
	{"kl_joint", "excess over exact jem, nats", "nats", func(r schemas.ResultRow) float64 { return r.KLJoint }, true},
	{"kl_conditional", "KL(p(y|x) ‖ q(y|x)), nats", "nats", func(r schemas.ResultRow) float64 { return r.KLConditional }, false},
	{"fisher_div", "Fisher divergence E_p‖∇ₓ log p − ∇ₓ LSE f‖²", "", func(r schemas.ResultRow) float64 { return r.FisherDiv }, false},
	{"log_ratio_sd", "sd_p[log p(x, y) − f(x)[y]], nats", "nats", func(r schemas.ResultRow) float64 { return r.LogRatioSD }, false},
	{"ece", "expected calibration error", "", func(r schemas.ResultRow) float64 { return r.ECE }, false},
	{"auroc_px_deficit", "1 − AUROC of log q(x), data against uniform noise", "", func(r schemas.ResultRow) float64 { return 1 - r.AUROCPx }, false},
}

// metricNamed is the metric called name ("": the default, the excess joint KL).
func metricNamed(name string) (metric, bool) {
	if name == "" {
		return metrics[0], true
	}
	i := slices.IndexFunc(metrics, func(m metric) bool { return m.Name == name })
	if i < 0 {
		return metric{}, false
	}
	return metrics[i], true
}

// metricNames lists the metrics' names.
func metricNames() string {
	var out []string
	for _, m := range metrics {
		out = append(out, m.Name)
	}
	return strings.Join(out, ", ")
}

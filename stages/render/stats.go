package render

import (
	"math"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/models/prob"
)

// dist is mean and quantiles of a sample.
type dist struct {
	n                      int
	mean, median, p10, p90 float64
}

// describe summarises vs with the statistics summary.json uses (models/prob).
func describe(vs []float64) dist {
	if len(vs) == 0 {
		return dist{mean: math.NaN(), median: math.NaN(), p10: math.NaN(), p90: math.NaN()}
	}
	return dist{n: len(vs), mean: prob.Mean(vs), median: prob.Quantile(vs, 0.5),
		p10: prob.Quantile(vs, 0.1), p90: prob.Quantile(vs, 0.9)}
}

// fmtNum formats a number compactly: "0.001", "250", "3e-05" → "3e-5".
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	return tidyExp(strconv.FormatFloat(v, 'g', -1, 64))
}

// fmtSig formats with n significant digits.
func fmtSig(v float64, n int) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	return tidyExp(strconv.FormatFloat(v, 'g', n, 64))
}

// fmtKL formats a KL value (or another statistic of the runs) as the tables show it,
// with 3 significant digits: a figure that repeats a table's number formats it here.
func fmtKL(v float64) string { return fmtSig(v, 3) }

// fmtP prints a p-value; one that underflows float64 is shown as a bound, not as 0.
func fmtP(p float64) string {
	if p >= 0 && p < 1e-300 {
		return "< 1e-300"
	}
	return fmtSig(p, 3)
}

// tidyExp turns "1e-05" into "1e-5" and "1e+06" into "1e6".
func tidyExp(s string) string {
	i := strings.IndexByte(s, 'e')
	if i < 0 {
		return s
	}
	mant, exp := s[:i], s[i+1:]
	sign := ""
	if exp[0] == '-' || exp[0] == '+' {
		if exp[0] == '-' {
			sign = "-"
		}
		exp = exp[1:]
	}
	exp = strings.TrimLeft(exp, "0")
	if exp == "" {
		exp = "0"
	}
	return mant + "e" + sign + exp
}

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

// t975 are the 0.975 quantiles of Student's t with 1..30 degrees of freedom.
var t975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is the 0.975 quantile of Student's t with df ≥ 1 degrees of freedom
// (the table to 30, Cornish–Fisher's expansion about the normal's beyond; within 1e-3).
func tQuantile975(df int) float64 {
	if df <= len(t975) {
		return t975[max(df, 1)-1]
	}
	const z = 1.959964
	v := float64(df)
	return z + (z*z*z+z)/(4*v) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*v*v)
}

// meanCI95 is the mean of the finite values of vs with its 95% CI over them: Student's
// t interval of the mean from their spread (which holds each value's own Monte Carlo
// error) for two or more, and ± 1.96 of the one value's standard error (ses, beside
// vs; NaN: no CI) for one. NaN (and no CI) for none.
func meanCI95(vs, ses []float64) (mean, lo, hi float64) {
	var xs []float64
	se1 := math.NaN()
	for i, v := range vs {
		if finite(v) {
			xs = append(xs, v)
			if i < len(ses) {
				se1 = ses[i]
			}
		}
	}
	switch len(xs) {
	case 0:
		return math.NaN(), math.NaN(), math.NaN()
	case 1:
		if !finite(se1) {
			return xs[0], math.NaN(), math.NaN()
		}
		return xs[0], xs[0] - 1.96*se1, xs[0] + 1.96*se1
	}
	mean = prob.Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	n := float64(len(xs))
	h := tQuantile975(len(xs)-1) * math.Sqrt(ss/(n-1)/n)
	return mean, mean - h, mean + h
}

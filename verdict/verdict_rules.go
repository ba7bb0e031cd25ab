package verdict

import (
	"fmt"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// # When a point gets no verdict, and what counts against a method
//
// A verdict rests on 95% confidence intervals over a point's tables (tasks): percentile
// bootstraps of ratios of sums (see ratioChecks) and the Wilcoxon signed-rank test. With
// few tables these say nothing: one table gives a zero-width interval, and under normal
// data a percentile bootstrap of a mean covers like a t interval with critical value
// 1.96·√((n−1)/n), i.e. about 85% at 5 tables, 90% at 10 and 93% at 20 for a nominal 95%.
// The Wilcoxon test cannot reach p < 0.05 below 6 pairs (2/2⁵ = 0.0625 at 5). A point
// with fewer than MinTables tables is therefore undecided, with the count, the minimum
// and the flag that lifts it.
//
// A run whose KL is not finite though no divergence guard fired (ResultRow.Nonfinite)
// is not left out like a diverged one: its KL is +Inf (or undefined), so the mean KL of
// its method, and the ratio of sums a check takes, is too. Any such run of the method a
// verdict is about (jem for a table point, a sampler against exact jem) makes the point
// fail with CauseNonfinite, whatever the finite survivors show.

// MinTables is the fewest tables (tasks) a point needs for a verdict: at 10 a 95%
// percentile bootstrap covers about 90% under normal data and the Wilcoxon test can
// reach p ≈ 0.002; below it the point is undecided (see above).
const MinTables = 10

// CauseNonfinite is the verdict's cause when runs of the method under test have a KL
// that is not finite though no divergence guard fired.
const CauseNonfinite = "nonfinite"

// CheckNonfinitePrefix names a sampler's check that none of its runs has a non-finite
// KL where exact jem's is finite: sampler_finite_<method>.
const CheckNonfinitePrefix = "sampler_finite_"

// TablesRefusal says why a point under the Tables rule can never get a verdict, or nil: a table task
// with one x value (--x_values=1), where q(x) is 1 for every model so JEM's log q(x)
// term has nothing to learn and JEM is the baseline. Validation may call it to refuse
// such a point up front; the verdict of one that runs is undecided with this reason.
func TablesRefusal(g schemas.Grid) error {
	if g.XValues == 1 {
		return fmt.Errorf("x_values=1 leaves q(x) nothing to learn (it is 1 for every model), so JEM is the baseline and " +
			"the claim cannot be tested; use --x_values=2 or more")
	}
	return nil
}

// tooFewTables is the undecided reason of a point with n tables (tasks), or "" when n
// reaches MinTables. what names them ("tables", "tasks").
func tooFewTables(n int, what string) string {
	if n >= MinTables {
		return ""
	}
	if n == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	return fmt.Sprintf("undecided: %d %s, fewer than the %d a verdict needs (its 95%% CIs over %d %s are too narrow to trust: "+
		"one gives a zero-width interval); use --tables=%d or more", n, what, MinTables, n, what, MinTables)
}

// nonfiniteWords describes n of total runs of method whose KL is not finite though no
// divergence guard fired, with what it means (not "more steps").
func nonfiniteWords(method string, n, total int, what string) string {
	return fmt.Sprintf("%s's KL is infinite on %d of %d %s with no divergence guard fired: its q put zero mass where the truth has mass "+
		"(its logits spread beyond what exp represents: numerical overflow), so its mean KL is infinite; these runs count against it "+
		"and more steps do not cure it", method, n, total, what)
}

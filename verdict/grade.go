package verdict

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// # Grading a recipe against exact JEM, in nats
//
// A recipe (a sampler method: sgld, mala, ed, …) is judged by its excess joint KL over
// exact jem on the same tasks: the mean of KL_recipe − KL_jem over the tasks where both
// converged, with its 95% CI, in nats. The grade is read off the CI's upper end U, so
// a recipe is never graded better than the tasks show:
//
//   - matches: U is within the reference's own statistical error — at most Margin
//     (10%) of it: on a table point the add-½ reference's expected KL less the family's
//     approximation error (the scale of the table checks), elsewhere (2-D, blocks)
//     exact JEM's own mean KL from the truth on the same tasks — or the CI covers 0
//     (no excess the tasks can detect) and U ≤ BandClose;
//   - within_0.1_nat: U ≤ BandClose;
//   - within_1_nat: U ≤ BandFar;
//   - worse: U > BandFar (the recipe fails);
//   - infinite: the recipe's KL is infinite on some task where exact JEM's is finite
//     (its excess there is +Inf: it fails);
//   - none: no task to compare on.
//
// Only matches passes the verdict's sampler check; within_0.1_nat and within_1_nat
// "fall short" (the verdict does not hold, but nothing fails), worse and infinite fail.
// jem-converged (exact JEM on full batches) is graded the same way beside the recipes,
// as a reference: it never decides the verdict, and exact jem stays the yardstick.
// Unstable runs (schemas.ResultRow.Unstable) stay in every mean; their count is shown
// beside each grade.

// The grading bands of a recipe's excess joint KL over exact JEM, in nats: the one
// place they are stated (see the package comment above for the "matches" band, which is
// the point's own statistical error).
const (
	// BandClose is the upper end of the within_0.1_nat band (and the most a CI that
	// covers 0 may reach and still match).
	BandClose = 0.1
	// BandFar is the upper end of the within_1_nat band; beyond it a recipe fails.
	BandFar = 1.0
)

// Grades (schemas.SamplerComparison.Grade), best first.
const (
	GradeMatches  = "matches"
	GradeClose    = "within_0.1_nat"
	GradeShort    = "within_1_nat"
	GradeWorse    = "worse"
	GradeInfinite = "infinite"
	GradeNone     = "none"
)

// Exact JEM's own outcome at a point (schemas.Verdict.Exact).
const (
	ExactHolds     = "holds"
	ExactFails     = "fails"
	ExactUndecided = "undecided"
)

// Levels of a verdict (schemas.Verdict.Level).
const (
	LevelHolds     = "holds"
	LevelShort     = "short"
	LevelFails     = "fails"
	LevelUndecided = "undecided"
)

// gradeOf grades an excess with CI [lo, hi] (nats) over pairs tasks, nonfinite more
// with an infinite excess, where the reference's own statistical error is scale (NaN
// when unknown): the grade and the upper end of the matches band there.
func gradeOf(pairs, nonfinite int, lo, hi, scale, margin float64) (string, float64) {
	within := margin * scale
	if !(within >= 0) {
		within = 0
	}
	if lo <= 0 && within < BandClose {
		within = BandClose // no detectable excess: it matches up to BandClose
	}
	switch {
	case nonfinite > 0:
		return GradeInfinite, within
	case pairs == 0 || math.IsNaN(hi):
		return GradeNone, within
	case hi <= within:
		return GradeMatches, within
	case hi <= BandClose:
		return GradeClose, within
	case hi <= BandFar:
		return GradeShort, within
	}
	return GradeWorse, within
}

// fails reports whether a grade fails (worse than BandFar, or infinite).
func fails(grade string) bool { return grade == GradeWorse || grade == GradeInfinite }

// gradeWords is a grade in words.
func gradeWords(g string) string {
	switch g {
	case GradeMatches:
		return "matches exact JEM"
	case GradeClose:
		return fmt.Sprintf("within %g nat", BandClose)
	case GradeShort:
		return fmt.Sprintf("within %g nat", BandFar)
	case GradeWorse:
		return fmt.Sprintf("worse than %g nat", BandFar)
	case GradeInfinite:
		return "infinite KL"
	case GradeNone:
		return "no pair to compare"
	}
	return g
}

// statScale is the reference's own statistical error at a point: on a table point the
// add-½ reference's mean expected KL less exact jem's mean approximation error; where
// the point has no such reference, exact JEM's own mean KL on the same tasks (NaN
// without one).
func statScale(ps schemas.PointSummary, c schemas.SamplerComparison) float64 {
	if ps.ReferenceExpected > 0 {
		approx := 0.0
		if m := methodOf(ps, methods.Yardstick()); m != nil && m.KLApproximation.Count > 0 {
			approx = m.KLApproximation.Mean
		}
		if s := ps.ReferenceExpected - approx; s > 0 {
			return s
		}
	}
	return c.MeanExact
}

// methodOf is the point's summary of method m, or nil.
func methodOf(ps schemas.PointSummary, m string) *schemas.MethodSummary {
	for i := range ps.Methods {
		if ps.Methods[i].Method == m {
			return &ps.Methods[i]
		}
	}
	return nil
}

// graded is ps with every comparison graded (gradeOf) and carrying its method's runs
// and unstable count.
func graded(ps schemas.PointSummary, th Thresholds) schemas.PointSummary {
	ps.Samplers = slices.Clone(ps.Samplers)
	for i := range ps.Samplers {
		c := &ps.Samplers[i]
		c.Reference = !methods.IsSampler(c.Method)
		c.Grade, c.MatchesWithin = gradeOf(c.Pairs, c.Nonfinite, c.ExcessCILow, c.ExcessCIHigh, statScale(ps, *c), th.Margin)
		if m := methodOf(ps, c.Method); m != nil {
			c.Runs, c.Unstable = m.Runs, m.Unstable
		}
	}
	return ps
}

// ungraded is ps with its comparisons' grades cleared: an undecided point grades no
// recipe (its CIs over too few tasks, or too many diverged, are not to be trusted).
func ungraded(ps schemas.PointSummary) schemas.PointSummary {
	ps.Samplers = slices.Clone(ps.Samplers)
	for i := range ps.Samplers {
		ps.Samplers[i].Grade = ""
	}
	return ps
}

// exact2D is exact JEM's own outcome at a point without the table checks: it holds when
// its joint KL is below the baseline's on the same tasks (the 95% CI of baseline − jem
// above 0), fails when not; "" when no baseline ran (not judged), undecided on fewer
// than MinTables pairs. why says it in nats.
func exact2D(ps schemas.PointSummary) (string, string) {
	c := ps.Comparison
	if c == nil || c.Pairs == 0 {
		return "", ""
	}
	j, b := c.MeanDiff, c.MeanDiff // only the words need the means
	if m := methodOf(ps, methods.Yardstick()); m != nil {
		j = m.KLJoint.Mean
	}
	if m := methodOf(ps, methods.Baseline()); m != nil {
		b = m.KLJoint.Mean
	}
	nums := fmt.Sprintf("its joint KL %s nats against the baseline's %s: the baseline is %s nats [95%% CI %s, %s] worse over %d tasks",
		nats(j, false), nats(b, false), nats(c.MeanDiff, true), nats(c.DiffCILow, false), nats(c.DiffCIHigh, false), c.Pairs)
	switch {
	case c.Pairs < MinTables:
		return ExactUndecided, nums
	case c.DiffCILow > 0:
		return ExactHolds, nums
	}
	return ExactFails, nums
}

// nats prints a KL (difference) in nats with 3 significant digits, a real minus sign,
// and with signed a + on positive values; NaN is n/a.
func nats(v float64, signed bool) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "+∞"
	}
	s := fmt.Sprintf("%.3g", v)
	if signed && v > 0 {
		s = "+" + s
	}
	return strings.Replace(s, "-", "−", 1)
}

// finishVerdict adds the headline, exact JEM's outcome and the level to a point's
// verdict (exact is exact JEM's outcome, why its words).
func finishVerdict(ps schemas.PointSummary, exact string) schemas.Verdict {
	v := ps.Verdict
	v.Exact = exact
	v.Level = levelOf(v, ps.Samplers)
	v.Headline = pointHeadline(ps, v)
	return v
}

// levelOf grades a decided verdict: holds, fails (exact JEM fails or a recipe is worse
// than BandFar or infinite), short (a recipe only within a band), or fails for any
// other failing check.
func levelOf(v schemas.Verdict, comps []schemas.SamplerComparison) string {
	switch {
	case !v.Decided:
		return LevelUndecided
	case v.Holds:
		return LevelHolds
	case v.Exact == ExactFails:
		return LevelFails
	}
	short := false
	for _, c := range comps {
		if c.Reference {
			continue
		}
		if fails(c.Grade) {
			return LevelFails
		}
		short = short || c.Grade == GradeClose || c.Grade == GradeShort
	}
	if short && (v.Cause == CauseSampler || v.Cause == "") {
		return LevelShort
	}
	return LevelFails
}

// causeWords are a table verdict's causes in a few words.
var causeWords = map[string]string{
	CauseSteps: "too few steps", CauseMinibatch: "minibatch noise", CausePxWeight: "px weight", CauseModelFamily: "model family",
	CauseTables: "too few tables to decide", CauseNonfinite: "infinite KL", CauseExact: "not below the baseline's KL",
}

// noExactPrefix opens the verdict of a point where exact JEM does not exist (the rule
// NoReference: image-like tasks).
const noExactPrefix = "no verdict: exact JEM does not exist on "

// NoExact reports whether a point's kind has no exact JEM (its rule is NoReference:
// image-like tasks): nothing there is graded against exact JEM or judged by the table
// checks, and each method is measured against the truth itself.
func NoExact(ps schemas.PointSummary) bool {
	return !ps.Verdict.Decided && strings.HasPrefix(ps.Verdict.Reason, noExactPrefix)
}

// exactSentence says whether exact JEM holds at a point, with its KL from the truth
// beside the baseline's, in nats.
func exactSentence(ps schemas.PointSummary, v schemas.Verdict) string {
	if methodOf(ps, methods.Yardstick()) == nil && v.Exact == ExactUndecided && !v.Decided && strings.HasPrefix(v.Reason, "no verdict:") {
		return "no exact JEM on this kind: each method against the truth itself"
	}
	kl := "n/a"
	if m := methodOf(ps, methods.Yardstick()); m != nil && m.KLJoint.Count > 0 {
		kl = nats(m.KLJoint.Mean, false)
	}
	dist := kl + " nats from the truth"
	if m := methodOf(ps, methods.Baseline()); m != nil && m.KLJoint.Count > 0 {
		dist += " vs baseline " + nats(m.KLJoint.Mean, false)
	}
	if m := methodOf(ps, methods.Yardstick()); m != nil && m.Unstable > 0 {
		dist += fmt.Sprintf("; %d of %d runs unstable", m.Unstable, m.Runs)
	}
	switch v.Exact {
	case ExactHolds:
		return "Exact JEM holds (" + dist + ")"
	case ExactFails:
		why := causeWords[v.Cause]
		if why == "" || v.Cause == CauseSampler {
			why = "its own checks fail"
		}
		return "Exact JEM fails (" + why + "; " + dist + ")"
	case ExactUndecided:
		return "Exact JEM is undecided (" + dist + ")"
	}
	if methodOf(ps, methods.Yardstick()) == nil {
		return "Exact JEM did not run"
	}
	return "Exact JEM is " + dist + " (not judged: no baseline ran)"
}

// recipeSentence is one recipe's grade with its excess in nats.
func recipeSentence(c schemas.SamplerComparison, grades bool) string {
	num := fmt.Sprintf("%s nats [%s, %s]", nats(c.Excess, true), nats(c.ExcessCILow, false), nats(c.ExcessCIHigh, false))
	unstable, aside := "", ""
	if c.Unstable > 0 {
		unstable = fmt.Sprintf("; %d of %d runs unstable", c.Unstable, c.Runs)
		aside = fmt.Sprintf(" (%d of %d runs unstable)", c.Unstable, c.Runs)
	}
	switch {
	case c.Pairs == 0 && c.Nonfinite == 0:
		return c.Method + ": no task to compare with exact JEM"
	case c.Reference:
		return fmt.Sprintf("%s (reference, not judged): %s over exact JEM%s", c.Method, num, aside)
	case !grades:
		return fmt.Sprintf("%s %s over exact JEM%s", c.Method, num, aside)
	}
	switch c.Grade {
	case GradeMatches:
		return fmt.Sprintf("%s matches (%s%s)", c.Method, num, unstable)
	case GradeClose, GradeShort:
		return fmt.Sprintf("%s is %s (%s over exact JEM%s)", c.Method, gradeWords(c.Grade), num, unstable)
	case GradeInfinite:
		return fmt.Sprintf("%s fails: its KL is infinite on %d of %d tasks where exact JEM's is finite%s", c.Method, c.Nonfinite, c.Nonfinite+c.Pairs, unstable)
	}
	return fmt.Sprintf("%s fails: %s over exact JEM (%s%s)", c.Method, num, gradeWords(c.Grade), unstable)
}

// gradeRank orders grades worst first for the headline.
func gradeRank(c schemas.SamplerComparison) int {
	if c.Reference {
		return 9
	}
	return map[string]int{GradeInfinite: 0, GradeWorse: 1, GradeShort: 2, GradeClose: 3, GradeMatches: 4, GradeNone: 5}[c.Grade]
}

// pointHeadline is a point's verdict in one sentence: exact JEM's outcome, then the
// recipes worst first (naming those that fail), then jem-converged.
func pointHeadline(ps schemas.PointSummary, v schemas.Verdict) string {
	comps := slices.Clone(ps.Samplers)
	slices.SortStableFunc(comps, func(a, b schemas.SamplerComparison) int { return gradeRank(a) - gradeRank(b) })
	var parts []string
	for _, c := range comps {
		parts = append(parts, recipeSentence(c, v.Decided))
	}
	head := exactSentence(ps, v) + "."
	switch {
	case NoExact(ps):
		// Not undecided for want of tasks: no number of tasks gives a verdict here.
		head = "No verdict: exact JEM does not exist on " + ps.Params.Task + "; each method is measured against the truth itself."
	case !v.Decided:
		why := strings.TrimPrefix(v.Reason, "undecided: ")
		if i := strings.IndexAny(why, ";("); i > 0 {
			why = strings.TrimSpace(why[:i])
		}
		head = "Undecided (" + why + "). So far: " + strings.TrimSuffix(head, ".") + "."
	}
	if len(parts) > 0 {
		head += " " + strings.Join(parts, "; ")
	}
	return head
}

// overall is the run's headline, exact outcome and level over several points: exact
// JEM's count of points, then per recipe its worst grade over the points.
func overall(points []schemas.PointSummary) (headline, exact, level string) {
	n := len(points)
	held, failed, undecided, judgedN := 0, 0, 0, 0
	levels := map[string]int{}
	for _, ps := range points {
		levels[ps.Verdict.Level]++
		switch ps.Verdict.Exact {
		case ExactHolds:
			held++
		case ExactFails:
			failed++
		case ExactUndecided:
			undecided++
		}
	}
	judgedN = held + failed + undecided
	switch {
	case judgedN == 0:
		exact = ""
	case failed > 0:
		exact = ExactFails
	case undecided > 0:
		exact = ExactUndecided
	default:
		exact = ExactHolds
	}
	switch {
	case levels[LevelHolds] == n && n > 0:
		level = LevelHolds
	case levels[LevelFails] > 0:
		level = LevelFails
	case levels[LevelUndecided] > 0:
		level = LevelUndecided
	default:
		level = LevelShort
	}
	head := "Exact JEM is not judged at any point."
	if judgedN > 0 {
		head = fmt.Sprintf("Exact JEM holds at %d of %d judged points", held, judgedN)
		if failed > 0 {
			var at []string
			for _, ps := range points {
				if ps.Verdict.Exact == ExactFails {
					at = append(at, pointName(ps))
				}
			}
			head += fmt.Sprintf(" and fails at %d (%s)", failed, strings.Join(at, ", "))
		}
		head += "."
	}
	// Per recipe: its worst grade over the decided points.
	type worst struct {
		c     schemas.SamplerComparison
		where string
		n     int
		match int
	}
	var order []string
	by := map[string]*worst{}
	for _, ps := range points {
		if !ps.Verdict.Decided {
			continue
		}
		for _, c := range ps.Samplers {
			w := by[c.Method]
			if w == nil {
				w = &worst{c: c, where: pointName(ps)}
				by[c.Method] = w
				order = append(order, c.Method)
			} else if gradeRank(c) < gradeRank(w.c) || gradeRank(c) == gradeRank(w.c) && c.ExcessCIHigh > w.c.ExcessCIHigh {
				w.c, w.where = c, pointName(ps)
			}
			w.n++
			if c.Grade == GradeMatches {
				w.match++
			}
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return gradeRank(by[a].c) - gradeRank(by[b].c) })
	var parts []string
	for _, m := range order {
		w := by[m]
		parts = append(parts, fmt.Sprintf("%s at worst on %s; matches at %d of %d points", recipeSentence(w.c, true), w.where, w.match, w.n))
	}
	if u := levels[LevelUndecided]; u > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d points undecided", u, n))
	}
	if len(parts) > 0 {
		head += " " + strings.Join(parts, "; ")
	}
	return head, exact, level
}

// pointName names a point in a headline: "point 3 (gmm:3,2)".
func pointName(ps schemas.PointSummary) string {
	if ps.Params.Task != "" {
		return fmt.Sprintf("point %d (%s)", ps.PointID, ps.Params.Task)
	}
	return fmt.Sprintf("point %d", ps.PointID)
}

// maxTerminalPoints is the most points whose graded lines Print writes.
const maxTerminalPoints = 12

// Print writes the verdict for a terminal: the protocol, the headline, per point
// (up to maxTerminalPoints) exact JEM's KL beside the baseline's and each recipe's
// graded line in nats with its unstable count, then "verdict: " and the reason.
func Print(w io.Writer, sum schemas.Summary) {
	if p := ProtocolText(sum); p != "" {
		fmt.Fprintf(w, "protocol: %s\n", p)
	}
	if sum.Verdict.Headline != "" {
		fmt.Fprintf(w, "headline: %s\n", sum.Verdict.Headline)
	}
	if len(sum.Points) <= maxTerminalPoints {
		for _, ps := range sum.Points {
			for _, l := range PointLines(ps) {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
	fmt.Fprintf(w, "verdict: %s\n", sum.Verdict.Reason)
	if len(sum.Points) == 1 {
		for _, l := range MethodTable(sum.Points[0]) {
			fmt.Fprintln(w, l)
		}
	}
}

// meanOrNaN is a distribution's mean, NaN when it has no finite value.
func meanOrNaN(d schemas.Dist) float64 {
	if d.Count == 0 {
		return math.NaN()
	}
	return d.Mean
}

// MethodTable is a point's plain table for the terminal: one sentence of what was
// compared, then per method its mean joint KL from the truth (10th–90th percentile
// over the tasks), its excess over exact JEM with the 95% CI, its grade and its rank
// group.
func MethodTable(ps schemas.PointSummary) []string {
	if len(ps.Methods) == 0 {
		return nil
	}
	tasks, joint := 0, false
	for _, m := range ps.Methods {
		tasks = max(tasks, m.Runs)
		joint = joint || m.KLJoint.Count > 0
	}
	if !joint { // no exact joint KL (image-like tasks): the Z-free measures against the truth
		out := []string{fmt.Sprintf("measured on %d tasks of %s against the truth itself (no exact joint KL at this scale): a lower bound on the joint KL from forward AIS where the AIS calibration on the truth was accepted and the model's own AIS kept 10%% of its chains (k of n runs), the conditional KL to the Bayes classifier in nats, accuracy beside the Bayes classifier's, ECE, and the OOD AUROC of log q(x) beside the true density's", tasks, ps.Params.Task)}
		rows := [][]string{{"method", "joint KL ≥ (k of n)", "KL(p(y|x)‖q(y|x)) [p10, p90]", "accuracy (Bayes)", "ECE", "AUROC log q(x) (truth)"}}
		for _, m := range ps.Methods {
			lower := "—"
			if a := m.AISAccepted; a.Count > 0 {
				lower = fmt.Sprintf("%s (%d of %d)", nats(meanOrNaN(m.KLJointLower), false), m.KLJointLower.Count, a.Count)
			}
			rows = append(rows, []string{m.Method, lower,
				fmt.Sprintf("%s [%s, %s]", nats(m.KLConditional.Mean, false), nats(m.KLConditional.P10, false), nats(m.KLConditional.P90, false)),
				fmt.Sprintf("%.3f (%.3f)", m.Accuracy.Mean, m.BayesAccuracy.Mean), fmt.Sprintf("%.3f", m.ECE.Mean),
				fmt.Sprintf("%.3f (%.3f)", m.AUROCPx.Mean, m.AUROCTruePx.Mean)})
		}
		return append(out, alignRows(rows, 14, 22, 26, 18, 10)...)
	}
	how := "each recipe's excess over exact JEM trained the same way on the same tasks"
	if ext := externals(ps); len(ext) > 0 {
		how = "each recipe's excess over exact JEM on the same tasks (" + strings.Join(ext, ", ") +
			plural(ext, " was trained outside jemcheck and is", " were trained outside jemcheck and are") + " scored as given; jemcheck's methods were trained the same way)"
	}
	out := []string{fmt.Sprintf("compared on %d tasks of %s: each method's joint KL(p‖q) from the exact truth, in nats; %s", tasks, ps.Params.Task, how)}
	rows := [][]string{{"method", "joint KL [p10, p90]", "excess over exact JEM [95% CI]", "grade", "rank"}}
	for _, m := range ps.Methods {
		kl := fmt.Sprintf("%s [%s, %s]", nats(m.KLJoint.Mean, false), nats(m.KLJoint.P10, false), nats(m.KLJoint.P90, false))
		if m.KLJoint.Count == 0 && m.KLJoint.Infinite == 0 { // no run has a value (diverged, or its estimate refused): not a KL of 0
			kl = fmt.Sprintf("— (none of %d runs)", m.Runs)
		}
		excess, grade, rank := "—", "—", ""
		if m.Method == methods.Yardstick() {
			excess, grade = "0 (the yardstick)", "—"
		}
		for _, c := range ps.Samplers {
			if c.Method != m.Method {
				continue
			}
			excess = fmt.Sprintf("%s [%s, %s]", nats(c.Excess, true), nats(c.ExcessCILow, false), nats(c.ExcessCIHigh, false))
			switch {
			case c.Reference:
				grade = "reference"
			case !ps.Verdict.Decided:
				grade = "undecided"
			default:
				grade = gradeWords(c.Grade)
			}
			if c.Rank > 0 {
				rank = fmt.Sprint(c.Rank)
			}
		}
		rows = append(rows, []string{m.Method, kl, excess, grade, rank})
	}
	return append(out, alignRows(rows, 14, 26, 34, 16)...)
}

// alignRows lays out a terminal table: each row indented two spaces, every column but
// the last padded to its widest cell (in runes, as fmt counts) and at least to its
// minimum width, so a long method name (external:my-exact-jem) or cell moves the
// columns after it for every row instead of breaking the alignment.
func alignRows(rows [][]string, minWidths ...int) []string {
	widths := slices.Clone(minWidths)
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(" ")
		for i, c := range r {
			b.WriteString(" ")
			if i < len(r)-1 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				b.WriteString(c)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// PointLines are a point's graded lines: exact JEM against the truth and the baseline,
// then one line per recipe (its excess in nats with CI, grade and unstable runs).
func PointLines(ps schemas.PointSummary) []string {
	if len(ps.Samplers) == 0 && ps.Verdict.Exact == "" {
		return nil
	}
	out := []string{fmt.Sprintf("%s: %s", pointName(ps), exactSentence(ps, ps.Verdict))}
	comps := slices.Clone(ps.Samplers) // worst first, the reference last, as the headline
	slices.SortStableFunc(comps, func(a, b schemas.SamplerComparison) int { return gradeRank(a) - gradeRank(b) })
	for _, c := range comps {
		grade := gradeWords(c.Grade)
		switch {
		case c.Reference:
			grade = "reference, not judged"
		case !ps.Verdict.Decided:
			grade = "not graded (undecided)"
		case c.Grade == GradeMatches:
			grade = fmt.Sprintf("matches (within %s nats)", nats(c.MatchesWithin, false))
		}
		unstable := fmt.Sprintf("; unstable %d of %d runs", c.Unstable, c.Runs)
		if methods.IsExternal(c.Method) {
			unstable = "; trained outside jemcheck" // no held-out NLL of jemcheck's to flag it by
		}
		out = append(out, fmt.Sprintf("  %-14s %s nats [%s, %s] over exact JEM: %s%s", c.Method,
			nats(c.Excess, true), nats(c.ExcessCILow, false), nats(c.ExcessCIHigh, false), grade, unstable))
	}
	return out
}

// externals are the point's models trained outside jemcheck (methods.IsExternal).
func externals(ps schemas.PointSummary) []string {
	var out []string
	for _, m := range ps.Methods {
		if methods.IsExternal(m.Method) {
			out = append(out, m.Method)
		}
	}
	return out
}

// plural is one when xs has one element, else many.
func plural(xs []string, one, many string) string {
	if len(xs) == 1 {
		return one
	}
	return many
}

// ProtocolText is the run's protocol in one line as the terminal and the report state
// it: "" where the run declares none or trains nothing itself (every method a model
// trained outside jemcheck); beside such a model, it says that the protocol is not its.
func ProtocolText(sum schemas.Summary) string {
	if sum.Protocol == nil {
		return ""
	}
	var ext []string
	trained := false
	for _, ps := range sum.Points {
		for _, m := range ps.Methods {
			switch {
			case !methods.IsExternal(m.Method):
				trained = true
			case !slices.Contains(ext, m.Method):
				ext = append(ext, m.Method)
			}
		}
	}
	if !trained && len(ext) > 0 {
		return ""
	}
	line := ProtocolLine(*sum.Protocol)
	if len(ext) > 0 {
		line += "; " + strings.Join(ext, ", ") + plural(ext, " was", " were") + " trained outside jemcheck: the protocol is jemcheck's methods', and " +
			plural(ext, "it is", "they are") + " scored as given"
		if h := sum.Protocol.Holdout; h > 0 { // the split an export states (export.json split, the samples' heldout column)
			line += fmt.Sprintf("; jemcheck's methods (the exact-JEM reference among them, where the kind has one) trained on the same split the export gave %s: "+
				"the first %.4g%% of each task's draws (heldout = 0), the last %.4g%% held out", strings.Join(ext, ", "), 100*(1-h), 100*h)
		}
	}
	return line
}

// ProtocolLine is the protocol in one line.
func ProtocolLine(p schemas.Protocol) string {
	rule := "the iterate of least held-out NLL among the checks and the last step"
	if p.Select == "last" {
		rule = "the last iterate"
	}
	return fmt.Sprintf("every method scored at %s (never the truth); %g%% of the draws held out; checks %s; a run is unstable when its held-out NLL "+
		"ends more than %g nats above its best or above the baseline's; same for all: %s; exception: %s",
		rule, 100*p.Holdout, p.Checks, p.UnstableNats, p.Same, p.Exception)
}

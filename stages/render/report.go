package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	jm "github.com/jemcheck/jemcheck/methods"
	"html/template"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

type reportView struct {
	Kinds       []string    // what the run's task kinds are (Input.Kinds)
	Methods     []MethodDoc // what its methods do (Input.Methods)
	Title       string
	Pipeline    string
	Seed        uint64
	NPoints     int
	NRuns       int
	Holds       bool
	Decided     bool
	HasVerdict  bool
	Reason      string
	Level       string   // the verdict's level (verdict.Level*): holds, short, fails, undecided
	Label       string   // the banner's label, naming what fails
	Headline    string   // the verdict in one sentence, in nats
	GradeLines  []string // per point: exact JEM and each recipe's graded line
	Protocol    string   // the training protocol in one line ("" for a run that declares none)
	Bands       string   // the grading bands in words ("" where no recipe was graded)
	NoExact     bool     // no point has an exact JEM (image-like tasks): no grade, check or pairing against it applies
	Varying     string
	PointRows   []pointRow
	OpenPoints  bool
	Comparisons []comparisonRow
	Single      bool             // one grid point: its line and its checks are shown in full
	PointLines  []string         // per point: family, empty-cell share, exact reference beside the floor
	SplitRows   []splitRow       // the error split, per point and method
	PromiseRows []promiseRow     // OOD detection and calibration, per point and method
	RobustRows  []robustRow      // 2-D points: the gradient OOD score, ECE, robustness and samples, per point and method
	SamplerDist []samplerDistRow // 2-D points: the sampler's own distribution (samplerdist.go)
	ZFree       []zfreeRow       // 2-D and block points: the Z-free divergences (zfree.go)
	CheckRows   []checkRow       // the verdict checks, per point
	CauseLines  []string         // per point that fails: its cause
	VerdictRows []verdictRow
	EmptyNote   string // the empirical KL's +Inf tables, left out of its mean
	Notes       []string
	Warnings    []string
	Figures     []figure
	ConfigJSON  string
	Samplers    []samplerRow   // each sampler method against exact jem, per point
	Leaderboard []leaderRow    // every method of a point with samplers, ranked by its excess over exact jem
	Frontier    template.HTML  // the leaderboard's figure (inline SVG): excess KL against CPU cost
	Ladder      []ladderFamily // the dimension ladder: per family at two or more dimensions, its figure and table
	// LadderBounds: the ladder's rungs without exact JEM (ladderbounds.go), per family
	// at one or more dimensions: the joint KL's lower bound, q(x)'s share, the Z-free metrics.
	LadderBounds []boundsFamily
	Show2D       bool        // the 2-D tasks section: there are 2-D task figures or claims
	Figures2D    []figure    // the 2-D task figures, shown in that section
	Split2D      bool        // some point has no add-½ reference (a 2-D task): the error split leaves it out
	NoSplit      bool        // no point has an error split (every point is a 2-D task): the section is left out
	NoFloor      bool        // no point has a floor (2-D tasks): no figure draws one
	Claims       []claimLine // per 2-D point, the paper's promises against the measurements

	TOC            []tocEntry    // the table of contents: every section's anchor
	VerdictFig     template.HTML // the verdict figure (inline SVG): the deciding checks against the margin
	VerdictCaption string
	Lead           *figure // the one figure that answers first (taken out of Figures or Figures2D)
	Tables         bool    // some point is a table task: the tables' introduction applies
	FewPoints      bool    // few enough points for the per-point verdict table to be open
}

// tocEntry is one link of the table of contents.
type tocEntry struct{ ID, Title string }

// maxOpenVerdictRows is the most grid points whose per-point verdict table is open.
const maxOpenVerdictRows = 12

type pointRow struct {
	First    bool // first method of its point: carries the point cells
	Span     int
	PointID  int64
	Params   string
	Tables   int
	Holds    bool
	Mark     pointMark
	Verdict  string // the point's verdict word and where its full verdict is (a hover title)
	Method   string
	Runs     int
	Diverged int
	Unstable string    // the count of unstable runs; "—" for a model trained outside jemcheck
	Joint    [4]string // mean, median, p10, p90
	Marginal [2]string // mean, median
	Cond     [2]string
	RefGap   string // 2-D exact references: mean joint KL their last two thirds of steps gained
	Floor    string
	Ratio    string
	Acc      string
	Bayes    string
	Emp      string
}

// splitRow is one method at one point in the error-split table.
type splitRow struct {
	First      bool // first method of its point: carries the point cells
	Span       int
	PointID    int64
	Family     string
	EmptyShare string
	RefExp     string // exact E[KL(p‖add-½ fit)]
	Ref        string // KL(p‖add-½ fit) on the drawn counts
	Floor      string
	RefFloor   string // RefExp / Floor
	Method     string
	Joint      string
	Approx     string
	Gap        string
	Est        string
	MargGap    string
	GapRatio   string
	RefRatio   string
}

// checkRow is one line of a point's verdict.
type checkRow struct {
	First    bool // first check of its point: carries the point cell
	Span     int
	PointID  int64
	Verdict  string // the point's verdict word and where its full verdict is (a hover title)
	Holds    bool
	Mark     pointMark
	Name     string
	What     string
	Value    string
	CI       string
	Limit    string
	Pass     bool
	Deciding bool
}

// verdictRow is one point in the compact per-point verdict table of a sweep.
type verdictRow struct {
	PointID  int64
	Params   string
	Word     string // holds, fails or undecided
	Holds    bool
	Decided  bool
	Mark     pointMark
	Cause    string
	GapRatio string // JEM's optimisation gap / statistical error
	Empty    string // share of tables with an empty cell
	Reason   string
}

type comparisonRow struct {
	PointID  int64
	Params   string
	Pairs    int
	WinShare string
	MeanDiff string
	CI       string
	W, Z, P  string
	Ratio    string
	Holds    bool
	Mark     pointMark
	Verdict  string // the point's verdict word
	Link     string // the anchor of its full verdict: the banner, or its row of the per-point verdict table
}

func renderHTML(in Input, d *data, figs []figure, warnings []string) ([]byte, error) {
	s := in.Summary
	v := reportView{
		Kinds:      in.Kinds,
		Methods:    in.Methods,
		Title:      in.Title,
		Pipeline:   s.Pipeline,
		Seed:       s.Seed,
		NPoints:    len(s.Points),
		NRuns:      max(len(in.Results), summaryRuns(s)),
		Holds:      s.Verdict.Holds,
		Decided:    s.Verdict.Decided,
		HasVerdict: s.Verdict.Reason != "" || len(s.Points) > 0,
		Reason:     s.Verdict.Reason,
		Figures:    figs,
		Warnings:   warnings,
		OpenPoints: len(s.Points) <= maxPointTableRows,
		Single:     len(s.Points) == 1,
	}
	v.Level, v.Label = bannerOf(s)
	v.Headline = s.Verdict.Headline
	v.Protocol = verdict.ProtocolText(s)
	v.NoExact = len(s.Points) > 0
	for _, ps := range s.Points {
		if len(ps.Samplers) > 0 && ps.Verdict.Decided {
			v.Bands = bandsText() // the grades apply: some recipe was graded against exact JEM
		}
		v.NoExact = v.NoExact && verdict.NoExact(ps)
	}
	v.SamplerDist = samplerDistRows(in.Results)
	v.ZFree = zfreeRows(in.Results)
	for _, ps := range s.Points {
		v.GradeLines = append(v.GradeLines, verdict.PointLines(ps)...)
	}
	v.Figures, v.Figures2D = splitFigures(figs)
	v.NoFloor = d.raw
	if v.Title == "" {
		v.Title = "jemcheck report"
	}
	var vary []string
	for _, ax := range d.varying {
		vary = append(vary, fmt.Sprintf("%s (%d values)", ax.label, len(ax.values)))
	}
	v.Varying = strings.Join(vary, ", ")

	for _, ps := range s.Points {
		params := fmtParams(ps.Params)
		verdict := verdictText(ps.Verdict)
		// The full verdict sentence is shown once: in the banner (one point) or as the
		// title of the point's row in the per-point verdict table; elsewhere the point's
		// word refers to it.
		mark, link := markOf(ps.Verdict), "#verdict"
		ref := mark.Word + ": the full verdict is in the banner at the top"
		if !v.Single {
			link = fmt.Sprintf("#verdict-point-%d", ps.PointID)
			ref = fmt.Sprintf("%s: the full verdict is on point %d's row of the verdict table", mark.Word, ps.PointID)
		}
		for i, m := range ps.Methods {
			r := pointRow{
				First: i == 0, Span: len(ps.Methods), PointID: ps.PointID, Params: params, Tables: ps.Tables,
				Holds: ps.Verdict.Holds, Mark: mark, Verdict: ref,
				Method: m.Method, Runs: m.Runs, Diverged: m.Diverged, Unstable: fmt.Sprint(m.Unstable),
				Joint: [4]string{distStat(m.KLJoint, m.KLJoint.Mean, fmtKL), distStat(m.KLJoint, m.KLJoint.Median, fmtKL),
					distStat(m.KLJoint, m.KLJoint.P10, fmtKL), distStat(m.KLJoint, m.KLJoint.P90, fmtKL)},
				Marginal: [2]string{distStat(m.KLMarginal, m.KLMarginal.Mean, fmtSig3), distStat(m.KLMarginal, m.KLMarginal.Median, fmtSig3)},
				Cond:     [2]string{distStat(m.KLConditional, m.KLConditional.Mean, fmtSig3), distStat(m.KLConditional, m.KLConditional.Median, fmtSig3)},
				Floor:    fmtSig(ps.Floor, 3),
				Ratio:    fmtTimes(m.FloorRatio),
				Acc:      fmtPct(m.Accuracy.Mean),
				Bayes:    fmtPct(m.BayesAccuracy.Mean),
				Emp:      fmtEmpirical(m.KLEmpirical),
				RefGap:   "—",
			}
			if m.RefGap.Count > 0 {
				r.RefGap = fmtSig(m.RefGap.Mean, 3)
			}
			if jm.IsExternal(m.Method) {
				r.Unstable = "—" // jemcheck never trained it: no held-out NLL of its own to flag it by
			}
			if !(ps.Floor > 0) {
				r.Floor, r.Ratio = "—", "—" // no floor (a 2-D task)
			}
			v.PointRows = append(v.PointRows, r)
		}
		if len(ps.Methods) == 0 {
			v.PointRows = append(v.PointRows, pointRow{First: true, Span: 1, PointID: ps.PointID, Params: params,
				Tables: ps.Tables, Holds: ps.Verdict.Holds, Mark: mark, Verdict: ref, Method: "—"})
		}
		if ps.ReferenceExpected > 0 {
			v.SplitRows = append(v.SplitRows, splitRows(ps)...)
			if line := pointLine(ps); line != "" {
				v.PointLines = append(v.PointLines, line)
			}
		} else {
			v.Split2D = true // no add-½ reference (a 2-D task), so no error split
		}
		v.Claims = append(v.Claims, claimLines(ps)...)
		v.PromiseRows = append(v.PromiseRows, promiseRows(ps)...)
		v.RobustRows = append(v.RobustRows, robustRows(ps)...)
		v.CheckRows = append(v.CheckRows, checkRows(ps, ref)...)
		v.Samplers = append(v.Samplers, samplerRows(ps)...)
		v.Leaderboard = append(v.Leaderboard, leaderRows(ps)...)
		if ps.Verdict.Cause != "" {
			v.CauseLines = append(v.CauseLines, fmt.Sprintf("Point %d: the claim fails for %s.", ps.PointID, causeText(ps.Verdict.Cause)))
		}
		v.VerdictRows = append(v.VerdictRows, verdictRow{PointID: ps.PointID, Params: params, Word: verdictWord(ps.Verdict),
			Holds: ps.Verdict.Holds, Decided: ps.Verdict.Decided, Mark: mark, Cause: causeText(ps.Verdict.Cause),
			GapRatio: jemGapRatio(ps), Empty: fmtShare(ps.EmptyCellShare), Reason: verdict})
		if c := ps.Comparison; c != nil {
			v.Comparisons = append(v.Comparisons, comparisonRow{
				PointID:  ps.PointID,
				Params:   params,
				Pairs:    c.Pairs,
				WinShare: fmtPct(c.JEMWinShare),
				MeanDiff: fmtSig(c.MeanDiff, 3),
				CI:       "[" + fmtSig(c.DiffCILow, 3) + ", " + fmtSig(c.DiffCIHigh, 3) + "]",
				W:        fmtSig(c.WilcoxonW, 6),
				Z:        fmtSig(c.WilcoxonZ, 3),
				P:        fmtP(c.WilcoxonP),
				Ratio:    fmtSig(c.BaselineToJEM, 3) + "×",
				Holds:    ps.Verdict.Holds,
				Mark:     mark,
				Verdict:  mark.Word,
				Link:     link,
			})
		}
	}

	if f, err := frontierSVG(v.Leaderboard, d.methods); err == nil {
		v.Frontier = f
	}
	var ladderWarnings []string
	v.Ladder, ladderWarnings = ladderFamilies(s, d.methods)
	v.Warnings = append(v.Warnings, ladderWarnings...)
	v.LadderBounds, ladderWarnings = boundsFamilies(s, in.Results, in.FigureTables, d.methods)
	v.Warnings = append(v.Warnings, ladderWarnings...)
	v.Show2D = len(v.Figures2D) > 0 || len(v.Claims) > 0
	v.NoSplit = len(v.SplitRows) == 0 && v.Split2D
	v.FewPoints = len(s.Points) <= maxOpenVerdictRows
	for _, ps := range s.Points {
		v.Tables = v.Tables || ps.Params.GridCells == 0 && !verdict.NoExact(ps) // image-like points are no tables
	}
	bars := verdictBars(s.Points)
	v.VerdictFig = verdictFigure(bars)
	v.VerdictCaption = verdictCaption(bars, len(s.Points))
	v.Lead, v.Figures, v.Figures2D = leadFigure(v.Figures, v.Figures2D)
	v.TOC = tableOfContents(&v)
	v.EmptyNote = emptyNote(s, d)
	for _, m := range d.methods {
		c := d.counts[m]
		if c.diverged+c.nonFinite+c.clamped == 0 {
			continue
		}
		v.Notes = append(v.Notes, fmt.Sprintf("%s: %d of %d runs diverged, %d had a non-finite joint KL, %d joint KL values ≤ %s were clamped to it on log axes.",
			m, c.diverged, c.total, c.nonFinite, c.clamped, fmtNum(klEpsilon)))
	}

	var cfg bytes.Buffer
	enc := json.NewEncoder(&cfg)
	enc.SetEscapeHTML(false) // the template escapes it
	enc.SetIndent("", "  ")
	conf := in.Config
	if raw, ok := conf.(json.RawMessage); ok {
		// Already encoded, typically by json.Marshal, which escapes <, > and & as
		// \u003c, \u003e and \u0026; the template escapes them again, so undo the first.
		conf = json.RawMessage(unescapeHTML(raw))
	}
	if err := enc.Encode(conf); err != nil {
		v.ConfigJSON = "configuration could not be encoded as JSON: " + err.Error()
	} else {
		v.ConfigJSON = strings.TrimSuffix(cfg.String(), "\n")
	}

	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("render: report template: %w", err)
	}
	return buf.Bytes(), nil
}

// checkBaselineVsJEM names the verdict's Wilcoxon line (stages.CheckBaseline): its
// value is a p-value, not a share.
const checkBaselineVsJEM = "baseline_vs_jem"

// splitRows are a point's rows of the error-split table, one per method.
func splitRows(ps schemas.PointSummary) []splitRow {
	refFloor := "n/a"
	if ps.Floor > 0 && ps.ReferenceExpected > 0 {
		refFloor = fmtSig(ps.ReferenceExpected/ps.Floor, 3) + "×"
	}
	family := ps.Family
	if family == "" {
		family = "n/a"
	}
	var out []splitRow
	for i, m := range ps.Methods {
		out = append(out, splitRow{
			First: i == 0, Span: len(ps.Methods), PointID: ps.PointID, Family: family,
			EmptyShare: fmtShare(ps.EmptyCellShare), RefExp: fmtNA(ps.ReferenceExpected), Ref: fmtNA(ps.Reference),
			Floor: fmtNA(ps.Floor), RefFloor: refFloor,
			Method: m.Method, Joint: distMean(m.KLJoint), Approx: distMean(m.KLApproximation), Gap: distMean(m.KLOptimisationGap),
			Est: distMean(m.KLEstimation), MargGap: distMean(m.KLMarginalGap),
			GapRatio: fmtShare(m.GapRatio), RefRatio: fmtRatio(m.ReferenceRatio),
		})
	}
	return out
}

// promiseRow is one method's line of the beyond-the-joint table.
type promiseRow struct {
	First                   bool
	Span                    int
	PointID                 int64
	Ceiling                 string
	Method                  string
	AUROCPx, AUROCPy, Calib string
}

// promiseRows are a point's rows of the beyond-the-joint table, one per method.
func promiseRows(ps schemas.PointSummary) []promiseRow {
	if !slices.ContainsFunc(ps.Methods, func(m schemas.MethodSummary) bool { return m.AUROCTruePx.Count > 0 }) {
		return nil // a summary without these columns (written before they existed)
	}
	var out []promiseRow
	for i, m := range ps.Methods {
		out = append(out, promiseRow{First: i == 0, Span: len(ps.Methods), PointID: ps.PointID,
			Ceiling: distMean(ps.Methods[0].AUROCTruePx), Method: m.Method,
			AUROCPx: distMean(m.AUROCPx), AUROCPy: distMean(m.AUROCPy), Calib: distMean(m.CalibrationErrorTrue)})
	}
	return out
}

// robustRow is one method's line of the robustness table (2-D points).
type robustRow struct {
	First                                  bool
	Span                                   int
	PointID                                int64
	Method                                 string
	Runs                                   int
	Grad, ECE, Clean, Attacked, Purified   string
	BayesPurified, SamplesNoise, SamplesBu string
}

// heldOutPromises reports whether the point's promises were measured on held-out
// draws, as on a 2-D task: its methods have the robustness columns.
func heldOutPromises(ps schemas.PointSummary) bool {
	return slices.ContainsFunc(ps.Methods, func(m schemas.MethodSummary) bool { return m.AccClean.Count > 0 })
}

// robustRows are a point's rows of the robustness table, one per method (none for a
// point without these columns).
func robustRows(ps schemas.PointSummary) []robustRow {
	if !heldOutPromises(ps) {
		return nil
	}
	var out []robustRow
	for i, m := range ps.Methods {
		out = append(out, robustRow{First: i == 0, Span: len(ps.Methods), PointID: ps.PointID, Method: m.Method, Runs: m.AccClean.Count,
			Grad: distMean(m.AUROCPxGrad), ECE: distMean(m.ECE), Clean: distMean(m.AccClean), Attacked: distMean(m.AccAttacked),
			Purified: distMean(m.AccPurified), BayesPurified: distMean(m.AccBayesPurified),
			SamplesNoise: distMean(m.SamplesTVNoise), SamplesBu: distMean(m.SamplesTVBuffer)})
	}
	return out
}

// checkRows are a point's rows of the verdict-checks table.
func checkRows(ps schemas.PointSummary, verdict string) []checkRow {
	var out []checkRow
	for i, c := range ps.Verdict.Checks {
		value, ci, limit := fmtCheck(c)
		out = append(out, checkRow{First: i == 0, Span: len(ps.Verdict.Checks), PointID: ps.PointID,
			Verdict: verdict, Holds: ps.Verdict.Holds, Mark: markOf(ps.Verdict),
			Name: c.Name, What: c.What, Value: value, CI: ci, Limit: limit, Pass: c.Pass, Deciding: c.Deciding})
	}
	return out
}

// fmtCheck prints a check's value, its 95% CI and its limit: a p-value for the
// Wilcoxon line, a ratio (×) when the limit is 1 or more, else a share (%).
func fmtCheck(c schemas.Check) (value, ci, limit string) {
	v, lo, hi, lim := float64(c.Value), float64(c.CILow), float64(c.CIHigh), float64(c.Limit)
	f := fmtShare
	switch {
	case c.Name == checkBaselineVsJEM:
		value = "n/a"
		if !math.IsNaN(v) {
			value = "p = " + fmtP(v)
			if strings.HasPrefix(fmtP(v), "<") {
				value = "p " + fmtP(v)
			}
		}
		limit = "n/a"
		if !math.IsNaN(lim) {
			limit = "p < " + fmtSig(lim, 3)
		}
		return value, fmtRange(lo, hi, fmtP), limit
	case strings.HasPrefix(c.Name, verdict.CheckSamplerPrefix):
		f = fmtNats // sampler_excess_<m>, sampler_excess_nats_<m>: an excess in nats
	case !math.IsNaN(lim) && lim >= 1:
		f = fmtRatio
	}
	limit = "n/a"
	if !math.IsNaN(lim) {
		limit = "≤ " + f(lim)
	}
	return f(v), fmtRange(lo, hi, f), limit
}

// fmtRange prints a CI as [lo, hi]; n/a when either end does not exist.
func fmtRange(lo, hi float64, f func(float64) string) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "n/a"
	}
	return "[" + f(lo) + ", " + f(hi) + "]"
}

// fmtShare prints a share as a percentage with 3 significant digits; NaN is n/a.
func fmtShare(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if math.IsInf(v, 0) {
		return fmtSig(v, 3)
	}
	return fmtSig(100*v, 3) + "%"
}

// fmtRatio prints a ratio as a multiple; NaN and 0 (a ratio that was not taken) are n/a.
func fmtRatio(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return "n/a"
	}
	return fmtSig(v, 3) + "×"
}

// fmtNA prints a number with 3 significant digits; NaN is n/a.
func fmtNA(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmtSig(v, 3)
}

// distStat is one statistic v of a Dist, printed by f; n/a (∞ when its values are all
// infinite) when the Dist has no finite value, whatever v holds (a measure the kind
// does not take, such as the joint KL of an image-like task, is never shown as 0).
func distStat(d schemas.Dist, v float64, f func(float64) string) string {
	if d.Count == 0 {
		if d.Infinite > 0 {
			return "∞"
		}
		return "n/a"
	}
	return f(v)
}

// fmtSig3 is fmtSig with 3 significant digits.
func fmtSig3(v float64) string { return fmtSig(v, 3) }

// distMean is the mean of a Dist, n/a when it has no finite value.
func distMean(d schemas.Dist) string {
	if d.Count == 0 {
		if d.Infinite > 0 {
			return "∞"
		}
		return "n/a"
	}
	return fmtNA(d.Mean)
}

// fmtEmpirical is the empirical KL's mean with the count of its +Inf values (tables
// with an empty cell) left out of it.
func fmtEmpirical(d schemas.Dist) string {
	out := distMean(d)
	if d.Count > 0 && d.Infinite > 0 {
		out += fmt.Sprintf(" (+%d ∞)", d.Infinite)
	}
	return out
}

// pointLine describes a point's references: its model family, the share of its
// tables with an empty cell and the exact expected reference beside the floor.
func pointLine(ps schemas.PointSummary) string {
	family := ps.Family
	if family == "" {
		family = "n/a"
	}
	how := "" // unknown family
	switch {
	case ps.Family == "complete":
		how = "exact "
	case ps.Family != "":
		how = "first-order " // a restricted family's reference is kl_approximation + tr(J⁺K)/(2N)
	}
	line := fmt.Sprintf("Point %d: model family %s; %s of its %d tables have an empty cell; "+
		"the %sexpected KL of the add-½ estimate over N-draw datasets is %s, beside the first-order (X·K−1)/(2N) = %s",
		ps.PointID, family, fmtShare(ps.EmptyCellShare), ps.Tables, how, fmtNA(ps.ReferenceExpected), fmtNA(ps.Floor))
	if ps.Floor > 0 && ps.ReferenceExpected > 0 {
		line += fmt.Sprintf(" (%s×)", fmtSig(ps.ReferenceExpected/ps.Floor, 3))
	}
	return line + fmt.Sprintf("; the add-½ estimate on the drawn counts scores %s.", fmtNA(ps.Reference))
}

// jemGapRatio is JEM's mean optimisation gap over the mean statistical error at a
// point, as a percentage; n/a without JEM.
func jemGapRatio(ps schemas.PointSummary) string {
	for _, m := range ps.Methods {
		if m.Method == jm.Yardstick() {
			if m.KLOptimisationGap.Count == 0 {
				return "n/a"
			}
			return fmtShare(m.GapRatio)
		}
	}
	return "n/a"
}

// verdictWord is holds, fails or undecided.
func verdictWord(v schemas.Verdict) string {
	switch {
	case v.Holds:
		return "holds"
	case v.Decided:
		return "fails"
	}
	return "undecided"
}

// pointMark is a point's verdict in a table cell: its word, a glyph (✔ holds, ✘
// fails, ? undecided: undecided is never marked as a pass or a fail) and its class.
type pointMark struct{ Word, Glyph, Class string }

func markOf(v schemas.Verdict) pointMark {
	switch {
	case v.Holds:
		return pointMark{"holds", "✔", "ok-cell"}
	case v.Decided:
		return pointMark{"fails", "✘", "bad-cell"}
	}
	return pointMark{"undecided", "?", "undecided-cell"}
}

// causeText describes a verdict's cause (schemas.Verdict.Cause, as stages names them).
func causeText(c string) string {
	switch c {
	case "":
		return "—"
	case "steps":
		return "steps (too few optimiser steps)"
	case "minibatch":
		return "minibatch (minibatch noise at a constant learning rate)"
	case "px_weight":
		return "px_weight (the p(x) weight leaves q(x) behind)"
	case "model_family":
		return "model_family (the model family cannot represent the tables)"
	case "tables":
		return "tables (too few tables to decide)"
	case "sampler":
		return "sampler (a recipe's excess KL over exact JEM does not match it: graded in nats)"
	case "nonfinite":
		return "nonfinite (runs whose KL is infinite though no divergence guard fired: q put zero mass where the truth has mass)"
	case verdict.CauseExact:
		return "exact_jem (exact JEM itself: its joint KL is not below the baseline's)"
	}
	return c
}

// emptyNote says on how many tables the empirical KL is +Inf (an empty cell) and so left
// out of its mean; "" when none. It counts the results' tables, or, without results,
// the summary's (the most of any method at each point).
func emptyNote(s schemas.Summary, d *data) string {
	inf, total := d.empInf, d.tables
	if total == 0 {
		for _, ps := range s.Points {
			n := 0
			for _, m := range ps.Methods {
				n = max(n, m.KLEmpirical.Infinite)
			}
			inf += n
			total += ps.Tables
		}
	}
	if inf == 0 {
		return ""
	}
	return fmt.Sprintf("On %d of %d tables a cell drew no sample: the empirical table puts 0 where p does not, so its KL(p‖p̂) is +Inf, "+
		"and the empirical KL column is a mean over the other tables only.", inf, total)
}

// verdictText is a point's verdict for the tables: its reason as it is when it already
// says the outcome (it starts with HOLDS, FAILS (cause…) or undecided, as stages writes
// it), otherwise "holds" or "does not hold", then the reason.
func verdictText(v schemas.Verdict) string {
	r := strings.TrimSpace(v.Reason)
	word := r[:len(r)-len(strings.TrimLeftFunc(r, unicode.IsLetter))]
	switch strings.ToLower(word) {
	case "holds", "fails", "undecided":
		return v.Reason
	}
	out := "does not hold"
	if v.Holds {
		out = "holds"
	}
	if v.Reason != "" {
		out += ": " + v.Reason
	}
	return out
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes of JSON text back into <, >
// and & (all valid inside JSON strings); every other escape, an escaped backslash
// followed by "u003c" included, is kept as it is.
func unescapeHTML(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			out = append(out, raw[i])
			continue
		}
		if raw[i+1] == 'u' && i+6 <= len(raw) {
			switch strings.ToLower(string(raw[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, raw[i], raw[i+1]), i+1 // any other escape, kept whole
	}
	return out
}

func fmtPct(v float64) string {
	if !finite(v) {
		return fmtSig(v, 3)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// fmtParams writes a point's grid values: those of its evaluation grid when it has one
// (a 2-D task), else those of its tables.
func fmtParams(p schemas.Grid) string {
	if p.GridCells > 0 {
		return fmtParams2D(p)
	}
	batch := "full"
	if p.BatchSize > 0 {
		batch = fmt.Sprint(p.BatchSize)
	}
	return fmt.Sprintf("X×K=%d×%d, N=%d, lr=%s, steps=%d, batch=%s, model=%s, encoding=%s, generator=%s, p(x) weight=%s, replicate=%d",
		p.XValues, p.Classes, p.Samples, fmtNum(p.LR), p.Steps, batch, p.Model, p.Encoding, p.Generator, fmtNum(p.PxWeight), p.Replicate) + samplerParams(p)
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1.5em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.meta { color: #666; margin-top: 0; }
.verdict { font-size: 1.25em; padding: 0.8em 1em; border-radius: 6px; margin: 1.2em 0; border-left: 8px solid; }
.verdict.ok { background: #e6f4ea; border-color: #1e8e3e; color: #0d5223; }
.verdict.bad { background: #fce8e6; border-color: #c5221f; color: #7a1210; }
.verdict.undecided { background: #fef7e0; border-color: #b06000; color: #5c3300; }
.verdict.short { background: #fff4e5; border-color: #e37400; color: #5c3300; }
.verdict.partial { background: #e8f0fe; border-color: #5f6368; color: #202124; }
.verdict .headline { display: block; margin-top: 0.3em; }
.verdict details { font-size: 0.75em; margin-top: 0.4em; }
.verdict ul.grades { font-size: 0.8em; margin: 0.4em 0 0; }
p.protocol { font-size: 0.9em; color: #333; }
.verdict .label { font-weight: 700; margin-right: 0.5em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.76em; margin: 0.6em 0; line-height: 1.3; }
th, td { border: 1px solid #ddd; padding: 0.22em 0.35em; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; white-space: normal; vertical-align: bottom; }
td { vertical-align: top; }
td.l, th.l { text-align: left; }
th[colspan] { text-align: center; }
td.key, th.key { position: sticky; left: 0; z-index: 1; background: #fff; }
th.key { background: #f4f4f4; }
td.params { white-space: normal; min-width: 7em; max-width: 16em; text-align: left; color: #444; }
td.verdict-text { white-space: normal; min-width: 14em; text-align: left; }
td.what { white-space: normal; min-width: 18em; max-width: 30em; text-align: left; }
@media print {
  @page { size: A4 landscape; margin: 1cm; }
  body { max-width: none; margin: 0; padding: 0; }
  .scroll { overflow: visible; }
  table { font-size: 6.5pt; }
  td.key, th.key { position: static; }
  figure { break-inside: avoid; }
}
.ok-cell { color: #1e8e3e; font-weight: 600; }
.bad-cell { color: #c5221f; font-weight: 600; }
.undecided-cell { color: #b06000; font-weight: 600; }
.method-baseline { color: #d62728; font-weight: 600; }
.method-jem { color: #1f77b4; font-weight: 600; }
.method-oracle { color: #2ca02c; font-weight: 600; }
figure { margin: 2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.92em; color: #333; max-width: 60em; margin-top: 0.4em; }
pre { background: #f7f7f7; border: 1px solid #e3e3e3; padding: 1em; overflow-x: auto; font-size: 0.85em; }
.notes li, .warnings li { font-size: 0.92em; }
.warnings { color: #a34700; }
dl.howto dt { font-weight: 600; }
nav.toc { font-size: 0.92em; margin: 0.6em 0 1em; line-height: 1.7; }
nav.toc a { margin-right: 0.9em; white-space: nowrap; }
details.section > summary { cursor: pointer; margin-top: 1.2em; }
details.section > summary h2 { display: inline; border: none; margin: 0; font-size: 1.3em; }
details.section > summary strong { font-size: 1.2em; }
#answer figure { margin: 0.8em 0 1.2em; }
svg.verdict-figure { max-width: 1000px; display: block; }
#answer figure img { max-height: 80vh; } /* the answer fits the first screen; other figures keep their size, so their text stays legible */
dl.howto dd { margin: 0 0 0.5em 1.5em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">pipeline {{if .Pipeline}}{{.Pipeline}}{{else}}—{{end}} · seed {{.Seed}} · {{.NPoints}} grid point(s) · {{.NRuns}} run(s){{if .Varying}} · varying: {{.Varying}}{{end}}</p>
{{if .Protocol}}<p class="protocol" id="protocol"><strong>Protocol:</strong> {{.Protocol}}.</p>
{{end}}{{if .HasVerdict}}<div class="verdict {{.Level}}" id="verdict"><span class="label">{{.Label}}</span>{{if .Headline}}<span class="headline">{{.Headline}}</span>
{{if .GradeLines}}<ul class="grades">{{range .GradeLines}}<li>{{.}}</li>{{end}}</ul>
{{end}}<details><summary>the full verdict</summary>{{.Reason}}</details>{{else}}{{.Reason}}{{end}}</div>
{{if .Bands}}<p class="bands">Grades (excess joint KL over exact JEM, in nats, judged at its 95% CI's upper end): {{.Bands}}</p>
{{end}}{{else}}<div class="verdict bad"><span class="label">No verdict:</span>the summary has no grid points.</div>
{{end}}<nav class="toc" id="contents"><strong>Contents:</strong>{{range .TOC}} <a href="#{{.ID}}">{{.Title}}</a>{{end}}</nav>
<section id="answer">
{{if .VerdictFig}}<figure id="verdict_figure">
{{.VerdictFig}}
<figcaption><strong>What decides the verdict.</strong> {{.VerdictCaption}}</figcaption>
</figure>
{{end}}{{with .Lead}}<figure id="{{.Name}}">
<img src="{{.File}}" alt="{{.Title}}">
<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption>
</figure>
{{end}}</section>
{{template "samplers" .}}<section id="what-ran">
{{if or .Kinds .Methods}}<h2>What ran</h2>
{{range .Kinds}}<p>{{.}}</p>
{{end}}{{if .Methods}}<ul class="notes">{{range .Methods}}<li><strong>{{.Name}}</strong>: {{.Doc}}</li>{{end}}</ul>
{{end}}{{end}}{{if .Tables}}<details><summary>How the tables are checked</summary>
<p>JEM (Grathwohl et al. 2020) claims that a classifier's logits f(x)[y], read as negative energies, define a joint q(x,y) = exp f(x)[y] / Z.
Here a model is trained on N samples of a known table p(x,y) with cross-entropy (<span class="method-baseline">baseline</span>: only p(y|x) is fitted, the joint is arbitrary),
with the exact JEM joint likelihood (<span class="method-jem">jem</span>), and with the JEM loss on the true table (<span class="method-oracle">oracle</span>: JEM trained on p itself;
its KL is the model family's approximation error plus the optimiser's residual after the same steps).
Each joint KL(p‖q) splits into the family's approximation error (min over the family of KL(p‖·), computed exactly), the optimisation gap (how far q is from the family's
maximum-likelihood fit of the same draws) and the estimation error (the rest: the error of fitting N draws, which is the data's, not JEM's).
The claim holds when JEM's optimisation gap, that of its q(x) and the family's approximation error are each a small share of the statistical error — the expected KL
of the add-½ (Krichevsky–Trofimov) estimate over N-draw datasets (exact for a complete family), less the approximation error — at the upper end of a 95% bootstrap CI over the tables.
The “floor” (X·K−1)/(2N) is only the first-order asymptotic expected KL, shown for scale; the verdict does not use it.</p></details>
{{end}}</section>
<section id="checks">
<h2>Verdict checks</h2>
{{if not .Single}}{{if .VerdictRows}}<details{{if .FewPoints}} open{{end}}><summary>the verdict at each of the {{len .VerdictRows}} grid points</summary><div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">parameters</th><th class="l">verdict</th><th class="l">cause</th><th>JEM optimisation gap / statistical error</th><th>tables with an empty cell</th></tr></thead>
<tbody>
{{range .VerdictRows}}<tr><td class="l key" id="verdict-point-{{.PointID}}">{{.PointID}}</td><td class="params">{{.Params}}</td><td class="l" title="{{.Reason}}"><span class="{{.Mark.Class}}">{{.Word}}</span></td><td class="l">{{.Cause}}</td><td>{{.GapRatio}}</td><td>{{.Empty}}</td></tr>
{{end}}</tbody>
</table></div></details>
{{end}}{{end}}{{if .CheckRows}}<details{{if .Single}} open{{end}}><summary>{{len .CheckRows}} check(s){{if not .Single}} over the grid points{{end}}</summary>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">check</th><th class="l">what it measures</th><th>value</th><th>95% CI</th><th>limit</th><th>result</th><th class="l">role</th></tr></thead>
<tbody>
{{range .CheckRows}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}" title="{{.Verdict}}"><span class="{{.Mark.Class}}">{{.PointID}} {{.Mark.Glyph}}</span></td>{{end}}<td class="l">{{.Name}}</td><td class="what">{{.What}}</td><td>{{.Value}}</td><td>{{.CI}}</td><td>{{.Limit}}</td><td><span class="{{if .Pass}}ok-cell{{else}}bad-cell{{end}}">{{if .Pass}}pass{{else}}fail{{end}}</span></td><td class="l">{{if .Deciding}}deciding{{else}}reported{{end}}</td></tr>
{{end}}</tbody>
</table></div></details>
{{if .Single}}{{range .CauseLines}}<p class="cause"><strong>Cause:</strong> {{.}}</p>
{{end}}{{end}}<p>A share is a ratio of sums over the point's converged JEM runs (the part of their error named, over their statistical error), with its table-bootstrap 95% CI;
a check passes when the CI's upper end is within its limit, and the claim holds at a point when every deciding check passes.
The paired line (JEM's excess KL over the family's best, against that of the add-½ estimate on the same counts) and the Wilcoxon baseline-vs-JEM line (a p-value) are reported, not deciding. A sampler check (sampler_excess_…) is in nats: the recipe's mean excess joint KL over exact JEM with its 95% CI, against the upper end of the “matches” band (the grades are stated under the verdict). n/a: the number does not exist (no statistical error to compare with, no CI for a p-value).</p>
{{else if .NoExact}}<p>No verdict checks: no exact JEM exists on these tasks, so nothing is checked against it; each method is measured against the truth itself (the summary table, the OOD and calibration table and the dimension ladder).</p>
{{else}}<p>No verdict checks: the summary has none (an undecided point takes none).</p>
{{end}}</section>
<details class="section" id="figures"><summary><h2>Figures</h2> {{len .Figures}} more figure(s) over the grid points and tables</summary>
{{if or .Figures (not .NoExact)}}<dl class="howto">
<dt>Reading the log axes</dt><dd>KL values span orders of magnitude, so they are drawn on log axes. {{if .NoFloor}}The 2-D tasks have no floor, so no reference line is drawn.{{else}}The dashed line is the first-order (X·K−1)/(2N), a scale for the eye:
the verdict compares with the exact finite-N reference of the error split, not with this line.{{end}}</dd>
</dl>
{{end}}{{range .Figures}}<figure id="{{.Name}}">
<img src="{{.File}}" alt="{{.Title}}" loading="lazy">
<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption>
</figure>
{{else}}{{if .Figures2D}}<p>No figures over the grid points: see the 2-D tasks below.</p>{{else if and .NoExact .LadderBounds}}<p>No figures over the grid points: the dimension ladder below draws each method against the truth.</p>{{else}}<p>No figures: there are no results to draw.</p>{{end}}
{{end}}</details>
{{template "tasks2d" .}}<h2 id="detail-heading">Detail</h2>
<p>Every table below is collapsed: open one to read it.</p>
{{if not .NoSplit}}<details class="section" id="split"><summary><h2>Error split per grid point and method</h2></summary>
{{if .Single}}{{range .PointLines}}<p>{{.}}</p>
{{end}}{{end}}{{if .SplitRows}}<details{{if .OpenPoints}} open{{end}}><summary>{{len .SplitRows}} row(s); means in nats over converged runs</summary>
<div class="scroll"><table>
<thead>
<tr><th class="l key" rowspan="2">point</th><th class="l" rowspan="2">model family</th><th rowspan="2">tables with an empty cell</th><th colspan="2">add-½ reference KL</th><th rowspan="2">floor (X·K−1)/(2N), first order</th><th rowspan="2">expected reference / floor</th>
<th class="l" rowspan="2">method</th><th rowspan="2">joint KL</th><th rowspan="2">approxi&shy;mation</th><th rowspan="2">optimi&shy;sation gap</th><th rowspan="2">estimation</th><th rowspan="2">q(x) optimi&shy;sation gap</th><th rowspan="2">optimisation gap / statistical error</th><th rowspan="2">joint KL / expected reference</th></tr>
<tr><th>expected over datasets</th><th>on the drawn counts</th></tr>
</thead>
<tbody>
{{range .SplitRows}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td><td class="params" rowspan="{{.Span}}">{{.Family}}</td><td rowspan="{{.Span}}">{{.EmptyShare}}</td><td rowspan="{{.Span}}">{{.RefExp}}</td><td rowspan="{{.Span}}">{{.Ref}}</td><td rowspan="{{.Span}}">{{.Floor}}</td><td rowspan="{{.Span}}">{{.RefFloor}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.Joint}}</td><td>{{.Approx}}</td><td>{{.Gap}}</td><td>{{.Est}}</td><td>{{.MargGap}}</td><td>{{.GapRatio}}</td><td>{{.RefRatio}}</td></tr>
{{end}}</tbody>
</table></div></details>
<p>joint KL = approximation + optimisation gap + estimation (means over the converged runs). The approximation error is what the model family cannot represent (0 for a complete family);
the optimisation gap is KL(p̂‖q) − min over the family of KL(p̂‖·) on the run's own draws p̂; the estimation error is the rest (0 for the oracle, which trains on p).
The statistical error is the expected reference less the approximation error. The reference is the add-½ estimate (n+½)/(N+C/2) of the same counts (fitted by the family when it is restricted);
its expected KL over N-draw datasets is exact for a complete family (binomial sums, finite even when a cell can be empty) and first order for a restricted one.</p>
{{if .Split2D}}<p>The 2-D grid points have no add-½ reference: they are not in the error split.</p>
{{end}}{{else}}<p>No error split: the summary has no methods.</p>
{{end}}</details>
{{end}}
<details class="section" id="summary"><summary><h2>Summary per grid point and method</h2></summary>
<details{{if .OpenPoints}} open{{end}}><summary>{{len .PointRows}} row(s); KL values in nats over converged runs</summary>
<div class="scroll"><table>
<thead>
<tr><th class="l key" rowspan="2">point</th><th class="l" rowspan="2">parameters</th><th rowspan="2">tables</th><th class="l" rowspan="2">method</th><th rowspan="2">runs</th><th rowspan="2">diverged</th>
<th colspan="4">joint KL</th><th colspan="2">marginal KL p(x)</th><th colspan="2">conditional KL p(y|x)</th>{{if not .NoSplit}}<th rowspan="2">floor</th><th rowspan="2">mean joint / floor</th>{{end}}<th rowspan="2">accuracy</th><th rowspan="2">Bayes accuracy</th>{{if not .NoSplit}}<th rowspan="2">empirical KL (tables without an empty cell)</th>{{end}}<th rowspan="2" title="2-D exact references (jem, jem-converged, oracle): the mean joint KL their checks after the first third of the steps gained, read off the curve (a convergence diagnostic, never used to choose an iterate); near 0 = converged">reference's remaining gap</th><th rowspan="2" title="runs whose held-out NLL collapsed from its best or ended above the baseline's: kept in every mean, counted here">unstable runs</th></tr>
<tr><th>mean</th><th>median</th><th>p10</th><th>p90</th><th>mean</th><th>median</th><th>mean</th><th>median</th></tr>
</thead>
<tbody>
{{range .PointRows}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}" title="{{.Verdict}}"><span class="{{.Mark.Class}}">{{.PointID}} {{.Mark.Glyph}}</span></td><td class="params" rowspan="{{.Span}}">{{.Params}}</td><td rowspan="{{.Span}}">{{.Tables}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.Runs}}</td><td>{{.Diverged}}</td><td>{{index .Joint 0}}</td><td>{{index .Joint 1}}</td><td>{{index .Joint 2}}</td><td>{{index .Joint 3}}</td><td>{{index .Marginal 0}}</td><td>{{index .Marginal 1}}</td><td>{{index .Cond 0}}</td><td>{{index .Cond 1}}</td>{{if not $.NoSplit}}<td>{{.Floor}}</td><td>{{.Ratio}}</td>{{end}}<td>{{.Acc}}</td><td>{{.Bayes}}</td>{{if not $.NoSplit}}<td>{{.Emp}}</td>{{end}}<td>{{.RefGap}}</td><td>{{.Unstable}}</td></tr>
{{end}}</tbody>
</table></div></details>
<p>{{if not .NoSplit}}“mean joint / floor” compares with the first-order (X·K−1)/(2N) only; the exact finite-N reference is in the error split.
The empirical KL is the measured KL(p‖p̂) of the empirical table p̂: +Inf on a table with an empty cell, and those tables are left out of its mean (“+k ∞” counts them per method).
{{end}}Accuracy is the learned classifier's; Bayes accuracy is that of the Bayes classifier argmax p(y|x), the best any classifier can do.</p>
{{if .EmptyNote}}<p>{{.EmptyNote}}</p>
{{end}}</details>
{{if .PromiseRows}}<details class="section" id="promises"><summary><h2>Beyond the joint: out-of-distribution detection and calibration</h2></summary>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th>ceiling: AUROC of the true p(x)</th><th class="l">method</th><th>AUROC log q(x)</th><th>AUROC max q(y|x)</th><th>calibration error</th></tr></thead>
<tbody>
{{range .PromiseRows}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td><td rowspan="{{.Span}}">{{.Ceiling}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.AUROCPx}}</td><td>{{.AUROCPy}}</td><td>{{.Calib}}</td></tr>
{{end}}</tbody>
</table></div>
{{if .NoExact}}<p>Means over converged runs, Monte Carlo estimates on exact draws of each task (their standard errors are in the dimension ladder): the AUROC of the paper's density score log q(x) and of its classifier score max q(y|x) at telling draws of p(x) from out-of-distribution inputs, beside the true p(x) as the score (the ceiling; ½ is chance), and the calibration error against the true p(y|x) (0 for the Bayes classifier).</p>
{{else}}<p>Means over converged runs, exact on each table. AUROC of x ~ p(x) against x uniform over its values, for the paper's density score log q(x) and its classifier score max q(y|x); the ceiling is the true p(x) as the score (½ is chance). The calibration error is Σ<sub>x</sub> p(x) |max<sub>y</sub> q(y|x) − p(ŷ(x)|x)|, exact (0 for the Bayes classifier).</p>
{{end}}</details>
{{end}}{{if .RobustRows}}<details class="section" id="robust"><summary><h2>Beyond the joint on 2-D tasks: the gradient score, binned calibration, robustness and samples</h2></summary>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">method</th><th>runs</th><th>AUROC −‖∇ log q(x)‖</th><th>ECE (15 bins)</th><th>accuracy clean</th><th>attacked</th><th>purified</th><th>Bayes at purified</th><th>samples TV, from noise</th><th>from buffer</th></tr></thead>
<tbody>
{{range .RobustRows}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.Runs}}</td><td>{{.Grad}}</td><td>{{.ECE}}</td><td>{{.Clean}}</td><td>{{.Attacked}}</td><td>{{.Purified}}</td><td>{{.BayesPurified}}</td><td>{{.SamplesNoise}}</td><td>{{.SamplesBu}}</td></tr>
{{end}}</tbody>
</table></div>
<p>Means over converged runs of the first tasks of each point, as many as <code>--measure_tasks</code> says (16 by default, the same tasks for every method; −1 measures every task): the runs column counts them. On 2,000 held-out draws of each task (and as many OOD draws for the AUROC): the paper's gradient score; the binned expected calibration error; the accuracy of argmax q(y|x) clean, under an L∞ PGD attack, after energy descent from the attacked points (purification), and the Bayes classifier's at the purified points; the total-variation distance from p(x) of long-run Langevin chains of q(x) from uniform noise and from the final replay buffer (the report's tasks only).</p>
</details>
{{end}}{{if .SamplerDist}}<details class="section" id="samplerdist"><summary><h2>The sampler's own distribution on 2-D tasks: a fresh short run and a long chain</h2></summary>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">method</th><th>runs</th><th>short run TV to p(x)</th><th>to q(x)</th><th>long chain TV to p(x)</th><th>to q(x)</th><th>floor p(x)</th><th>floor q(x)</th><th>long acceptance</th><th>short closer to p(x) than long</th></tr></thead>
<tbody>
{{range .SamplerDist}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.Runs}}</td><td>{{.ShortTruth}}</td><td>{{.ShortModel}}</td><td>{{.LongTruth}}</td><td>{{.LongModel}}</td><td>{{.Floor}}</td><td>{{.FloorModel}}</td><td>{{.Accept}}</td><td>{{.Closer}}</td></tr>
{{end}}</tbody>
</table></div>
<p>Measured on the runs of the first tasks of each point, as many as <code>--measure_tasks</code> says (16 by default, the same tasks for every method; −1 measures every task): the runs column counts them. Means over the converged runs shown, each the total-variation distance of <code>--sampler_chains</code> independent chains' end points (512 by default; 2,000 the full measure) from the true p(x) and from the model's own q(x) (exact on the grid), on the pooled grid of the buffer's TV plus a bin outside the box. Short run: a fresh run of the method's own sampler (its start, steps, step and noise) on the selected model (n/a for a method without one). Long chain: Metropolis-adjusted Langevin at temperature 1, two grid cells per move, 500 moves from uniform, whose steady state is q: its TV to p(x) is how far q is from the truth in sample terms, its TV to q whether it reached q. The floor is the expected TV of as many exact draws. A short run closer to p(x) than the long chain reproduces the data by its dynamics, not by the model's equilibrium (Nijkamp et al. 2019; Agoritsas et al. 2023).</p>
</details>
{{end}}{{if .ZFree}}<details class="section" id="zfree"><summary><h2>Z-free divergences: measures that need no normaliser, against the exact KL</h2></summary>
<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">method</th><th>runs</th><th>Fisher divergence</th><th>class-conditional</th><th>log-ratio spread</th><th>ρ Fisher</th><th>ρ class-conditional</th><th>ρ spread</th></tr></thead>
<tbody>
{{range .ZFree}}<tr>{{if .First}}<td class="l key" rowspan="{{.Span}}">{{.PointID}}</td>{{end}}<td class="l"><span class="method-{{.Method}}">{{.Method}}</span></td><td>{{.Runs}}</td><td>{{.Fisher}}</td><td>{{.FisherCond}}</td><td>{{.Spread}}</td>{{if .First}}<td rowspan="{{.Span}}">{{.RhoFisher}}</td><td rowspan="{{.Span}}">{{.RhoCond}}</td><td rowspan="{{.Span}}">{{.RhoSpread}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
<p>Means over converged runs of three divergences of the model from the truth that need no log Z, so that they exist for any model at any dimension: the Fisher divergence E<sub>p</sub>‖∇<sub>x</sub> log p(x) − ∇<sub>x</sub> LSE<sub>y</sub> f(x)[y]‖², its class-conditional form E<sub>p(x,y)</sub>‖∇<sub>x</sub> log p(x|y) − ∇<sub>x</sub> f(x)[y]‖² and the log-ratio spread sd<sub>p</sub>[log p(x, y) − f(x)[y]] (log Z cancels in the sd; for q near p the joint KL is about half its square), each 0 exactly when q = p: on 2-D tasks over the task's 2,000 held-out draws; on block tasks the spread only, over 2,000 exact draws (their truth has no score); on tables and binary tasks the spread only, exact over the enumeration as the KLs are; on image tasks the Fisher divergence and the spread over the task's 4,000 exact draws, where no exact KL exists. ρ: Spearman's rank correlation of each with the exact joint KL over the point's runs of every method, how far it can stand in for the KL where the KL does not exist.</p>
</details>
{{end}}{{if not .NoExact}}<details class="section" id="paired"><summary><h2>JEM vs baseline, paired by table</h2></summary>
{{if .Comparisons}}<div class="scroll"><table>
<thead><tr><th class="l key">point</th><th class="l">parameters</th><th>pairs</th><th>JEM win share</th><th>mean KL<sub>baseline</sub> − KL<sub>jem</sub></th><th>95% bootstrap CI</th><th>Wilcoxon W<sup>+</sup></th><th>z</th><th>p (two-sided)</th><th>baseline / JEM</th><th class="l">verdict</th></tr></thead>
<tbody>
{{range .Comparisons}}<tr><td class="l key">{{.PointID}}</td><td class="params">{{.Params}}</td><td>{{.Pairs}}</td><td>{{.WinShare}}</td><td>{{.MeanDiff}}</td><td>{{.CI}}</td><td>{{.W}}</td><td>{{.Z}}</td><td>{{.P}}</td><td>{{.Ratio}}</td><td class="l"><span class="{{.Mark.Class}}">{{.Verdict}}</span> (<a href="{{.Link}}">the verdict</a>)</td></tr>
{{end}}</tbody>
</table></div>
<p>Over the tables where both runs converged: the win share is the share of tables where JEM's joint KL is lower; the mean difference is positive when JEM is better, with a 95% bootstrap confidence interval;
the Wilcoxon signed-rank test asks whether the paired differences are centred on zero (W<sup>+</sup> sums the ranks of the tables JEM wins).</p>
{{else}}<p>No paired comparison: the baseline and JEM did not both run.</p>
{{end}}</details>
{{end}}{{if .Leaderboard}}<details class="section" id="leaderboard"><summary><strong>Leaderboard</strong></summary>
{{template "leaderboard" .}}</details>
{{end}}{{if or .Ladder .LadderBounds}}<details class="section" id="ladder"><summary><strong>Dimension ladder</strong></summary>
{{template "ladder" .}}{{template "ladderbounds" .}}</details>
{{end}}{{if .Notes}}<h3>Data notes</h3><ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Warnings}}<h3 id="warnings">Warnings</h3><ul class="warnings">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
<details class="section" id="configuration"><summary><h2>Configuration</h2></summary>
<pre>{{.ConfigJSON}}</pre></details>
<script>
// A link into a collapsed section opens it.
function openTarget() { for (let e = document.getElementById(decodeURIComponent(location.hash.slice(1))); e; e = e.parentElement) { if (e.tagName === "DETAILS") e.open = true; } }
addEventListener("hashchange", openTarget); openTarget();
</script>
</body>
</html>
`))

// summaryRuns is the number of runs the summary covers.
func summaryRuns(s schemas.Summary) int {
	n := 0
	for _, ps := range s.Points {
		for _, m := range ps.Methods {
			n += m.Runs
		}
	}
	return n
}

// bannerOf is the verdict banner's level (its CSS class) and label, naming what
// fails: exact JEM itself, or the recipes worse than verdict.BandFar. A summary
// written before levels existed gets the old holds / does not hold / undecided.
func bannerOf(s schemas.Summary) (level, label string) {
	v := s.Verdict
	level = v.Level
	if level == "" {
		switch {
		case v.Holds:
			level = verdict.LevelHolds
		case v.Decided:
			level = verdict.LevelFails
		default:
			level = verdict.LevelUndecided
		}
	}
	var failing, short, matched []string
	for _, ps := range s.Points {
		for _, c := range ps.Samplers {
			if c.Reference {
				continue
			}
			switch c.Grade {
			case verdict.GradeMatches:
				if !slices.Contains(matched, c.Method) {
					matched = append(matched, c.Method)
				}
			case verdict.GradeWorse, verdict.GradeInfinite:
				if !slices.Contains(failing, c.Method) {
					failing = append(failing, c.Method)
				}
			case verdict.GradeClose, verdict.GradeShort:
				if !slices.Contains(short, c.Method) {
					short = append(short, c.Method)
				}
			}
		}
	}
	// Exact JEM ran but nothing judged it (a 2-D point without a baseline): the banner
	// claims only what the recipes show, and says so.
	notJudged := v.Exact == "" && exactUnjudged(s)
	const unjudged = "exact JEM itself was not judged (no baseline ran)."
	switch level {
	case verdict.LevelHolds:
		switch {
		case notJudged && len(matched) > 0:
			return "partial", "Recipes only: " + strings.Join(matched, ", ") + plural(matched, " matches", " match") + " exact JEM; " + unjudged
		case notJudged:
			return "partial", "No claim judged: " + unjudged
		}
		return "ok", "✔ The JEM claim holds."
	case verdict.LevelShort:
		verb := " does not match exact JEM."
		if len(short) > 1 {
			verb = " do not match exact JEM."
		}
		if notJudged {
			return "short", "≈ No recipe fails, but " + strings.Join(short, ", ") + strings.TrimSuffix(verb, ".") + "; " + unjudged
		}
		return "short", "≈ Nothing fails, but " + strings.Join(short, ", ") + verb
	case verdict.LevelUndecided:
		if len(s.Points) > 0 && !slices.ContainsFunc(s.Points, func(ps schemas.PointSummary) bool { return !verdict.NoExact(ps) }) {
			return "undecided", "? No verdict: exact JEM does not exist on these tasks." // more tasks would not decide it
		}
		return "undecided", "? Undecided: no verdict."
	}
	switch {
	case v.Exact == verdict.ExactFails && len(failing) > 0:
		return "bad", "✘ Exact JEM itself does not hold, and " + strings.Join(failing, ", ") + plural(failing, " fails.", " fail.")
	case v.Exact == verdict.ExactFails:
		return "bad", "✘ Exact JEM itself does not hold."
	case len(failing) > 0 && v.Exact == verdict.ExactHolds:
		return "bad", "✘ " + strings.Join(failing, ", ") + plural(failing, " fails", " fail") + "; exact JEM holds."
	case len(failing) > 0 && notJudged:
		return "bad", "✘ " + strings.Join(failing, ", ") + plural(failing, " fails", " fail") + "; " + unjudged
	case len(failing) > 0:
		return "bad", "✘ " + strings.Join(failing, ", ") + plural(failing, " fails.", " fail.")
	case v.Level == "":
		return "bad", "✘ The JEM claim does not hold."
	}
	return "bad", "✘ A deciding check fails."
}

// exactUnjudged reports whether exact JEM (the yardstick) ran without a baseline at
// some point of the summary: nothing there judges exact JEM itself, only the recipes
// against it.
func exactUnjudged(s schemas.Summary) bool {
	for _, ps := range s.Points {
		has := func(m string) bool {
			return slices.ContainsFunc(ps.Methods, func(ms schemas.MethodSummary) bool { return ms.Method == m })
		}
		if has(jm.Yardstick()) && !has(jm.Baseline()) {
			return true
		}
	}
	return false
}

// bandsText states the grading bands (verdict's constants) in words.
func bandsText() string {
	return fmt.Sprintf("matches (within the reference's own statistical error: the CI's upper end at most the margin times it, "+
		"or a CI that covers 0 and ends within %g nat), within %g nat, within %g nat, worse than %g nat (fails), infinite (fails). "+
		"jem-converged (exact JEM on full batches) is graded beside the recipes as a reference, never judged; exact jem is the yardstick. "+
		"Unstable runs stay in every mean and are counted.", verdict.BandClose, verdict.BandClose, verdict.BandFar, verdict.BandFar)
}

// fmtNats prints a KL (difference) in nats; NaN is n/a.
func fmtNats(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmtSig(v, 3) + " nats"
}

// plural is one when xs has one element, else many.
func plural(xs []string, one, many string) string {
	if len(xs) == 1 {
		return one
	}
	return many
}

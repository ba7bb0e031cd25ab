package render

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

// claimRows are result rows of a 2-D point (moons:0.1, 12 tasks) for methods, each
// method's joint KL its base plus a small spread per task (exact JEM 0.6, ed 0.01 more
// on average: it matches; sgld 1.6 more: it fails); a method named external:… is a
// user's model.
func claimRows(methods ...string) []schemas.ResultRow {
	base := map[string]float64{"baseline": 3, "jem": 0.6, "ed": 0.61, "sgld": 2.2, "external:mine": 0.62}
	nan := math.NaN()
	var out []schemas.ResultRow
	for i := range 12 {
		for _, m := range methods {
			kl := base[m] + 0.01*float64(i%4)
			r := schemas.ResultRow{RunID: schemas.RunID(0, int64(i), m), TableID: int64(i), Method: m, Task: "moons:0.1",
				XValues: 256, Classes: 2, GridCells: 16, Box: 3, Model: "mlp:32,32", Samples: 2000, Steps: 300, LR: 0.003, PxWeight: 1,
				KLJoint: kl, KLMarginal: kl / 2, KLConditional: kl / 2, Accuracy: 0.9, BayesAccuracy: 0.92,
				Floor: nan, KLEmpirical: nan, KLApproximation: nan, KLOptimisationGap: nan, KLEstimation: nan, KLMarginalGap: nan,
				KLReference: nan, KLReferenceExpected: nan, KLMarginalReferenceExpected: nan}
			if m == "baseline" {
				r.PxWeight = 0
			}
			out = append(out, r)
		}
	}
	return out
}

// claimInput is the report input of a run of claimRows, summarised by the verdict
// (2-D points judged by the Samplers rule).
func claimInput(methods ...string) Input {
	rows := claimRows(methods...)
	sum := verdict.Summarize(rows, 1, verdict.DefaultThresholds(), func(schemas.Grid) verdict.Rule { return verdict.Samplers })
	sum.Protocol = testProtocol()
	return Input{Title: "claims", Summary: sum, Results: rows}
}

// testProtocol is a protocol as a 2-D or images run declares it.
func testProtocol() *schemas.Protocol {
	return &schemas.Protocol{Select: "heldout", Holdout: 0.2, Checks: "every 100 steps", UnstableNats: 0.25, Same: "everything", Exception: "none"}
}

// imagesInput is an evaluate --onnx run: one images:8,2 point without exact JEM, a
// user's model (external) its only method, measured against the truth itself; its
// first task comes with a triple that has no joint to draw (an image-like task's joint
// is a density).
func imagesInput() Input {
	ps, rows := boundsFixture(0, "images:8,2", 64, map[string][]boundsTask{"baseline": {{math.NaN(), 0.4}, {math.NaN(), 0.5}}})
	ps.Params.XValues, ps.Params.Classes = 64, 2
	ps.Methods[0].Method = "external"
	ps.Methods[0].KLConditional = schemas.Dist{Count: 2, Mean: 0.45, Median: 0.45, P10: 0.4, P90: 0.5}
	ps.Methods[0].AUROCPx = schemas.Dist{Count: 2, Mean: 0.6}
	ps.Methods[0].AUROCTruePx = schemas.Dist{Count: 2, Mean: 0.99}
	for i := range rows {
		rows[i].Method, rows[i].RunID = "external", schemas.RunID(0, int64(i), "external")
	}
	sum := verdict.SummaryOf([]schemas.PointSummary{ps}, 1)
	// The verdict the images kind's rule gives (verdict.NoReference), as stages writes it.
	sum.Verdict = schemas.Verdict{Reason: "no verdict: exact JEM does not exist on images:8,2 (the model's log Z is intractable at this scale); " +
		"each method is measured against the truth itself", Exact: verdict.ExactUndecided, Level: verdict.LevelUndecided}
	sum.Points[0].Verdict = sum.Verdict
	sum.Protocol = testProtocol()
	return Input{Title: "Your model against the truth", Summary: sum, Results: rows,
		Triples: []Triple{{TableID: 0, PointID: 0, X: 64, K: 2, Learned: map[string][]float64{"external": nil}}}}
}

// reportText is report.html as text: no tags, no style, entities unescaped.
func reportText(b []byte) string {
	s := regexp.MustCompile(`(?s)<style>.*?</style>|<svg.*?</svg>`).ReplaceAllString(string(b), "")
	return html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(s, " "))
}

// TestReportClaimsOnlyWhatRan: each banner and paragraph of the report depends on what
// ran. A 2-D run without a baseline (exact JEM not judged) never shows "✔ The JEM claim
// holds." even though every recipe matches; an evaluate --onnx run on an images task
// carries no exact-JEM grades, no table checks, no pairing with a baseline, no
// protocol of jemcheck's training, no unstable count and no warning about a figure
// that does not apply (its method line: stages' TestWhatRanExternal); a 2-D run with a
// user's model counts no unstable runs for it and says its protocol is not the model's.
func TestReportClaimsOnlyWhatRan(t *testing.T) {
	tests := []struct {
		name      string
		in        Input
		banner    string // the banner's class
		want, not []string
	}{
		{"recipes only: jem and ed, no baseline", claimInput("jem", "ed"), "partial",
			[]string{"Recipes only: ed matches exact JEM; exact JEM itself was not judged (no baseline ran).", "Grades (excess joint KL"},
			[]string{"✔ The JEM claim holds."}},
		{"recipes only, sgld fails", claimInput("jem", "ed", "sgld"), "bad",
			[]string{"✘ sgld fails; exact JEM itself was not judged (no baseline ran)."}, []string{"✔", "exact JEM holds"}},
		{"baseline, jem and ed: the full claim", claimInput("baseline", "jem", "ed"), "ok",
			[]string{"✔ The JEM claim holds.", "JEM vs baseline, paired by table"}, []string{"not judged"}},
		{"images, --onnx", imagesInput(), "undecided",
			[]string{"? No verdict: exact JEM does not exist on these tasks.",
				"no exact JEM exists on these tasks, so nothing is checked against it", "Monte Carlo estimates on exact draws"},
			[]string{"Grades (excess joint KL", "like a sampler", "evaluation support", "How the tables are checked", "Protocol:",
				"held-out NLL", "JEM vs baseline", "could not be drawn", "Warnings", "(X·K−1)/(2N)", "exact on each table", "Undecided: no verdict"}},
		{"2-D, a user's model beside jem", claimInput("baseline", "jem", "external:mine"), "ok",
			[]string{"external:mine trained outside jemcheck; unstable", "trained outside jemcheck: the protocol is jemcheck's methods'"},
			[]string{"unstable 0 of 12 runs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Render(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			page := string(out["report.html"])
			if !strings.Contains(page, fmt.Sprintf(`<div class="verdict %s" id="verdict">`, tt.banner)) {
				t.Errorf("the banner is not %q:\n%s", tt.banner, regexp.MustCompile(`<div class="verdict [^"]*" id="verdict">.{0,200}`).FindString(page))
			}
			text := strings.Join(strings.Fields(reportText(out["report.html"])), " ")
			for _, w := range tt.want {
				if w == "external:mine trained outside jemcheck; unstable" {
					continue // checked below, on the grades' own lines
				}
				if !strings.Contains(text, w) {
					t.Errorf("the report lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					i := strings.Index(text, n)
					t.Errorf("the report says %q: …%s…", n, text[max(0, i-120):min(len(text), i+120)])
				}
			}
		})
	}
	// The grades' lines (terminal and banner): a user's model has no unstable count.
	sum := claimInput("baseline", "jem", "external:mine").Summary
	lines := strings.Join(verdict.PointLines(sum.Points[0]), "\n")
	if !strings.Contains(lines, "trained outside jemcheck") || strings.Contains(lines, "external:mine") && strings.Contains(lines, "unstable 0 of") {
		t.Errorf("the graded lines count unstable runs of a user's model:\n%s", lines)
	}
}

package render

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// boundsTask is one synthetic task's run of a method on a rung without exact JEM: its
// joint KL's lower bound (NaN: the task's calibration refused) and conditional KL.
type boundsTask struct{ lower, cond float64 }

// boundsFixture is a point without exact JEM (kl_joint NaN in every row, a calibration
// run on every task) and its result rows: per method its tasks.
func boundsFixture(id int64, task string, dim int, runs map[string][]boundsTask) (schemas.PointSummary, []schemas.ResultRow) {
	nan := math.NaN()
	ps := schemas.PointSummary{PointID: id, Params: schemas.Grid{Task: task, Samples: 2000, Steps: 30, Model: "cnn"},
		Dimension: dim, LadderFamily: "images:·,2", Floor: nan}
	var rows []schemas.ResultRow
	for _, m := range []string{"baseline", "sgld"} {
		ts, ok := runs[m]
		if !ok {
			continue
		}
		ps.Tables = len(ts)
		ps.Methods = append(ps.Methods, schemas.MethodSummary{Method: m, Runs: len(ts)}) // KLJoint: no finite value
		for i, t := range ts {
			r := schemas.ResultRow{RunID: schemas.RunID(id, int64(i), m), PointID: id, TableID: int64(i), Method: m, Task: task,
				KLJoint: nan, KLMarginal: nan, KLJointUpper: nan,
				KLJointLower: t.lower, KLJointLowerSE: 0.1, KLConditional: t.cond, KLConditionalSE: 0.05,
				Accuracy: 0.9, BayesAccuracy: 0.95, ECE: 0.04, CalibrationErrorTrue: 0.03, AUROCPx: 0.6, AUROCTruePx: 0.99,
				AISESS: 12, LogZAIS: 3, AISTeacherGap: 0.02, AISAccepted: !math.IsNaN(t.lower)}
			if !r.AISAccepted {
				r.AISRefused, r.AISTeacherGap, r.AISESS = "AIS schedule refused on the truth: BDMC gap 0.4 ± 0.1 nat", 0.4, nan
			}
			rows = append(rows, r)
		}
	}
	return ps, rows
}

// boundsSection is the rung's part of report.html with its figures taken out.
func boundsSection(t *testing.T, html string) string {
	t.Helper()
	i := strings.Index(html, "<h2>Dimension ladder without exact JEM")
	if i < 0 {
		t.Fatal("the report has no section without exact JEM")
	}
	j := strings.Index(html[i:], "</details>")
	return regexp.MustCompile(`(?s)<svg.*?</svg>`).ReplaceAllString(html[i:i+j], "<svg/>")
}

// TestLadderBounds: a family without exact JEM is a rung from one dimension on; per
// method and D its joint KL's lower bound is the mean over the accepted tasks with
// Student's t CI ("k of n" accepted), q(x)'s part is lower − conditional and its share
// Σ part / Σ lower, the conditional's CI is over every task, one task's CI is its own
// ± 1.96 SE; the upper bound's column shows only where some run has one; the excess
// ladder leaves the family out, and a family with exact KLs never is on this rung.
func TestLadderBounds(t *testing.T) {
	nan := math.NaN()
	sgld64 := []boundsTask{{1, 0.5}, {2, 0.5}, {3, 0.5}}
	sgld256 := []boundsTask{{4, 1}, {nan, 2}, {6, 3}}
	base := []boundsTask{{0.5, 0.4}, {0.7, 0.4}, {0.9, 0.4}}
	tests := []struct {
		name   string
		points func() ([]schemas.PointSummary, []schemas.ResultRow)
		dims   string
		rows   int
		cells  [][]string // per row: lower, accepted, marginal, share, cond
		upper  bool
		labels []string
	}{
		{"two dimensions, a refused task",
			func() ([]schemas.PointSummary, []schemas.ResultRow) {
				a, ra := boundsFixture(0, "images:8,2", 64, map[string][]boundsTask{"baseline": base, "sgld": sgld64})
				b, rb := boundsFixture(1, "images:16,2", 256, map[string][]boundsTask{"baseline": base, "sgld": sgld256})
				return []schemas.PointSummary{a, b}, append(ra, rb...)
			}, "64, 256", 4,
			[][]string{
				{"0.7 [0.203, 1.2]", "3 of 3", "0.3 [-0.197, 0.797]", "42.9%", "0.4 [0.4, 0.4]"},
				// mean 2, sd 1: 2 ± t₂·1/√3 = 2 ± 4.303·0.5774; q(x): 1.5 ± the same, 4.5/6
				{"2 [-0.484, 4.48]", "3 of 3", "1.5 [-0.984, 3.98]", "75.0%", "0.5 [0.5, 0.5]"},
				{"0.7 [0.203, 1.2]", "3 of 3", "0.3 [-0.197, 0.797]", "42.9%", "0.4 [0.4, 0.4]"},
				// the refused task left out: mean 5, sd √2: 5 ± t₁·1 = 5 ± 12.706; q(x): 3 and 3
				{"5 [-7.71, 17.7]", "2 of 3", "3 [3, 3]", "60.0%", "2 [-0.484, 4.48]"},
			}, false, []string{"sgld: KL(p(y|x)‖q(y|x))", "sgld: joint KL ≥", "baseline: joint KL ≥"}},
		{"one dimension, one task, an upper bound",
			func() ([]schemas.PointSummary, []schemas.ResultRow) {
				a, ra := boundsFixture(0, "images:8,2", 64, map[string][]boundsTask{"sgld": {{0.8, 0.6}}})
				ra[0].KLJointUpper = 1.5
				return []schemas.PointSummary{a}, ra
			}, "64", 1,
			[][]string{{"0.8 [0.604, 0.996]", "1 of 1", "0.2 [-0.0191, 0.419]", "25.0%", "0.6 [0.502, 0.698]"}},
			true, []string{"sgld: joint KL ≥"}},
		{"every calibration refused",
			func() ([]schemas.PointSummary, []schemas.ResultRow) {
				a, ra := boundsFixture(0, "images:8,2", 64, map[string][]boundsTask{"sgld": {{nan, 0.6}, {nan, 0.8}}})
				return []schemas.PointSummary{a}, ra
			}, "64", 1,
			[][]string{{"—", "0 of 2", "—", "—", "0.7 [-0.571, 1.97]"}}, false, []string{"sgld: KL(p(y|x)‖q(y|x))"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, rows := tt.points()
			sum := schemas.Summary{Pipeline: "sweep", Points: pts}
			fams, warnings := boundsFamilies(sum, rows, 0, nil)
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			if len(fams) != 1 {
				t.Fatalf("%d rungs without exact JEM, want 1", len(fams))
			}
			f := fams[0]
			if f.Name != "images:·,2" || f.Dims != tt.dims || len(f.Rows) != tt.rows || f.Upper != tt.upper {
				t.Fatalf("rung %q at D = %s, %d rows, upper %v; want images:·,2 at D = %s, %d rows, upper %v",
					f.Name, f.Dims, len(f.Rows), f.Upper, tt.dims, tt.rows, tt.upper)
			}
			for i, want := range tt.cells {
				r := f.Rows[i]
				got := []string{r.Lower, r.Accepted, r.Marginal, r.Share, r.Cond}
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("row %d (%s at D = %d): %q, want %q", i, r.Method, r.D, got, want)
				}
				if r.Acc != "0.9 (0.95)" || r.ECE != "0.04 (0.03)" || r.AUROC != "0.6 (0.99)" {
					t.Errorf("row %d: accuracy %s, ECE %s, AUROC %s", i, r.Acc, r.ECE, r.AUROC)
				}
			}
			wellFormed(t, string(f.Figure))
			flat := strings.ReplaceAll(string(f.Figure), " ", "")
			for _, l := range tt.labels {
				if !strings.Contains(flat, strings.ReplaceAll(template2svg(l), " ", "")) {
					t.Errorf("the figure does not label %s", l)
				}
			}

			if ex, _ := ladderFamilies(sum, nil); len(ex) != 0 {
				t.Errorf("the excess ladder shows a family without exact JEM: %v", ex[0].Name)
			}
			files, err := Render(Input{Title: "images", Summary: sum, Results: rows})
			if err != nil {
				t.Fatal(err)
			}
			html := string(files["report.html"])
			sec := boundsSection(t, html)
			for _, c := range append(tt.cells[0], "joint KL(p‖q) ≥ (lower bound") {
				if !strings.Contains(sec, template2html(c)) {
					t.Errorf("the section has no %q", c)
				}
			}
			if !strings.Contains(sec, "<h3>images:·,2") {
				t.Error("the section has no heading of the family")
			}
			if got := strings.Contains(sec, "joint KL ≤ (upper bound)"); got != tt.upper {
				t.Errorf("the upper bound's column: %v, want %v", got, tt.upper)
			}
			if !strings.Contains(html, `href="#ladder"`) {
				t.Error("the table of contents has no dimension ladder")
			}
			if strings.Contains(html, "Dimension ladder: how the excess") {
				t.Error("the excess ladder shows on a run without exact JEM")
			}
			if strings.Contains(html, "non-finite joint KL") {
				t.Error("the data notes count runs without exact JEM as non-finite")
			}
		})
	}
}

// template2html is a cell as html/template writes it.
func template2html(s string) string {
	return strings.NewReplacer("'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// template2svg is a label as the SVG writes it.
func template2svg(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TestLadderBoundsApart: a family with exact KLs stays on the excess ladder and off the
// bounds rung; rows without the calibration's columns (tables, files before them, a
// nonfinite run) make no rung; rows cut to the first tasks are said.
func TestLadderBoundsApart(t *testing.T) {
	const bits = "bits:·,2 (3 components)"
	a := ladderFixture(1, "bits:2,2", 2, bits, "uniform", map[string][3]float64{"pcd": {0.02, 0.01, 0.03}})
	b := ladderFixture(2, "bits:4,2", 4, bits, "uniform", map[string][3]float64{"pcd": {0.1, 0.05, 0.2}})
	img, rows := boundsFixture(3, "images:8,2", 64, map[string][]boundsTask{"sgld": {{1, 0.5}, {2, 0.5}}})
	rows = append(rows, schemas.ResultRow{PointID: 1, Method: "pcd", KLJoint: 0.1, KLJointLower: math.NaN()},
		schemas.ResultRow{PointID: 2, Method: "pcd", KLJoint: math.NaN()}) // a nonfinite run of an exact point
	if isBoundsRow(&rows[3]) {
		t.Error("a row with a NaN joint KL and no calibration (kl_joint_lower read 0) is taken for a bounds row")
	}
	sum := schemas.Summary{Points: []schemas.PointSummary{a, b, img}}
	ex, _ := ladderFamilies(sum, nil)
	if len(ex) != 1 || ex[0].Name != bits {
		t.Fatalf("the excess ladder: %d families, want %s alone", len(ex), bits)
	}
	bf, _ := boundsFamilies(sum, rows, 0, nil)
	if len(bf) != 1 || bf[0].Name != "images:·,2" || len(bf[0].Rows) != 1 {
		t.Fatalf("the bounds rung: %+v, want images:·,2 with one row", bf)
	}
	if bf, _ := boundsFamilies(schemas.Summary{Points: []schemas.PointSummary{a, b}}, rows[2:], 0, nil); len(bf) != 0 {
		t.Errorf("rows without a calibration make a bounds rung: %s", bf[0].Name)
	}
	img.Tables = 300
	bf, _ = boundsFamilies(schemas.Summary{Points: []schemas.PointSummary{img}}, rows[:2], 200, nil)
	if len(bf) != 1 || !strings.Contains(bf[0].Note, "first 200 tasks") {
		t.Errorf("rows cut to the first tasks are not said: %+v", bf)
	}
}

// TestLadderBoundsGolden: the rung's section of report.html (figures taken out) for a
// two-dimension sweep; go test -update rewrites testdata/ladder_bounds.html.
func TestLadderBoundsGolden(t *testing.T) {
	a, ra := boundsFixture(0, "images:8,2", 64, map[string][]boundsTask{"baseline": {{0.5, 0.4}, {0.7, 0.4}, {0.9, 0.4}},
		"sgld": {{1, 0.5}, {2, 0.5}, {3, 0.5}}})
	b, rb := boundsFixture(1, "images:16,2", 256, map[string][]boundsTask{"baseline": {{0.5, 0.4}, {0.7, 0.4}, {0.9, 0.4}},
		"sgld": {{4, 1}, {math.NaN(), 2}, {6, 3}}})
	files, err := Render(Input{Title: "images", Summary: schemas.Summary{Pipeline: "sweep", Points: []schemas.PointSummary{a, b}}, Results: append(ra, rb...)})
	if err != nil {
		t.Fatal(err)
	}
	got := boundsSection(t, string(files["report.html"]))
	path := filepath.Join("testdata", "ladder_bounds.html")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("the section differs from %s (run go test -update after checking the change):\n%s", path, got)
	}
}

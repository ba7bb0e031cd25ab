package render

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// ladderFixture is a synthetic point of the ladder: its task, dimension and family, and
// per sampler method its excess over exact jem [lo, hi].
func ladderFixture(id int64, task string, dim int, family string, proposal string, excess map[string][3]float64) schemas.PointSummary {
	ms := func(m string, kl float64) schemas.MethodSummary {
		return schemas.MethodSummary{Method: m, KLJoint: schemas.Dist{Count: 5, Mean: kl},
			Accuracy: schemas.Dist{Count: 5, Mean: 0.8}, BayesAccuracy: schemas.Dist{Count: 5, Mean: 0.85},
			AUROCPx: schemas.Dist{Count: 5, Mean: 0.7}, AUROCTruePx: schemas.Dist{Count: 5, Mean: 0.9},
			TrainMS: schemas.Dist{Count: 5, Mean: 12.5 * float64(dim)}}
	}
	ps := schemas.PointSummary{PointID: id, Params: schemas.Grid{Task: task, Samples: 2000, Steps: 800, Model: "mlp:32",
		Proposal: proposal, ChainSteps: 5, BufferSize: 1000, Recipe: schemas.Recipe{EDNegatives: 8, EDT: 0.1}},
		Tables: 5, Dimension: dim, LadderFamily: family,
		Methods: []schemas.MethodSummary{ms("baseline", 1.5), ms("jem", 0.01*float64(dim))}}
	for _, m := range []string{"pcd", "ed"} {
		e, ok := excess[m]
		if !ok {
			continue
		}
		ps.Methods = append(ps.Methods, ms(m, 0.01*float64(dim)+e[0]))
		ps.Samplers = append(ps.Samplers, schemas.SamplerComparison{Method: m, Pairs: 5, Excess: e[0], ExcessCILow: e[1],
			ExcessCIHigh: e[2], MarginalExcess: e[0] / 2})
	}
	return ps
}

// wellFormed parses an inline SVG as XML to its end.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	if !strings.Contains(svg, "<svg") {
		t.Fatalf("not an SVG: %.80q", svg)
	}
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
}

// TestLadder: the dimension ladder shows every family with points at two or more
// dimensions (a figure, and per dimension one row per method and options), a line per
// method and options, negative excesses and CI ends drawn safely on the log axis; a
// family at one dimension has no ladder, and a report without one has no section.
func TestLadder(t *testing.T) {
	const bits, blocks = "bits:·,2 (3 components)", "blocks:·,gmm:3,2"
	two := func(id int64, task string, dim int, family string, pcd, ed [3]float64) schemas.PointSummary {
		return ladderFixture(id, task, dim, family, "uniform", map[string][3]float64{"pcd": pcd, "ed": ed})
	}
	tests := []struct {
		name     string
		points   []schemas.PointSummary
		families []string // the ladder's families, in order
		rows     []int    // rows per family
		dims     []string
		labels   []string // legend labels the first family's figure carries
		cells    []string // cells the first family's table carries
		noFigure bool     // nothing positive to draw
	}{
		{"two families, three dimensions",
			[]schemas.PointSummary{
				two(1, "bits:2,2", 2, bits, [3]float64{0.02, 0.01, 0.03}, [3]float64{0.01, -0.005, 0.02}),
				two(2, "bits:4,2", 4, bits, [3]float64{0.1, 0.05, 0.2}, [3]float64{-0.01, -0.03, 0.01}),
				two(3, "bits:8,2", 8, bits, [3]float64{0.5, 0.3, 0.9}, [3]float64{0.05, 0.01, 0.1}),
				two(4, "blocks:1,gmm:3,2", 2, blocks, [3]float64{0.2, 0.1, 0.3}, [3]float64{0.1, 0.05, 0.2}),
				two(5, "blocks:4,gmm:3,2", 8, blocks, [3]float64{0.4, 0.2, 0.6}, [3]float64{0.2, -0.1, 0.4}),
				two(6, "blocks:16,gmm:3,2", 32, blocks, [3]float64{0.9, 0.5, 1.4}, [3]float64{0.3, 0.1, 0.5}),
			},
			[]string{bits, blocks}, []int{12, 12}, []string{"2, 4, 8", "2, 8, 32"},
			[]string{">pcd<", ">ed<", "exact JEM"},
			[]string{"-0.01 [-0.03, 0.01]", "0.5 [0.3, 0.9]", "0 (reference)", "0.8 (0.85)", "0.7 (0.9)", "100"}, false},
		{"one dimension only",
			[]schemas.PointSummary{
				two(1, "bits:4,2", 4, bits, [3]float64{0.02, 0.01, 0.03}, [3]float64{0.01, -0.005, 0.02}),
				two(2, "gmm:3,2", 2, "gmm:3,2", [3]float64{0.1, 0.05, 0.2}, [3]float64{0.1, 0.05, 0.2}),
			}, nil, nil, nil, nil, nil, false},
		{"tables have no dimension",
			[]schemas.PointSummary{{PointID: 1, Params: schemas.Grid{Task: "table"}}, {PointID: 2, Params: schemas.Grid{Task: "table"}}},
			nil, nil, nil, nil, nil, false},
		{"a line per proposal, the shared methods once",
			[]schemas.PointSummary{
				ladderFixture(1, "bits:2,2", 2, bits, "uniform", map[string][3]float64{"pcd": {0.02, 0.01, 0.03}}),
				ladderFixture(2, "bits:2,2", 2, bits, "gwg", map[string][3]float64{"pcd": {0.01, 0.005, 0.02}}),
				ladderFixture(3, "bits:16,2", 16, bits, "uniform", map[string][3]float64{"pcd": {0.4, 0.2, 0.6}}),
				ladderFixture(4, "bits:16,2", 16, bits, "gwg", map[string][3]float64{"pcd": {0.3, 0.1, 0.5}}),
			},
			[]string{bits}, []int{8}, []string{"2, 16"},
			[]string{">pcd proposal=uniform<", ">pcd proposal=gwg<"}, []string{"proposal=gwg"}, false},
		{"every excess at or below 0, one point a line",
			[]schemas.PointSummary{
				ladderFixture(1, "bits:2,2", 2, bits, "uniform", map[string][3]float64{"pcd": {-0.02, -0.05, 0}}),
				ladderFixture(2, "bits:4,2", 4, bits, "uniform", map[string][3]float64{"ed": {0, -0.01, 0.01}}),
			},
			[]string{bits}, []int{6}, []string{"2, 4"}, []string{">pcd<", ">ed<"}, []string{"-0.02 [-0.05, 0]"}, false},
		{"nothing positive to draw",
			func() []schemas.PointSummary {
				a := ladderFixture(1, "bits:2,2", 2, bits, "uniform", map[string][3]float64{"pcd": {-0.02, -0.05, -0.01}})
				b := ladderFixture(2, "bits:4,2", 4, bits, "uniform", map[string][3]float64{"pcd": {math.NaN(), math.NaN(), math.NaN()}})
				for _, ps := range []*schemas.PointSummary{&a, &b} {
					ps.Methods[1].KLJoint = schemas.Dist{}
				}
				return []schemas.PointSummary{a, b}
			}(),
			[]string{bits}, []int{6}, []string{"2, 4"}, nil, []string{"—"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := schemas.Summary{Pipeline: "sweep", Points: tt.points}
			fams, warnings := ladderFamilies(sum, nil)
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			if len(fams) != len(tt.families) {
				t.Fatalf("%d families, want %d", len(fams), len(tt.families))
			}
			for i, f := range fams {
				if f.Name != tt.families[i] || len(f.Rows) != tt.rows[i] || f.Dims != tt.dims[i] {
					t.Errorf("family %d: %q, %d rows at D = %s; want %q, %d rows at D = %s", i, f.Name, len(f.Rows), f.Dims,
						tt.families[i], tt.rows[i], tt.dims[i])
				}
				if tt.noFigure {
					if f.Figure != "" {
						t.Errorf("family %s: a figure with nothing positive to draw", f.Name)
					}
					continue
				}
				wellFormed(t, string(f.Figure))
			}
			if len(fams) > 0 {
				flat := strings.ReplaceAll(string(fams[0].Figure), " ", "")
				for _, l := range tt.labels {
					if !strings.Contains(flat, strings.ReplaceAll(l, " ", "")) {
						t.Errorf("the figure does not label %s", l)
					}
				}
				var cells []string
				for _, r := range fams[0].Rows {
					if strings.Contains(r.Options, "train_grid") {
						t.Errorf("%s's options show an option that does not apply: %s", r.Method, r.Options)
					}
					cells = append(cells, r.Options, r.Excess, r.Marg, r.Acc, r.AUROC, r.CPU)
				}
				for _, c := range tt.cells {
					if !strings.Contains(strings.Join(cells, "|"), c) {
						t.Errorf("the table has no cell %q: %v", c, cells)
					}
				}
			}

			files, err := Render(Input{Title: "ladder", Summary: sum})
			if err != nil {
				t.Fatal(err)
			}
			html := string(files["report.html"])
			if got, want := strings.Contains(html, "Dimension ladder"), len(tt.families) > 0; got != want {
				t.Fatalf("the report has the ladder section: %v, want %v", got, want)
			}
			for _, f := range tt.families {
				if !strings.Contains(html, "<h3>"+f) {
					t.Errorf("the report has no ladder heading for %s", f)
				}
			}
			if strings.Contains(html, "could not be drawn") {
				t.Error("the report warns of a figure that could not be drawn")
			}
		})
	}
}

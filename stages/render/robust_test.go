package render

import (
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestRobustTable: the 2-D robustness table shows a 2-D point's promise means, and is
// absent for a point without them.
func TestRobustTable(t *testing.T) {
	d := func(v float64) schemas.Dist { return schemas.Dist{Count: 4, Mean: v, Median: v, P10: v, P90: v} }
	m := schemas.MethodSummary{Method: "jem", Runs: 4, KLJoint: d(0.05), AUROCPxGrad: d(0.531), ECE: d(0.0171),
		AccClean: d(0.878), AccAttacked: d(0.669), AccPurified: d(0.693), AccBayesPurified: d(0.692), SamplesTVNoise: d(0.177)}
	twoD := schemas.PointSummary{Params: schemas.Grid{Task: "gmm:3,2"}, Tables: 4, Methods: []schemas.MethodSummary{m}}
	for _, tt := range []struct {
		name string
		ps   schemas.PointSummary
		want bool
	}{
		{"2-D point", twoD, true},
		{"table point", schemas.PointSummary{Params: schemas.Grid{Task: "table"}, Tables: 4,
			Methods: []schemas.MethodSummary{{Method: "jem", Runs: 4, KLJoint: d(0.05)}}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files, err := Render(Input{Title: "t", Summary: schemas.Summary{Points: []schemas.PointSummary{tt.ps}}})
			if err != nil {
				t.Fatal(err)
			}
			html := string(files["report.html"])
			if got := strings.Contains(html, "Beyond the joint on 2-D tasks"); got != tt.want {
				t.Fatalf("robustness table shown = %v, want %v", got, tt.want)
			}
			for _, v := range []string{"0.531", "0.669", "0.693", "0.692", "0.177"} {
				if tt.want && !strings.Contains(html, v) {
					t.Errorf("report lacks %s", v)
				}
			}
		})
	}
}

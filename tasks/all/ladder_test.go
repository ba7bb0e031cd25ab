package all

import (
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestLadder: every kind says a point's dimension and its family (the task with the
// dimension taken out), so the points of one task at several dimensions share a family
// and the report's dimension ladder never asks which kind it holds.
func TestLadder(t *testing.T) {
	tests := []struct {
		name   string
		g      schemas.Grid
		dim    int
		family string
	}{
		{"table", schemas.Grid{Task: "table", XValues: 4, Classes: 2}, 0, ""},
		{"gmm 2-D task", schemas.Grid{Task: "gmm:3,2"}, 2, "gmm:3,2"},
		{"moons 2-D task", schemas.Grid{Task: "moons:0.1"}, 2, "moons:0.1"},
		{"bits D=2", schemas.Grid{Task: "bits:2,2", Components: 3}, 2, "bits:·,2 (3 components)"},
		{"bits D=16", schemas.Grid{Task: "bits:16,2", Components: 3}, 16, "bits:·,2 (3 components)"},
		{"bits one component", schemas.Grid{Task: "bits:4,5", Components: 1}, 4, "bits:·,5 (1 component)"},
		{"one block", schemas.Grid{Task: "blocks:1,gmm:3,2"}, 2, "blocks:·,gmm:3,2"},
		{"sixteen blocks", schemas.Grid{Task: "blocks:16, gmm:3,2"}, 32, "blocks:·,gmm:3,2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tasks.Point{Grid: tt.g}
			k := tasks.MustOf(p.Task)
			if got := k.Dimension(p); got != tt.dim {
				t.Errorf("Dimension = %d, want %d", got, tt.dim)
			}
			if got := k.Family(p); got != tt.family {
				t.Errorf("Family = %q, want %q", got, tt.family)
			}
		})
	}
}

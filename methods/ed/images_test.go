package ed

import (
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestImagesHook: the images hook sets cnn.ED with the point's options (w = 0 as
// 1e-30) and refuses bad ones.
func TestImagesHook(t *testing.T) {
	h, ok := methods.Images.Of(Name)
	if !ok {
		t.Fatal("no images hook")
	}
	g := schemas.DefaultGrid()
	g.EDNegatives, g.EDT, g.EDW, g.PxWeight = 8, 0.05, 0, 0.5
	var o cnn.TrainOptions
	if err := h(g, &o); err != nil {
		t.Fatal(err)
	}
	if o.Objective != (cnn.ED{M: 8, T: 0.05, W: 1e-30}) || o.PxWeight != 0.5 {
		t.Errorf("options %+v", o)
	}
	for _, bad := range []func(*schemas.Grid){
		func(g *schemas.Grid) { g.EDNegatives = 0 },
		func(g *schemas.Grid) { g.EDT = -1 },
		func(g *schemas.Grid) { g.PxWeight = 0 },
	} {
		g := schemas.DefaultGrid()
		bad(&g)
		if err := h(g, &cnn.TrainOptions{}); err == nil || !strings.Contains(err.Error(), "must be") {
			t.Errorf("error %v", err)
		}
	}
}

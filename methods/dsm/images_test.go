package dsm

import (
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestImagesHook: the images hook sets cnn.DSM with the point's dsm_sigma and refuses
// dsm_h, which the exact DSM does not read.
func TestImagesHook(t *testing.T) {
	h, ok := methods.Images.Of(Name)
	if !ok {
		t.Fatal("no images hook")
	}
	set := func(key string, v any) schemas.Grid {
		g := schemas.DefaultGrid()
		a, ok := schemas.AxisByKey(key)
		if !ok {
			t.Fatalf("no axis %s", key)
		}
		a.Field.Set(&g, v)
		return g
	}
	var o cnn.TrainOptions
	if err := h(set("dsm_sigma", 0.1), &o); err != nil {
		t.Fatal(err)
	}
	if o.Objective != (cnn.DSM{Sigma: 0.1}) || o.PxWeight != 1 {
		t.Errorf("options %+v", o)
	}
	if err := h(set("dsm_h", 0.5), &o); err == nil || !strings.Contains(err.Error(), "dsm_h does not apply") {
		t.Errorf("dsm_h: error %v", err)
	}
}

package nce

import (
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestImagesHook: the images hook sets cnn.NCE with the point's nce_nu and nce_inflate
// and refuses the uniform noise.
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
	if err := h(set("nce_nu", 4), &o); err != nil {
		t.Fatal(err)
	}
	if o.Objective != (cnn.NCE{Nu: 4, Inflate: 1}) || o.PxWeight != 1 {
		t.Errorf("options %+v", o)
	}
	if err := h(set("nce_noise", NoiseUniform), &o); err == nil || !strings.Contains(err.Error(), "does not apply on images") {
		t.Errorf("uniform noise: error %v", err)
	}
	if err := h(set("nce_nu", 0), &o); err == nil {
		t.Error("nce_nu 0 accepted")
	}
}

package sgld

import (
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestValidate: the presets and the float32 range of the kernels' step and noise.
func TestValidate(t *testing.T) {
	ok := schemas.Grid{SGLDPreset: "official", SGLDLR: 1, SGLDSteps: 20, BufferSize: 100, ReinitFreq: 0.05}
	for _, tt := range []struct {
		name string
		edit func(g *schemas.Grid)
		want string
	}{
		{"defaults", func(*schemas.Grid) {}, ""},
		{"jempp", func(g *schemas.Grid) { g.SGLDPreset = "jempp" }, ""},
		{"unknown preset", func(g *schemas.Grid) { g.SGLDPreset = "fast" }, `sgld_preset: unknown preset "fast"`},
		{"lr over float32", func(g *schemas.Grid) { g.SGLDLR = 1e39 }, "sgld_lr: 1e+39 is outside the range of float32"},
		{"std under float32", func(g *schemas.Grid) { g.SGLDStd = 1e-50 }, "sgld_std: 1e-50 is outside the range of float32"},
		{"negative steps", func(g *schemas.Grid) { g.SGLDSteps = -1 }, "sgld_steps must be in [0, 10000]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := ok
			tt.edit(&g)
			err := validate(g)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPresets: each preset's kernel options (jempp: 5 steps from the class-wise start).
func TestPresets(t *testing.T) {
	for preset, want := range map[string][2]float32{"official": {20, 0.01}, "langevin": {20, 1.4142135}, "noisefree": {20, 0}, "jempp": {5, 0.01}} {
		o := Options(schemas.Grid{SGLDPreset: preset, SGLDLR: 1, SGLDSteps: 20, BufferSize: 100})
		if float32(o.Steps) != want[0] || o.Std != want[1] || o.Informative != (preset == "jempp") {
			t.Errorf("%s: %+v, want steps %v std %v", preset, o, want[0], want[1])
		}
	}
}

// TestImagesPresets: on images the presets reach the CNN's sampler: jempp's 5 steps
// from the class-wise Gaussians, noisefree's zero noise (1e-30: cnn reads 0 as its
// default), official's 20 steps of noise 0.01 from uniform noise.
func TestImagesPresets(t *testing.T) {
	h, _ := methods.Images.Of(Name)
	for _, c := range []struct {
		preset      string
		steps       int
		std         float64
		informative bool
	}{
		{"official", 20, 0.01, false},
		{"noisefree", 20, 1e-30, false},
		{"jempp", 5, 0.01, true},
	} {
		g := schemas.DefaultGrid()
		g.SGLDPreset = c.preset
		var o cnn.TrainOptions
		if err := h(g, &o); err != nil {
			t.Fatal(err)
		}
		k, ok := o.Objective.(cnn.SGLD)
		if !ok || k.Steps != c.steps || math.Abs(k.Std-c.std) > 1e-9 || k.Informative != c.informative {
			t.Errorf("%s: %+v", c.preset, o.Objective)
		}
	}
}

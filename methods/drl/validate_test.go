package drl

import (
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestValidate: options whose chains the float32 kernels cannot run are refused with
// one message naming them, before anything runs (review: drl_sigma=1e308, 1e-320 and
// drl_step=1e-320 passed validation and failed inside training with the kernel's
// message, "Chain2D: need a finite step ...", "... needs noise (std > 0)").
func TestValidate(t *testing.T) {
	cases := []struct {
		name        string
		sigma, step float64
		want        string // in the error; "" when valid
	}{
		{"defaults", defaults.Sigma, defaults.Step, ""},
		{"large but usable", 1e15, 1, ""},
		{"small but usable", 1e-15, 1e-6, ""},
		{"sigma 1e308", 1e308, defaults.Step, "drl_sigma: 1e+308 is outside the range of float32"},
		{"sigma 1e-320", 1e-320, defaults.Step, "drl_sigma: 1e-320 is outside the range of float32"},
		{"step 1e-320", defaults.Sigma, 1e-320, "drl_sigma=0.5, drl_step=1e-320: the Langevin step"},
		{"step overflows float32", 1e20, 1, "drl_sigma=1e+20, drl_step=1: the Langevin step b²σ²/2 = 5e+39"},
		{"step underflows float32", 1e-30, 1e-30, "the Langevin step"},
		{"sigma beyond its range", -1, defaults.Step, "drl_sigma must be in (0, +Inf)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g schemas.Grid
			for key, v := range map[string]any{"drl_sigma": c.sigma, "drl_step": c.step, "drl_steps": defaults.Steps, "drl_mh": true} {
				a, ok := schemas.AxisByKey(key)
				if !ok {
					t.Fatalf("no axis %s", key)
				}
				a.Field.Set(&g, v)
			}
			err := methods.CheckOptions([]string{Name}, g)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("CheckOptions = %v, want %q", err, c.want)
			}
		})
	}
}

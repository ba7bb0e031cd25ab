package render

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// TestTickLabels: every labelled tick of the report's axes reads as the short decimal
// it stands for (0.6, not 0.6000000000000001 as the lb-mini histogram showed; 0, not
// 5.551115123125783e-17 or 0.00), and its label is its value.
func TestTickLabels(t *testing.T) {
	tests := []struct {
		name     string
		ticker   plot.Ticker
		min, max float64
	}{
		{"log, within a decade (the lb-mini histogram)", logTicks{}, 0.5, 0.8},
		{"log, hundredths", logTicks{}, 0.03, 0.09},
		{"log, 1-2-5 over decades", logTicks{}, 0.1, 100},
		{"log, tiny", logTicks{}, 2e-7, 9e-7},
		{"log, narrower than a step", logTicks{}, 0.61, 0.63},
		{"linear, shares", roundedTicks{}, 0, 0.7},
		{"linear, tenths", roundedTicks{}, 0.1, 0.35},
		{"linear, zero by round-off", roundedTicks{}, -1e-17, 1},
		{"linear, negative", roundedTicks{}, -0.3, 0.3},
		{"linear, large", roundedTicks{}, 0, 3e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labelled := 0
			for _, tk := range tt.ticker.Ticks(tt.min, tt.max) {
				if tk.Label == "" {
					continue
				}
				labelled++
				v, err := strconv.ParseFloat(strings.Replace(tk.Label, "−", "-", 1), 64)
				if err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(math.Abs(tk.Value), tt.max-tt.min) {
					t.Errorf("tick %v labelled %q (%v)", tk.Value, tk.Label, err)
				}
				if len(tk.Label) > 6 || strings.Contains(tk.Label, "0000") || tk.Label == "-0" {
					t.Errorf("tick %v labelled %q: not a rounded %%g-style label", tk.Value, tk.Label)
				}
			}
			if labelled < 2 {
				t.Errorf("%d labelled ticks on [%g, %g]", labelled, tt.min, tt.max)
			}
		})
	}
}

package cnn

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLoadONNX runs testdata/tiny.onnx (exported by torch 1.13, testdata/make_tiny_onnx.py)
// through onnx-gomlx and compares the logits with torch's.
func TestLoadONNX(t *testing.T) {
	raw, err := os.ReadFile("testdata/tiny_expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	parse := func(s string) []float32 {
		var out []float32
		for _, f := range strings.Fields(s) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, float32(v))
		}
		return out
	}
	x, want := parse(lines[0]), parse(lines[1])
	m, err := LoadONNX("testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if m.PerExample != 64 {
		t.Fatalf("PerExample %d, want 64", m.PerExample)
	}
	for _, tc := range []struct {
		name string
		n    int
	}{{"batch2", 2}, {"batch1", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Logits(x[:tc.n*64], tc.n)
			if err != nil {
				t.Fatal(err)
			}
			var maxD float64
			for i := range got {
				maxD = max(maxD, math.Abs(float64(got[i]-want[i])))
			}
			t.Logf("max |onnx-gomlx - torch| logit: %.2g", maxD)
			if len(got) != tc.n*3 || maxD > 1e-5 {
				t.Errorf("logits %v, want %v", got, want[:tc.n*3])
			}
		})
	}
	if _, err := m.Logits(x[:10], 1); err == nil {
		t.Error("wrong input size: no error")
	}
	if _, err := LoadONNX("testdata/missing.onnx"); err == nil {
		t.Error("missing file: no error")
	}
}

package cnn

import (
	"math"
	"os"
	"slices"
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

// TestONNXEnergy: ONNXModel.Energy's LSE equals the LSE of Logits, and its input
// gradient (GoMLX autodiff through the onnx-gomlx graph, with the Reverse, Pad and
// Pad-gradient fallbacks of onnxgrad.go) matches central finite differences of the LSE
// on every pixel of three images of testdata/tiny.onnx (valid conv, tanh, reshape-mean
// pooling). On testdata/torchcnn-8x2.onnx (a CNN as a user writes it: "same" convs, relu,
// tanh, F.avg_pool2d exported with Pad, a linear head; scripts/export-onnx-cnn.py
// torchcnn) the logits are torch's and the input gradient torch's autograd one (relu's
// kinks make finite differences there unreliable).
func TestONNXEnergy(t *testing.T) {
	checkONNXEnergy(t, "testdata/tiny.onnx")
	raw, err := os.ReadFile("testdata/torchcnn-8x2_expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	var v [3][]float32 // the input (2 images), torch's logits, torch's input gradient of Σ LSE
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		for _, f := range strings.Fields(line) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			v[i] = append(v[i], float32(x))
		}
	}
	m, err := LoadONNX("testdata/torchcnn-8x2.onnx")
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Logits(v[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	_, dx, err := m.Energy(v[0], 2, true)
	if err != nil {
		t.Fatal(err)
	}
	var dl, dg, maxG float64
	for i := range v[1] {
		dl = max(dl, math.Abs(float64(logits[i]-v[1][i])))
	}
	for i := range v[2] {
		dg = max(dg, math.Abs(float64(dx[i]-v[2][i])))
		maxG = max(maxG, math.Abs(float64(v[2][i])))
	}
	t.Logf("torchcnn-8x2: max |logit − torch's| %.2g, max |gradient − torch autograd's| %.2g (largest %.3g)", dl, dg, maxG)
	if len(logits) != len(v[1]) || len(dx) != len(v[2]) || dl > 1e-5 || dg > 1e-4*maxG {
		t.Errorf("torchcnn-8x2: logits %v (torch %v), gradient off by %.2g of %.3g", logits, v[1], dg, maxG)
	}
}

func checkONNXEnergy(t *testing.T, file string) {
	m, err := LoadONNX(file)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	x := make([]float32, n*m.PerExample)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.7)) * 0.8
	}
	lse, dx, err := m.Energy(x, n, true)
	if err != nil {
		t.Fatal(err)
	}
	lse0, dx0, err := m.Energy(x, n, false)
	if err != nil || dx0 != nil {
		t.Fatalf("without the gradient: %v, gradient %v", err, dx0)
	}
	if len(lse) != n || len(dx) != len(x) {
		t.Fatalf("%d LSEs and %d gradient values, want %d and %d", len(lse), len(dx), n, len(x))
	}
	for i := range n {
		if d := math.Abs(float64(lse[i] - lse0[i])); d > 1e-5 {
			t.Errorf("image %d: LSE %v by the gradient graph, %v from the logits", i, lse[i], lse0[i])
		}
	}
	const h = 1e-2
	var maxErr, maxG, diff2, fd2 float64
	for j := range x {
		maxG = max(maxG, math.Abs(float64(dx[j])))
	}
	for j := range x {
		xp, xm := slices.Clone(x), slices.Clone(x)
		xp[j] += h
		xm[j] -= h
		lp, _, err1 := m.Energy(xp, n, false)
		lm, _, err2 := m.Energy(xm, n, false)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		i := j / m.PerExample
		fd := (float64(lp[i]) - float64(lm[i])) / (2 * h)
		d := fd - float64(dx[j])
		diff2 += d * d
		fd2 += fd * fd
		maxErr = max(maxErr, math.Abs(d)/maxG)
	}
	rel := math.Sqrt(diff2 / fd2)
	t.Logf("autodiff vs finite differences (h = %g, float32) over %d pixels: ‖g − fd‖/‖fd‖ %.2g, max |g − fd| %.2g of the largest |g| (%.3g)",
		h, len(x), rel, maxErr, maxG)
	if rel > 1e-2 || maxErr > 5e-2 {
		t.Errorf("the input gradient is not the finite differences': ‖g − fd‖/‖fd‖ %.2g, max |g − fd| %.2g of the largest |g|", rel, maxErr)
	}
	if _, _, err := m.Energy(x[:10], 1, true); err == nil {
		t.Error("wrong input size: no error")
	}
}

package cnn

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestONNXSiLUMaxPool is the known answer of the two ops added to what onnx-gomlx runs:
// testdata/silumaxpool.onnx (scripts/export-onnx-cnn.py silumaxpool: a 4×4 image,
// F.max_pool2d(x, 2), F.silu, logits = W·h + b with W = [[1, 2, 3, 4], [−1, 0, 1, 0]],
// b = [0.5, −0.5]) against the forward computed here by hand, and the input gradient of
// LSE_y f(x)[y] by hand: softmax(f) back through W, SiLU'(u) = σ(u)(1 + u(1 − σ(u))),
// to the first maximum of each 2×2 window (zero elsewhere). Sigmoid is rewritten as
// ½·tanh(½x) + ½ (rewriteOps), and MaxPool's gradient is gradBuilder's
// SelectAndScatterMax.
func TestONNXSiLUMaxPool(t *testing.T) {
	m, err := LoadONNX("testdata/silumaxpool.onnx")
	if err != nil {
		t.Fatal(err)
	}
	W := [2][4]float64{{1, 2, 3, 4}, {-1, 0, 1, 0}}
	b := [2]float64{0.5, -0.5}
	images := map[string][16]float64{
		"distinct":         {0.1, -0.4, 2.0, 0.3, 0.7, 0.2, -1.0, 1.5, -3.0, -2.5, 0.05, 0.06, -2.0, -2.9, 0.07, -0.2},
		"negative":         {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16},
		"ties (first max)": {1, 1, 0, 0, 1, 1, 0, 0, 2, 2, 3, 3, 2, 2, 3, 3},
	}
	for name, img := range images {
		t.Run(name, func(t *testing.T) {
			var h, u [4]float64
			var at [4]int // the window's first maximum, in row-major order
			for w := range 4 {
				r0, c0 := 2*(w/2), 2*(w%2)
				u[w] = math.Inf(-1)
				for _, k := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
					if i := (r0+k[0])*4 + c0 + k[1]; img[i] > u[w] {
						u[w], at[w] = img[i], i
					}
				}
				h[w] = u[w] / (1 + math.Exp(-u[w]))
			}
			var f [2]float64
			for y := range 2 {
				f[y] = b[y]
				for w := range 4 {
					f[y] += W[y][w] * h[w]
				}
			}
			lse := math.Max(f[0], f[1]) + math.Log(math.Exp(f[0]-math.Max(f[0], f[1]))+math.Exp(f[1]-math.Max(f[0], f[1])))
			var want [16]float64
			for w := range 4 {
				dh := 0.0
				for y := range 2 {
					dh += math.Exp(f[y]-lse) * W[y][w]
				}
				s := 1 / (1 + math.Exp(-u[w]))
				want[at[w]] += dh * s * (1 + u[w]*(1-s))
			}
			x := make([]float32, 16)
			for i, v := range img {
				x[i] = float32(v)
			}
			logits, err := m.Logits(x, 1)
			if err != nil {
				t.Fatal(err)
			}
			gotLSE, dx, err := m.Energy(x, 1, true)
			if err != nil {
				t.Fatalf("input gradient: %v", err)
			}
			for y := range 2 {
				if d := math.Abs(float64(logits[y]) - f[y]); d > 1e-5*(1+math.Abs(f[y])) {
					t.Errorf("logit %d = %v, by hand %v", y, logits[y], f[y])
				}
			}
			if d := math.Abs(float64(gotLSE[0]) - lse); d > 1e-5*(1+math.Abs(lse)) {
				t.Errorf("LSE %v, by hand %v", gotLSE[0], lse)
			}
			for i := range 16 {
				if d := math.Abs(float64(dx[i]) - want[i]); d > 1e-5*(1+math.Abs(want[i])) {
					t.Errorf("gradient at pixel %d: %v, by hand %v (all: %v, by hand %v)", i, dx[i], want[i], dx, want)
					break
				}
			}
		})
	}
}

// TestONNXMaxPoolGeneral: the MaxPool gradient's fallback with overlapping windows and
// padding (F.max_pool2d(x, 3, stride=1, padding=1), then sigmoid and F.max_pool2d(·, 2):
// testdata/maxpool3-8x2.onnx, scripts/export-onnx-cnn.py maxpool3 --expected) against
// torch's logits and its autograd input gradient of LSE_y f(x)[y].
func TestONNXMaxPoolGeneral(t *testing.T) {
	raw, err := os.ReadFile("testdata/maxpool3-8x2_expected.txt")
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
	m, err := LoadONNX("testdata/maxpool3-8x2.onnx")
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Logits(v[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	_, dx, err := m.Energy(v[0], 2, true)
	if err != nil {
		t.Fatalf("input gradient: %v", err)
	}
	var dl, dg, maxG float64
	nonzero := 0
	for i := range v[1] {
		dl = max(dl, math.Abs(float64(logits[i]-v[1][i])))
	}
	for i := range v[2] {
		dg = max(dg, math.Abs(float64(dx[i]-v[2][i])))
		maxG = max(maxG, math.Abs(float64(v[2][i])))
		if v[2][i] != 0 {
			nonzero++
		}
	}
	t.Logf("maxpool3-8x2: max |logit − torch's| %.2g, max |gradient − torch autograd's| %.2g (largest %.3g, %d of %d pixels nonzero)",
		dl, dg, maxG, nonzero, len(v[2]))
	if len(logits) != len(v[1]) || len(dx) != len(v[2]) || dl > 1e-5 || dg > 1e-4*maxG || nonzero == 0 {
		t.Errorf("maxpool3-8x2: logits %v (torch %v), gradient off by %.2g of %.3g", logits, v[1], dg, maxG)
	}
}

// TestUnsupportedOp: an op the importer lacks is named with the PyTorch layer that
// exports it and the replacement; a model holding one is refused before it is compiled
// (testdata/leaky-8x2.onnx ends in F.leaky_relu).
func TestUnsupportedOp(t *testing.T) {
	cases := []struct {
		name, op string
		want     []string
	}{
		{"leaky relu", "LeakyRelu", []string{`"LeakyRelu"`, "torch.nn.LeakyReLU", "use torch.nn.ReLU"}},
		{"hard swish", "HardSwish", []string{"torch.nn.Hardswish", "SiLU (supported)"}},
		{"log softmax", "LogSoftmax", []string{"F.log_softmax", "return the raw logits"}},
		{"global max pool", "GlobalMaxPool", []string{"AdaptiveMaxPool2d", "AdaptiveAvgPool2d(1)"}},
		{"reduce sum", "ReduceSum", []string{"torch.sum", "x.mean(dim)"}},
		{"dropout", "Dropout", []string{"net.eval()"}},
		{"gelu", "Gelu", []string{"torch.nn.GELU", "opset_version=13"}},
		{"unknown", "FancyOp", []string{`"FancyOp"`, "supported: Conv"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := UnsupportedOp(c.op)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q: want %q in it", msg, w)
				}
			}
		})
	}
	for op := range opAdvice {
		if convertedOps[op] || rewrittenOps[op] {
			t.Errorf("%s is advised against but converted", op)
		}
	}
	_, err := LoadONNX("testdata/leaky-8x2.onnx")
	if err == nil || !strings.Contains(err.Error(), "torch.nn.LeakyReLU") || !strings.Contains(err.Error(), `node "/LeakyRelu"`) {
		t.Errorf("leaky-8x2.onnx: %v, want a refusal naming torch.nn.LeakyReLU and its node", err)
	}
}

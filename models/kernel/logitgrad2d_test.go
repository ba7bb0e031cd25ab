package kernel

import (
	"math"
	"testing"
)

// TestLogitGrad2D: the class logit is Logits2D's, its gradient matches central
// differences of it, and the softmax-weighted sum of the class gradients is
// EnergyGrad2D's gradient of LSE_y f (the identity ∇ LSE = Σ_y softmax_y ∇ f_y).
func TestLogitGrad2D(t *testing.T) {
	hidden, k := []int{16, 16}, 3
	theta := randTheta2D(31, hidden, k)
	n := 300 // more than one chunk
	x0, x1 := randPoints2D(32, n, 3)
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(i % k)
	}
	f, g0, g1, err := LogitGrad2D(hidden, k, theta, x0, x1, y)
	if err != nil {
		t.Fatal(err)
	}
	lg, _ := Logits2D(hidden, k, theta, x0, x1)
	_, e0, e1, _ := EnergyGrad2D(hidden, k, theta, x0, x1)
	at := func(a, b float32, c int32) float64 {
		v, _ := Logits2D(hidden, k, theta, []float32{a}, []float32{b})
		return float64(v[c])
	}
	for i := range n {
		if f[i] != lg[i*k+int(y[i])] {
			t.Fatalf("point %d: logit %v, Logits2D %v", i, f[i], lg[i*k+int(y[i])])
		}
		const h = 1e-2
		d0 := (at(x0[i]+h, x1[i], y[i]) - at(x0[i]-h, x1[i], y[i])) / (2 * h)
		d1 := (at(x0[i], x1[i]+h, y[i]) - at(x0[i], x1[i]-h, y[i])) / (2 * h)
		if math.Abs(d0-float64(g0[i])) > 1e-2*(1+math.Abs(d0)) || math.Abs(d1-float64(g1[i])) > 1e-2*(1+math.Abs(d1)) {
			t.Errorf("point %d class %d: gradient (%v, %v), central differences (%v, %v)", i, y[i], g0[i], g1[i], d0, d1)
		}
	}
	// Σ_y softmax_y ∇ f_y at the first 50 points, from one call per class.
	m := 50
	var s0, s1 = make([]float64, m), make([]float64, m)
	for c := range int32(k) {
		yc := make([]int32, m)
		for i := range yc {
			yc[i] = c
		}
		_, c0, c1, err := LogitGrad2D(hidden, k, theta, x0[:m], x1[:m], yc)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m {
			row := lg[i*k : (i+1)*k]
			mx := max(row[0], row[1], row[2])
			z := 0.0
			for _, v := range row {
				z += math.Exp(float64(v - mx))
			}
			p := math.Exp(float64(row[c]-mx)) / z
			s0[i] += p * float64(c0[i])
			s1[i] += p * float64(c1[i])
		}
	}
	for i := range m {
		if math.Abs(s0[i]-float64(e0[i])) > 1e-4*(1+math.Abs(s0[i])) || math.Abs(s1[i]-float64(e1[i])) > 1e-4*(1+math.Abs(s1[i])) {
			t.Errorf("point %d: Σ softmax·∇f = (%v, %v), EnergyGrad2D (%v, %v)", i, s0[i], s1[i], e0[i], e1[i])
		}
	}
	if _, _, _, err := LogitGrad2D(hidden, k, theta, x0[:2], x1[:2], []int32{0, 3}); err == nil {
		t.Error("a class outside [0, K): no error")
	}
}

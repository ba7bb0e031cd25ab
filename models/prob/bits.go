package prob

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/internal/avx"
)

// # Binary tables
//
// A binary task's x is a state of {0,1}^D numbered 0..2^D−1 (bit d of the number is
// coordinate d). Its truth is, per class y, a mixture of C product-Bernoulli
// components: p(x,y) = p(y) Σ_c π_yc Π_d θ_ycd^x_d (1−θ_ycd)^(1−x_d), so the joint
// on all 2^D·K cells is exact by enumeration and draws are exact.

// MaxBitsD and MaxBitsComponents bound a binary task.
const (
	MaxBitsD          = 20
	MaxBitsClasses    = 64
	MaxBitsComponents = 64
)

// BitsSpec is a parsed "bits:D,K".
type BitsSpec struct{ D, K int }

// String is the spec's canonical form.
func (s BitsSpec) String() string { return fmt.Sprintf("bits:%d,%d", s.D, s.K) }

// ParseBitsSpec parses "bits:D,K" (1 ≤ D ≤ 20, 2 ≤ K ≤ 64).
func ParseBitsSpec(task string) (BitsSpec, error) {
	arg, ok := strings.CutPrefix(strings.ReplaceAll(task, " ", ""), "bits:")
	if !ok {
		return BitsSpec{}, fmt.Errorf("task %q is not a binary task (want bits:D,K, e.g. bits:10,2)", task)
	}
	ds, ks, ok := strings.Cut(arg, ",")
	if !ok {
		return BitsSpec{}, fmt.Errorf("task %q: want bits:D,K (two integers), e.g. bits:10,2", task)
	}
	d, err := strconv.Atoi(ds)
	if err != nil {
		return BitsSpec{}, fmt.Errorf("task %q: D %q is not an integer", task, ds)
	}
	k, err := strconv.Atoi(ks)
	if err != nil {
		return BitsSpec{}, fmt.Errorf("task %q: K %q is not an integer", task, ks)
	}
	if d < 1 || d > MaxBitsD {
		return BitsSpec{}, fmt.Errorf("task %q: D must be in [1, %d] (2^D states are enumerated), got %d", task, MaxBitsD, d)
	}
	if k < 2 || k > MaxBitsClasses {
		return BitsSpec{}, fmt.Errorf("task %q: K must be in [2, %d], got %d", task, MaxBitsClasses, k)
	}
	return BitsSpec{D: d, K: k}, nil
}

// BitsTask is one binary task's truth.
type BitsTask struct {
	D, K, C int
	Prior   []float64 // p(y) [K]
	Weights []float64 // π_yc [K][C]
	Theta   []float64 // θ_ycd [K][C][D]: P(bit d = 1)
}

// DrawBits draws a binary task: p(y) and each class's π from a symmetric Dirichlet(2),
// each θ from Beta(½, ½) clipped to [0.02, 0.98] (bits mostly near 0 or 1: C sharp
// modes per class, a real task for a sampler).
func DrawBits(seed uint64, d, k, c int) BitsTask {
	rng := NewRand(seed)
	dir := Generator{Kind: "dirichlet", Alpha: 2}
	t := BitsTask{D: d, K: k, C: c, Prior: dir.Draw(rng, k, 1), Weights: make([]float64, 0, k*c), Theta: make([]float64, k*c*d)}
	for range k {
		t.Weights = append(t.Weights, dir.Draw(rng, c, 1)...)
	}
	for i := range t.Theta {
		a, b := math.Exp(logGamma(rng, 0.5)), math.Exp(logGamma(rng, 0.5))
		th := a / (a + b)
		if math.IsNaN(th) {
			th = 0.5
		}
		t.Theta[i] = min(0.98, max(0.02, th))
	}
	return t
}

// LogJoint is log p(x, y) of state x.
func (t BitsTask) LogJoint(x uint32, y int) float64 {
	D, C := t.D, t.C
	m := math.Inf(-1)
	var terms [MaxBitsComponents]float64
	for c := range C {
		l := math.Log(t.Weights[y*C+c])
		th := t.Theta[(y*C+c)*D : (y*C+c+1)*D]
		for d := range D {
			if (x>>d)&1 == 1 {
				l += math.Log(th[d])
			} else {
				l += math.Log1p(-th[d])
			}
		}
		terms[c] = l
		m = max(m, l)
	}
	var s float64
	for _, l := range terms[:C] {
		s += math.Exp(l - m)
	}
	return math.Log(t.Prior[y]) + m + math.Log(s)
}

// Truth is the joint on every cell, row-major [2^D][K], computed by enumeration (the
// components' log-probabilities updated bit by bit along the Gray code, so the cost is
// O(2^D·K·C), not O(2^D·K·C·D)).
func (t BitsTask) Truth() []float64 {
	D, K, C := t.D, t.K, t.C
	n := 1 << D
	out := make([]float64, n*K)
	// logc[y*C+c] = log π + Σ_d log P(x_d) at the current state; start at x = 0.
	logc := make([]float64, K*C)
	for i := range logc {
		logc[i] = math.Log(t.Weights[i])
		for d := range D {
			logc[i] += math.Log1p(-t.Theta[i*D+d])
		}
	}
	flip := make([]float64, K*C*D) // log θ − log(1−θ)
	for i, th := range t.Theta {
		flip[i] = math.Log(th) - math.Log1p(-th)
	}
	var x uint32
	for g := range n {
		if g%4096 == 0 {
			avx.ClearUpper() // after the allocations, and now and then: see package avx
		}
		if g > 0 { // Gray code: state g^(g>>1) differs from the last in one bit
			b := bits.TrailingZeros32(uint32(g))
			x ^= 1 << b
			sign := 1.0
			if (x>>b)&1 == 0 {
				sign = -1
			}
			for i := range logc {
				logc[i] += sign * flip[i*D+b]
			}
		}
		for y := range K {
			m := math.Inf(-1)
			for _, l := range logc[y*C : (y+1)*C] {
				m = max(m, l)
			}
			var s float64
			for _, l := range logc[y*C : (y+1)*C] {
				s += math.Exp(l - m)
			}
			out[int(x)*K+y] = t.Prior[y] * math.Exp(m) * s
		}
	}
	return out
}

// Sample draws n exact draws (x, y) of the task.
func (t BitsTask) Sample(seed uint64, n int) (x []uint32, y []int32) {
	rng := NewRand(seed)
	x, y = make([]uint32, n), make([]int32, n)
	for i := range n {
		c := pickWeight(rng, t.Prior)
		k := pickWeight(rng, t.Weights[c*t.C:(c+1)*t.C])
		th := t.Theta[(c*t.C+k)*t.D : (c*t.C+k+1)*t.D]
		var s uint32
		for d, p := range th {
			if rng.Float64() < p {
				s |= 1 << d
			}
		}
		x[i], y[i] = s, int32(c)
	}
	return x, y
}

func pickWeight(rng *rand.Rand, w []float64) int {
	u := rng.Float64()
	for i, v := range w {
		u -= v
		if u < 0 {
			return i
		}
	}
	return len(w) - 1
}

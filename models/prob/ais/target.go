package ais

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Target is an unnormalised log density log f(x) on R^D and its gradient. LogDensity
// writes ∇ log f(x) into grad when grad is non-nil (len D) and returns log f(x); −Inf
// marks a point outside the support. The AIS calls it from several goroutines at once
// (on different x and grad), so it must be safe for concurrent use.
type Target interface {
	Dim() int
	LogDensity(x, grad []float64) float64
}

// BatchTarget is a Target evaluated n points at a time: x is n×D row-major, out gets
// the n values of log f and grad (n×D, or nil) their gradients. A neural network
// evaluates a batch much faster than n single points. The AIS uses LogDensityBatch
// whenever the Target it is given also implements BatchTarget (FromBatch wraps one).
// Like Target it must be safe for concurrent use; each call gets its own buffers.
// Row i's values must depend on row i alone (not on n or the other rows), or the
// results depend on how the chains are blocked (Options.Block).
type BatchTarget interface {
	Dim() int
	LogDensityBatch(x []float64, n int, out []float64, grad []float64)
}

// AsBatch is t as a BatchTarget: t itself where it implements one, else a loop over
// LogDensity.
func AsBatch(t Target) BatchTarget {
	if b, ok := t.(BatchTarget); ok {
		return b
	}
	return loopBatch{t}
}

type loopBatch struct{ Target }

func (l loopBatch) LogDensityBatch(x []float64, n int, out, grad []float64) {
	d := l.Dim()
	for i := range n {
		var g []float64
		if grad != nil {
			g = grad[i*d : (i+1)*d]
		}
		out[i] = l.LogDensity(x[i*d:(i+1)*d], g)
	}
}

// FromBatch is b as a Target that also implements BatchTarget (the AIS then evaluates
// its chains in blocks through b); its LogDensity is a batch of one.
func FromBatch(b BatchTarget) Target {
	if t, ok := b.(Target); ok {
		return t
	}
	return batchTarget{b}
}

type batchTarget struct{ BatchTarget }

func (b batchTarget) LogDensity(x, grad []float64) float64 {
	var out [1]float64
	b.LogDensityBatch(x, 1, out[:], grad)
	return out[0]
}

// Base is AIS's starting distribution p₀: a normalised density on R^D with exact draws.
// AIS is unbiased (E[Ẑ] = Z forward, E[1/Ẑ] = 1/Z reverse) for any Base whose
// LogDensity is exactly normalised and whose Sample draws exactly from it; how well it
// covers the target only moves the variance. Gaussian (diagonal, FitBase) and
// MixtureBase (a mixture of diagonal Gaussians, FitMixtureBase) are the two here. A Base
// is also a Target, so AIS from a Base to itself gives log Ẑ = 0 exactly. It must be
// safe for concurrent use (it is only read).
type Base interface {
	Dim() int
	// LogDensity is log p₀(x), normalised, and its gradient into grad when non-nil.
	LogDensity(x, grad []float64) float64
	// Sample writes an exact draw of p₀ into x (len D).
	Sample(rng *rand.Rand, x []float64)
	// Scale is the per-coordinate length scale that preconditions the HMC/MALA
	// kernels (mass matrix diag(1/Scale²)); positive and finite. The caller does not
	// modify it.
	Scale() []float64
}

// Gaussian is a normalised diagonal Gaussian N(Mean, diag(SD²)), the simplest Base:
// exact draws and log density. Typically fitted to data by the caller (FitBase) so that
// it covers the target's mass.
type Gaussian struct {
	Mean, SD []float64
	logNorm  float64   // −Σ log SD − (D/2) log 2π
	prec     []float64 // 1/SD²
}

// NewBase is the Gaussian N(mean, diag(sd²)); every sd must be positive and finite.
func NewBase(mean, sd []float64) (*Gaussian, error) {
	if len(mean) != len(sd) || len(mean) == 0 {
		return nil, fmt.Errorf("ais: base mean has %d coordinates, sd %d", len(mean), len(sd))
	}
	b := &Gaussian{Mean: append([]float64(nil), mean...), SD: append([]float64(nil), sd...), prec: make([]float64, len(sd))}
	b.logNorm = -0.5 * float64(len(sd)) * math.Log(2*math.Pi)
	for j, s := range sd {
		if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(mean[j]) || math.IsInf(mean[j], 0) {
			return nil, fmt.Errorf("ais: base coordinate %d: mean %v, sd %v", j, mean[j], s)
		}
		b.logNorm -= math.Log(s)
		b.prec[j] = 1 / (s * s)
	}
	return b, nil
}

// FitBase is the diagonal Gaussian with the per-coordinate mean and standard deviation
// of the n = len(data)/d rows of data (row-major), each sd inflated by the factor
// inflate (≤ 0: 1; a little above 1 keeps the base's tails over the target's) and
// floored at 1e-6 times the largest (and at 1e-12).
func FitBase(data []float64, d int, inflate float64) (*Gaussian, error) {
	if d <= 0 || len(data) < 2*d || len(data)%d != 0 {
		return nil, fmt.Errorf("ais: FitBase needs at least 2 rows of %d, got %d values", d, len(data))
	}
	mean, sd := meanSD(data, d, inflate)
	return NewBase(mean, sd)
}

// meanSD is the per-coordinate mean and sd (n − 1 denominator) of the rows of data,
// each sd times inflate (≤ 0: 1) and floored at 1e-6 times the largest and at 1e-12.
func meanSD(data []float64, d int, inflate float64) (mean, sd []float64) {
	if !(inflate > 0) {
		inflate = 1
	}
	n := len(data) / d
	mean = make([]float64, d)
	sd = make([]float64, d)
	for i := range n {
		for j, v := range data[i*d : (i+1)*d] {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for i := range n {
		for j, v := range data[i*d : (i+1)*d] {
			sd[j] += (v - mean[j]) * (v - mean[j])
		}
	}
	top := 0.0
	for j := range sd {
		sd[j] = inflate * math.Sqrt(sd[j]/float64(max(1, n-1)))
		top = max(top, sd[j])
	}
	for j := range sd {
		sd[j] = max(sd[j], 1e-6*top, 1e-12)
	}
	return mean, sd
}

// Dim is D.
func (b *Gaussian) Dim() int { return len(b.Mean) }

// Scale is SD.
func (b *Gaussian) Scale() []float64 { return b.SD }

// LogDensity is log N(x; Mean, diag(SD²)), its gradient −(x − Mean)/SD² into grad
// when non-nil.
func (b *Gaussian) LogDensity(x, grad []float64) float64 {
	s := 0.0
	for j, v := range x {
		r := v - b.Mean[j]
		s += r * r * b.prec[j]
		if grad != nil {
			grad[j] = -r * b.prec[j]
		}
	}
	return b.logNorm - 0.5*s
}

// Sample writes an exact draw into x (len D).
func (b *Gaussian) Sample(rng *rand.Rand, x []float64) {
	for j := range x {
		x[j] = b.Mean[j] + b.SD[j]*rng.NormFloat64()
	}
}

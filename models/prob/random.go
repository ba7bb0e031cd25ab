package prob

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
)

const golden = 0x9e3779b97f4a7c15

// mix64 is the SplitMix64 finaliser: a bijection on uint64 with good avalanche.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Seed deterministically mixes its parts into one seed, SplitMix64-style. It depends
// on the order and the number of the parts, so Seed(run, table, SeedString("jem"))
// differs from Seed(run, table) and from Seed(table, run).
func Seed(parts ...uint64) uint64 {
	h := uint64(0x6a09e667f3bcc909)
	for _, p := range parts {
		h = mix64(h + golden)
		h = mix64(h ^ p)
	}
	return mix64(h ^ uint64(len(parts)))
}

// SeedString hashes a string (a method name, say) to a seed part with 64-bit FNV-1a.
func SeedString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// NewRand returns a PCG generator seeded from seed. Equal seeds give equal streams.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, mix64(seed^golden)))
}

// pcg is math/rand/v2's PCG (128-bit LCG state, DXSM output) with NewRand's seeding,
// as a concrete type whose methods inline into a hot loop (a *rand.Rand calls its
// source through an interface on every draw). TestPCGMatchesRand holds its stream and
// intN to math/rand/v2's.
type pcg struct{ hi, lo uint64 }

func newPCG(seed uint64) pcg { return pcg{seed, mix64(seed ^ golden)} }

func (p *pcg) uint64() uint64 {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(p.lo, mulLo)
	hi += p.hi*mulLo + p.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, c)
	p.lo, p.hi = lo, hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	hi *= lo | 1
	return hi
}

// intN is rand.Rand.IntN(n) on a 64-bit platform for 0 < n < 2^63: Lemire's
// multiply-and-reject, as math/rand/v2's uint64n.
func (p *pcg) intN(n uint64) uint64 {
	if n&(n-1) == 0 {
		return p.uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(p.uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(p.uint64(), n)
		}
	}
	return hi
}

// Binomial draws exactly from Binomial(n, p). It uses inversion (sequential search)
// when n·min(p, 1−p) < 10, and Hörmann's BTRS transformed rejection (1993) otherwise,
// so its expected cost is O(1) for n ≤ 2^52 (larger n are split into halves, all
// arithmetic on counts staying exact in float64). n ≤ 0 or p ≤ 0 gives 0, p ≥ 1 gives n;
// NaN p panics.
func Binomial(rng *rand.Rand, n int64, p float64) int64 {
	if math.IsNaN(p) {
		panic("prob: Binomial with NaN p")
	}
	if n <= 0 || p <= 0 {
		return 0
	}
	if p >= 1 {
		return n
	}
	if p > 0.5 {
		return n - binomialLow(rng, n, 1-p)
	}
	return binomialLow(rng, n, p)
}

// maxDirect is the largest n drawn in one go: below 2^53 every count is exact in a
// float64. Larger n are split into independent halves.
const maxDirect = 1 << 52

// binomialLow draws Binomial(n, p) for 0 < p ≤ 0.5.
func binomialLow(rng *rand.Rand, n int64, p float64) int64 {
	if n > maxDirect {
		h := n / 2
		return binomialLow(rng, h, p) + binomialLow(rng, n-h, p)
	}
	if float64(n)*p < 10 {
		return binomialInversion(rng, n, p)
	}
	return binomialBTRS(rng, n, p)
}

// binomialInversion is sequential-search inversion, for n·p < 10 and p ≤ 0.5. The
// search is cut at a bound beyond which the probability mass is below 1e-15 (as in
// Kachitvichyanukul and Schmeiser's BINV); a draw that reaches it restarts, which
// also protects against rounding leaving a sliver of u unconsumed.
func binomialInversion(rng *rand.Rand, n int64, p float64) int64 {
	q := 1 - p
	s := p / q
	a := float64(n+1) * s
	r0 := math.Exp(float64(n) * math.Log1p(-p)) // q^n without underflow for n·p < 10
	np := float64(n) * p
	bound := int64(math.Min(float64(n), np+10*math.Sqrt(np*q+1)+10))
	for {
		r := r0
		u := rng.Float64()
		var x int64
		for u > r {
			u -= r
			x++
			if x > bound {
				break
			}
			r *= a/float64(x) - s
		}
		if x <= bound {
			return x
		}
	}
}

// stirlingTail(k) = log(k!) − [(k+½)·log(k+1) − (k+1) + ½·log(2π)], the error of
// Stirling's approximation, for the BTRS acceptance test.
func stirlingTail(k float64) float64 {
	if k < 10 {
		return stirlingSmall[int(k)]
	}
	kp1 := k + 1
	kp1sq := kp1 * kp1
	return (1.0/12 - (1.0/360-1.0/1260/kp1sq)/kp1sq) / kp1
}

var stirlingSmall = func() [10]float64 {
	var t [10]float64
	for k := range t {
		lg, _ := math.Lgamma(float64(k + 1))
		t[k] = lg - (float64(k)+0.5)*math.Log(float64(k+1)) + float64(k+1) - 0.5*math.Log(2*math.Pi)
	}
	return t
}()

// binomialLogRatio computes k ↦ log(f(k)/f(m)), f the Binomial(n, p) pmf and
// m = ⌊(n+1)p⌋ its mode, by Stirling's formula with exact tails, written around the mode
// so that no large logarithms cancel: with δ = k − m,
//
//	δ·log((n−m+1)p / ((m+1)q)) − (k+½)·log(1 + δ/(m+1)) − (n−k+½)·log(1 − δ/(n−m+1))
//	+ tail(m) + tail(n−m) − tail(k) − tail(n−k).
type binomialLogRatio struct{ nf, m, lmode, tails float64 }

func newBinomialLogRatio(nf, p float64) binomialLogRatio {
	q := 1 - p
	m := math.Floor((nf + 1) * p)
	return binomialLogRatio{
		nf: nf,
		m:  m,
		// log((n−m+1)p / ((m+1)q)) = log1p(((n+2)p − (m+1)) / ((m+1)q)), close to 0.
		lmode: math.Log1p(((nf+2)*p - (m + 1)) / ((m + 1) * q)),
		tails: stirlingTail(m) + stirlingTail(nf-m),
	}
}

func (r binomialLogRatio) at(kf float64) float64 {
	d := kf - r.m
	return d*r.lmode -
		(kf+0.5)*math.Log1p(d/(r.m+1)) -
		(r.nf-kf+0.5)*math.Log1p(-d/(r.nf-r.m+1)) +
		r.tails - stirlingTail(kf) - stirlingTail(r.nf-kf)
}

// binomialBTRS is Hörmann's BTRS (transformed rejection with squeeze), valid for
// p ≤ 0.5 and n·p ≥ 10. The acceptance test compares with log f(k)/f(m), m the mode,
// written with Stirling tails and log1p so it keeps its precision up to n = 2^52.
func binomialBTRS(rng *rand.Rand, n int64, p float64) int64 {
	nf := float64(n)
	q := 1 - p
	spq := math.Sqrt(nf * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	logRatio := newBinomialLogRatio(nf, p)
	for {
		u := rng.Float64() - 0.5
		v := rng.Float64()
		us := 0.5 - math.Abs(u)
		kf := math.Floor((2*a/us+b)*u + c)
		if !(kf >= 0 && kf <= nf) { // also rejects NaN and ±Inf when us = 0
			continue
		}
		if us >= 0.07 && v <= vr {
			return int64(kf)
		}
		v = math.Log(v * alpha / (a/(us*us) + b))
		if v <= logRatio.at(kf) {
			return int64(kf)
		}
	}
}

// Multinomial draws counts of n i.i.d. draws over the cells of p, by sequential
// conditional binomials: cell i gets Binomial(n_left, p_i / Σ_{j≥i} p_j). Its cost is
// O(len(p)) expected, independent of n. p need not be normalised but must be finite
// and ≥ 0 with a positive sum; otherwise Multinomial panics.
func Multinomial(rng *rand.Rand, n int64, p []float64) []int64 {
	counts := make([]int64, len(p))
	if n < 0 {
		panic(fmt.Sprintf("prob: Multinomial with n = %d < 0", n))
	}
	// Suffix sums, so that each conditional uses the exact remaining mass.
	rest := make([]float64, len(p)+1)
	last := -1
	for i := len(p) - 1; i >= 0; i-- {
		v := p[i]
		if !(v >= 0) || math.IsInf(v, 0) {
			panic(fmt.Sprintf("prob: Multinomial with p[%d] = %g", i, v))
		}
		if v > 0 && last < 0 {
			last = i
		}
		rest[i] = rest[i+1] + v
	}
	if last < 0 {
		panic("prob: Multinomial with all-zero p")
	}
	left := n
	for i := 0; i < last && left > 0; i++ {
		if p[i] == 0 {
			continue
		}
		c := Binomial(rng, left, p[i]/rest[i])
		counts[i] = c
		left -= c
	}
	counts[last] += left
	return counts
}

// SamplesFromCounts returns the multiset {cell i repeated counts[i] times} in uniformly
// random order (Fisher–Yates). Multinomial followed by SamplesFromCounts is distributed
// exactly as Σcounts i.i.d. draws of cell indices. It panics on a negative count.
func SamplesFromCounts(rng *rand.Rand, counts []int64) []int32 {
	var total int64
	for i, c := range counts {
		if c < 0 {
			panic(fmt.Sprintf("prob: SamplesFromCounts with counts[%d] = %d < 0", i, c))
		}
		total += c
	}
	out := make([]int32, 0, total)
	for i, c := range counts {
		for range c {
			out = append(out, int32(i))
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

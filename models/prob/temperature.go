package prob

import (
	"fmt"
	"math"
)

// The search range of BestTemperature's β: a minimum beyond it returns the bound.
const (
	TemperatureMin = 1e-3
	TemperatureMax = 1e3
)

// temperatureTol is the convergence tolerance of BestTemperature on log β (so relative
// on β), and temperatureIters the most root-finding steps it takes (a safeguard: it
// converges in a handful).
const (
	temperatureTol   = 1e-10
	temperatureIters = 100
)

// temperatureChunk is how many cells a pass takes between clearing the AVX upper state
// (clearUpper: a goroutine can move to another thread mid-pass).
const temperatureChunk = 512

// BestTemperature returns the inverse temperature β* that brings the model closest to
// the truth p and the divergence there:
//
//	β* = argmin_{β>0} KL(p‖q_β),  q_β(c) = exp(β·logq(c)) / Σ_c' exp(β·logq(c')),
//
// over the whole support (every cell and class), with logq unnormalised log
// probabilities (logits: a shift changes nothing) and p a probability vector (it sums
// to 1, as for KL). β* = 1 for a correct fit; β* > 1 says the model is too hot (too
// flat: sharpening it helps), β* < 1 too cold. kl − KL(p‖q_β*) is the part of KL(p‖q)
// that a temperature alone removes.
//
// KL(p‖q_β) = Σ p·log p − β·E_p[logq] + LSE(β·logq) is convex in β with derivative
// E_{q_β}[logq] − E_p[logq] and second derivative Var_{q_β}[logq]; the root of the
// derivative is found in t = log β by Newton's method from β = 1, safeguarded by
// bisection on the bracket [log TemperatureMin, log TemperatureMax], to 1e-10 relative
// on β. The bracket's ends are evaluated only when a step heads beyond them: a minimum
// beyond an end (e.g. p on the cells of the largest logq only, β* = ∞; or p uniform and
// logq not, β* = 0) returns that end and the KL there. One pass over the support per
// step and no allocation: typically 4–10 passes in all. A flat logq (every finite
// value equal, so q_β does not depend on β) returns β = 1 and the KL at 1.
//
// Cells with p = 0 contribute only to the normaliser; logq = −Inf gives q_β = 0 there
// for every β (allowed where p = 0). A cell with p > 0 and logq = −Inf has q_β = 0 for
// every β, so no β is best: kl = +Inf and β = NaN. A NaN or +Inf logq, a NaN p, or no
// mass or no finite logq at all give NaN and NaN. It panics if the lengths differ.
func BestTemperature(p, logq []float64) (beta, kl float64) {
	beta, kl, _ = bestTemperature(p, logq)
	return beta, kl
}

// bestTemperature is BestTemperature and the number of passes over the support it took
// (the first two, the checks and E_p, are not counted).
func bestTemperature(p, logq []float64) (beta, kl float64, passes int) {
	if len(p) != len(logq) {
		panic(fmt.Sprintf("prob: BestTemperature of lengths %d and %d", len(p), len(logq)))
	}
	// One pass: the largest and smallest finite logq, the mass of p, its entropy term
	// Σ p·log p, and whether any cell makes the problem undefined.
	lmax, lmin := math.Inf(-1), math.Inf(1)
	mass, plogp := 0.0, 0.0
	lost := false // p > 0 where logq = −Inf
	for i, l := range logq {
		if i%temperatureChunk == 0 {
			clearUpper() // scalar code: see clearUpper
		}
		pi := p[i]
		if math.IsNaN(l) || math.IsInf(l, 1) || math.IsNaN(pi) {
			return math.NaN(), math.NaN(), 0
		}
		if math.IsInf(l, -1) {
			lost = lost || pi > 0
			continue
		}
		lmax, lmin = math.Max(lmax, l), math.Min(lmin, l)
		if pi > 0 {
			mass += pi
			plogp += pi * math.Log(pi)
		}
	}
	if lost {
		return math.NaN(), math.Inf(1), 0
	}
	if math.IsInf(lmax, -1) || mass == 0 { // no finite logq, or no mass: no distribution to fit
		return math.NaN(), math.NaN(), 0
	}
	// E_p[logq − lmax] ≤ 0, shifted by the largest logit so that exp never overflows.
	pd := 0.0
	for i, l := range logq {
		if i%temperatureChunk == 0 {
			clearUpper()
		}
		if pi := p[i]; pi > 0 {
			pd += pi * (l - lmax)
		}
	}
	pd /= mass
	m := &temperatureMoments{logq: logq, lmax: lmax}
	klAt := func(beta, logS0 float64) float64 {
		// Σ p·log p − β·Σ p·(logq − lmax) + Σ p · log Σ exp(β·(logq − lmax)).
		return clampRounding(plogp - beta*pd*mass + mass*logS0)
	}
	if lmin == lmax { // flat: q_β is uniform on the finite cells for every β
		s0, _, _ := m.at(1)
		return 1, klAt(1, math.Log(s0)), m.passes
	}

	lo, hi := math.Log(TemperatureMin), math.Log(TemperatureMax)
	a, b := lo, hi           // the root's bracket in t = log β: g < 0 left of the root, g > 0 right
	aOK, bOK := false, false // whether g was evaluated at a (b), rather than its sign assumed
	t := 0.0                 // from β = 1
	g, v, logS0 := m.grad(t, pd)
	step, prev := hi-lo, hi-lo // the last two steps, for the safeguard
	for range temperatureIters {
		if g == 0 {
			break
		}
		if g < 0 {
			a, aOK = t, true
		} else {
			b, bOK = t, true
		}
		dg := math.Exp(t) * v // dg/dt = β·Var_{q_β}[logq] ≥ 0
		newton := t - g/dg    // ±Inf or NaN when dg = 0
		if dg > 0 && math.Abs(newton-t) < temperatureTol {
			if newton != t {
				t = newton
				s0, _, _ := m.at(math.Exp(t))
				logS0 = math.Log(s0)
			}
			break
		}
		inside := dg > 0 && newton > a && newton < b
		fast := inside && math.Abs(newton-t) <= 0.5*math.Abs(prev) // at least halving every two steps
		if !fast && (g < 0 && !bOK || g > 0 && !aOK) {
			// The root lies towards an end never evaluated: evaluate it (a minimum beyond
			// it returns it), and go on from it when the Newton step passes it.
			end := hi
			if g > 0 {
				end = lo
			}
			ge, ve, le := m.grad(end, pd)
			switch {
			case g < 0 && ge <= 0:
				return TemperatureMax, klAt(TemperatureMax, le), m.passes
			case g > 0 && ge >= 0:
				return TemperatureMin, klAt(TemperatureMin, le), m.passes
			case g < 0:
				bOK = true
			default:
				aOK = true
			}
			if !inside {
				prev, step = step, end-t
				t, g, v, logS0 = end, ge, ve, le
				continue
			}
		}
		next := newton
		if !fast {
			next = 0.5 * (a + b)
		}
		prev, step = step, next-t
		t = next
		if b-a < temperatureTol {
			s0, _, _ := m.at(math.Exp(t))
			logS0 = math.Log(s0)
			break
		}
		g, v, logS0 = m.grad(t, pd)
	}
	beta = math.Exp(t)
	return beta, klAt(beta, logS0), m.passes
}

// temperatureMoments are BestTemperature's passes over the support.
type temperatureMoments struct {
	logq   []float64
	lmax   float64
	passes int
}

// at returns, for d = logq − lmax over the finite cells, Σ e, Σ e·d and Σ e·d² with
// e = exp(β·d) (e ≤ 1, and the largest cell's is 1).
func (m *temperatureMoments) at(beta float64) (s0, s1, s2 float64) {
	m.passes++
	if len(m.logq) < 16 { // a table's few cells: math.Exp one by one, no buffer to clear
		clearUpper()
		for _, l := range m.logq {
			d := l - m.lmax
			e := math.Exp(beta * d)
			if e == 0 {
				continue
			}
			s0 += e
			s1 += e * d
			s2 += e * d * d
		}
		return s0, s1, s2
	}
	var buf [temperatureChunk]float64
	for lo := 0; lo < len(m.logq); lo += temperatureChunk {
		clearUpper() // math.Exp is many times slower while the AVX upper state is dirty
		chunk := m.logq[lo:min(lo+temperatureChunk, len(m.logq))]
		es := buf[:len(chunk)]
		for i, l := range chunk {
			es[i] = beta * (l - m.lmax)
		}
		ExpTo(es, es) // math.Exp's bits, in vector lanes
		for i, l := range chunk {
			d := l - m.lmax
			e := es[i]
			if e == 0 { // −Inf, or underflowed: no weight
				continue
			}
			s0 += e
			s1 += e * d
			s2 += e * d * d
		}
	}
	return s0, s1, s2
}

// grad returns, at β = exp(t), the derivative of KL(p‖q_β) in β, E_{q_β}[d] − E_p[d]
// (pd = E_p[d]), the variance Var_{q_β}[d] (the second derivative) and log Σ exp(β·d).
func (m *temperatureMoments) grad(t, pd float64) (g, v, logS0 float64) {
	s0, s1, s2 := m.at(math.Exp(t))
	mean := s1 / s0
	return mean - pd, math.Max(s2/s0-mean*mean, 0), math.Log(s0)
}

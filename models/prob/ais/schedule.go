package ais

import (
	"fmt"
	"math"
)

// Path is the spacing of the temperatures β_0 = 0 < β_1 < … < β_T = 1 along the
// geometric path log f_β = (1−β) log base + β log f.
type Path int

const (
	// Sigmoid spaces β as Grosse, Ghahramani & Adams (2015): β̃_t = σ(δ(2t/T − 1)),
	// β_t = (β̃_t − β̃_0)/(β̃_T − β̃_0), δ = Options.Delta (default 4): dense at both ends,
	// where the intermediate distributions change fastest per unit β.
	Sigmoid Path = iota
	// Geometric spaces β_1..β_T geometrically from Options.BetaMin (default 1e-4) to 1
	// (Neal 2001's suggestion for targets much narrower than the base): dense near 0.
	Geometric
	// Linear is β_t = t/T.
	Linear
)

func (p Path) String() string {
	switch p {
	case Sigmoid:
		return "sigmoid"
	case Geometric:
		return "geometric"
	case Linear:
		return "linear"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// Betas is the T+1 temperatures of path p: β_0 = 0, β_T = 1, strictly increasing.
// delta is the sigmoid's δ (≤ 0: 4), betaMin the geometric path's β_1 (outside (0, 1):
// 1e-4).
func Betas(p Path, T int, delta, betaMin float64) []float64 {
	b := make([]float64, T+1)
	switch p {
	case Sigmoid:
		if !(delta > 0) {
			delta = 4
		}
		sig := func(t int) float64 { return 1 / (1 + math.Exp(-delta*(2*float64(t)/float64(T)-1))) }
		lo, hi := sig(0), sig(T)
		for t := range b {
			b[t] = (sig(t) - lo) / (hi - lo)
		}
	case Geometric:
		if !(betaMin > 0 && betaMin < 1) {
			betaMin = 1e-4
		}
		for t := 1; t <= T; t++ {
			if T == 1 {
				b[t] = 1
				break
			}
			b[t] = math.Pow(betaMin, float64(T-t)/float64(T-1))
		}
	default:
		for t := range b {
			b[t] = float64(t) / float64(T)
		}
	}
	b[0], b[T] = 0, 1
	return b
}

// Schedule is a complete annealing schedule: the temperatures and the step size of
// the transitions at each (in the base's whitened units: a move of Step·SD_j in
// coordinate j per leapfrog step). Step[t] is used at β_t for t = 1..T−1 (Step[0] and
// Step[T] are unused). A Schedule fixed before a run (by Tune's pilot, or carried over)
// makes every transition kernel fixed, which is what keeps E[Ẑ] = Z exact.
type Schedule struct {
	Betas []float64
	Step  []float64
}

// T is the number of temperatures after β_0 = 0.
func (s Schedule) T() int { return len(s.Betas) - 1 }

func (s Schedule) check() error {
	T := len(s.Betas) - 1
	if T < 1 || len(s.Step) != T+1 {
		return fmt.Errorf("ais: schedule with %d betas and %d steps", len(s.Betas), len(s.Step))
	}
	if s.Betas[0] != 0 || s.Betas[T] != 1 {
		return fmt.Errorf("ais: schedule betas must run from 0 to 1, got %v to %v", s.Betas[0], s.Betas[T])
	}
	for t := 1; t <= T; t++ {
		if !(s.Betas[t] > s.Betas[t-1]) {
			return fmt.Errorf("ais: schedule betas not increasing at %d: %v, %v", t, s.Betas[t-1], s.Betas[t])
		}
		if (t < T && !(s.Step[t] > 0)) || math.IsInf(s.Step[t], 0) {
			return fmt.Errorf("ais: schedule step %d is %v", t, s.Step[t])
		}
	}
	return nil
}

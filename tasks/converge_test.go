package tasks

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// curve is n checks of f(c), c = 1..n.
func curve(n int, f func(c int) float64) []float64 {
	out := make([]float64, n)
	for c := range out {
		out[c] = f(c + 1)
	}
	return out
}

// firstConverged is the first check (1-based) at which Converged holds on the prefix,
// 0 if none.
func firstConverged(nll []float64) int {
	for c := 1; c <= len(nll); c++ {
		if Converged(nll[:c]) {
			return c
		}
	}
	return 0
}

func TestConverged(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		nll   []float64
		first int // the first check at which the rule holds, 0 if never
	}{
		// 2 + e^{−c/2}: the best improves by e^{−(c−w)/2} − e^{−c/2} over the last fifth
		// of w checks; its first check under the tolerance is computed below.
		{"converging", curve(60, func(c int) float64 { return 2 + math.Exp(-float64(c)/2) }), 0},
		{"flat from the start", curve(20, func(int) float64 { return 3 }), ConvergeMinChecks},
		{"still falling", curve(200, func(c int) float64 { return 3 - 1e-3*float64(c) }), 0},
		{"falling slower than the tolerance per fifth", curve(50, func(c int) float64 { return 3 - 1e-5*float64(c) }), ConvergeMinChecks},
		{"oscillating about a plateau", curve(40, func(c int) float64 { return 2 + 0.05*math.Sin(float64(c)) }), ConvergeMinChecks},
		{"rising past its best (overfitting)", curve(30, func(c int) float64 { return 2 + 0.01*math.Abs(float64(c)-5) }), ConvergeMinChecks},
		{"too few checks", curve(ConvergeMinChecks-1, func(int) float64 { return 3 }), 0},
		{"NaN in the last fifth", append(curve(12, func(int) float64 { return 3 }), nan, nan, nan, nan), ConvergeMinChecks},
		{"NaN from the start", curve(30, func(int) float64 { return nan }), 0},
		// checks 1–10 are no best: the rule holds once the fifth has moved past check 11
		{"+Inf before, then finite and flat", append(curve(10, func(int) float64 { return math.Inf(1) }), curve(10, func(int) float64 { return 3 })...), 14},
	}
	// the converging curve's first check, computed from the rule's definition
	exp := func(c int) float64 { return 2 + math.Exp(-float64(c)/2) }
	for c := ConvergeMinChecks; ; c++ {
		w := max(ConvergeMinWindow, (c+4)/5)
		if exp(c-w)-exp(c) < ConvergeTol {
			tests[0].first = c
			break
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstConverged(tt.nll); got != tt.first {
				t.Errorf("first converged check = %d, want %d", got, tt.first)
			}
			var c Convergence
			for i, v := range tt.nll {
				c.Observe(100*(i+1), v)
			}
			if c.Step != 100*tt.first {
				t.Errorf("Convergence.Step = %d, want %d", c.Step, 100*tt.first)
			}
			cp := make([]CurvePoint, len(tt.nll))
			for i, v := range tt.nll {
				cp[i] = CurvePoint{Step: 100 * (i + 1), HeldoutNLL: v}
			}
			step, ok := ConvergedStep(cp)
			if ok != (tt.first > 0) || step != int64(100*tt.first) {
				t.Errorf("ConvergedStep = %d, %v; want %d, %v", step, ok, 100*tt.first, tt.first > 0)
			}
		})
	}
}

// TestConvergedNaNBlocksUntilLeft: a NaN check blocks the rule while it is in the last
// fifth, and not once the fifth has moved past it.
func TestConvergedNaNBlocksUntilLeft(t *testing.T) {
	nll := curve(40, func(int) float64 { return 3 })
	nll[12] = math.NaN() // check 13
	tests := []struct {
		name string
		n    int
		want bool
	}{
		{"NaN in the last fifth", 15, false},
		{"NaN before the last fifth", 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Converged(nll[:tt.n]); got != tt.want {
				t.Errorf("Converged(%d checks) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestYardstickCapAndHorizons(t *testing.T) {
	tests := []struct {
		name  string
		steps int
		want  []int // the horizons to the cap
	}{
		{"1500 steps", 1500, []int{1500, 3000, 6000, 12000, 15000}},
		{"7 steps", 7, []int{7, 14, 28, 56, 70}},
		{"at the step limit", MaxSteps, []int{MaxSteps}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := YardstickCap(tt.steps)
			hs := []int{tt.steps}
			for h := tt.steps; h < limit; {
				h = NextHorizon(h, limit)
				hs = append(hs, h)
			}
			if !slices.Equal(hs, tt.want) {
				t.Errorf("horizons %v, want %v", hs, tt.want)
			}
		})
	}
}

// fakeRun is a synthetic run for TrainYardstick: its held-out NLL at check c (every 10
// steps) is nll(c); it diverges at step divergeAt (0: never).
type fakeRun struct {
	nll       func(c int) float64
	divergeAt int
}

// fakeResult is a fake run's result: the horizon it trained to, its CPU seconds (one
// per horizon trained) and whether it diverged.
type fakeResult struct {
	h        int
	cpu      float64
	diverged bool
}

func TestTrainYardstick(t *testing.T) {
	const steps, every = 100, 10
	flat := func(int) float64 { return 3 }
	falling := func(c int) float64 { return 3 - 0.01*float64(c) }
	late := func(c int) float64 { return 2 + 2*math.Exp(-float64(c)/8) } // converges after the first horizon
	tests := []struct {
		name     string
		yard     bool
		runs     []fakeRun
		horizons []int     // each run's horizon
		conv     []int     // each run's converged step
		cpu      []float64 // each run's CPU seconds (horizons trained)
		calls    int
	}{
		{"not the yardstick: one horizon", false, []fakeRun{{nll: falling}, {nll: flat}}, []int{100, 100}, []int{0, 0}, []float64{1, 1}, 1},
		{"converged at the first horizon", true, []fakeRun{{nll: flat}}, []int{100}, []int{100}, []float64{1}, 1},
		{"never converges: to the cap", true, []fakeRun{{nll: falling}, {nll: flat}}, []int{1000, 100}, []int{0, 100}, []float64{5, 1}, 5},
		{"converges later", true, []fakeRun{{nll: late}}, nil, nil, nil, 0},
		{"diverges before converging", true, []fakeRun{{nll: falling, divergeAt: 50}}, []int{100}, []int{0}, []float64{1}, 1},
	}
	// the late run: the first check at which the rule holds, and the horizon it reaches
	lc := firstConverged(curve(100, late))
	if lc*every <= steps || lc*every > YardstickCap(steps) {
		t.Fatalf("the late run converges at check %d: want one past the first horizon, within the cap", lc)
	}
	lh := steps
	cpu := 1.0
	for lh < lc*every {
		lh = NextHorizon(lh, YardstickCap(steps))
		cpu++
	}
	tests[3].horizons, tests[3].conv, tests[3].cpu, tests[3].calls = []int{lh}, []int{lc * every}, []float64{cpu}, int(cpu)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(tt.runs)
			conv := make([]Convergence, n)
			calls, resets := 0, 0
			train := func(h int, idx []int) ([]fakeResult, error) {
				calls++
				out := make([]fakeResult, len(idx))
				for k, i := range idx {
					r := tt.runs[i]
					out[k] = fakeResult{h: h, cpu: 1}
					for c := 1; c*every <= h; c++ {
						if r.divergeAt > 0 && c*every >= r.divergeAt {
							out[k].diverged = true
							break
						}
						if tt.yard {
							conv[i].Observe(c*every, r.nll(c))
						}
					}
				}
				return out, nil
			}
			res, hs, err := TrainYardstick(n, steps, tt.yard, conv, train, func(int) { resets++ },
				func(r fakeResult) bool { return r.diverged }, func(r *fakeResult, prev fakeResult) { r.cpu += prev.cpu })
			if err != nil {
				t.Fatal(err)
			}
			if calls != tt.calls {
				t.Errorf("%d training calls, want %d", calls, tt.calls)
			}
			for i := range n {
				if hs[i] != tt.horizons[i] || res[i].h != tt.horizons[i] {
					t.Errorf("run %d: horizon %d (result's %d), want %d", i, hs[i], res[i].h, tt.horizons[i])
				}
				if conv[i].Step != tt.conv[i] {
					t.Errorf("run %d: converged step %d, want %d", i, conv[i].Step, tt.conv[i])
				}
				if res[i].cpu != tt.cpu[i] {
					t.Errorf("run %d: CPU %v, want %v (every horizon it trained)", i, res[i].cpu, tt.cpu[i])
				}
			}
		})
	}
	t.Run("training error", func(t *testing.T) {
		boom := errors.New("boom")
		_, _, err := TrainYardstick(1, steps, true, make([]Convergence, 1), func(int, []int) ([]fakeResult, error) { return nil, boom },
			func(int) {}, func(fakeResult) bool { return false }, func(*fakeResult, fakeResult) {})
		if !errors.Is(err, boom) {
			t.Errorf("err = %v, want %v", err, boom)
		}
	})
}

package prob

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// inFamily builds the scalar linear joint softmax(w_y·x + b_y) on X×K cells.
func inFamily(x int, w, b []float64) []float64 {
	k := len(w)
	l := make([]float64, x*k)
	for i := 0; i < x; i++ {
		for y := 0; y < k; y++ {
			l[i*k+y] = w[y]*float64(i) + b[y]
		}
	}
	return Softmax(l)
}

func TestProjectComplete(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    Family
		p    []float64
	}{
		{"onehot 3x2", Family{X: 3, K: 2}, []float64{0.1, 0.2, 0.3, 0.05, 0.15, 0.2}},
		{"scalar X=2 is complete", Family{X: 2, K: 3, ScalarLinear: true}, []float64{0.1, 0.2, 0.3, 0.05, 0.15, 0.2}},
		{"empty cell", Family{X: 2, K: 2}, []float64{0, 0.5, 0.25, 0.25}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pr := tt.f.Project(tt.p)
			if pr.KL != 0 || pr.Iterations != 0 {
				t.Fatalf("KL %g, iterations %d; want an exact 0 with no iteration", pr.KL, pr.Iterations)
			}
			for i := range tt.p {
				if pr.Q[i] != tt.p[i] {
					t.Fatalf("Q = %v, want the target %v", pr.Q, tt.p)
				}
			}
		})
	}
}

func TestProjectScalarLinear(t *testing.T) {
	for _, tt := range []struct {
		name   string
		x      int
		p      []float64
		zeroKL bool // p is in the family: the projection is p itself
	}{
		{"member 3x2", 3, inFamily(3, []float64{0.7, -1.2}, []float64{0.3, 0.1}), true},
		{"member 5x3 extreme slopes", 5, inFamily(5, []float64{4, -6, 0.5}, []float64{-3, 9, 0}), true},
		{"not a member 3x2", 3, []float64{0.3, 0.05, 0.05, 0.3, 0.25, 0.05}, false},
		{"not a member 4x3", 4, []float64{0.02, 0.1, 0.08, 0.15, 0.05, 0.1, 0.03, 0.2, 0.07, 0.1, 0.05, 0.05}, false},
		{"empty cells, optimum at infinity", 3, []float64{0.5, 0, 0.2, 0.1, 0, 0.2}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := len(tt.p) / tt.x
			f := Family{X: tt.x, K: k, ScalarLinear: true}
			pr := f.Project(tt.p)
			if pr.Decrement > 1e-15 {
				t.Fatalf("not converged: decrement %g after %d iterations", pr.Decrement, pr.Iterations)
			}
			if tt.zeroKL && pr.KL > 1e-13 {
				t.Fatalf("KL %g for a member of the family, want ≈ 0", pr.KL)
			}
			if !tt.zeroKL && !(pr.KL > 1e-4) {
				t.Fatalf("KL %g for a table the family cannot represent, want > 0", pr.KL)
			}
			// The maximum-likelihood fit of an exponential family matches the moments of
			// its sufficient statistics: Σ_x q(x,y) = Σ_x p(x,y) and Σ_x x·q(x,y) = Σ_x x·p(x,y).
			for y := 0; y < k; y++ {
				var mq, mp, xq, xp float64
				for i := 0; i < tt.x; i++ {
					mq += pr.Q[i*k+y]
					mp += tt.p[i*k+y]
					xq += float64(i) * pr.Q[i*k+y]
					xp += float64(i) * tt.p[i*k+y]
				}
				if math.Abs(mq-mp) > 1e-9 || math.Abs(xq-xp) > 1e-9 {
					t.Fatalf("class %d: moments (%g, %g) of the fit, want those of the target (%g, %g)", y, mq, xq, mp, xp)
				}
			}
			// Any other member is no closer.
			for _, w := range [][]float64{{0, 0, 0}, {1, -1, 0.5}, {-2, 2, 0}} {
				other := inFamily(tt.x, w[:k], make([]float64, k))
				if KL(tt.p, other) < pr.KL-1e-12 {
					t.Fatalf("member %v is closer (%g) than the projection (%g)", w[:k], KL(tt.p, other), pr.KL)
				}
			}
		})
	}
}

func TestExcessTrace(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    Family
		p    []float64
		want float64
	}{
		{"complete: support − 1", Family{X: 2, K: 2}, []float64{0.1, 0.2, 0.3, 0.4}, 3},
		{"complete, one empty cell", Family{X: 2, K: 2}, []float64{0, 0.2, 0.3, 0.5}, 2},
		// A correct model: J = K, the trace is the dof 2K−1.
		{"scalar member 3x2", Family{X: 3, K: 2, ScalarLinear: true}, inFamily(3, []float64{0.7, -1.2}, []float64{0.3, 0.1}), 3},
		{"scalar member 4x3", Family{X: 4, K: 3, ScalarLinear: true}, inFamily(4, []float64{0.7, -1.2, 0.1}, []float64{0.3, 0.1, -0.4}), 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.f.Project(tt.p).Q
			if got := tt.f.ExcessTrace(tt.p, q); math.Abs(got-tt.want) > 1e-7 {
				t.Fatalf("ExcessTrace = %.12g, want %g", got, tt.want)
			}
		})
	}
}

// enumerateExpectedKL is E[KL(p‖(n+a)/(N+aC))] by brute force over every count vector
// of N draws on the cells of p, weighted by the multinomial pmf.
func enumerateExpectedKL(p []float64, n int, a float64) float64 {
	c := len(p)
	counts := make([]int64, c)
	total := 0.0
	var rec func(i, left int, logw float64)
	rec = func(i, left int, logw float64) {
		if i == c-1 {
			counts[i] = int64(left)
			lw := logw - lfact(left) + float64(left)*safeLog(p[i])
			if left > 0 && p[i] == 0 {
				return
			}
			total += math.Exp(lw+lfact(n)) * KL(p, Smoothed(counts, a))
			return
		}
		for k := 0; k <= left; k++ {
			if k > 0 && p[i] == 0 {
				break
			}
			counts[i] = int64(k)
			rec(i+1, left-k, logw-lfact(k)+float64(k)*safeLog(p[i]))
		}
	}
	rec(0, n, 0)
	return total
}

func lfact(k int) float64 { v, _ := math.Lgamma(float64(k) + 1); return v }

func safeLog(v float64) float64 {
	if v == 0 {
		return 0
	}
	return math.Log(v)
}

func TestExpectedKLSmoothed(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    []float64
		n    int
		a    float64
	}{
		{"2x2 N=1", []float64{0.1, 0.2, 0.3, 0.4}, 1, 0.5},
		{"2x2 N=7", []float64{0.1, 0.2, 0.3, 0.4}, 7, 0.5},
		{"3 cells N=30", []float64{0.6, 0.35, 0.05}, 30, 0.5},
		{"zero cell", []float64{0.5, 0, 0.5}, 12, 0.5},
		{"sparse N=20", []float64{0.98, 0.01, 0.005, 0.005}, 20, 0.5},
		{"add-one", []float64{0.25, 0.25, 0.5}, 10, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ExpectedKLSmoothed(tt.p, int64(tt.n), tt.a)
			want := enumerateExpectedKL(tt.p, tt.n, tt.a)
			if math.Abs(got-want) > 1e-12*math.Max(1, want) {
				t.Fatalf("ExpectedKLSmoothed = %.15g, brute force %.15g", got, want)
			}
		})
	}
}

// The series and the sum agree where the switch happens and beyond, and the expected
// KL tends to the first-order floor (C−1)/(2N).
func TestExpectedKLSmoothedLargeN(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int64
		p    float64
	}{
		{"sigma 100", 40_000, 0.5},
		{"sigma 300", 1_000_000, 0.1},
		{"sigma 1000 small p", 1_000_000_000, 0.001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.p * float64(tt.n)
			s, e := seriesLogRatio(tt.n, tt.p, 0.5, m), sumLogRatio(tt.n, tt.p, 0.5, m)
			if math.Abs(s-e) > 1e-6*math.Abs(e) {
				t.Fatalf("series %.12g, sum %.12g", s, e)
			}
		})
	}
	p := []float64{0.1, 0.2, 0.3, 0.4}
	for _, n := range []int64{100_000, 10_000_000, 1_000_000_000_000} {
		got, floor := ExpectedKLSmoothed(p, n, 0.5), Floor(len(p), n)
		if math.Abs(got/floor-1) > 2e-3*math.Max(1, 1e6/float64(n)) {
			t.Errorf("N=%d: E[KL] = %.6g = %.6f× the floor %.3g, want → 1", n, got, got/floor, floor)
		}
	}
}

func TestBootstrapRatioCI(t *testing.T) {
	num := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	den := []float64{2, 4, 6, 8, 10, 12, 14, 16}
	lo, hi := BootstrapRatioCI((1), num, den, 500, 0.95)
	if lo != 0.5 || hi != 0.5 {
		t.Fatalf("constant ratio: CI [%g, %g], want [0.5, 0.5]", lo, hi)
	}
	num[0] = 10
	lo, hi = BootstrapRatioCI((1), num, den, 2000, 0.95)
	point := 45.0 / 72
	if !(lo < point && point < hi) {
		t.Fatalf("CI [%g, %g] misses the ratio of sums %g", lo, hi, point)
	}
	if lo, hi := BootstrapRatioCI((1), nil, nil, 10, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Fatalf("no items: [%g, %g], want NaN", lo, hi)
	}
}

// The joint bootstrap of several ratios gives each ratio the interval it gets alone
// from the same stream: the ratios do not leak into each other.
func TestBootstrapRatiosCI(t *testing.T) {
	num := []float64{1, 5, 3, 4, 9, 6, 7, 8, 2}
	den := []float64{2, 4, 6, 8, 10, 12, 14, 16, 3}
	lo1, hi1 := BootstrapRatioCI((3), den, num, 500, 0.9)
	lo, hi := BootstrapRatiosCI((3), [][]float64{num, den}, [][]float64{den, num}, 500, 0.9)
	if lo[1] != lo1 || hi[1] != hi1 {
		t.Fatalf("second ratio [%g, %g], alone [%g, %g]", lo[1], hi[1], lo1, hi1)
	}
	if !(lo[1] <= 72.0/45 && 72.0/45 <= hi[1]) {
		t.Fatalf("second ratio [%g, %g] misses %g", lo[1], hi[1], 72.0/45)
	}
}

// TestPCGMatchesRand: pcg's stream is NewRand's, and its intN draws what Rand.IntN
// draws, for powers of two, small and large n and n near 2^63 (where the rejection
// step runs often).
func TestPCGMatchesRand(t *testing.T) {
	want, src := NewRand(7), newPCG(7)
	for i := range 10000 {
		if g, w := src.uint64(), want.Uint64(); g != w {
			t.Fatalf("draw %d: %d, math/rand/v2 %d", i, g, w)
		}
	}
	for _, n := range []uint64{1, 2, 3, 7, 1 << 10, 20000, 1<<32 + 1, 1<<62 + 12345, 1<<63 - 1} {
		want, src := NewRand(9), newPCG(9)
		for i := range 10000 {
			if g, w := src.intN(n), uint64(want.IntN(int(n))); g != w {
				t.Fatalf("n=%d draw %d: %d, math/rand/v2 %d", n, i, g, w)
			}
		}
	}
}

// BenchmarkBootstrapRatiosCI is the verdict's four ratios over 20,000 tables, 2,000
// resamples (a 20,000-table point's summary).
func BenchmarkBootstrapRatiosCI(b *testing.B) {
	rng := NewRand(1)
	nums, dens := make([][]float64, 4), make([][]float64, 4)
	for j := range nums {
		nums[j], dens[j] = make([]float64, 20000), make([]float64, 20000)
		for i := range nums[j] {
			nums[j][i], dens[j][i] = rng.ExpFloat64(), 1+rng.ExpFloat64()
		}
	}
	for b.Loop() {
		BootstrapRatiosCI(2, nums, dens, 2000, 0.95)
	}
}

// TestBootstrapRatiosCIBits: the packed resampling gives the same bits as summing each
// ratio's columns in draw order (the plain loop below), with a mismatched ratio among
// the others, over several sizes.
func TestBootstrapRatiosCIBits(t *testing.T) {
	plain := func(rng *rand.Rand, nums, dens [][]float64, reps int, level float64) (lo, hi []float64) {
		k, n := len(nums), len(nums[0])
		lo, hi = make([]float64, k), make([]float64, k)
		ratios := make([][]float64, k)
		for j := range ratios {
			ratios[j] = make([]float64, reps)
		}
		for r := range reps {
			sn, sd := make([]float64, k), make([]float64, k)
			for range n {
				i := rng.IntN(n)
				for j := range k {
					if len(nums[j]) == n && len(dens[j]) == n {
						sn[j] += nums[j][i]
						sd[j] += dens[j][i]
					}
				}
			}
			for j := range k {
				ratios[j][r] = sn[j] / sd[j]
			}
		}
		for j := range k {
			lo[j], hi[j] = math.NaN(), math.NaN()
			if len(nums[j]) == n && len(dens[j]) == n {
				slices.Sort(ratios[j])
				lo[j], hi[j] = quantileSorted(ratios[j], (1-level)/2), quantileSorted(ratios[j], 1-(1-level)/2)
			}
		}
		return lo, hi
	}
	for _, n := range []int{1, 7, 1000} {
		rng := NewRand(uint64(n))
		cols := make([][]float64, 5)
		for j := range cols {
			cols[j] = make([]float64, n)
			for i := range cols[j] {
				cols[j][i] = 1 + rng.ExpFloat64()
			}
		}
		for _, c := range []struct{ nums, dens [][]float64 }{
			{[][]float64{cols[0], cols[1], cols[2][:n/2]}, [][]float64{cols[3], cols[4], cols[4]}},             // three ratios, one mismatched
			{[][]float64{cols[0], cols[1], cols[2], cols[3]}, [][]float64{cols[4], cols[3], cols[2], cols[1]}}, // four: the unrolled path
		} {
			wlo, whi := plain(NewRand(5), c.nums, c.dens, 300, 0.95)
			lo, hi := BootstrapRatiosCI((5), c.nums, c.dens, 300, 0.95)
			for j := range lo {
				same := math.Float64bits(lo[j]) == math.Float64bits(wlo[j]) && math.Float64bits(hi[j]) == math.Float64bits(whi[j])
				if !same && !(math.IsNaN(lo[j]) && math.IsNaN(wlo[j])) {
					t.Errorf("n=%d %d ratios, ratio %d: [%v, %v], plain loop [%v, %v]", n, len(c.nums), j, lo[j], hi[j], wlo[j], whi[j])
				}
			}
		}
	}
}

// On many items the delta-method interval and the bootstrap agree.
func TestNormalRatioCI(t *testing.T) {
	rng := NewRand(9)
	n := 5000
	num, den := make([]float64, n), make([]float64, n)
	for i := range num {
		den[i] = 1 + rng.Float64()
		num[i] = 0.1*den[i] + 0.05*rng.NormFloat64()*rng.ExpFloat64()
	}
	blo, bhi := BootstrapRatioCI((1), num, den, 4000, 0.95)
	nlo, nhi := NormalRatioCI(num, den, 0.95)
	if w := bhi - blo; math.Abs(nlo-blo) > 0.1*w || math.Abs(nhi-bhi) > 0.1*w {
		t.Fatalf("normal [%g, %g], bootstrap [%g, %g]", nlo, nhi, blo, bhi)
	}
	mlo, mhi := NormalMeanCI([]float64{1, 2, 3, 4}, 0.95)
	// mean 2.5, sd 1.29, se 0.645, z 1.96
	if math.Abs(mlo-(2.5-1.959964*0.6454972)) > 1e-6 || math.Abs(mhi-(2.5+1.959964*0.6454972)) > 1e-6 {
		t.Fatalf("mean CI [%g, %g]", mlo, mhi)
	}
}

// TestShapeSigmaBounded: a moons or circles noise no box could hold is refused when
// the spec is parsed (the review: --task=moons:1e9 hung in the box check).
func TestShapeSigmaBounded(t *testing.T) {
	cases := []struct {
		spec, want string
	}{
		{"moons:1e9", `task "moons:1e9": SIGMA must be at most 50, got 1e+09`},
		{"circles:50.5", `SIGMA must be at most 50, got 50.5`},
		{"moons:1e308", `SIGMA must be at most 50`},
		{"moons:50", ""},
		{"circles:0.1", ""},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			_, err := ParseTaskSpec(c.spec)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestHoldingBoxBisection: the bisection finds the step-by-step search's box, in
// bounded time at the largest noise allowed.
func TestHoldingBoxBisection(t *testing.T) {
	linear := func(t Task2D) float64 {
		b := 0.5
		for t.OutsideMass(b) > MaxOutsideMass && b < 1e6 {
			b += 0.5
		}
		return b
	}
	for _, s := range []string{"moons:0.1", "circles:0.3", "moons:2", "gmm:3,2", "circles:7"} {
		spec, err := ParseTaskSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(3) {
			task := spec.Draw(seed)
			if got, want := task.HoldingBox(), linear(task); got != want {
				t.Errorf("%s seed %d: HoldingBox %v, want %v", s, seed, got, want)
			}
		}
	}
	spec, _ := ParseTaskSpec("moons:50")
	start := time.Now()
	b := spec.Draw(1).HoldingBox()
	if d := time.Since(start); d > time.Second || b > 1000 {
		t.Errorf("moons:50: HoldingBox %v in %v, want at most 1000 within a second", b, d)
	}
}

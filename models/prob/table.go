package prob

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// SumTolerance is how far from 1 the cells of a table may sum.
const SumTolerance = 1e-6

// Table is a true joint distribution p(x,y) over x ∈ {0..X−1}, y ∈ {0..K−1}.
// P is row-major: P[x*K+y] = p(x,y).
type Table struct {
	ID int64
	X  int
	K  int
	P  []float64
}

// NewTable validates and returns a table. It requires X ≥ 1, K ≥ 2 (a classifier needs
// at least two classes), len(p) = X·K, every cell finite and ≥ 0, and the cells to sum
// to 1 within SumTolerance. Errors name the table id and the problem, e.g.
// "table 3: cell (x=1,y=0) is NaN". The returned table holds a copy of p.
func NewTable(id int64, x, k int, p []float64) (Table, error) {
	if x < 1 {
		return Table{}, fmt.Errorf("table %d: X must be at least 1, got %d", id, x)
	}
	if k < 2 {
		return Table{}, fmt.Errorf("table %d: K must be at least 2, got %d", id, k)
	}
	if len(p) != x*k {
		return Table{}, fmt.Errorf("table %d: has %d cells, want X·K = %d·%d = %d", id, len(p), x, k, x*k)
	}
	sum := 0.0
	for i, v := range p {
		switch {
		case math.IsNaN(v):
			return Table{}, fmt.Errorf("table %d: cell (x=%d,y=%d) is NaN", id, i/k, i%k)
		case math.IsInf(v, 0):
			return Table{}, fmt.Errorf("table %d: cell (x=%d,y=%d) is %v", id, i/k, i%k, v)
		case v < 0:
			return Table{}, fmt.Errorf("table %d: cell (x=%d,y=%d) is negative (%g)", id, i/k, i%k, v)
		}
		sum += v
	}
	if math.Abs(sum-1) > SumTolerance {
		return Table{}, fmt.Errorf("table %d: sums to %.10g, want 1 within %g", id, sum, SumTolerance)
	}
	return Table{ID: id, X: x, K: k, P: append([]float64(nil), p...)}, nil
}

// Generator draws random joint tables.
//
//   - Kind "uniform": X·K independent uniforms in (0,1), normalised to sum to 1.
//   - Kind "dirichlet": a draw from the symmetric Dirichlet(Alpha, ..., Alpha) over the
//     X·K cells. Small Alpha gives peaked tables with many near-zero cells; Alpha = 1 is
//     uniform on the simplex (which is not the same as Kind "uniform").
type Generator struct {
	Kind  string
	Alpha float64
}

// ParseGenerator parses "uniform" or "dirichlet:ALPHA" with ALPHA a finite number > 0.
func ParseGenerator(s string) (Generator, error) {
	if s == "uniform" {
		return Generator{Kind: "uniform"}, nil
	}
	rest, ok := strings.CutPrefix(s, "dirichlet:")
	if !ok {
		if s == "dirichlet" {
			return Generator{}, errors.New(`generator "dirichlet" needs a concentration: dirichlet:ALPHA, e.g. dirichlet:0.5`)
		}
		return Generator{}, fmt.Errorf("unknown generator %q: want uniform or dirichlet:ALPHA", s)
	}
	alpha, err := strconv.ParseFloat(rest, 64)
	if err != nil {
		return Generator{}, fmt.Errorf("generator %q: ALPHA %q is not a number", s, rest)
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return Generator{}, fmt.Errorf("generator %q: ALPHA must be finite and > 0, got %g", s, alpha)
	}
	return Generator{Kind: "dirichlet", Alpha: alpha}, nil
}

// String is the inverse of ParseGenerator.
func (g Generator) String() string {
	if g.Kind == "dirichlet" {
		return "dirichlet:" + strconv.FormatFloat(g.Alpha, 'g', -1, 64)
	}
	return g.Kind
}

// Draw returns a random joint table of x·k cells (row-major) that sums to 1. It panics
// for an unknown Kind or for x·k < 1. Dirichlet draws work with log-Gamma variates and
// normalise in log space, so even tiny Alpha never yields an all-zero table (cells far
// below the largest one may underflow to exactly 0, which is what such a table is).
func (g Generator) Draw(rng *rand.Rand, x, k int) []float64 {
	n := x * k
	if x < 1 || k < 1 {
		panic(fmt.Sprintf("prob: Draw needs x, k ≥ 1, got %d, %d", x, k))
	}
	p := make([]float64, n)
	switch g.Kind {
	case "uniform":
		sum := 0.0
		for i := range p {
			u := rng.Float64()
			for u == 0 {
				u = rng.Float64()
			}
			p[i] = u
			sum += u
		}
		for i := range p {
			p[i] /= sum
		}
	case "dirichlet":
		if !(g.Alpha > 0) || math.IsInf(g.Alpha, 0) {
			panic(fmt.Sprintf("prob: dirichlet ALPHA must be finite and > 0, got %g", g.Alpha))
		}
		maxLog := math.Inf(-1)
		for i := range p {
			p[i] = logGamma(rng, g.Alpha)
			maxLog = math.Max(maxLog, p[i])
		}
		sum := 0.0
		for i := range p {
			p[i] = math.Exp(p[i] - maxLog)
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
	default:
		panic(fmt.Sprintf("prob: unknown generator kind %q", g.Kind))
	}
	return p
}

// logGamma returns the logarithm of a Gamma(alpha, 1) variate, by Marsaglia and Tsang
// (2000). For alpha < 1 it uses the boost G(alpha) = G(alpha+1)·U^(1/alpha), applied in
// log space so that tiny alpha does not underflow.
func logGamma(rng *rand.Rand, alpha float64) float64 {
	if alpha < 1 {
		u := 1 - rng.Float64() // (0, 1]
		return logGamma(rng, alpha+1) + math.Log(u)/alpha
	}
	d := alpha - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		z := rng.NormFloat64()
		v := 1 + c*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*z*z*z*z {
			return math.Log(d * v)
		}
		if math.Log(u) < 0.5*z*z+d*(1-v+math.Log(v)) {
			return math.Log(d * v)
		}
	}
}

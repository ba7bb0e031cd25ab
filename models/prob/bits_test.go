package prob

import (
	"math"
	"strings"
	"testing"
)

func TestParseBitsSpec(t *testing.T) {
	cases := []struct {
		name, in string
		want     BitsSpec
		err      string
	}{
		{"ok", "bits:10,2", BitsSpec{10, 2}, ""},
		{"spaces", "bits: 4, 3", BitsSpec{4, 3}, ""},
		{"top", "bits:20,64", BitsSpec{20, 64}, ""},
		{"D zero", "bits:0,2", BitsSpec{}, "D must be in [1, 20]"},
		{"D big", "bits:21,2", BitsSpec{}, "D must be in [1, 20]"},
		{"K one", "bits:4,1", BitsSpec{}, "K must be in [2, 64]"},
		{"one number", "bits:4", BitsSpec{}, "want bits:D,K"},
		{"not int", "bits:x,2", BitsSpec{}, "is not an integer"},
		{"other", "gmm:3,2", BitsSpec{}, "not a binary task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseBitsSpec(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v, want %v", got, err, c.want)
			}
		})
	}
}

// TestBitsTruth: the Gray-code enumeration equals the direct log-probability of every
// cell and sums to 1, and the exact draws' frequencies converge to it.
func TestBitsTruth(t *testing.T) {
	for _, c := range []struct{ d, k, comp int }{{1, 2, 1}, {3, 2, 2}, {6, 3, 3}, {9, 2, 4}} {
		task := DrawBits(uint64(7*c.d+c.k), c.d, c.k, c.comp)
		p := task.Truth()
		var sum float64
		for x := range 1 << c.d {
			for y := range c.k {
				want := math.Exp(task.LogJoint(uint32(x), y))
				if got := p[x*c.k+y]; math.Abs(got-want) > 1e-12*max(1, want) {
					t.Fatalf("D=%d: p(%d,%d) = %g, direct %g", c.d, x, y, got, want)
				}
				sum += p[x*c.k+y]
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("D=%d: truth sums to %v", c.d, sum)
		}
		if c.d <= 6 {
			const n = 200000
			xs, ys := task.Sample(3, n)
			emp := make([]float64, len(p))
			for i := range xs {
				emp[int(xs[i])*c.k+int(ys[i])] += 1.0 / n
			}
			// TV of n draws over C cells is about √(C/n)/2 at most.
			if tv := TotalVariation(emp, p); tv > math.Sqrt(float64(len(p))/n) {
				t.Fatalf("D=%d: TV(draws, truth) = %v", c.d, tv)
			}
		}
	}
}

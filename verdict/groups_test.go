package verdict

import (
	"math"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestHolm checks the Holm adjustment against hand-computed values.
func TestHolm(t *testing.T) {
	cases := []struct {
		name string
		ps   []float64
		want []float64
	}{
		{"three", []float64{0.01, 0.04, 0.03}, []float64{0.03, 0.06, 0.06}},
		{"monotone", []float64{0.02, 0.001, 0.5}, []float64{0.04, 0.003, 0.5}},
		{"capped", []float64{0.6, 0.7}, []float64{1, 1}},
		{"empty", nil, []float64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Holm(tc.ps)
			if len(got) != len(tc.want) {
				t.Fatalf("len %d, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Errorf("Holm(%v) = %v, want %v", tc.ps, got, tc.want)
				}
			}
		})
	}
}

// TestRankGroups: recipes that tie share a rank, a clearly worse one ranks alone after
// them, and a recipe with no values ranks last.
func TestRankGroups(t *testing.T) {
	const n = 30
	vals := func(f func(k int) float64) []float64 {
		out := make([]float64, n)
		for k := range out {
			out[k] = f(k)
		}
		return out
	}
	// noise that is symmetric about 0 and the same for a and b up to its sign pattern
	noise := func(k int) float64 { return 0.01 * math.Sin(float64(7*k+1)) }
	cases := []struct {
		name      string
		names     []string
		x         [][]float64
		wantOrder []string
		wantRanks []int
	}{
		{"tie-then-worse", []string{"worse", "a", "b"},
			[][]float64{vals(func(k int) float64 { return 1 + noise(k) }), vals(func(k int) float64 { return 0.05 + noise(k) }), vals(func(k int) float64 { return 0.05 - noise(k) })},
			[]string{"b", "a", "worse"}, []int{1, 1, 3}},
		{"strict-order", []string{"c", "b", "a"},
			[][]float64{vals(func(k int) float64 { return 3 + noise(k) }), vals(func(k int) float64 { return 2 + noise(k) }), vals(func(k int) float64 { return 1 + noise(k) })},
			[]string{"a", "b", "c"}, []int{1, 2, 3}},
		{"missing", []string{"none", "a"},
			[][]float64{vals(func(int) float64 { return math.NaN() }), vals(func(k int) float64 { return 1 + noise(k) })},
			[]string{"a", "none"}, []int{1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, tests := RankGroups(tc.names, tc.x, GroupAlpha)
			var order []string
			var ranks []int
			for _, r := range got {
				order, ranks = append(order, r.Name), append(ranks, r.Rank)
			}
			if !slices.Equal(order, tc.wantOrder) || !slices.Equal(ranks, tc.wantRanks) {
				t.Errorf("order %v ranks %v, want %v %v (tests %+v)", order, ranks, tc.wantOrder, tc.wantRanks, tests)
			}
			if len(tests) != len(tc.names)*(len(tc.names)-1)/2 {
				t.Errorf("%d pair tests", len(tests))
			}
		})
	}
}

// TestRankSamplers: a point's recipes are ranked on their excesses aligned by table
// (the pairs' orders differ), references are not ranked, and pairs pooled over points
// (no table per pair) are left unranked.
func TestRankSamplers(t *testing.T) {
	ids := make([]int64, 12)
	a, b, c := make([]float64, 12), make([]float64, 12), make([]float64, 12)
	for k := range ids {
		ids[k] = int64(k)
		a[k] = 0.05 + 0.01*math.Sin(float64(k))
		c[k] = 2 + 0.01*math.Sin(float64(k))
	}
	// b: a's values, in reverse table order
	rev := make([]int64, 12)
	for k := range ids {
		rev[k] = int64(11 - k)
		b[k] = a[11-k]
	}
	pairs := []SamplerPairs{{Method: "ed", Diffs: a, IDs: ids}, {Method: "mala", Diffs: b, IDs: rev}, {Method: "sgld", Diffs: c, IDs: ids},
		{Method: "jem-converged", Diffs: c, IDs: ids}}
	cs := []schemas.SamplerComparison{{Method: "ed"}, {Method: "mala"}, {Method: "sgld"}, {Method: "jem-converged"}}
	rankSamplers(cs, pairs)
	got := []int{cs[0].Rank, cs[1].Rank, cs[2].Rank, cs[3].Rank}
	if !slices.Equal(got, []int{1, 1, 3, 0}) {
		t.Errorf("ranks %v, want [1 1 3 0]", got)
	}
	pooled := []SamplerPairs{{Method: "ed", Diffs: a}, {Method: "sgld", Diffs: c}}
	cs = []schemas.SamplerComparison{{Method: "ed"}, {Method: "sgld"}}
	rankSamplers(cs, pooled)
	if cs[0].Rank != 0 || cs[1].Rank != 0 {
		t.Errorf("pooled pairs ranked: %+v", cs)
	}
}

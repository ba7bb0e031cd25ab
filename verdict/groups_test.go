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

// TestRankSamplers: a point's recipes are ranked by mean on their excesses aligned by
// table (the pairs' orders differ; two identical recipes share rank 1 and the best's
// set), references are not ranked, and pairs pooled over points (no table per pair)
// are left unranked.
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
	set := []bool{cs[0].InBestSet, cs[1].InBestSet, cs[2].InBestSet, cs[3].InBestSet}
	if !slices.Equal(set, []bool{true, true, false, false}) {
		t.Errorf("indistinguishable from the best %v, want [true true false false]", set)
	}
	if d := float64(cs[2].OverBest); math.Abs(d-1.95) > 1e-9 || !(float64(cs[2].OverBestLo) <= d && d <= float64(cs[2].OverBestHi)) {
		t.Errorf("sgld over the best %v [%v, %v], want 1.95 inside its CI", d, cs[2].OverBestLo, cs[2].OverBestHi)
	}
	if cs[0].FriedmanTasks != 12 || !(cs[0].CriticalDifference > 0) || !math.IsNaN(float64(cs[3].AvgRank)) {
		t.Errorf("Friedman: %d tasks, CD %v, a reference's average rank %v", cs[0].FriedmanTasks, cs[0].CriticalDifference, cs[3].AvgRank)
	}
	pooled := []SamplerPairs{{Method: "ed", Diffs: a}, {Method: "sgld", Diffs: c}}
	cs = []schemas.SamplerComparison{{Method: "ed"}, {Method: "sgld"}}
	rankSamplers(cs, pooled)
	if cs[0].Rank != 0 || cs[1].Rank != 0 {
		t.Errorf("pooled pairs ranked: %+v", cs)
	}
}

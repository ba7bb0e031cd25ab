package prob

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestBinsOf: the counting path and the sorting path give the bins of sorting.
func TestBinsOf(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ref := func(idx []int32) []SketchBin {
		s := slices.Clone(idx)
		slices.Sort(s)
		var out []SketchBin
		for _, i := range s {
			if n := len(out); n > 0 && out[n-1].Index == i {
				out[n-1].Count++
			} else {
				out = append(out, SketchBin{i, 1})
			}
		}
		return out
	}
	if got := binsOf(nil); got != nil {
		t.Errorf("no indices: %v", got)
	}
	for _, spread := range []int32{1, 10, 300, 5000, 1 << 20, 1 << 30} {
		for _, n := range []int{1, 2, 50, 4096} {
			idx := make([]int32, n)
			base := r.Int32N(1<<30) - 1<<29
			for i := range idx {
				idx[i] = base + r.Int32N(spread) - spread/2
			}
			if n > 2 && spread > 1000 { // outliers far off
				idx[0], idx[1] = -1<<31, 1<<31-1
			}
			want := ref(idx)
			if got := binsOf(slices.Clone(idx)); !reflect.DeepEqual(got, want) {
				t.Errorf("spread %d n %d: %d bins, want %d", spread, n, len(got), len(want))
			}
		}
	}
}

package tasks

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

func TestSpreadTasks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tt := range []struct {
		name      string
		n, minPer int
		ranges    int
	}{
		{"more tasks than cores", 10, 1, 4},
		{"fewer tasks than cores", 3, 1, 3},
		{"minPer caps the workers", 100, 64, 1},
		{"minPer of two ranges", 130, 64, 2},
		{"none", 0, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := make([]int, tt.n)
			ranges := 0
			err := SpreadTasks(tt.n, tt.minPer, func(lo, hi int) error {
				mu.Lock()
				defer mu.Unlock()
				ranges++
				for i := lo; i < hi; i++ {
					seen[i]++
				}
				return nil
			})
			if err != nil || ranges != tt.ranges {
				t.Fatalf("%d ranges, %v; want %d", ranges, err, tt.ranges)
			}
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("task %d covered %d times", i, c)
				}
			}
		})
	}
	boom := errors.New("boom")
	if err := SpreadTasks(8, 1, func(lo, _ int) error {
		if lo > 0 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the range's", err)
	}
}

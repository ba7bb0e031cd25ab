package tasks

import (
	"errors"
	"runtime"
	"sync"
)

// SpreadTasks runs fn over tasks 0..n-1 of a block split into contiguous ranges
// [lo, hi), one a core (runtime.GOMAXPROCS), each range at least minPer tasks: a kind's
// Evaluate, whose task's runs share the task's references and draws and depend on no
// other task, so its rows do not depend on the split. It returns the ranges' errors
// joined.
func SpreadTasks(n, minPer int, fn func(lo, hi int) error) error {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/max(1, minPer)))
	if workers <= 1 {
		return fn(0, n)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = fn(w*n/workers, (w+1)*n/workers)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

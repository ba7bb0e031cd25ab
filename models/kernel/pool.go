package kernel

import (
	"context"
	"math"
	"runtime"
	"sync"
)

// nan is a run's CPU time where the OS does not tell it (threadCPU).
var nan = math.NaN()

// trainRuns trains runs 0..n−1 over GOMAXPROCS goroutines, each with its own scratch
// space (newWorker) and locked to its thread, so that the thread's CPU clock measures
// the runs it trains (cpu returns a result with its CPU seconds set). A run's result
// depends only on its index, not on which worker trains it. The context is checked
// between runs.
func trainRuns[W, R any](ctx context.Context, n int, newWorker func() W, train func(w W, i int) R, cpu func(r *R, seconds float64)) ([]R, error) {
	out := make([]R, n)
	workers := max(1, min(runtime.GOMAXPROCS(0), n))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ctxErr error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			w := newWorker()
			for {
				mu.Lock()
				if ctxErr == nil {
					ctxErr = ctx.Err()
				}
				i := next
				next++
				stop := ctxErr != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				c0 := threadCPU()
				out[i] = train(w, i)
				cpu(&out[i], threadCPU()-c0)
			}
		}()
	}
	wg.Wait()
	if ctxErr != nil {
		return nil, ctxErr
	}
	return out, nil
}

// Package allocs measures what a per-run path allocates, for the allocation ceilings
// that guard the pipeline's speed without a timed test: a count of allocations does
// not depend on the machine's load, and a change that puts reflection, a map or an
// encoder back on a per-run path multiplies it.
package allocs

import "testing"

// PerUnit is the marginal number of allocations of f per unit of work: f(n) does n
// units (runs, tasks, rows), and PerUnit is (A(hi) − A(lo)) / (hi − lo), with A(n)
// testing.AllocsPerRun's mean over runs calls of f(n). What f allocates once, however
// many units it does (a block's buffers, a goroutine per core), cancels out.
func PerUnit(runs, lo, hi int, f func(n int)) float64 {
	a := testing.AllocsPerRun(runs, func() { f(lo) })
	b := testing.AllocsPerRun(runs, func() { f(hi) })
	return (b - a) / float64(hi-lo)
}

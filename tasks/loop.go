package tasks

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
)

// MethodLoop is the protocol's loop over one method's runs of a block, written once for
// the kinds that train on the fused kernels (2-D tasks, block tasks' additive model,
// the images kind's MFA model): every run's checks at the point's cadence (held-out
// NLL, exact KLs, the curve), the selection rule, and the converged yardstick (a
// FullBatch method trained until its rule holds, TrainYardstick). The kind is the
// driver: it gives the runs' observation hook, the trainer call and the measure of a
// check, and builds each TrainedRun; Finish completes it.
type MethodLoop struct {
	Method  string
	Steps   int    // the point's steps
	Select  string // Options.Select
	PerStep int64  // gradient evaluations a step
	// Check measures run i's parameters at a check: the curve point's KLs and held-out
	// NLL (its Step and GradEvals are the loop's) and the logits a selected iterate
	// keeps (TrainedRun.Logits; nil: none).
	Check func(i int, theta []float32) (CurvePoint, []float64)

	yard   bool
	curves [][]CurvePoint
	sels   []Selector
	conv   []Convergence
	seen   [][]float32
	res    []kernel.Result2D
	hor    []int
}

// Train trains n runs: observe(i, fn) sets run i's observation hook to the loop's
// check, train(h, idx) trains runs idx to horizon h (the kind's trainer), and the
// converged yardstick's runs that have not converged are trained again to the next
// horizon. It returns each run's result with the parameters it stops at (a converged
// yardstick's at its converged check).
func (l *MethodLoop) Train(n int, observe func(i int, fn func(step int, theta []float32)), train func(h int, idx []int) ([]kernel.Result2D, error)) ([]kernel.Result2D, error) {
	l.yard = methods.Has(l.Method, func(x methods.Method) bool { return x.FullBatch })
	l.curves, l.sels, l.conv, l.seen = make([][]CurvePoint, n), make([]Selector, n), make([]Convergence, n), make([][]float32, n)
	for i := range n {
		l.sels[i].Rule = l.Select
		observe(i, func(step int, theta []float32) {
			if l.yard && l.conv[i].Step > 0 { // stopped where its rule held: later steps are not the run's
				return
			}
			c, logits := l.Check(i, theta)
			c.Step, c.GradEvals = step, int64(step)*l.PerStep
			l.curves[i] = append(l.curves[i], c)
			l.sels[i].Observe(step, c.HeldoutNLL, c.GradEvals, theta, logits)
			if l.yard {
				l.seen[i] = append(l.seen[i][:0], theta...)
				l.conv[i].Observe(step, c.HeldoutNLL)
			}
		})
	}
	res, horizon, err := TrainYardstick(n, l.Steps, l.yard, l.conv, train, func(i int) { l.seen[i], l.curves[i], l.sels[i] = nil, nil, Selector{Rule: l.Select} },
		func(r kernel.Result2D) bool { return r.Diverged }, func(r *kernel.Result2D, prev kernel.Result2D) { r.CPUSeconds += prev.CPUSeconds })
	if err != nil {
		return nil, err
	}
	for i := range res {
		if l.yard && l.conv[i].Step > 0 { // the run stops at its converged check: its state there
			res[i].Theta, res[i].Diverged, res[i].DivergedStep, horizon[i] = l.seen[i], false, 0, l.conv[i].Step
		}
	}
	l.res, l.hor = res, horizon
	return res, nil
}

// Finish completes run i's TrainedRun (its Theta and Logits those of the result Train
// returned): its curve ending at its last step (the last point measured by Check where
// no check fell on it) and the selection (Selector.Finish).
func (l *MethodLoop) Finish(i int, tr *TrainedRun) {
	r := l.res[i]
	last := LastStep(l.hor[i], r.Diverged, r.DivergedStep)
	tr.Curve = EndCurve(l.curves[i], last, func() CurvePoint {
		c, _ := l.Check(i, r.Theta)
		c.Step, c.GradEvals = last, int64(last)*l.PerStep
		return c
	})
	l.sels[i].Finish(tr, l.Method, l.hor[i])
}

// Subset is the runs at indices idx, in idx order (a MethodLoop's train call).
func Subset[R any](runs []R, idx []int) []R {
	out := make([]R, len(idx))
	for k, i := range idx {
		out[k] = runs[i]
	}
	return out
}

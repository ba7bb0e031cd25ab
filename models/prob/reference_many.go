package prob

import "math"

// ExpectedKLSmoothedMany returns ExpectedKLSmoothed(ps[i·c:(i+1)·c], n, a) for each of
// the len(ps)/c distributions of c cells stored one after another in ps, bit for bit:
// the same terms, summed in the same order. It is the block form of the references'
// expected KL: the cells' sums over counts (sumLogRatio) run side by side in vector
// lanes where the build and the CPU have them (GOEXPERIMENT=simd on amd64 with
// AVX-512), each lane with exactly the scalar sum's operations in the scalar sum's
// order, so the results do not depend on the build. It panics for a ≤ 0, n < 1, c < 1
// or a length that is not a multiple of c.
func ExpectedKLSmoothedMany(ps []float64, c int, n int64, a float64) []float64 {
	if !(a > 0) || n < 1 {
		panic("prob: ExpectedKLSmoothedMany needs a > 0 and n ≥ 1")
	}
	if c < 1 || len(ps)%c != 0 {
		panic("prob: ExpectedKLSmoothedMany needs whole distributions of c ≥ 1 cells")
	}
	cf := float64(c)
	nf := float64(n)
	// Each cell's E[log((k + a)/m)]: closed form or series at once, the sums over
	// counts as lane jobs.
	e := make([]float64, len(ps))
	jobs := make([]ratioJob, 0, len(ps))
	for i, pc := range ps {
		if i%256 == 0 {
			clearUpper() // scalar code: see clearUpper
		}
		if pc <= 0 {
			continue
		}
		m := pc * (nf + a*cf) // as ExpectedKLSmoothed
		switch {
		case pc >= 1:
			e[i] = math.Log((nf + a) / m)
		case math.Sqrt(nf*pc*(1-pc)) > seriesSigma:
			e[i] = seriesLogRatio(n, pc, a, m)
		default:
			jobs = append(jobs, ratioJob{p: pc, m: m, out: int32(i)})
		}
	}
	sumLogRatios(jobs, n, a, e)
	out := make([]float64, len(ps)/c)
	for t := range out {
		if t%256 == 0 {
			clearUpper()
		}
		s := 0.0
		for i := t * c; i < (t+1)*c; i++ {
			if pc := ps[i]; !(pc <= 0) { // as ExpectedKLSmoothed: a NaN cell counts
				s -= pc * e[i]
			}
		}
		out[t] = clampRounding(s)
	}
	return out
}

// ratioJob is one cell's sumLogRatio(n, p, a, m), written to e[out].
type ratioJob struct {
	p, m float64
	out  int32
}

// sumLogRatiosScalar runs the jobs one by one (the portable build, and CPUs without
// AVX-512).
func sumLogRatiosScalar(jobs []ratioJob, n int64, a float64, e []float64) {
	for _, j := range jobs {
		e[j.out] = sumLogRatio(n, j.p, a, j.m)
	}
}

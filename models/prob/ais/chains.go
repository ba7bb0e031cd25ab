package ais

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/jemcheck/jemcheck/internal/avx"
	"github.com/jemcheck/jemcheck/models/prob"
)

// block is a fixed group of chains that move in lockstep and evaluate the target as
// one batch. The blocks are fixed by chain index (Options.Block), not by the number of
// workers, and every chain draws from its own stream, so results do not depend on
// GOMAXPROCS.
type block struct {
	n, d   int
	tgt    BatchTarget
	base   Base
	scale  []float64 // base.Scale(): the kernel's preconditioner
	leap   int       // leapfrog steps per transition
	jitter float64   // step jitter: ε·(1 + jitter·U(−1, 1)) per chain and transition

	x, lf, lb, gf, gb      []float64 // current positions, log f, log base, ∇ log f, ∇ log base
	xp, lfp, lbp, gfp, gbp []float64 // proposals
	q, eps, k0             []float64 // whitened momenta, per-chain steps, initial kinetic energies
	acc                    []float64 // per-chain acceptance probability of the last transition
	rngs                   []*rand.Rand
}

func newBlock(n, d int, tgt BatchTarget, base Base, o *Options, seeds []uint64) *block {
	b := &block{n: n, d: d, tgt: tgt, base: base, scale: base.Scale(), leap: o.Leapfrog, jitter: o.Jitter}
	nd := n * d
	b.x, b.gf, b.xp, b.gfp, b.q = make([]float64, nd), make([]float64, nd), make([]float64, nd), make([]float64, nd), make([]float64, nd)
	b.gb, b.gbp = make([]float64, nd), make([]float64, nd)
	b.lf, b.lb, b.lfp, b.lbp = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	b.eps, b.k0, b.acc = make([]float64, n), make([]float64, n), make([]float64, n)
	b.rngs = make([]*rand.Rand, n)
	for i, s := range seeds {
		b.rngs[i] = prob.NewRand(s)
	}
	return b
}

// eval fills lf, lb, gf and gb at the n positions x.
func (b *block) eval(x, lf, lb, gf, gb []float64) {
	b.tgt.LogDensityBatch(x, b.n, lf, gf)
	avx.ClearUpper() // the target may leave the AVX upper state dirty: see package avx
	d := b.d
	for i := range b.n {
		lb[i] = b.base.LogDensity(x[i*d:(i+1)*d], gb[i*d:(i+1)*d])
	}
}

// logPi is log f_β = (1−β)·log base + β·log f at one chain (the ends exact, so that an
// infinite log f does not make 0·∞).
func logPi(beta, lb, lf float64) float64 {
	switch beta {
	case 0:
		return lb
	case 1:
		return lf
	}
	return (1-beta)*lb + beta*lf
}

// incr is the log weight increment (β' − β)·(log f − log base) at one chain.
func incr(dbeta, lb, lf float64) float64 {
	if math.IsNaN(lf) || math.IsInf(lf, -1) {
		return math.Inf(-1)
	}
	return dbeta * (lf - lb)
}

// kick adds c·ε_i·Scale_j·∇ log f_β(xp) to the whitened momenta, ∇ log f_β =
// (1−β)·∇ log base + β·∇ log f.
func (b *block) kick(beta, c float64) {
	d := b.d
	sd := b.scale
	for i := range b.n {
		e := c * b.eps[i]
		q, gb, g := b.q[i*d:(i+1)*d], b.gbp[i*d:(i+1)*d], b.gfp[i*d:(i+1)*d]
		for j := range q {
			grad := (1-beta)*gb[j] + beta*g[j]
			q[j] += e * sd[j] * grad
		}
	}
}

// transition is one HMC move (Leapfrog leapfrog steps; MALA is the one-step case) of
// every chain, invariant for f_β/Z_β, preconditioned by the base's Scale (mass matrix
// diag(1/Scale²)). b.acc gets each chain's acceptance probability min(1, α).
func (b *block) transition(beta, step float64) {
	n, d := b.n, b.d
	avx.ClearUpper() // math.Exp in NormFloat64's tails and the acceptance: see package avx
	for i := range n {
		r := b.rngs[i]
		b.eps[i] = step * (1 + b.jitter*(2*r.Float64()-1))
		k := 0.0
		for j := i * d; j < (i+1)*d; j++ {
			v := r.NormFloat64()
			b.q[j] = v
			k += v * v
		}
		b.k0[i] = 0.5 * k
	}
	copy(b.xp, b.x)
	copy(b.gfp, b.gf)
	copy(b.gbp, b.gb)
	sd := b.scale
	b.kick(beta, 0.5)
	for l := range b.leap {
		for i := range n {
			e := b.eps[i]
			x, q := b.xp[i*d:(i+1)*d], b.q[i*d:(i+1)*d]
			for j := range x {
				x[j] += e * sd[j] * q[j]
			}
		}
		b.eval(b.xp, b.lfp, b.lbp, b.gfp, b.gbp)
		if l < b.leap-1 {
			b.kick(beta, 1)
		} else {
			b.kick(beta, 0.5)
		}
	}
	for i := range n {
		k1 := 0.0
		for _, v := range b.q[i*d : (i+1)*d] {
			k1 += v * v
		}
		la := logPi(beta, b.lbp[i], b.lfp[i]) - 0.5*k1 - logPi(beta, b.lb[i], b.lf[i]) + b.k0[i]
		u := b.rngs[i].Float64()
		b.acc[i] = 0
		if !math.IsNaN(la) {
			b.acc[i] = math.Exp(min(0, la))
		}
		if math.Log(u) < la { // NaN: rejected
			copy(b.x[i*d:(i+1)*d], b.xp[i*d:(i+1)*d])
			copy(b.gf[i*d:(i+1)*d], b.gfp[i*d:(i+1)*d])
			copy(b.gb[i*d:(i+1)*d], b.gbp[i*d:(i+1)*d])
			b.lf[i], b.lb[i] = b.lfp[i], b.lbp[i]
		}
	}
}

// parallel runs f(0..n−1) over at most workers goroutines.
func parallel(workers, n int, f func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// blocks splits chains 0..n−1 into blocks of size o.Block, chain c's stream seeded by
// seed(c), its start written by init(c, x).
func makeBlocks(n, d int, tgt BatchTarget, base Base, o *Options, seed func(c int) uint64) []*block {
	var bs []*block
	for lo := 0; lo < n; lo += o.Block {
		m := min(o.Block, n-lo)
		seeds := make([]uint64, m)
		for i := range seeds {
			seeds[i] = seed(lo + i)
		}
		bs = append(bs, newBlock(m, d, tgt, base, o, seeds))
	}
	return bs
}

// run is the annealing of all chains: forward (from the base, β rising) or reverse
// (from the given exact draws of the target, β falling). It returns the per-chain log
// weights (forward: estimating log Z; reverse: estimating log 1/Z) and the mean
// acceptance probability at each β_t.
func run(ctx context.Context, tgt BatchTarget, base Base, s Schedule, o *Options, seed uint64, n int, start []float64) (logw, accByT []float64, err error) {
	d := base.Dim()
	T := s.T()
	bs := makeBlocks(n, d, tgt, base, o, func(c int) uint64 { return prob.Seed(seed, uint64(c)) })
	logw = make([]float64, n)
	accs := make([][]float64, len(bs))
	errs := make([]error, len(bs))
	parallel(o.Workers, len(bs), func(k int) {
		b := bs[k]
		lo := k * o.Block
		w := logw[lo : lo+b.n]
		acc := make([]float64, T+1)
		accs[k] = acc
		if start == nil {
			for i := range b.n {
				base.Sample(b.rngs[i], b.x[i*d:(i+1)*d])
			}
		} else {
			copy(b.x, start[lo*d:(lo+b.n)*d])
		}
		b.eval(b.x, b.lf, b.lb, b.gf, b.gb)
		move := func(t int) {
			for range o.Moves {
				b.transition(s.Betas[t], s.Step[t])
				for _, a := range b.acc {
					acc[t] += a
				}
			}
		}
		for step := 1; step <= T; step++ {
			if step%16 == 0 {
				if errs[k] = ctx.Err(); errs[k] != nil {
					return
				}
			}
			t, prev := step, step-1 // forward: β_{t−1} → β_t, then move at β_t
			if start != nil {
				t, prev = T-step, T-step+1 // reverse: β_{t+1} → β_t, then move at β_t
			}
			db := s.Betas[t] - s.Betas[prev]
			for i := range w {
				w[i] += incr(db, b.lb[i], b.lf[i])
			}
			if t > 0 && t < T {
				move(t)
			}
		}
	})
	for _, e := range errs {
		if e != nil {
			return nil, nil, e
		}
	}
	accByT = make([]float64, T+1)
	for _, a := range accs { // in block order: deterministic
		for t, v := range a {
			accByT[t] += v
		}
	}
	for t := range accByT {
		accByT[t] /= float64(n * o.Moves)
	}
	return logw, accByT, nil
}

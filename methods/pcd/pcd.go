// Package pcd is JEM with persistent Metropolis–Hastings chains in a replay buffer
// (persistent contrastive divergence, Tieleman 2008) for the log q(x) gradient, on
// tables and binary tables.
//
// On tables (the table kind's hook: kernel.PCD, an exact-table trainer) a chain's state
// is a value x; with proposal gwg, Gibbs with gradients (Grathwohl et al., ICML 2021)
// with exact differences.
//
// On binary tables x ∈ {0,1}^D (bits.go) pcd is a kernel.Objective, Bits, run by
// kernel.TrainBits on binary lanes: its buffer holds states, each step's chains flip
// one bit per Metropolis–Hastings step, chosen uniformly or (gwg) by Gibbs with
// gradients from the relaxation's ∇x LSE_y f(x) (the first-order difference, as in the
// paper; not the exact differences of the table kind). It trained bit for bit as the
// binary kernel's former built-in pcd (until that was retired) with fewer passes of the
// model (1 + chain_steps per chain and step, against the built-in's 2·chain_steps).
// Everything is D-generic up to kernel.MaxBitsD bits; the continuous kinds (plane,
// blocks) have no pcd: their persistent-chain recipe is sgld.
package pcd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "pcd"

// Proposals are the Metropolis–Hastings proposals (binary tables take uniform and gwg).
var Proposals = []string{"uniform", "neighbour", "gwg"}

// MaxBuffer is the largest replay buffer per run.
const MaxBuffer = 1 << 20

func init() {
	methods.Register(methods.Method{Name: Name, Order: 5, Sampler: true, KernelOnly: true, KeepsBuffer: true,
		Source: "Tieleman, ICML 2008", DefaultFor: []string{methods.KindBits},
		Doc:      "JEM with persistent Metropolis–Hastings chains in a replay buffer (PCD, Tieleman 2008) for the log q(x) gradient",
		Options:  []string{"chain_steps", "proposal", "buffer_size", "reinit_freq"},
		Validate: Validate,
		Hooks:    []methods.Hook{methods.Tables.Hook(Table(false)), methods.Bits.Hook(bits)}})
}

// Validate checks the pcd options of a point.
func Validate(g schemas.Grid) error {
	switch {
	case g.ChainSteps < 0 || g.ChainSteps > 10_000:
		return fmt.Errorf("chain_steps must be in [0, 10000], got %d", g.ChainSteps)
	case !slices.Contains(Proposals, g.Proposal):
		return fmt.Errorf("proposal: unknown proposal %s (known: %s)", methods.Quote(g.Proposal), strings.Join(Proposals, ", "))
	case g.BufferSize < 1 || g.BufferSize > MaxBuffer:
		return fmt.Errorf("buffer_size must be in [1, %d], got %d", MaxBuffer, g.BufferSize)
	case !(g.ReinitFreq >= 0 && g.ReinitFreq <= 1):
		return fmt.Errorf("reinit_freq must be in [0, 1], got %v", g.ReinitFreq)
	}
	return nil
}

// tagSampler is the seed tag of the chains' stream.
var tagSampler = prob.SeedString("sampler")

// Table is the table kind's hook: the chains of a run seeded runSeed; exact draws from
// q(x) instead of chains when exact (pcd-exact).
func Table(exact bool) func(g schemas.Grid, r *models.Run) error {
	return func(g schemas.Grid, r *models.Run) error {
		neg := g.BatchSize // the minibatch size, or 64 on a full-batch point
		if neg <= 0 {
			neg = 64
		}
		prop, _ := kernel.ParseProposal(g.Proposal)
		r.PCD = &kernel.PCD{Exact: exact, Negatives: neg, Buffer: g.BufferSize, Reinit: float32(g.ReinitFreq), ChainSteps: g.ChainSteps,
			Proposal: prop, Seed: prob.Seed(r.Seed, tagSampler), AverageLast: max(1, g.Steps/10)}
		return nil
	}
}

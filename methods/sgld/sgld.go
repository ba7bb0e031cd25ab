// Package sgld is the paper's JEM (Grathwohl et al., ICLR 2020): the log q(x)
// gradient from a replay buffer of persistent chains refined by SGLD, x += lr·∇x ℓ(x)
// + std·ξ, with restarts. Named presets fix the noise (and JEM++'s steps and start):
//
//	official   std 0.01 at any lr: the reference code's "improper" SGLD (Grathwohl et al. 2020)
//	langevin   std √(2·lr): Langevin at temperature 1
//	noisefree  std 0: gradient ascent from the buffer, as SADA-JEM runs it (Yang et al. 2023)
//	jempp      5 steps, std 0.01, the buffer and its restarts from a class-wise Gaussian
//	           fitted to the training draws (JEM++, Yang & Ji, ICCV 2021)
//
// sgld_std > 0 overrides a preset's noise.
package sgld

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Name is the method's name.
const Name = "sgld"

// Presets are the named presets.
var Presets = []string{"official", "langevin", "noisefree", "jempp"}

// MaxBuffer is the largest replay buffer per run.
const MaxBuffer = 1 << 20

func init() {
	methods.Register(methods.Method{Name: Name, Order: 4, Sampler: true, KernelOnly: true, KeepsBuffer: true,
		Source:     "Grathwohl et al., ICLR 2020",
		DefaultFor: []string{methods.KindPlane, methods.KindBlocks},
		Doc:        "the paper's JEM: log q(x) gradient from a replay buffer refined by SGLD (Grathwohl et al. 2020, official settings; presets langevin, noisefree (SADA-JEM), jempp (JEM++))",
		Options:    []string{"sgld_preset", "sgld_lr", "sgld_std", "sgld_steps", "sgld_clamp", "buffer_size", "reinit_freq"},
		Validate:   validate,
		Hooks: []methods.Hook{methods.Plane.Hook(spec2D), methods.Blocks.Hook(spec2D), methods.PlaneSampler.Hook(sampler2D),
			methods.Images.Hook(func(g schemas.Grid, o *cnn.TrainOptions) error { // the CNN's jem-sgld (no clamp; std 0 is 1e-30, as cnn reads 0 as its default)
				k := Options(g)
				o.Objective = cnn.SGLD{Steps: k.Steps, LR: float64(k.LR), Std: max(float64(k.Std), 1e-30), ReinitFreq: float64(k.Reinit), BufferSize: k.Buffer,
					Informative: k.Informative} // jempp: 5 steps from the class-wise Gaussians
				return nil
			})}})
}

// validate checks the sgld options of a point.
func validate(g schemas.Grid) error {
	switch {
	case !slices.Contains(Presets, g.SGLDPreset):
		return fmt.Errorf("sgld_preset: unknown preset %s (known: %s)", methods.Quote(g.SGLDPreset), strings.Join(Presets, ", "))
	case !(g.SGLDLR > 0) || math.IsInf(g.SGLDLR, 0):
		return fmt.Errorf("sgld_lr must be a finite number > 0, got %v", g.SGLDLR)
	case !(g.SGLDStd >= 0) || math.IsInf(g.SGLDStd, 0):
		return fmt.Errorf("sgld_std must be a finite number >= 0 (0 = the preset's), got %v", g.SGLDStd)
	case g.SGLDSteps < 0 || g.SGLDSteps > 10_000:
		return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", g.SGLDSteps)
	case g.BufferSize < 1 || g.BufferSize > MaxBuffer:
		return fmt.Errorf("buffer_size must be in [1, %d], got %d", MaxBuffer, g.BufferSize)
	case !(g.ReinitFreq >= 0 && g.ReinitFreq <= 1):
		return fmt.Errorf("reinit_freq must be in [0, 1], got %v", g.ReinitFreq)
	}
	if err := methods.CheckFloat32("sgld_lr", g.SGLDLR); err != nil {
		return err
	}
	return methods.CheckFloat32("sgld_std", g.SGLDStd)
}

// Options are the kernel's SGLD options of a point: its preset, then its values.
func Options(g schemas.Grid) kernel.SGLDOptions {
	o := kernel.SGLDOptions{Steps: g.SGLDSteps, LR: float32(g.SGLDLR), Std: float32(g.SGLDNoise()),
		Buffer: g.BufferSize, Reinit: float32(g.ReinitFreq), Clamp: g.SGLDClamp}
	if g.SGLDPreset == "jempp" {
		o.Steps, o.Informative = 5, true
	}
	return o
}

// sampler2D is the sampler the 2-D evaluation reruns fresh (tasks/plane's short run):
// sgld_steps SGLD moves of its lr and noise from uniform on the box (jempp: 5 moves
// from the class-wise Gaussian), clamped where sgld_clamp.
func sampler2D(g schemas.Grid) kernel.Chain2D {
	o := Options(g)
	c := kernel.Chain2D{Steps: o.Steps, Step: o.LR, Std: o.Std, Clamp: o.Clamp}
	if o.Informative {
		c.Start = kernel.StartClassGauss
	}
	return c
}

// spec2D is the hook of the plane and block kinds: sgld's objective (objective.go),
// the buffer kept.
func spec2D(g schemas.Grid, s *kernel.Spec2D) error {
	o := Options(g)
	if o.Buffer < s.Batch {
		return fmt.Errorf("buffer_size %d is smaller than the batch %d (each step draws batch distinct chains: need Buffer >= Batch)", o.Buffer, s.Batch)
	}
	s.Objective, s.KeepBuffer = func() kernel.Objective { return New(o) }, true
	return nil
}

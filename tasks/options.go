package tasks

import (
	"fmt"
	"math"
	"slices"
)

// OOD distributions (--ood).
const (
	OODUniform   = "uniform"
	OODShifted   = "shifted"
	OODOtherTask = "other-task"
)

// The bounds of --ais_chains and --ais_temps: enough chains for a standard error and
// a Pareto k̂, enough temperatures for a path; at most what one task can hold and run.
const (
	MinAISChains, MaxAISChains = 16, 1 << 16
	MinAISTemps, MaxAISTemps   = 10, 1_000_000
)

// DefaultMeasureTasks is how many tasks of a 2-D point get the measures beyond the
// exact KL by default (Options.MeasureTasks): the sampler's own distribution
// (Options.Chains short-run and long-chain draws of each run's model) and the promises on the
// held-out draws (OOD scores, calibration, the attack and the purification). Together
// they cost more than a short run's training (36% of the CPU of a 200-step SGLD job
// when they ran on every task), so a default run measures a stated subsample (the
// first tasks of each point: the same tasks for every method; the other tasks' columns
// are NaN and the report counts the runs measured) and the full measure is asked for
// (--measure_tasks=-1, the leaderboard's runs).
const DefaultMeasureTasks = 16

// DefaultSamplerChains are the chains of a measured run's sampler distribution by
// default (Options.SamplerChains): each of its two measures (the method's short run and
// the long MALA chain) draws this many independent chains of the run's selected model,
// histograms their end points and reports the TV to p(x) and to q(x) with its standard
// error and the floor of as many exact draws. 500 chains cost a quarter of 2,000 (the
// measure was 16% of the CPU of a 200-step SGLD job at 2,000) for twice the standard
// error; --sampler_chains=2000 is the full measure (scripts/leaderboard.sh sets it).
const DefaultSamplerChains = 512

// The bounds of --sampler_chains: enough draws for a histogram on the pooled grid, at
// most what a run's chains can hold.
const (
	MinSamplerChains, MaxSamplerChains = 100, 1 << 20
)

// Chains are the chains of a measured run's sampler distribution (Options.SamplerChains).
func (o Options) Chains() int {
	if o.SamplerChains == 0 {
		return DefaultSamplerChains
	}
	return o.SamplerChains
}

// AllTasks as Options.MeasureTasks: every task.
const AllTasks = -1

// Measures reports whether the runs of task ordinal o get the measures beyond the
// exact KL (Options.MeasureTasks).
func (o Options) Measures(ordinal int64) bool {
	n := o.MeasureTasks
	if n == 0 {
		n = DefaultMeasureTasks
	}
	return n == AllTasks || ordinal < int64(n)
}

// checkPromiseOptions validates the promises' options and the AIS settings.
func (o Options) checkPromiseOptions() error {
	switch {
	case o.OOD != "" && o.OOD != OODUniform && o.OOD != OODShifted && o.OOD != OODOtherTask: // "" is uniform
		return fmt.Errorf("ood: unknown OOD distribution %s (known: uniform, shifted, other-task)", quote(o.OOD))
	case !(o.AttackEps >= 0) || math.IsInf(o.AttackEps, 0):
		return fmt.Errorf("attack_eps must be a finite number >= 0, got %v", o.AttackEps)
	case o.PurifySteps < 0 || o.PurifySteps > 100_000:
		return fmt.Errorf("purify_steps must be in [0, 100000], got %d", o.PurifySteps)
	case !(o.PurifyLR >= 0) || math.IsInf(o.PurifyLR, 0):
		return fmt.Errorf("purify_lr must be a finite number >= 0, got %v", o.PurifyLR)
	case o.AISChains != 0 && (o.AISChains < MinAISChains || o.AISChains > MaxAISChains):
		return fmt.Errorf("ais_chains must be in [%d, %d], got %d", MinAISChains, MaxAISChains, o.AISChains)
	case o.AISTemps != 0 && (o.AISTemps < MinAISTemps || o.AISTemps > MaxAISTemps):
		return fmt.Errorf("ais_temps must be in [%d, %d], got %d", MinAISTemps, MaxAISTemps, o.AISTemps)
	case o.MeasureTasks < AllTasks:
		return fmt.Errorf("measure_tasks must be a number of tasks >= 1, or -1 for every task, got %d", o.MeasureTasks)
	case o.SamplerChains != 0 && (o.SamplerChains < MinSamplerChains || o.SamplerChains > MaxSamplerChains):
		return fmt.Errorf("sampler_chains must be in [%d, %d], got %d", MinSamplerChains, MaxSamplerChains, o.SamplerChains)
	}
	if err := CheckFloat32("attack_eps", o.AttackEps); err != nil {
		return err
	}
	return CheckFloat32("purify_lr", o.PurifyLR)
}

// Resolve zeroes the run-wide options no kind of the points reads (Kind.Axes), so
// config.json records what ran: a table run has no curves or promises. Options built
// in code without a selection rule get the protocol's defaults first.
func (o *Options) Resolve(points []Point) {
	if o.Select == "" {
		o.Select = SelectHeldout
		if o.Holdout == 0 {
			o.Holdout = DefaultHoldout
		}
	}
	read := func(name string) bool {
		for _, p := range points {
			if k, err := Of(p.Task); err == nil && slices.Contains(k.Axes(), name) {
				return true
			}
		}
		return false
	}
	for _, opt := range []struct {
		name  string
		clear func()
	}{
		{"eval_every", func() { o.EvalEvery = 0 }},
		{"ood", func() { o.OOD = "" }},
		{"attack_eps", func() { o.AttackEps = 0 }},
		{"purify_steps", func() { o.PurifySteps = 0 }},
		{"purify_lr", func() { o.PurifyLR = 0 }},
		{"ais_chains", func() { o.AISChains = 0 }},
		{"ais_temps", func() { o.AISTemps = 0 }},
		{"measure_tasks", func() { o.MeasureTasks = 0 }},
		{"sampler_chains", func() { o.SamplerChains = 0 }},
		{"select", func() { o.Select, o.Holdout = "", 0 }},
	} {
		if !read(opt.name) {
			opt.clear()
		}
	}
}

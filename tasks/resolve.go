package tasks

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// TaskTable is the task of random joint tables.
const TaskTable = schemas.TaskTable

// TaskFile is the task of points whose 2-D tasks come from --tasks_from.
const TaskFile = "file"

// GeneratorFile marks tables read from --tables_from.
const GeneratorFile = "file"

// Defaults sets the defaults of the point's kind (Kind.Defaults) of the axes given
// reports as not set by the user; an unknown task is left for Validate to report.
func (p *Point) Defaults(given func(axis string) bool) {
	if k, err := Of(p.Task); err == nil {
		k.Defaults(p, given)
	}
}

// Resolve sets a point's derived values: options no method of the point reads (the
// method table's Options) are zeroed, so the result columns show only what applied,
// then its kind's (Kind.Resolve). Call it before Validate; an unknown task is left for
// Validate to report.
func (p *Point) Resolve() {
	if p.Task == "" {
		p.Task = TaskTable
	}
	for _, a := range schemas.AxisDefs { // a method's option no method of the point reads
		key := a.Key()
		if len(methods.Using(key)) > 0 && !methods.Uses(p.Methods, key) {
			a.Field.Set(&p.Grid, reflect.Zero(reflect.TypeOf(a.Field.Default())).Interface())
		}
	}
	if k, err := Of(p.Task); err == nil {
		k.Resolve(p)
	}
}

// Proposals are pcd's Metropolis–Hastings proposals.
var Proposals = []string{"uniform", "neighbour", "gwg"}

// validateRecipe checks the options of the point's recipes (mala, jarzynski,
// shortrun, ed).
func (p Point) validateRecipe() error {
	r := p.Recipe
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for _, m := range p.Methods {
		switch m {
		case methods.MALA, methods.Jarzynski, methods.ShortRun:
			step, name := r.StepSize, "step_size"
			if m == methods.ShortRun {
				step, name = r.ShortRunStep, "shortrun_step"
			}
			switch {
			case !(step > 0) || !finite(step):
				return fmt.Errorf("%s must be a finite number > 0, got %v", name, step)
			case m == methods.Jarzynski && !(r.ESSResample >= 0 && r.ESSResample <= 1):
				return fmt.Errorf("ess_resample must be in [0, 1], got %v", r.ESSResample)
			case p.SGLDSteps < 0 || p.SGLDSteps > 10_000:
				return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", p.SGLDSteps)
			case !(r.EnergyL2 >= 0) || !finite(r.EnergyL2):
				return fmt.Errorf("energy_l2 must be a finite number >= 0, got %v", r.EnergyL2)
			}
		case methods.ED:
			switch {
			case r.EDNegatives < 1 || r.EDNegatives > 64:
				return fmt.Errorf("ed_m must be in [1, 64], got %d", r.EDNegatives)
			case !(r.EDT > 0) || !finite(r.EDT):
				return fmt.Errorf("ed_t must be a finite number > 0, got %v", r.EDT)
			case !(r.EDW >= 0) || !finite(r.EDW):
				return fmt.Errorf("ed_w must be a finite number >= 0, got %v", r.EDW)
			}
		}
	}
	return nil
}

// validateSampler checks the sampler options of the point's sampler methods.
func (p Point) validateSampler() error {
	for _, m := range p.Methods {
		switch m {
		case methods.SGLD:
			switch {
			case p.SGLDPreset != "official" && p.SGLDPreset != "langevin" && p.SGLDPreset != "noisefree":
				return fmt.Errorf("sgld_preset: unknown preset %s (known: official, langevin, noisefree)", quote(p.SGLDPreset))
			case !(p.SGLDLR > 0) || math.IsInf(p.SGLDLR, 0):
				return fmt.Errorf("sgld_lr must be a finite number > 0, got %v", p.SGLDLR)
			case !(p.SGLDStd >= 0) || math.IsInf(p.SGLDStd, 0):
				return fmt.Errorf("sgld_std must be a finite number >= 0 (0 = the preset's), got %v", p.SGLDStd)
			case p.SGLDSteps < 0 || p.SGLDSteps > 10_000:
				return fmt.Errorf("sgld_steps must be in [0, 10000], got %d", p.SGLDSteps)
			}
		case methods.PCD:
			switch {
			case p.ChainSteps < 0 || p.ChainSteps > 10_000:
				return fmt.Errorf("chain_steps must be in [0, 10000], got %d", p.ChainSteps)
			case !slices.Contains(Proposals, p.Proposal):
				return fmt.Errorf("proposal: unknown proposal %s (known: %s)", quote(p.Proposal), strings.Join(Proposals, ", "))
			}
		case methods.MALA:
		default:
			continue
		}
		switch {
		case p.BufferSize < 1 || p.BufferSize > MaxBuffer:
			return fmt.Errorf("buffer_size must be in [1, %d], got %d", MaxBuffer, p.BufferSize)
		case !(p.ReinitFreq >= 0 && p.ReinitFreq <= 1):
			return fmt.Errorf("reinit_freq must be in [0, 1], got %v", p.ReinitFreq)
		}
	}
	return nil
}

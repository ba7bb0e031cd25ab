package launch

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// Run is a pipeline's run: Prepare, the DAG build adds to a new pipeline (its error
// stops the run before anything is written), then Execute. A run that prism fails with
// its progress panic on a runner transform (an upstream race on a loaded machine:
// docs/scale.md) is resumed once, in this process, from the blocks it finished, as
// --resume would: the user's run completes instead of failing.
func Run(ctx context.Context, cfg *Config, build func(s beam.Scope, cfg *Config) error, w io.Writer) (*schemas.Summary, error) {
	orig := cfg.clone()
	sum, err := runOnce(ctx, cfg, build, w)
	if err == nil || ctx.Err() != nil || !workersInProcess(cfg.Runner) || !prismProgressPanic(err) {
		return sum, err
	}
	fmt.Fprintf(w, "%s: the runner failed with prism's progress panic (an upstream race under load: docs/scale.md); "+
		"resuming once from the blocks it finished\n", cfg.Pipeline)
	*cfg = orig
	cfg.Resume = true
	return runOnce(ctx, cfg, build, w)
}

func runOnce(ctx context.Context, cfg *Config, build func(s beam.Scope, cfg *Config) error, w io.Writer) (*schemas.Summary, error) {
	if err := Prepare(ctx, cfg); err != nil {
		return nil, err
	}
	p, s := beam.NewPipelineWithRoot()
	if err := build(s, cfg); err != nil {
		return nil, err
	}
	return Execute(ctx, cfg, p, w)
}

// prismProgressPanic reports whether a run's error is prism's panic in a bundle's
// progress request (stage.Execute recovers it and fails the job with the stack).
func prismProgressPanic(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "panic in stage.Execute bundle processing goroutine") && strings.Contains(msg, ").Progress")
}

// clone is a copy of a configuration before Prepare, whose points, options and extras a
// second Prepare may resolve again without seeing the first one's changes.
func (c *Config) clone() Config {
	out := *c
	out.Points = make([]stages.Point, len(c.Points))
	for i, p := range c.Points {
		p.Methods = slices.Clone(p.Methods)
		p.Grid.Options = maps.Clone(p.Grid.Options)
		out.Points[i] = p
	}
	out.Extra = maps.Clone(c.Extra)
	out.Inputs = slices.Clone(c.Inputs)
	return out
}

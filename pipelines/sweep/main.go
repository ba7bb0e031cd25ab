// Command sweep runs a grid of control experiments from a spec file (YAML or JSON; the
// format is documented in spec.go and the README): the Cartesian product of its axes,
// each grid point with its own tables, trained with every listed method. The outputs
// are those of the control pipeline with the grid point's values as columns of
// results/*.parquet, per-grid-point aggregates in summary.json and the sweep figures
// (KL vs each swept axis, a heat map for each pair of up to four swept axes) in report.html.
//
//	go run ./pipelines/sweep --spec=sweeps/kl-vs-n.yaml --out=./out/kl-vs-n
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/verdict"
)

var (
	specLoc = flag.String("spec", "", "sweep spec: a YAML or JSON file (path or URL)")
	opts    = launch.RegisterOptionFlags(flag.CommandLine, "")
)

func main() {
	flag.Parse()
	beam.Init()
	launch.Logging(os.Stderr)
	if flag.NArg() > 0 {
		launch.Exit("sweep", launch.BadInput("unexpected arguments %q", flag.Args()))
	}
	launch.Exit("sweep", run(context.Background(), *specLoc, opts, os.Stdout))
}

// run reads the spec, resolves the configuration and runs the sweep.
func run(ctx context.Context, specLoc string, of *launch.OptionFlags, w io.Writer) error {
	cfg, err := config(ctx, specLoc, of)
	if err != nil {
		return err
	}
	return runConfig(ctx, cfg, w)
}

// config resolves the spec and the run-wide flags into a configuration; the default
// output is ./out/<spec name>.
func config(ctx context.Context, specLoc string, of *launch.OptionFlags) (launch.Config, error) {
	if specLoc == "" {
		return launch.Config{}, launch.BadInput("spec: no sweep spec given (--spec=sweeps/NAME.yaml)")
	}
	spec, err := ReadSpec(ctx, specLoc)
	if err != nil {
		return launch.Config{}, launch.BadInput("spec %s: %v", specLoc, err)
	}
	points, err := spec.Points()
	if err != nil {
		return launch.Config{}, launch.BadInput("spec %s: %v", specLoc, err)
	}
	o := of.Options()
	if o.Out == "" {
		o.Out = "./out/" + string(spec.Name)
	}
	return launch.Config{Pipeline: "sweep", Runner: launch.RunnerName(), Options: o, Points: points,
		Extra: map[string]any{"spec": spec, "spec_location": specLoc}, Inputs: []string{specLoc}, Overwrite: of.Overwrite(),
		Resume: of.Resume()}, nil
}

func runConfig(ctx context.Context, cfg launch.Config, w io.Writer) error {
	sum, err := launch.Run(ctx, &cfg, build, w)
	if err != nil || sum == nil {
		return err
	}
	for _, ps := range sum.Points {
		q := ps.Params
		fmt.Fprintf(w, "  point %d (%dx%d %s %s N=%d %s lr=%g steps=%d batch=%d rep=%d): %s\n", ps.PointID,
			q.XValues, q.Classes, q.Encoding, q.Generator, q.Samples, q.Model, q.LR, q.Steps, q.BatchSize, q.Replicate,
			ps.Verdict.Reason)
	}
	verdict.Print(w, *sum) // the protocol, the headline, the graded lines, then "verdict: " and the reason
	fmt.Fprintf(w, "report: %s\n", launch.Location(cfg.Options.Out, "report.html"))
	return nil
}

// build is the sweep DAG: the experiment over every grid point of the spec.
func build(s beam.Scope, cfg *launch.Config) error {
	_, written := launch.Experiment(s, cfg, "JEM sweep: "+string(cfg.Extra["spec"].(*Spec).Name))
	launch.Publish(s, cfg, written...)
	return nil
}

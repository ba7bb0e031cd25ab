// Command control runs the control experiment of the JEM claim on one task kind
// (random joint tables, binary tables, continuous 2-D densities or block tasks): N
// draws of each task, a model trained with cross-entropy (baseline), with the exact
// JEM joint likelihood (jem), with the JEM loss on the truth (oracle) and with each
// sampler recipe given in --methods, then KL(p‖q) of joint, marginal and conditional
// (against the statistical floor on tables), aggregated into summary.json, the verdict
// and report.html.
//
//	go run ./pipelines/control                      # prism in-process, ./out, pure-Go GoMLX
//	go run ./pipelines/control --tables=10000 --out=gs://bucket/run1 --runner=dataflow ...
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

var flags = launch.RegisterFlags(flag.CommandLine, launch.Defaults{Tables: 1000, Methods: "baseline,jem,oracle", Out: "./out"})

func main() {
	flag.Parse()
	beam.Init()
	launch.Logging(os.Stderr)
	if flag.NArg() > 0 {
		launch.Exit("control", launch.BadInput("unexpected arguments %q", flag.Args()))
	}
	cfg, err := flags.Config("control")
	if err == nil {
		stop := startProfile()
		err = run(context.Background(), cfg, os.Stdout)
		stop()
	}
	launch.Exit("control", err)
}

// run validates cfg, runs the control pipeline and prints the verdict.
func run(ctx context.Context, cfg launch.Config, w io.Writer) error {
	sum, err := launch.Run(ctx, &cfg, build, w)
	if err != nil || sum == nil {
		return err
	}
	verdict.Print(w, *sum) // the protocol, the headline, the graded lines, then "verdict: " and the reason
	fmt.Fprintf(w, "report: %s\n", launch.Location(cfg.Options.Out, "report.html"))
	return nil
}

// build is the control DAG: one grid point, the standard experiment.
func build(s beam.Scope, cfg *launch.Config) error {
	_, written := launch.Experiment(s, cfg, "JEM control experiment")
	launch.Publish(s, cfg, written...)
	return nil
}

// Command export writes jemcheck's tasks for a model trained outside jemcheck: the
// same task flags as control, no training. Each point's training draws (samples/),
// its evaluation support (points/: the cells, x values or states on which a model's
// logits are evaluated), its truth on that support and export.json, which describes
// them (schemas.Export); --csv adds a CSV copy of every Parquet file. Train your own
// JEM on samples/, write its logits on points/ and give them to pipelines/evaluate.
//
//	go run ./pipelines/export --task=gmm:3,2 --tables=20 --out=out/export --csv
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks"
)

var (
	flags  = launch.RegisterFlags(flag.CommandLine, launch.Defaults{Tables: 1000, Methods: "baseline,jem", Out: "./export"})
	csvOut = flag.Bool("csv", false, "also write every Parquet file of the export as CSV (same name, .csv), for tools without a Parquet reader")
)

func main() {
	flag.Parse()
	beam.Init()
	launch.Logging(os.Stderr)
	if flag.NArg() > 0 {
		launch.Exit("export", launch.BadInput("unexpected arguments %q", flag.Args()))
	}
	cfg, err := flags.Config("export")
	if err == nil {
		err = run(context.Background(), cfg, *csvOut, os.Stdout)
	}
	launch.Exit("export", err)
}

// run validates cfg, exports its tasks and prints where they are.
func run(ctx context.Context, cfg launch.Config, csv bool, w io.Writer) error {
	if launch.Given("methods") {
		return launch.BadInput("methods: an export trains nothing; give --methods to pipelines/evaluate, which trains jemcheck's methods beside your model")
	}
	cfg.Options.WriteSamples = true
	cfg.NoSummary = true
	for i := range cfg.Points {
		if _, _, err := tasks.SupportOf(cfg.Points[i]); err != nil {
			return launch.BadInput("task %s: %v", cfg.Points[i].Task, err)
		}
	}
	if _, err := launch.Run(ctx, &cfg, func(s beam.Scope, cfg *launch.Config) error { build(s, cfg, csv); return nil }, w); err != nil {
		return err
	}
	fmt.Fprintf(w, "export: %s (train on samples/, give your logits on points/ to pipelines/evaluate --from=%s)\n",
		launch.Location(cfg.Options.Out, stages.ExportKey), cfg.Options.Out)
	return nil
}

// build is the export DAG: the truth and the draws of every task, then the support
// and export.json.
func build(s beam.Scope, cfg *launch.Config, csv bool) {
	o := cfg.StageOptions()
	points := cfg.Points
	tables := stages.GenerateTables(s, o, points, launch.Source(s, tasks.BlockRefs(points, o.TrainBatch)))
	truth := stages.WriteTables(s, o, points, tables)
	sampled := stages.SampleDatasets(s, o, points, tables)
	launch.Publish(s, cfg, truth, stages.WriteExport(s, o, points, csv, truth, sampled))
}

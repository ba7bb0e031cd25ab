// Command export writes jemcheck's tasks for a model trained outside jemcheck: the
// same task flags as control, no training. Each point's training draws (samples/,
// with the protocol's held-out marker: train on heldout = 0, as jemcheck's methods
// do), its evaluation support (points/: the cells, x values or states on which a
// model's logits are evaluated), its truth on that support and export.json, which
// describes them (schemas.Export); --csv adds a CSV copy of every Parquet file. Train
// your own JEM on samples/, write its logits on points/ and give them to
// pipelines/evaluate. Images tasks have no finite support: each task is also written
// as numpy arrays (arrays/*.npz: draws, held-out marker, evaluation draws, the truth's
// parameters), and a classifier is given to evaluate as ONNX, one model per task.
//
//	go run ./pipelines/export --task=gmm:3,2 --tables=20 --out=out/export --csv
//	go run ./pipelines/export --task=images:8,2 --tables=4 --out=out/images
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
	arrays := false
	for i := range cfg.Points {
		if err := tasks.Exportable(cfg.Points[i]); err != nil {
			return launch.BadInput("task %s: %v", cfg.Points[i].Task, err)
		}
		_, a := tasks.MustOf(cfg.Points[i].Task).(tasks.Arrayer)
		arrays = arrays || a
	}
	if _, err := launch.Run(ctx, &cfg, func(s beam.Scope, cfg *launch.Config) error { build(s, cfg, csv); return nil }, w); err != nil {
		return err
	}
	if arrays {
		fmt.Fprintf(w, "export: %s (train one classifier per task on arrays/*.npz where heldout is False, export each to ONNX and give them to "+
			"pipelines/evaluate --from=%s --onnx='DIR/model-{task}.onnx')\n", launch.Location(cfg.Options.Out, stages.ExportKey), cfg.Options.Out)
	} else {
		fmt.Fprintf(w, "export: %s (train on the samples/ rows with heldout = 0, give your logits on points/ to pipelines/evaluate --from=%s)\n",
			launch.Location(cfg.Options.Out, stages.ExportKey), cfg.Options.Out)
	}
	for _, p := range cfg.Points {
		train, held := cfg.Options.Split(p)
		if held > 0 {
			fmt.Fprintf(w, "export: split: of each task's %d draws the first %d are trained on (heldout = 0) and the last %d held out (heldout = 1, --holdout=%g), "+
				"as jemcheck's methods (exact jem included, where the kind has it) train beside your model in evaluate\n", p.Samples, train, held, cfg.Options.Holdout)
		} else {
			fmt.Fprintf(w, "export: split: none: jemcheck's methods train on all %d draws of each task (heldout = 0 on every row)\n", p.Samples)
		}
	}
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
	launch.Publish(s, cfg, truth, stages.WriteExport(s, o, points, csv, truth, sampled), stages.WriteArrays(s, o, points, sampled))
}

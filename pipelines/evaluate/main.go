// Command evaluate measures a model trained outside jemcheck (your own JEM code) on
// jemcheck's tasks: its logits f(x)[y] on each task's evaluation support, from a file
// (--logits) or from a command that writes them (--command), or on images tasks the
// model itself as an ONNX classifier (--onnx, onnx.go), against the exact truth,
// beside jemcheck's own methods (--methods, default baseline and exact jem) trained on
// the same tasks and draws. Every exact metric, the excess KL over exact JEM with its
// CI, the verdict and the report, as a control run's.
//
//	go run ./pipelines/export --task=gmm:3,2 --tables=20 --out=out/export --csv
//	python3 my_jem.py out/export > logits.csv     # task_id, cell, y, logit[, model]
//	go run ./pipelines/evaluate --from=out/export --logits=logits.csv --out=out/evaluated
//	go run ./pipelines/evaluate --task=images:8,2 --tables=4 --onnx=model.onnx --out=out/onnx
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

// Config is what the evaluate command's flags say.
type Config struct {
	From    string // an export's or a finished run's folder (its config.json)
	Logits  string // the user's logits: a file or a folder of them
	Command string // or a command that writes them ({export}, {logits}; see command.go)
	// CommandTimeout bounds the command's time (DefaultCommandTimeout when 0).
	CommandTimeout time.Duration
	Methods        string // jemcheck's methods trained beside the user's models
	// ONNX is the user's classifier as an ONNX file, judged on an images task (onnx.go),
	// whose tasks are From's or Task's: Tables, Samples and Seed (SeedGiven when the
	// user set it) as the control flags (0: the kind's defaults).
	ONNX string
	// ONNXShared judges the one model ONNX names on every task (--onnx_shared); without
	// it one model for several tasks is refused (each images task has its own truth).
	ONNXShared      bool
	Task            string
	Tables, Samples int
	// AISChains and AISTemps set the images kind's AIS with --task (0: its defaults);
	// with --from the run's own settings apply.
	AISChains, AISTemps int
	Seed                uint64
	SeedGiven           bool
	Model               string // the name of a model no column names
	Out                 string
	Overwrite           bool
	Stdout              io.Writer // the command's output (os.Stderr)
}

var (
	from           = flag.String("from", "", "an export (pipelines/export) or a finished run's output folder or URL: its config.json gives the tasks (required)")
	logits         = flag.String("logits", "", "your model's logits: a Parquet or CSV file, or a folder of them, with the columns of the export's points (task_id, cell, y, logit on 2-D tasks; table_id, x, y, logit on tables) and optionally model")
	command        = flag.String("command", "", "instead of --logits: a shell command (sh -c) that trains or loads your model and writes its logits as CSV to $JEMCHECK_LOGITS from the export $JEMCHECK_EXPORT; the placeholders {logits} and {export} stand for these variables, quoted (the paths are never pasted into the command's text). It runs after --out and its lock are checked, in its own process group")
	commandTimeout = flag.Duration("command_timeout", DefaultCommandTimeout, "how long --command may run before it is stopped (its process group gets SIGTERM, then SIGKILL)")
	compare        = flag.String("methods", "baseline,jem", "jemcheck's methods trained on the same tasks and draws, for the comparison (exact jem gives the excess KL); with --onnx none unless given (e.g. baseline,sgld)")
	model          = flag.String("model", methods.External, "the name of the model whose rows name none (no model, method or run_id column)")
	onnxFile       = flag.String("onnx", "", "instead of --logits: your classifiers as ONNX files, one per task, judged on an images task as jemcheck's own CNNs: a name pattern with {task} for the task's id (--onnx='models/model-{task}.onnx'), or a folder holding model-{task}.onnx per task (path or gocloud.dev URL); input float32 images [n, 1, S, S] or [n, S*S], output the K logits [n, K] (docs/export-evaluate.md)")
	onnxShared     = flag.Bool("onnx_shared", false, "with --onnx naming one .onnx file: judge that one model on every task (each task has its own truth, so one model for several tasks is refused without it)")
	task           = flag.String("task", "", "with --onnx and no --from: the images task, images:S,K")
	tables         = flag.Int("tables", 0, "with --task: the number of tasks (0: the kind's default, 10)")
	samples        = flag.Int("samples", 0, "with --task: the exact draws of each task the comparison methods train on and the AIS base is fitted to (0: the kind's default, 2000)")
	aisChains      = flag.Int("ais_chains", 0, "with --task: AIS chains of the joint-KL bound (0: the kind's default, 256; control's --ais_chains)")
	aisTemps       = flag.Int("ais_temps", 0, "with --task: AIS temperatures (0: the kind's default, 1000; control's --ais_temps)")
	seed           = flag.Uint64("seed", 1, "with --task: the run seed (the tasks' truths and draws derive from it)")
	out            = flag.String("out", "./evaluated", "output location: a path or a gocloud.dev URL")
	overwrite      = flag.Bool("overwrite", false, "write into a non-empty --out that holds no jemcheck manifest.json, replacing only objects with jemcheck's output names")
)

func main() {
	launch.ShortUsage(flag.CommandLine)
	flag.Parse()
	beam.Init()
	launch.Logging(os.Stderr)
	if flag.NArg() > 0 {
		launch.Exit("evaluate", launch.BadInput("unexpected arguments %q", flag.Args()))
	}
	ms := *compare
	if *onnxFile != "" && !launch.Given("methods") {
		ms = "" // a model file: only the user's model, unless methods are asked for
	}
	err := run(context.Background(), Config{From: *from, Logits: *logits, Command: *command, CommandTimeout: *commandTimeout, Methods: ms,
		Model: *model, Out: *out, Overwrite: *overwrite, Stdout: os.Stderr, ONNX: *onnxFile, ONNXShared: *onnxShared, Task: *task, Tables: *tables, Samples: *samples,
		AISChains: *aisChains, AISTemps: *aisTemps, Seed: *seed, SeedGiven: launch.Given("seed")}, os.Stdout)
	launch.Exit("evaluate", err)
}

// run reads the tasks of c.From, checks the user's logits against them, trains the
// comparison methods and evaluates everything as one run into c.Out.
func run(ctx context.Context, c Config, w io.Writer) error {
	if c.ONNX != "" {
		return runONNX(ctx, c, w)
	}
	switch {
	case c.Task != "" || c.Tables != 0 || c.Samples != 0 || c.SeedGiven || c.AISChains != 0 || c.AISTemps != 0:
		return launch.BadInput("task, tables, samples, seed, ais_chains, ais_temps: these apply to --onnx without --from; with --logits or --command the tasks are --from's")
	case c.From == "":
		return launch.BadInput("from: give the export or run whose tasks your model was trained on (--from=out/export)")
	case c.Logits == "" && c.Command == "":
		return launch.BadInput("logits: give your model's logits (--logits=FILE) or a command that writes them (--command=...)")
	case c.Logits != "" && c.Command != "":
		return launch.BadInput("logits: give --logits or --command, not both")
	case !methods.ValidModelName(c.Model):
		return launch.BadInput("model: %s: use 1 to 40 letters, digits, '.', '_' or '-'", methods.Quote(c.Model))
	}
	cfg, err := readConfig(ctx, c.From)
	if err != nil {
		return err
	}
	compare, err := methods.Parse(c.Methods)
	if err != nil {
		return launch.BadInput("methods: %v", err)
	}
	p := &cfg.Points[0]
	_, _, err = tasks.SupportOf(*p)
	if err != nil {
		return launch.BadInput("from %s: task %s: %v", c.From, p.Task, err)
	}
	var ran *commandRun
	if c.Command != "" {
		if ran, err = runCommandChecked(ctx, c, *p, compare); err != nil || ran == nil {
			return err // no run and no error: a dry run, which runs no command
		}
		defer ran.cleanup()
		c.Logits = ran.logits
	}
	ids, err := tasks.TaskIDs(ctx, cfg.Options, *p)
	if err != nil {
		return launch.BadInput("from %s: %v", c.From, err)
	}
	fromFile := cfg.Options.TablesFrom != "" || cfg.Options.TasksFrom != ""
	ext, l, err := tasks.ReadExternal(ctx, c.Logits, *p, ids, c.Model, fromFile)
	if err != nil {
		return launch.BadInput("%v", err)
	}
	if !fromFile {
		p.Tables = len(ext.IDs)
	}
	p.Methods = append(compare, ext.Methods...)
	cfg.Pipeline, cfg.Runner, cfg.Overwrite = "evaluate", launch.RunnerName(), c.Overwrite
	cfg.Options.Out, cfg.Options.Logits, cfg.Options.LogitsModel = c.Out, c.Logits, c.Model
	cfg.Options.WriteSamples = false // the draws are the export's
	cfg.Inputs = []string{c.From, c.Logits}
	if cfg.Extra == nil {
		cfg.Extra = map[string]any{}
	}
	cfg.Extra["from"] = c.From
	// What the logits were: their files' sha256 (the run can be audited, and a
	// --command run's temporary file, deleted when evaluate exits, identified), and
	// the command that wrote them.
	sums, err := logitsSHA256(ctx, l.Files)
	if err != nil {
		return launch.BadInput("logits: %v", err)
	}
	cfg.Extra["logits_sha256"] = sums
	if ran != nil {
		cfg.Extra["command"] = c.Command
		cfg.Extra["command_timeout"] = cmp.Or(c.CommandTimeout, DefaultCommandTimeout).String()
		cfg.Extra["logits_note"] = "written by the command to a temporary file, removed when evaluate ended"
	}
	sum, err := launch.Run(ctx, &cfg, func(s beam.Scope, cfg *launch.Config) error {
		_, written := launch.Experiment(s, cfg, "Your model against exact JEM")
		launch.Publish(s, cfg, written...)
		return nil
	}, w)
	if err != nil || sum == nil {
		return err
	}
	for _, ps := range sum.Points {
		for _, sc := range ps.Samplers {
			if methods.IsExternal(sc.Method) {
				fmt.Fprintln(w, externalLine(sc))
			}
		}
	}
	verdict.Print(w, *sum) // the protocol, the headline, the graded lines, then "verdict: " and the reason
	fmt.Fprintf(w, "report: %s\n", launch.Location(c.Out, "report.html"))
	return nil
}

// readConfig reads the configuration of the export or run at from: one grid point.
func readConfig(ctx context.Context, from string) (launch.Config, error) {
	b, err := storage.OpenExistingBucket(ctx, from)
	if err != nil {
		return launch.Config{}, launch.BadInput("from %s: %v", from, err)
	}
	defer b.Close()
	data, err := storage.ReadSmallKey(ctx, b, "config.json", storage.MaxMetadataBytes)
	if storage.IsNotFound(err) {
		return launch.Config{}, launch.BadInput("from %s: no config.json: give the folder of an export (pipelines/export) or of a finished run", from)
	}
	if err != nil {
		return launch.Config{}, launch.BadInput("from %s: config.json: %v", from, err)
	}
	var cfg launch.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return launch.Config{}, launch.BadInput("from %s: config.json: %v", from, err)
	}
	if len(cfg.Points) != 1 {
		return launch.Config{}, launch.BadInput("from %s: it has %d grid points: evaluate a model on the tasks of one point (export them with pipelines/export)", from, len(cfg.Points))
	}
	return cfg, nil
}

// externalLine is the terminal's line on a user's model against exact jem: its excess
// with the CI over the tasks where both KLs are finite, or, where there are none, what
// happened instead (no NaN printed for a number that was not measured).
func externalLine(sc schemas.SamplerComparison) string {
	if sc.Pairs == 0 {
		switch {
		case sc.Nonfinite > 0:
			return fmt.Sprintf("%s: infinite joint KL on %d of %d tasks (its q puts no mass where the truth has some, or its logits overflow): "+
				"no finite excess over exact jem to report", sc.Method, sc.Nonfinite, sc.Nonfinite+sc.Excluded)
		default:
			return fmt.Sprintf("%s: no task to compare with exact jem (%d left out: a run diverged or is missing)", sc.Method, sc.Excluded)
		}
	}
	line := fmt.Sprintf("%s: excess joint KL over exact jem %+.4g nats [95%% CI %.4g, %.4g] on %d tasks (q(x) part %+.4g); exact jem's own KL %.4g",
		sc.Method, sc.Excess, sc.ExcessCILow, sc.ExcessCIHigh, sc.Pairs, sc.MarginalExcess, sc.MeanExact)
	if sc.Nonfinite > 0 {
		line += fmt.Sprintf("; infinite on %d more tasks", sc.Nonfinite)
	}
	return line
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/images"
	"github.com/jemcheck/jemcheck/verdict"
)

// A user's classifiers as ONNX files (--onnx), one per task (each images task has its
// own truth): a name pattern with {task} (tasks.ONNXPlaceholder) or a folder holding
// model-{task}.onnx per task; one .onnx file for several tasks only with --onnx_shared
// (onnxPattern). They are judged on an images task (tasks/images) as jemcheck's own
// CNNs are: the kind reads each model through the storage layer, checks it against its
// task before anything is written (tasks.ModelKind: its input is S² values an image,
// its output K finite logits, its input gradient computable) and evaluates it in the
// run's Evaluate stage (tasks.ModelSource: the same evaluation set, AIS calibration on
// the truth, measures and columns as the kind's own runs). The tasks come from --from
// (an images export, pipelines/export, or a finished images run's folder) or from
// --task, --tables, --samples and --seed (the control flags of the same names);
// --methods, default none here, trains jemcheck's own CNNs beside the models on the
// same tasks and draws (the first of each task's draws, heldout = 0: the split the
// export states).

// runONNX evaluates the ONNX model c.ONNX on the tasks of c.From or c.Task into c.Out.
func runONNX(ctx context.Context, c Config, w io.Writer) error {
	switch {
	case c.Logits != "" || c.Command != "":
		return launch.BadInput("onnx: give --onnx, or --logits or --command, not both")
	case c.From != "" && c.Task != "":
		return launch.BadInput("task: --from gives the tasks; leave --task out")
	case c.From == "" && c.Task == "":
		return launch.BadInput("onnx: give the images task your model is judged on (--task=images:S,K) or a finished images run's folder (--from)")
	case c.From != "" && (c.Tables != 0 || c.Samples != 0 || c.SeedGiven || c.AISChains != 0 || c.AISTemps != 0):
		return launch.BadInput("tables, samples, seed, ais_chains, ais_temps: --from gives them; leave them out")
	case !methods.ValidModelName(c.Model):
		return launch.BadInput("model: %s: use 1 to 40 letters, digits, '.', '_' or '-'", methods.Quote(c.Model))
	}
	var cfg launch.Config
	var err error
	if c.From != "" {
		cfg, err = readConfig(ctx, c.From)
	} else {
		cfg, err = taskConfig(c)
	}
	if err != nil {
		return err
	}
	p := &cfg.Points[0]
	kind, err := tasks.Of(p.Task)
	if err != nil {
		return launch.BadInput("task: %v", err)
	}
	mk, ok := kind.(tasks.ModelKind)
	if !ok {
		return launch.BadInput("onnx: task %s: a model file is judged on images tasks (--task=%sS,K); on this task give your model's logits (--logits)", p.Task, images.Prefix)
	}
	var compare []string
	if strings.TrimSpace(c.Methods) != "" {
		if compare, err = methods.Parse(c.Methods); err != nil {
			return launch.BadInput("methods: %v", err)
		}
	}
	ids, err := tasks.TaskIDs(ctx, cfg.Options, *p)
	if err != nil {
		return launch.BadInput("task %s: %v", p.Task, err)
	}
	pattern, err := onnxPattern(c.ONNX, c.ONNXShared, ids)
	if err != nil {
		return err
	}
	p.Methods = append(compare, methods.ExternalMethod(c.Model))
	cfg.Pipeline, cfg.Runner, cfg.Overwrite = "evaluate", launch.RunnerName(), c.Overwrite
	cfg.Options.Out, cfg.Options.ONNX = c.Out, pattern
	cfg.Options.Logits, cfg.Options.LogitsModel = "", c.Model
	cfg.Inputs = []string{pattern}
	if cfg.Extra == nil {
		cfg.Extra = map[string]any{}
	}
	if c.From != "" {
		cfg.Options.WriteSamples = false // the draws are the run's
		cfg.Inputs = append(cfg.Inputs, c.From)
		cfg.Extra["from"] = c.From
	}
	// Every task's model is read (bounded: images.MaxONNXBytes) and checked against
	// its own task before anything is written; config.json records each one's sha256.
	sums := map[string]string{}
	for i, id := range ids {
		loc := tasks.ModelLocation(pattern, id)
		if _, seen := sums[loc]; seen {
			continue // one model for every task (--onnx_shared): checked on the first
		}
		sum, err := onnxSHA256(ctx, loc)
		if err != nil {
			return launch.BadInput("onnx: %v", err)
		}
		if err := mk.CheckModel(ctx, cfg.Options, *p, int64(i), loc); err != nil {
			return launch.BadInput("%v", err)
		}
		sums[loc] = sum
	}
	if len(sums) == 1 {
		cfg.Extra["onnx_sha256"] = sums[pattern]
	} else {
		cfg.Extra["onnx_sha256"] = sums // by model location
	}
	if c.ONNXShared {
		cfg.Extra["onnx_shared"] = true
	}
	if err := launch.Prepare(ctx, &cfg); err != nil {
		return err
	}
	pl, s := beam.NewPipelineWithRoot()
	_, written := launch.Experiment(s, &cfg, "Your model against the truth")
	launch.Publish(s, &cfg, written...)
	summary, err := launch.Execute(ctx, &cfg, pl, w)
	if err != nil || summary == nil {
		return err
	}
	for _, ps := range summary.Points {
		for _, m := range ps.Methods {
			if !methods.IsExternal(m.Method) {
				continue
			}
			lower := "kl_joint_lower: refused on every task (the AIS schedule failed its calibration on the truth)"
			if m.KLJointLower.Count > 0 {
				lower = fmt.Sprintf("kl_joint_lower %.4g nats (mean of the %d of %d tasks whose calibration accepted the schedule)", m.KLJointLower.Mean, m.KLJointLower.Count, ps.Tables)
			}
			fmt.Fprintf(w, "%s: kl_conditional %.4g nats, accuracy %.4f (Bayes %.4f), auroc_px %.4f (ceiling %.4f), %s, on %d tasks\n",
				m.Method, m.KLConditional.Mean, m.Accuracy.Mean, m.BayesAccuracy.Mean, m.AUROCPx.Mean, m.AUROCTruePx.Mean, lower, ps.Tables)
		}
	}
	if train, held := cfg.Options.Split(*p); held > 0 {
		others := "no method of jemcheck's ran beside them (--methods)"
		if len(compare) > 0 {
			others = "jemcheck's " + strings.Join(compare, ", ") + " trained on the same draws"
		}
		fmt.Fprintf(w, "split: your models were to train on the first %d of each task's %d draws (heldout = 0; the export's arrays: heldout == False), "+
			"the last %d held out; %s, and the AIS base of kl_joint_lower is fitted to them\n", train, p.Samples, held, others)
	}
	verdict.Print(w, *summary)
	fmt.Fprintf(w, "report: %s\n", launch.Location(c.Out, "report.html"))
	return nil
}

// onnxPattern resolves --onnx into the location of every task's model, with
// tasks.ONNXPlaceholder for the task's id: a pattern that has it is kept; a folder (a
// location not ending in .onnx) holds images.ONNXFolderModel per task; one .onnx file
// is one model for every task, refused for several tasks (each has its own truth)
// unless shared (--onnx_shared).
func onnxPattern(loc string, shared bool, ids []int64) (string, error) {
	ph := tasks.ONNXPlaceholder
	last := fmt.Sprint(len(ids) - 1)
	if len(ids) > 0 {
		last = fmt.Sprint(ids[len(ids)-1])
	}
	switch {
	case strings.Contains(loc, ph):
		if shared {
			return "", launch.BadInput("onnx_shared: --onnx=%s names one model per task (%s); --onnx_shared is for one .onnx file judged on every task: leave it out", methods.Quote(loc), ph)
		}
		return loc, nil
	case strings.HasSuffix(strings.ToLower(onnxPath(loc)), ".onnx"):
		if len(ids) > 1 && !shared {
			return "", launch.BadInput("onnx: one model (%s) for %d tasks, each with its own truth (an images task draws a new mixture per task): "+
				"give one model per task, --onnx='models/model-%s.onnx' (%s is the task's id, %d..%s) or --onnx=FOLDER holding %s per task; "+
				"or, to judge this one model on every task, add --onnx_shared", methods.Quote(loc), len(ids), ph, ph, ids[0], last, images.ONNXFolderModel)
		}
		return loc, nil
	case shared:
		return "", launch.BadInput("onnx_shared: --onnx=%s is a folder of models, one per task; --onnx_shared is for one .onnx file judged on every task: leave it out", methods.Quote(loc))
	}
	// A folder: its model-{task}.onnx, inside a URL's path (before its query).
	base, query, _ := strings.Cut(loc, "?")
	pattern := strings.TrimSuffix(base, "/") + "/" + images.ONNXFolderModel
	if query != "" {
		pattern += "?" + query
	}
	return pattern, nil
}

// onnxPath is loc without a URL's query.
func onnxPath(loc string) string {
	base, _, _ := strings.Cut(loc, "?")
	return base
}

// taskConfig is the one-point configuration of --task, --tables, --samples and --seed,
// resolved as the control command resolves the same flags (launch.Flags, the kind's
// defaults for the rest).
func taskConfig(c Config) (launch.Config, error) {
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := launch.RegisterFlags(fs, launch.Defaults{Tables: images.DefaultTasks, Methods: "baseline", Out: c.Out})
	args := []string{"-task=" + c.Task, "-seed=" + strconv.FormatUint(c.Seed, 10), "-out=" + c.Out}
	if c.Tables != 0 {
		args = append(args, "-tables="+strconv.Itoa(c.Tables))
	}
	if c.Samples != 0 {
		args = append(args, "-samples="+strconv.Itoa(c.Samples))
	}
	if c.AISChains != 0 {
		args = append(args, "-ais_chains="+strconv.Itoa(c.AISChains))
	}
	if c.AISTemps != 0 {
		args = append(args, "-ais_temps="+strconv.Itoa(c.AISTemps))
	}
	if err := fs.Parse(args); err != nil {
		return launch.Config{}, launch.BadInput("%v", err)
	}
	if !strings.HasPrefix(strings.TrimSpace(c.Task), images.Prefix) {
		return launch.Config{}, launch.BadInput("onnx: task %s: a model file is judged on images tasks (--task=%sS,K); on other tasks export them (pipelines/export) and give your model's logits (--logits)",
			methods.Quote(c.Task), images.Prefix)
	}
	cfg, err := f.Config("evaluate")
	if err != nil {
		return launch.Config{}, err
	}
	return cfg, nil
}

// onnxSHA256 is the sha256 of the ONNX file at loc, read within images.MaxONNXBytes.
func onnxSHA256(ctx context.Context, loc string) (string, error) {
	o, err := storage.OpenObject(ctx, loc, images.MaxONNXBytes)
	if storage.IsNotFound(err) {
		return "", fmt.Errorf("%s: no such file", loc)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", loc, err)
	}
	defer o.Close()
	h := sha256.New()
	if _, err := io.Copy(h, o); err != nil {
		return "", fmt.Errorf("%s: %w", loc, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

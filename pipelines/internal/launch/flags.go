package launch

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks"
)

// Flags are the experiment flags the control and regress commands share. Mains
// register them on their own FlagSet (normally flag.CommandLine) and call Config after
// parsing; nothing here reads flags on its own.
type Flags struct {
	*OptionFlags
	fs       *flag.FlagSet
	defaults Defaults
	tables   *int
	methods  *string
	grid     schemas.Grid // the grid axes' flags (schemas.AxisDefs) set their fields here
}

// OptionFlags are the run-wide flags every pipeline has (stages.Options).
type OptionFlags struct {
	trainBatch, reportTables, evalEvery, purifySteps *int
	aisChains, aisTemps                              *int
	measureTasks, samplerChains                      *int
	tablesFrom, tasksFrom, backend, out, ood         *string
	selectRule                                       *string
	attackEps, purifyLR, holdout                     *float64
	margin, maxP, maxExcess                          *float64
	seed                                             *uint64
	writeSamples, timings                            *bool
	overwrite                                        *bool
	resume                                           *bool
}

// Defaults are a command's flag defaults that differ between commands.
type Defaults struct {
	Tables  int
	Methods string
	Out     string
}

// RegisterFlags defines the experiment flags on fs: the number of tables, the methods
// and a flag per grid axis of schemas.AxisDefs that has one.
func RegisterFlags(fs *flag.FlagSet, d Defaults) *Flags {
	f := &Flags{
		OptionFlags: RegisterOptionFlags(fs, d.Out),
		fs:          fs,
		defaults:    d,
		tables:      fs.Int("tables", d.Tables, tablesHelp(d.Tables)),
		methods:     fs.String("methods", "", methodsHelp(d.Methods)),
	}
	for _, a := range schemas.AxisDefs {
		if name := a.FlagName(); name != "" {
			axisFlag(fs, name, a, &f.grid)
		}
	}
	registerAliases(fs)
	return f
}

// axisFlag defines the flag name of the axis a on fs: its default and help are the
// axis's, and it sets the axis's field of g.
func axisFlag(fs *flag.FlagSet, name string, a schemas.AxisDef, g *schemas.Grid) {
	switch p := a.Field.Ptr(g).(type) {
	case *int:
		fs.IntVar(p, name, a.Field.Default().(int), a.Doc)
	case *float64:
		fs.Float64Var(p, name, a.Field.Default().(float64), a.Doc)
	case *string:
		fs.StringVar(p, name, a.Field.Default().(string), a.Doc)
	case *bool:
		fs.BoolVar(p, name, a.Field.Default().(bool), a.Doc)
	default: // a method's option (schemas.OptionField): set through the axis
		a.Field.Set(g, a.Field.Default())
		fs.Var(optionValue{a: a, g: g}, name, a.Doc)
	}
}

// optionValue is the flag of a method's option: it parses its value in the option's
// type and sets it on the grid.
type optionValue struct {
	a schemas.AxisDef
	g *schemas.Grid
}

func (v optionValue) String() string {
	if v.g == nil { // flag's zero-value probe
		return fmt.Sprint(v.a.Field.Default())
	}
	return fmt.Sprint(v.a.Field.Get(v.g))
}

func (v optionValue) Set(s string) error {
	var x any
	var err error
	switch v.a.Field.Default().(type) {
	case int:
		x, err = strconv.Atoi(s)
	case float64:
		x, err = strconv.ParseFloat(s, 64)
	case bool:
		x, err = strconv.ParseBool(s)
	default:
		x = s
	}
	if err != nil {
		return fmt.Errorf("want a %s", v.a.Type())
	}
	v.a.Field.Set(v.g, x)
	return nil
}

func (v optionValue) IsBoolFlag() bool { return v.a.Type() == "bool" }

// RegisterOptionFlags defines the run-wide flags on fs, and makes a flag error short
// (see ShortUsage).
func RegisterOptionFlags(fs *flag.FlagSet, out string) *OptionFlags {
	ShortUsage(fs)
	th := stages.DefaultThresholds()
	return &OptionFlags{
		tablesFrom: fs.String("tables_from", "", "read the true tables from this Parquet or CSV file (path or URL) instead of generating them"),
		tasksFrom: fs.String("tasks_from", "", "read 2-D tasks (Gaussian mixtures: task_id, y, component, weight, mu0, mu1, sd) "+
			"from this Parquet or CSV file (path or URL); the task is then \"file\""),
		evalEvery: fs.Int("eval_every", 100, "2-D and block tasks: the held-out NLL (the selection check) and the exact KL every this many training steps, to curves/ (0 = every steps/30)"),
		selectRule: fs.String("select", tasks.SelectHeldout, "2-D and block tasks: the iterate every method is scored at, chosen without the truth: "+
			"heldout (least NLL on the held-out draws among the checks) or last (the last step)"),
		holdout: fs.Float64("holdout", tasks.DefaultHoldout, "2-D and block tasks: share of each task's draws held out from training for the selection (the same split for every method)"),
		ood: fs.String("ood", tasks.OODUniform, "2-D tasks: the out-of-distribution draws of the OOD scores: uniform (over the box), "+
			"shifted (the task's draws moved by box/2 along x0) or other-task (draws of another task of the same kind)"),
		attackEps:   fs.Float64("attack_eps", 0.3, "2-D tasks: radius of the L∞ PGD attack (20 steps) on the held-out draws"),
		purifySteps: fs.Int("purify_steps", 20, "2-D tasks: steps of energy descent (x += purify_lr·∇x log q(x)) from the attacked draws"),
		purifyLR:    fs.Float64("purify_lr", 0.01, "2-D tasks: step size of the purification"),
		aisChains: fs.Int("ais_chains", 256, "image tasks: annealed importance sampling chains (the calibration on the truth and every model's "+
			"forward AIS; more chains, smaller standard errors)"),
		aisTemps: fs.Int("ais_temps", 1000, "image tasks: AIS temperatures (longer paths, smaller BDMC gaps: the calibration on the truth "+
			"accepts the schedule where its gap + SE ≤ 0.1 nat; cost is linear in chains × temperatures)"),
		measureTasks: fs.Int("measure_tasks", tasks.DefaultMeasureTasks, "2-D tasks: how many tasks of each point (the first ordinals, the same for every method) "+
			"get the measures beyond the exact KL: the sampler's own distribution (--sampler_chains short-run and long-chain draws of each run's model) and the promises "+
			"(OOD scores, calibration, attack, purification); -1 = every task, the full measure (it can cost more than a short run's training)"),
		samplerChains: fs.Int("sampler_chains", tasks.DefaultSamplerChains, "2-D tasks, the measured tasks: chains of each run's sampler distribution "+
			"(the method's own short run and a 500-move MALA chain of its model; TVs to p(x) and q(x) with standard errors ∝ 1/√chains); 2000 = the full measure"),
		seed:         fs.Uint64("seed", 1, "run seed: every random draw derives from it"),
		out:          fs.String("out", out, "output location: a path or a gocloud.dev URL (file://, mem://, gs://, s3://)"),
		trainBatch:   fs.Int("train_batch", tasks.DefaultTrainBatch, "runs trained together in one GoMLX graph"),
		backend:      fs.String("backend", "", `training backend: "" = fastest on CPU (fused float32 kernels where they cover the model, else GoMLX go:ops_sequential); kernel = fused kernels only; go or go:ops_sequential = GoMLX pure Go; xla:cuda or xla:cpu when built with -tags xla`),
		writeSamples: fs.Bool("write_samples", true, "write the sampled datasets to samples/ as Parquet"),
		overwrite: fs.Bool("overwrite", false, "replace another pipeline's run in --out, or write into a non-empty --out that holds no jemcheck manifest.json, replacing "+
			"only objects with jemcheck's output names (deletes nothing)"),
		resume: fs.Bool("resume", false, "continue the interrupted run in --out (same flags: same config.json) from its completed blocks; "+
			"without it an earlier run's leftovers are removed"),
		timings:      fs.Bool("timings", false, "record per-run training wall time in the results/ files (train_ms); off keeps every output byte-identical across runs"),
		reportTables: fs.Int("report_tables", 3, "tables per point shown in the report's triple plots"),
		margin: fs.Float64("margin", th.Margin, "verdict: JEM's optimisation gap (joint and q(x)) and the family's approximation error "+
			"must each be ≤ this share of the statistical error (upper end of a bootstrap 95% CI)"),
		maxP: fs.Float64("max_p", th.MaxP, "secondary verdict line (reported, not deciding): the paired Wilcoxon p-value of baseline vs JEM must be < this"),
		maxExcess: fs.Float64("max_sampler_excess", 0, "verdict: every sampler method (sgld, mala, jarzynski, ed, shortrun, pcd, pcd-exact) must also keep its mean excess joint KL "+
			"over exact jem within this many nats (upper end of the 95% CI); 0 = no such gate"),
	}
}

// Options resolves the parsed run-wide flags.
func (f *OptionFlags) Options() stages.Options {
	return stages.Options{
		Seed: *f.seed, Out: *f.out, TablesFrom: *f.tablesFrom, TasksFrom: *f.tasksFrom, EvalEvery: *f.evalEvery,
		Select: *f.selectRule, Holdout: *f.holdout,
		OOD: *f.ood, AttackEps: *f.attackEps, PurifySteps: *f.purifySteps, PurifyLR: *f.purifyLR,
		AISChains: *f.aisChains, AISTemps: *f.aisTemps, MeasureTasks: *f.measureTasks, SamplerChains: *f.samplerChains,
		TrainBatch: *f.trainBatch, Backend: *f.backend,
		WriteSamples: *f.writeSamples, Timings: *f.timings, ReportTables: *f.reportTables,
		Thresholds: stages.Thresholds{Margin: *f.margin, MaxP: *f.maxP, MaxSamplerExcess: *f.maxExcess},
	}
}

// Overwrite is the --overwrite flag: see Config.Overwrite.
func (f *OptionFlags) Overwrite() bool { return *f.overwrite }

// Resume is the --resume flag: see Config.Resume.
func (f *OptionFlags) Resume() bool { return *f.resume }

// Config resolves the parsed flags into a one-point configuration. A 2-D task
// (--task, or --tasks_from) takes the 2-D defaults for the flags not given on the
// command line (stages.ApplyTaskDefaults), and sgld among its default methods.
func (f *Flags) Config(pipeline string) (Config, error) {
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if err := resolveAliases(f.fs, given); err != nil {
		return Config{}, err
	}
	p := stages.Point{Grid: f.grid, Tables: *f.tables}
	if *f.tasksFrom != "" {
		p.Task = tasks.TaskFile
	}
	ms := *f.methods
	if !given["methods"] {
		ms = f.defaults.Methods
	}
	list, err := methods.Parse(ms)
	if err != nil {
		return Config{}, BadInput("methods: %v", err)
	}
	p.Methods = list
	p.Defaults(func(axis string) bool { return given[axis] }) // the kind's defaults (on 2-D tasks sgld among the methods)
	if err := checkGiven(given, p, *f.tablesFrom, *f.tasksFrom); err != nil {
		return Config{}, err
	}
	opts := f.Options()
	opts.Resolve([]stages.Point{p}) // config.json records what ran: no options no kind of the run reads
	return Config{
		Pipeline:  pipeline,
		Runner:    RunnerName(),
		Options:   opts,
		Overwrite: f.Overwrite(),
		Resume:    f.Resume(),
		Points:    []stages.Point{p},
	}, nil
}

// flagsFromTables are the flags a --tables_from file sets.
var flagsFromTables = []string{"x_values", "classes", "generator", "x_encoding"}

// checkGiven refuses a flag the user set (given) that the run would ignore: a 2-D
// flag on tables, a table flag on a 2-D task or with --tables_from, --task or
// --tables beside a tasks file, --tables beside a tables file (the files set them),
// and a sampler option with no method of p that uses it.
func checkGiven(given map[string]bool, p stages.Point, tablesFrom, tasksFrom string) error {
	kind, err := tasks.Of(p.Task)
	if err != nil {
		return BadInput("%v", err)
	}
	for _, k := range tasks.Kinds() {
		for _, name := range k.Axes() {
			switch {
			case !given[name] || k.Name() == kind.Name() || slices.Contains(kind.Axes(), name): // an axis kinds share
			case k.Name() == methods.KindTable && tablesFrom == "":
				return BadInput("%s applies to %s only; the %s %s sets its own classes and grid (--grid) and has no generator or encoding",
					name, methods.KindNoun(k.Name()), strings.TrimSuffix(methods.KindNoun(kind.Name()), "s"), p.Task)
			case k.Name() != methods.KindTable:
				return BadInput("%s applies to %s only%s, not to %s", name, methods.KindNoun(k.Name()), methods.KindHint(k.Name()), methods.KindNoun(kind.Name()))
			}
		}
	}
	for _, name := range flagsFromTables {
		if given[name] && tablesFrom != "" {
			return BadInput("%s: the tables of --tables_from set it; leave --%s out", name, name)
		}
	}
	switch {
	case given["task"] && tasksFrom != "":
		return BadInput("task: --tasks_from sets the task (\"file\"); leave --task out")
	case given["tables"] && tasksFrom != "":
		return BadInput("tables: --tasks_from sets the number of tasks (all of the file's); leave --tables out")
	case given["tables"] && tablesFrom != "":
		return BadInput("tables: --tables_from sets the number of tables (all of the file's); leave --tables out")
	}
	for _, m := range methods.Table {
		for _, name := range m.Options {
			if given[name] && !methods.Uses(p.Methods, name) {
				return BadInput("%s: no method of this run uses it: it applies to %s (methods: %s)",
					name, strings.Join(methods.Using(name), " and "), strings.Join(p.Methods, ", "))
			}
		}
	}
	return nil
}

// ShortUsage makes a parse error on fs print one line, "NAME: error: MESSAGE (run with
// -help for the flags)", where an unknown flag's MESSAGE ends in a hint (see hint: the
// reference implementation's flags, "did you mean --X?"), instead of the error followed
// by the usage of every flag (Beam's included); -help and -h print them all (printUsage:
// a usage line, examples, jemcheck's flags in groups, Beam's runner flags last).
// RegisterOptionFlags calls it; a command that defines its flags itself calls it before
// parsing, after setting fs's output if at all. The flag package writes an
// error to fs.Output() and then calls fs.Usage, while -help calls fs.Usage alone, so
// fs's output is held back until Usage decides which case it is. The exit status
// (2 for an error with flag.ExitOnError) is unchanged.
func ShortUsage(fs *flag.FlagSet) {
	out := &heldOutput{w: fs.Output()}
	fs.SetOutput(out)
	name := filepath.Base(fs.Name())
	if fs.Lookup(HelpRunnerFlag) == nil {
		fs.BoolFunc(HelpRunnerFlag, "print this help with the runner's flags (Apache Beam, Dataflow, prism) in full, and exit", func(string) error {
			printUsageOf(out.w, fs, true)
			os.Exit(0)
			return nil
		})
	}
	fs.Usage = func() {
		msg := strings.TrimSpace(out.held.String())
		out.held.Reset()
		if msg != "" {
			if unknown, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok && !strings.Contains(unknown, "\n") {
				if h := hint(fs, unknown); h != "" {
					msg += ": " + h
				}
			}
			fmt.Fprintf(out.w, "%s: error: %s (run with -help for the flags)\n", name, strings.ReplaceAll(msg, "\n", "; "))
			return
		}
		out.direct = true
		defer func() { out.direct = false }()
		printUsage(out.w, fs)
	}
}

// heldOutput holds what the flag package writes until fs.Usage runs (or passes it
// straight through while the usage is printed).
type heldOutput struct {
	w      io.Writer
	held   bytes.Buffer
	direct bool
}

func (h *heldOutput) Write(p []byte) (int, error) {
	if h.direct {
		return h.w.Write(p)
	}
	return h.held.Write(p)
}

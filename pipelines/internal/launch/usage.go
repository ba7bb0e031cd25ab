package launch

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/tasks"
)

// runnerFlags are the flags the packages launch imports define on flag.CommandLine
// when they initialise, before any command defines its own: Apache Beam's runners
// (Dataflow, prism, the portable runner), its worker harness and its GCP options.
// -help lists them last, under their own heading (printUsage).
var runnerFlags = func() map[string]bool {
	m := map[string]bool{}
	flag.CommandLine.VisitAll(func(f *flag.Flag) { m[f.Name] = true })
	return m
}()

// commandUsage is what -help prints above a command's flags.
type commandUsage struct {
	line     string   // the usage line, after "Usage: "
	about    string   // one sentence: what the command does
	examples []string // three examples, each "COMMAND  # what it does"
}

// usages are the commands' usage texts, by command name (the FlagSet's base name).
var usages = map[string]commandUsage{
	"control": {"control [flags]",
		"Trains each method on one grid point's tasks, measures every model against the exact truth, writes results, summary.json and report.html under --out, and prints the headline and the verdict.",
		[]string{
			"control                                                    # 1,000 random 2x2 tables x {baseline, jem, oracle} -> ./out",
			"control --task=gmm:3,2 --tables=10 --methods=jem,ed --out=out/ed   # a recipe against exact JEM on a 2-D task",
			"control --runner=dataflow --dry_run --project=P --region=us-central1 --staging_location=gs://B/staging --out=gs://B/run1",
		}},
	"regress": {"regress [flags]",
		"The regression check: the control experiment on many tables; exit 0 when the JEM claim holds, 1 when it fails, 2 on an error.",
		[]string{
			"regress                                                    # 10,000 tables x {baseline, jem} -> ./out/regress",
			"regress --task=gmm:3,2 --tables=20 --out=out/regress-2d    # with the paper's sampler (sgld) on 2-D tasks",
			"regress --jem_px_weight=0 --out=out/r0                     # JEM without log q(x) is the baseline: exits 1",
		}},
	"sweep": {"sweep --spec=FILE [flags]",
		"Runs every grid point of a sweep spec (YAML or JSON: the Cartesian product of its axes) and writes one report with a verdict per point.",
		[]string{
			"sweep --spec=sweeps/kl-vs-n.yaml --out=out/kl-vs-n            # joint KL against N, 8 points",
			"sweep --spec=sweeps/leaderboard.yaml --seed=2 --out=out/lb    # every 2-D recipe on three task families",
			"sweep --spec=gs://B/specs/lr.yaml --runner=dataflow --project=P --region=us-central1 --staging_location=gs://B/staging --out=gs://B/lr",
		}},
	"export": {"export [task flags] --out=DIR [--csv]",
		"Writes the tasks for your own JEM code: training draws, evaluation points, the truth and export.json; trains nothing.",
		[]string{
			"export --task=gmm:3,2 --tables=20 --out=out/export --csv     # 20 2-D tasks, also as CSV",
			"export --out=out/export-tables                               # 1,000 random 2x2 tables",
			"export --task=bits:8,2 --tables=10 --out=out/export-bits      # binary tables in D = 8",
		}},
	"evaluate": {"evaluate --from=EXPORT (--logits=FILE | --command=CMD) [flags]",
		"Measures your model's logits on an export's tasks beside jemcheck's baseline and exact jem: every exact KL, the excess over exact JEM with its CI, the grade and the report.",
		[]string{
			"evaluate --from=out/export --logits=logits.csv --out=out/evaluated",
			"evaluate --from=out/export --command='python3 my_jem.py {export} {logits}' --model=mine",
			"evaluate --from=out/export --logits=out/official.csv --methods=jem,sgld   # beside jemcheck's own sgld",
		}},
	"compare": {"compare RUN1 RUN2 [RUN...] [--out=DIR]",
		"Puts finished runs side by side: per grid point and method each run's mean joint KL [95% CI] and its difference from the first run.",
		[]string{
			"compare out/regress-v1 out/regress-v2 --out=out/compare",
			"compare out/lb-defaults out/lb-tuned out/lb-seed3",
			"compare gs://B/run1 gs://B/run2 --out=gs://B/compare",
		}},
}

// flagGroups are jemcheck's own flags by what they set, in the order -help lists them;
// a flag in none of them (a command's own: sweep's --spec, evaluate's --from) is listed
// first, under the command's name. The methods' own options are a group of their own,
// taken from the method table.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Task", []string{"task", "tables", "tables_from", "tasks_from", "x_values", "classes", "components", "generator", "samples", "grid", "box", "seed"}},
	{"Methods", []string{"methods", "model", "x_encoding", "jem_px_weight", "train_grid"}},
	{"Training", []string{"lr", "steps", "batch_size", "train_batch", "backend"}},
	{"Selection, evaluation and verdict", []string{"select", "holdout", "eval_every", "ood", "attack_eps", "purify_steps", "purify_lr",
		"measure_tasks", "sampler_chains", "ais_chains", "ais_temps", "margin", "max_p", "max_sampler_excess", "report_tables"}},
	{"Output", []string{"out", "overwrite", "resume", "write_samples", "timings", "csv"}},
	{"Help", []string{HelpRunnerFlag}},
}

// methodOptionsTitle heads the flags only some methods read (methods.Table's Options).
const methodOptionsTitle = "Method options (read only by the methods named; refused without one)"

// refTitle heads the reference implementation's names (RefFlags' aliases).
const refTitle = "The reference implementation's names (wgrathwohl/JEM)"

// HelpRunnerFlag prints a command's -help with Beam's runner flags in full and exits 0.
const HelpRunnerFlag = "help_runner"

// runnerTitle heads Beam's runner flags.
const runnerTitle = "Runner flags (Apache Beam: prism in-process by default; Dataflow, portable runners; see docs/scale.md)"

// printUsage writes fs's -help: the usage line, what the command does, three
// examples, then its flags in groups (jemcheck's own first, Beam's runner flags last).
// Each flag's default is stated once: a usage text that already says "(default ...)"
// gets no second one.
func printUsage(w io.Writer, fs *flag.FlagSet) { printUsageOf(w, fs, false) }

// printUsageOf is printUsage; with runner false, Beam's runner flags are one line that
// names --help_runner (they were ~120 lines of a command's -help), with runner true
// they are listed in full.
func printUsageOf(w io.Writer, fs *flag.FlagSet, runner bool) {
	name := filepath.Base(fs.Name())
	u, ok := usages[name]
	if !ok {
		u = commandUsage{line: name + " [flags]"}
	}
	fmt.Fprintf(w, "Usage: %s\n", u.line)
	if u.about != "" {
		fmt.Fprintf(w, "\n%s\n", u.about)
	}
	if len(u.examples) > 0 {
		fmt.Fprintf(w, "\nExamples (GOEXPERIMENT=simd go run ./pipelines/%s ..., or the binary of GOEXPERIMENT=simd go build -o bin/ ./pipelines/...):\n", name)
		for _, e := range u.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	group := map[string]string{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			group[n] = g.title
		}
	}
	for _, m := range methods.Table {
		for _, n := range m.Options {
			if _, ok := group[n]; !ok {
				group[n] = methodOptionsTitle
			}
		}
	}
	for _, r := range Aliases() {
		group[r.Name] = refTitle
	}
	own := name + "'s own flags"
	order := []string{own}
	for _, g := range flagGroups {
		order = append(order, g.title)
	}
	order = append(order, methodOptionsTitle, refTitle, runnerTitle)
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := group[f.Name]
		switch {
		case runnerFlags[f.Name] && (fs == flag.CommandLine || !ok):
			g = runnerTitle
		case !ok:
			g = own
		}
		byGroup[g] = append(byGroup[g], f)
	})
	rank := map[string]int{} // a group's flags in the order flagGroups names them
	for _, g := range flagGroups {
		for i, n := range g.names {
			rank[n] = i
		}
	}
	for _, fl := range byGroup {
		slices.SortStableFunc(fl, func(a, b *flag.Flag) int { return rank[a.Name] - rank[b.Name] })
	}
	for _, g := range order {
		if len(byGroup[g]) == 0 {
			continue
		}
		if g == runnerTitle && !runner {
			fmt.Fprintf(w, "\n%s: %d flags, listed by --%s\n", runnerTitle, len(byGroup[g]), HelpRunnerFlag)
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, f := range byGroup[g] {
			printFlag(w, f)
		}
	}
}

// printFlag writes one flag as flag.PrintDefaults does, but with its default only when
// its usage does not state it already.
func printFlag(w io.Writer, f *flag.Flag) {
	var b strings.Builder
	fmt.Fprintf(&b, "  -%s", f.Name)
	typ, usage := flag.UnquoteUsage(f)
	if typ != "" {
		b.WriteString(" " + typ)
	}
	if b.Len() <= 4 { // a one-letter boolean flag fits on the line
		b.WriteString("\t")
	} else {
		b.WriteString("\n    \t")
	}
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
	if !strings.Contains(usage, "(default") && !isZeroValue(f) {
		if g, ok := f.Value.(flag.Getter); ok && reflect.TypeOf(g.Get()) == reflect.TypeFor[string]() {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		} else {
			fmt.Fprintf(&b, " (default %v)", f.DefValue)
		}
	}
	fmt.Fprintln(w, b.String())
}

// isZeroValue reports whether f's default is its type's zero value (as the flag
// package decides when to print a default).
func isZeroValue(f *flag.Flag) (zero bool) {
	defer func() {
		if recover() != nil {
			zero = false
		}
	}()
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	v, ok := z.Interface().(flag.Value)
	if !ok {
		return f.DefValue == ""
	}
	return f.DefValue == v.String()
}

// methodsHelp is the -methods help: the default, how the task kinds change it, and
// every method jemcheck trains, from methods.Table, with the kinds it trains on.
func methodsHelp(def string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "comma-separated methods to train (default %q", def)
	for _, k := range kindDefaults(def) {
		if k.methods != def {
			fmt.Fprintf(&b, "; %s: %q", k.noun, k.methods)
		}
	}
	b.WriteString("):")
	for _, m := range methods.Table {
		if m.External {
			continue
		}
		var on []string
		for _, k := range m.Kinds {
			on = append(on, methods.KindNoun(k))
		}
		fmt.Fprintf(&b, "\n  %-13s %s [%s]", m.Name, m.Doc, strings.Join(on, ", "))
	}
	b.WriteString("\nA model trained outside jemcheck is measured by pipelines/evaluate (--logits), not trained here.")
	return b.String()
}

// tablesHelp is the -tables help with the command's default and each kind's.
func tablesHelp(def int) string {
	var parts []string
	for _, k := range kindDefaults("") {
		if k.tables != def {
			parts = append(parts, fmt.Sprintf("%s %d", k.noun, k.tables))
		}
	}
	s := fmt.Sprintf("number of random joint tables, or of tasks of another kind (default %d", def)
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	return s + ")"
}

// kindDefault is a task kind's default number of tasks and methods.
type kindDefault struct {
	noun    string
	tables  int
	methods string
}

// kindExamples are a task of each kind other than tables, for reading its defaults.
var kindExamples = []struct{ kind, task string }{
	{methods.KindPlane, "gmm:3,2"}, {methods.KindBits, "bits:4,2"}, {methods.KindBlocks, "blocks:2,gmm:3,2"},
}

// kindDefaults reads each kind's defaults off a point of that kind given nothing but
// the command's default methods (so the help states what a run would do).
func kindDefaults(def string) []kindDefault {
	var out []kindDefault
	list, _ := methods.Parse(def)
	for _, e := range kindExamples {
		p := tasks.Point{Tables: 0, Methods: slices.Clone(list)}
		p.Task = e.task
		p.Defaults(func(string) bool { return false })
		if p.Tables == 0 {
			continue
		}
		out = append(out, kindDefault{noun: methods.KindNoun(e.kind), tables: p.Tables, methods: strings.Join(p.Methods, ",")})
	}
	return out
}

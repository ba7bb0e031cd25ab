// Package launch holds what every pipeline's main does around its DAG: validate the
// resolved configuration before anything runs, write config.json, run the pipeline on
// the runner chosen by Beam's --runner flag (prism in-process by default), print the
// per-stage progress lines and read back the verdict.
package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	// Storage drivers for every bucket URL a user may pass.
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/memblob"
	_ "gocloud.dev/blob/s3blob"

	// Beam filesystems for gs:// and s3:// staging on distributed runners.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// ErrBadInput marks errors in the user's input (flags, spec, tables, output location):
// mains exit with status 2 and nothing has been written.
var ErrBadInput = errors.New("bad input")

// BadInput wraps err as a bad-input error.
func BadInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, args...))
}

// Config is the resolved configuration of one pipeline run, written as config.json.
type Config struct {
	Pipeline string         `json:"pipeline"`
	Options  stages.Options `json:"options"`
	Points   []stages.Point `json:"points"`
	Extra    map[string]any `json:"extra,omitempty"` // pipeline-specific settings (the sweep spec, regress thresholds)
	Runner   string         `json:"runner"`

	// Overwrite lets a run write into a non-empty --out that holds no jemcheck
	// manifest (replacing objects of its output names only).
	Overwrite bool `json:"-"`
	// Inputs are the locations the run reads besides --tables_from (the sweep spec):
	// they must survive a run into an --out that contains them.
	Inputs []string `json:"-"`
	// RunID names this run (its lock and staging folder); Staging is the location the
	// stages write to, inside --out, until Publish moves the files in. Set by Prepare.
	RunID   string `json:"-"`
	Staging string `json:"-"`
	// NoSummary: the pipeline writes no summary.json (an export).
	NoSummary bool `json:"-"`
	// Resume continues the interrupted run in --out whose config.json is this one's
	// (resume.go): Prepare then takes over its run id and staging folder, and the
	// pipeline recomputes only the blocks not complete there.
	Resume bool `json:"-"`
	// Stderr receives the warnings of a run that goes on (a kept block recomputed
	// because it changed); nil is os.Stderr.
	Stderr io.Writer `json:"-"`
	// createdOut is the local --out directory this run created (to remove again,
	// if still empty, when the run fails); "" when it existed or is not local.
	createdOut string
	resume     *resumeState // what Prepare found to resume (nil without --resume)
	stop       *stopState   // how a stopped run ended (Execute, for the signal handler)
	dryNote    string       // what a dry run could not check
}

// stderr is where warnings go.
func (c *Config) stderr() io.Writer {
	if c.Stderr != nil {
		return c.Stderr
	}
	return os.Stderr
}

// StageOptions are the options the stages run with: the user's, writing to the run's
// staging folder.
func (c *Config) StageOptions() stages.Options {
	o := c.Options
	if c.Staging != "" {
		o.Out = c.Staging
	}
	return o
}

// runners are the --runner names Beam registers in this binary (beamx imports them).
var runners = []string{"prism", "PrismRunner", "direct", "DirectRunner", "dataflow", "DataflowRunner",
	"universal", "portable", "PortableRunner", "flink", "FlinkRunner", "spark", "SparkRunner", "dot"}

// Prepare validates a configuration completely without writing anything: the options,
// every point, the output location, and the user's tables (whose shape it copies into
// the points). It also assigns each point's batch offset.
func Prepare(ctx context.Context, cfg *Config) error {
	if !slices.Contains(runners, cfg.Runner) {
		return BadInput("runner: unknown runner %q (known: %s)", cfg.Runner, strings.Join(runners, ", "))
	}
	if err := checkDryRun(cfg.Runner); err != nil {
		return err
	}
	if err := cfg.Options.Validate(); err != nil {
		return BadInput("%v", err)
	}
	if err := cfg.checkOverlap(); err != nil {
		return err
	}
	if len(cfg.Points) == 0 {
		return BadInput("no grid points")
	}
	if cfg.Options.TablesFrom != "" {
		ts, err := schemas.ReadTables(ctx, cfg.Options.TablesFrom)
		if err != nil {
			return BadInput("tables_from: %v", err)
		}
		if len(ts) == 0 {
			return BadInput("tables_from %s: no tables", cfg.Options.TablesFrom)
		}
		for i := range cfg.Points {
			p := &cfg.Points[i]
			p.XValues, p.Classes, p.Tables, p.Generator = ts[0].X, ts[0].K, len(ts), tasks.GeneratorFile
		}
	}
	if cfg.Options.TasksFrom != "" {
		ts, _, err := schemas.ReadTasks(ctx, cfg.Options.TasksFrom)
		if err != nil {
			return BadInput("tasks_from: %v", err)
		}
		if len(ts) == 0 {
			return BadInput("tasks_from %s: no tasks", cfg.Options.TasksFrom)
		}
		for i := range cfg.Points {
			p := &cfg.Points[i]
			p.Task, p.Classes, p.Tables = tasks.TaskFile, ts[0].K, len(ts)
		}
	}
	cfg.Options.Resolve(cfg.Points)
	for i := range cfg.Points {
		p := &cfg.Points[i]
		p.Resolve()
		err := p.Validate()
		if err == nil {
			err = tasks.MustOf(p.Task).Check(ctx, cfg.Options, *p)
		}
		if err != nil {
			if len(cfg.Points) > 1 {
				return BadInput("grid point %d: %v", p.ID, err)
			}
			return BadInput("%v", err)
		}
	}
	if err := cfg.Options.CheckLimits(cfg.Points, workersInProcess(cfg.Runner)); err != nil {
		return BadInput("%v", err)
	}
	if workersInProcess(cfg.Runner) {
		if err := models.CheckBackend(cfg.Options.Backend); err != nil {
			return BadInput("backend: %v", err)
		}
	}
	if err := storage.CheckWritable(ctx, cfg.Options.Out); err != nil {
		return BadInput("out: %v", err)
	}
	cfg.RunID = storage.NewRunID(time.Now())
	staging, err := storage.SubLocation(cfg.Options.Out, storage.StagingKey(cfg.RunID))
	if err != nil {
		return BadInput("out: %v", err)
	}
	cfg.Staging = staging
	if boolFlag("dry_run") {
		return cfg.dryRunChecks(ctx)
	}
	if err := storage.CheckReachable(ctx, cfg.Options.Out); err != nil {
		return BadInput("out: %v", err)
	}
	if _, err := cfg.checkOwnership(ctx, false); err != nil {
		return err
	}
	if cfg.Resume {
		return cfg.findResume(ctx)
	}
	return nil
}

// isDataflow reports whether runner is Beam's Dataflow runner, the only one whose
// --dry_run describes the job without running it.
func isDataflow(runner string) bool {
	return strings.EqualFold(runner, "dataflow") || runner == "DataflowRunner"
}

// checkDryRun refuses --dry_run on a runner that has none: every runner but Dataflow
// ignores the flag and runs the whole job (prism and direct in this process).
func checkDryRun(runner string) error {
	if boolFlag("dry_run") && !isDataflow(runner) {
		return BadInput("dry_run: the %s runner cannot describe a job without running it (only --runner=dataflow has a dry run, "+
			"which prints the job and submits nothing); drop --dry_run to run the job", runner)
	}
	return nil
}

// dryRunChecks are the checks of a (Dataflow) dry run: every check a run makes before
// it starts, reading only (the ownership of --out and its lock; nothing is taken or
// written). A cloud --out needs credentials that a dry run need not have: its checks are
// made when it can be reached, and said to be left to the real run otherwise.
func (c *Config) dryRunChecks(ctx context.Context) error {
	if storage.Remote(c.Options.Out) {
		if err := storage.CheckReachable(ctx, c.Options.Out); err != nil {
			c.dryNote = fmt.Sprintf("--out %s could not be checked (%v): the real run checks its ownership and lock before it starts", c.Options.Out, err)
			return nil
		}
	}
	if _, err := c.checkOwnership(ctx, false); err != nil {
		return err
	}
	host, _ := os.Hostname()
	err := storage.CheckLock(ctx, c.Options.Out, host)
	if le := (*storage.LockedError)(nil); errors.As(err, &le) {
		return BadInput("%v", err)
	}
	if err != nil {
		return fmt.Errorf("check the lock of --out %s: %w", c.Options.Out, err)
	}
	return nil
}

// checkOverlap refuses a run whose --out overlaps what it reads, before anything runs:
// --out equal to, inside or containing an input folder (evaluate's --from, any input
// that is a local folder), or a --tables_from/--tasks_from file inside --out; and an
// input folder that holds a symbolic link (see storage's "Symbolic links").
func (c *Config) checkOverlap() error {
	out := c.Options.Out
	type input struct{ flag, loc string }
	var folders []input
	from, _ := c.Extra["from"].(string)
	if from != "" {
		folders = append(folders, input{"--from", from})
	}
	for _, in := range c.Inputs {
		if in == from || in == "" {
			continue
		}
		if dir, ok := storage.LocalDir(in); ok {
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				folders = append(folders, input{"input folder", in})
			}
		}
	}
	for _, f := range folders {
		if rel := storage.Overlap(out, f.loc); rel != "" {
			return BadInput("out: --out %s %s %s %s, which this run reads: a run never writes where it reads (it would replace "+
				"or delete its own input); choose an --out outside it", out, rel, f.flag, f.loc)
		}
		if err := storage.CheckNoLinks(f.loc, f.flag+" "+f.loc); err != nil {
			return BadInput("%v", err)
		}
	}
	for _, f := range []input{{"--tables_from", c.Options.TablesFrom}, {"--tasks_from", c.Options.TasksFrom}} {
		if f.loc != "" && storage.FileInside(out, f.loc) {
			return BadInput("out: %s %s is inside --out %s: a run never reads from the folder it writes (it may replace what it "+
				"reads); copy the file out of %s or choose another --out", f.flag, f.loc, out, out)
		}
	}
	return nil
}

// checkOwnership refuses an --out jemcheck may not write into (storage.CheckOwnership;
// with hash, storage.VerifyOwnership: the previous run's files are hashed too).
func (c *Config) checkOwnership(ctx context.Context, hash bool) (*storage.Manifest, error) {
	inputs := slices.Clone(c.Inputs)
	if c.Options.TasksFrom != "" {
		inputs = append(inputs, c.Options.TasksFrom)
	}
	if c.Options.TablesFrom != "" {
		inputs = append(inputs, c.Options.TablesFrom)
	}
	check := storage.CheckOwnership
	if hash {
		check = storage.VerifyOwnership
	}
	prev, err := check(ctx, c.Options.Out, stages.OutputLayout(), inputs, c.Overwrite)
	if oe := (*storage.OwnershipError)(nil); errors.As(err, &oe) {
		return nil, BadInput("%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("check --out %s: %w", c.Options.Out, err)
	}
	if prev != nil && prev.Pipeline != "" && prev.Pipeline != c.Pipeline && !c.Overwrite {
		// A rerun replaces its own pipeline's run; another pipeline's (a sweep's report
		// under a control run's name) is not replaced by accident.
		return nil, BadInput("--out %s holds run %s, not a %s run: this run would replace it; give another --out, or --overwrite to replace it",
			c.Options.Out, storage.DescribeRun(prev.RunID, prev.Pipeline), c.Pipeline)
	}
	return prev, nil
}

// configSHA256 is the hash of config.json's content, recorded in the manifest.
func (c *Config) configSHA256() string {
	h := sha256.Sum256([]byte(c.JSON() + "\n"))
	return hex.EncodeToString(h[:])
}

// workersInProcess reports whether the DoFns will run in this process (prism or
// direct in-process, or any runner with the LOOPBACK environment), so that what the
// workers need, the GoMLX backend, can be checked before anything runs. Remote
// workers (Dataflow, a container environment) may run another binary with another
// backend compiled in, so their backend is not checked here.
func workersInProcess(runner string) bool {
	if strings.EqualFold(stringFlag("environment_type"), "loopback") {
		return true
	}
	switch strings.ToLower(runner) {
	case "", "prism":
		return stringFlag("endpoint") == ""
	case "direct":
		return true
	}
	return false
}

// JSON is the configuration as written to config.json.
func (c *Config) JSON() string {
	b, err := json.MarshalIndent(struct {
		*Config
		Protocol *schemas.Protocol `json:"protocol,omitempty"` // what every method of a point shares (stages.ProtocolOf)
	}{c, stages.ProtocolOf(c.Options)}, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("config is not JSON-encodable: %v", err)) // programmer error
	}
	return string(b)
}

// Source is the pipeline's input: one element per block of tables (see stages.BlockRefs).
func Source(s beam.Scope, blocks []stages.BlockRef) beam.PCollection {
	s = s.Scope("launch.Blocks")
	return beam.CreateList(s, blocks)
}

// Execute takes --out's lock, writes config.json into the run's staging folder and runs the
// pipeline (whose last stage publishes the run) on the --runner flag's runner; a run that
// fails leaves the previous run's files as they were, and says so only once it has
// verified them (storage.OutputState).
// It returns the summary read back from the output (nil for runs that do not wait,
// such as a Dataflow dry run or --async).
func Execute(ctx context.Context, cfg *Config, p *beam.Pipeline, w io.Writer) (*schemas.Summary, error) {
	if boolFlag("dry_run") {
		// A Dataflow dry run prints the job and touches neither the cloud nor --out;
		// Prepare refused it on any other runner, which would run the job.
		if err := checkDryRun(cfg.Runner); err != nil {
			return nil, err
		}
		if cfg.dryNote != "" {
			fmt.Fprintf(w, "%s: dry run: %s\n", cfg.Pipeline, cfg.dryNote)
		}
		if _, err := beamx.RunWithMetrics(ctx, p); err != nil {
			return nil, fmt.Errorf("dry run %s pipeline: %w", cfg.Pipeline, err)
		}
		fmt.Fprintf(w, "%s: dry run, nothing submitted or written\n", cfg.Pipeline)
		return nil, nil
	}
	out := cfg.Options.Out
	cfg.stop = &stopState{}
	if err := cfg.lock(ctx, w); err != nil {
		return nil, err
	}
	ctx, stopSignals := cfg.watchSignals(ctx) // SIGINT/SIGTERM: clean up, exit 130/143 (signal.go)
	defer stopSignals()
	st, err := storage.OpenBucket(ctx, cfg.Staging)
	if err != nil {
		return nil, cfg.abort(ctx, w, fmt.Errorf("open staging folder %s: %w", cfg.Staging, err))
	}
	defer st.Close()
	if !cfg.adopted() {
		// The seal first: it makes the folder jemcheck's (removable by a later run) and
		// records config.json's hash (a resumed run trusts no other config).
		if err := storage.SealStaging(ctx, out, cfg.RunID, cfg.Pipeline, cfg.configSHA256()); err != nil {
			return nil, cfg.abort(ctx, w, err)
		}
	}
	if err := st.WriteAll(ctx, "config.json", []byte(cfg.JSON()+"\n"), nil); err != nil {
		return nil, cfg.abort(ctx, w, fmt.Errorf("write config.json: %w", err))
	}
	fmt.Fprintf(w, "%s: %d grid point(s), %d tables, runner %s, output %s (run %s)\n", cfg.Pipeline, len(cfg.Points),
		totalTables(cfg.Points), cfg.Runner, out, cfg.RunID)
	start := time.Now()
	if workersInProcess(cfg.Runner) {
		notePortable(cfg.stderr(), cfg.Pipeline) // the slow build on a CPU that runs the fast one
	}
	if workersInProcess(cfg.Runner) { // the totals lines with an ETA (stages.ExpectBlocks)
		stages.ExpectBlocks(cfg.Staging, cfg.totalBlocks())
		defer stages.ForgetBlocks(cfg.Staging)
	}
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		// What --out holds is checked, not assumed: Publish may have failed mid-commit.
		actx := context.WithoutCancel(ctx)
		if ctx.Err() != nil && workersInProcess(cfg.Runner) {
			// Stopped (a signal, or the caller): the complete blocks stay for --resume.
			line := cfg.keepForResume(actx)
			cfg.stop.set(line)
			return nil, fmt.Errorf("%w: %s", ErrInterrupted, line)
		}
		// A runner that failed (a panic in the runner, a worker lost) leaves the blocks
		// its stages finished sealed in the staging folder: they stay for --resume, which
		// recomputes only the others, instead of going with the run. Not when the output
		// filled up: its staging files are what filled it, and they go.
		failed := fmt.Errorf("%s pipeline failed: %s (JEMCHECK_LOG=debug shows the runner's full report)", cfg.Pipeline, rootCause(err))
		if outputFull(err) {
			return nil, fmt.Errorf("%w; %s", cfg.abort(actx, w, failed), storage.OutputState(actx, out, cfg.RunID))
		}
		return nil, fmt.Errorf("%w; %s", failed, cfg.keepForResume(actx))
	}
	if pr == nil || boolFlag("async") {
		fmt.Fprintf(w, "%s: submitted (the runner does not wait for results; the job publishes %s under %s when it succeeds)\n",
			cfg.Pipeline, storage.ManifestKey, out)
		return nil, nil
	}
	printStages(w, pr)
	if cfg.NoSummary {
		fmt.Fprintf(w, "%s: finished in %v\n", cfg.Pipeline, time.Since(start).Round(10*time.Millisecond))
		return nil, nil
	}
	b, err := storage.OpenBucket(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("open output %s: %w", out, err)
	}
	defer b.Close()
	var sum schemas.Summary
	r, err := storage.ReadSmallKey(ctx, b, "summary.json", storage.MaxSummaryBytes)
	if err != nil {
		return nil, fmt.Errorf("read summary.json: %w", err)
	}
	if err := json.Unmarshal(r, &sum); err != nil {
		return nil, fmt.Errorf("decode summary.json: %w", err)
	}
	fmt.Fprintf(w, "%s: finished in %v\n", cfg.Pipeline, time.Since(start).Round(10*time.Millisecond))
	if strings.HasPrefix(out, "mem://") {
		fmt.Fprintf(w, "%s: note: mem:// outputs live in this process only and are gone when it exits\n", cfg.Pipeline)
	}
	return &sum, nil
}

// outputFull reports whether a run failed because its output's storage is full (no
// space, a quota): then its staging files go, freeing what they took.
func outputFull(err error) bool {
	msg := strings.ToLower(err.Error())
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(msg, "no space left on device") || strings.Contains(msg, "disk quota exceeded")
}

// lock takes --out's lock for this run (a live run's lock is bad input: exit 2) and
// deals with the staging folders of earlier runs; it re-checks ownership under the
// lock, since another run may have published meanwhile.
func (c *Config) lock(ctx context.Context, w io.Writer) error {
	if dir, ok := storage.LocalDir(c.Options.Out); ok {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			c.createdOut = dir
		}
	}
	host, _ := os.Hostname()
	note, err := storage.AcquireLock(ctx, c.Options.Out, storage.LockInfo{RunID: c.RunID, Pipeline: c.Pipeline,
		Host: host, PID: os.Getpid(), Started: time.Now().UTC(), Remote: !workersInProcess(c.Runner)})
	if le, ne := (*storage.LockedError)(nil), (*storage.NoExclusiveCreateError)(nil); errors.As(err, &le) || errors.As(err, &ne) {
		return BadInput("%v", err)
	}
	if err != nil {
		return fmt.Errorf("lock --out %s: %w", c.Options.Out, err)
	}
	if note != "" {
		fmt.Fprintf(w, "%s: %s\n", c.Pipeline, note)
	}
	lines, err := storage.RecoverStaging(ctx, c.Options.Out, c.RunID)
	for _, l := range lines {
		fmt.Fprintf(w, "%s: %s\n", c.Pipeline, l)
	}
	if err != nil {
		return c.abort(ctx, w, fmt.Errorf("clean up earlier runs under %s: %w", c.Options.Out, err))
	}
	prev, err := c.checkOwnership(ctx, true)
	if err != nil {
		return c.abort(ctx, w, err)
	}
	if prev != nil && prev.RunID != c.RunID {
		fmt.Fprintf(w, "%s: %s holds the run %s: this run replaces it when it publishes (until then it stays as it is)\n",
			c.Pipeline, c.Options.Out, storage.DescribeRun(prev.RunID, prev.Pipeline))
	}
	c.printResume(w)
	if err := c.recheckKept(ctx); err != nil {
		_ = storage.ReleaseLock(ctx, c.Options.Out, c.RunID)
		return err
	}
	return nil
}

// abort undoes a run that failed: its staging folder goes (unless its commit had
// begun: the next run finishes it) and its lock is released. It returns err.
func (c *Config) abort(ctx context.Context, w io.Writer, err error) error {
	kept, aerr := storage.Abort(ctx, c.Options.Out, c.RunID)
	if aerr != nil {
		fmt.Fprintf(w, "%s: could not remove the staging folder %s: %v\n", c.Pipeline, c.Staging, aerr)
	} else if kept {
		fmt.Fprintf(w, "%s: the run finished but publishing it was cut short; the next run into %s completes it\n",
			c.Pipeline, c.Options.Out)
	}
	if lerr := storage.ReleaseLock(ctx, c.Options.Out, c.RunID); lerr != nil {
		fmt.Fprintf(w, "%s: could not release the lock of %s: %v\n", c.Pipeline, c.Options.Out, lerr)
	}
	if c.createdOut != "" {
		_ = os.Remove(c.createdOut) // only if empty: the run made it and nothing stayed
	}
	return err
}

// Logging routes this process's log/slog records to w. On a local runner they are
// prism's own chatter (job server, loopback worker, and the bundle plans it logs on a
// failure) and the workers' Beam log lines, which prism re-logs with an "[SDK] " prefix:
// the stages' progress lines (stages.ProgressPrefix) are printed as timestamped
// lines, the workers' warnings and errors by their first line (a failed bundle's, which dumps its plan, not at all), and the rest is dropped (a failure reaches the user
// as the run's error). JEMCHECK_LOG=debug, and a Dataflow --dry_run (which prints the
// job through Beam's log), keep Go's default handler: every log line of the runner. Mains call it once, after flag parsing; tests leave slog as it is.
func Logging(w io.Writer) {
	if os.Getenv("JEMCHECK_LOG") == "debug" || boolFlag("dry_run") { // a dry run prints the job through Beam's log
		return
	}
	slog.SetDefault(slog.New(&progressHandler{mu: &sync.Mutex{}, w: w, start: time.Now()}))
}

// progressHandler prints the progress lines and warnings relayed by prism.
type progressHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	start time.Time
}

func (h *progressHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *progressHandler) Handle(_ context.Context, r slog.Record) error {
	msg, ok := strings.CutPrefix(r.Message, "[SDK] ")
	if !ok {
		return nil
	}
	if msg, ok = strings.CutPrefix(msg, stages.ProgressPrefix); !ok {
		if r.Level < slog.LevelWarn {
			return nil // the harness's own info lines
		}
		if strings.Contains(msg, "process bundle failed") {
			return nil // a failed bundle's plan: the run's error gives its cause (rootCause)
		}
		first, rest, _ := strings.Cut(r.Message, "\n")
		if msg = r.Level.String() + ": " + first; rest != "" {
			msg += " (JEMCHECK_LOG=debug shows the rest)"
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintf(h.w, "  %6.2fs %s\n", time.Since(h.start).Seconds(), msg)
	return err
}

func (h *progressHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *progressHandler) WithGroup(string) slog.Handler      { return h }

// rootCause shortens a failed pipeline's error to its innermost cause: Beam wraps a
// DoFn's error in the bundle's whole execution plan, under "caused by:" lines.
func rootCause(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "caused by:"); i >= 0 && os.Getenv("JEMCHECK_LOG") != "debug" {
		msg = strings.TrimSpace(msg[i+len("caused by:"):])
		// The DoFn's own error follows the line naming the DoFn.
		if j := strings.Index(msg, "failed:\n"); j >= 0 && strings.HasPrefix(msg, "DoFn[") {
			msg = strings.TrimSpace(msg[j+len("failed:\n"):])
		}
	}
	return msg
}

// printStages prints one line per stage from the pipeline's counters.
func printStages(w io.Writer, pr beam.PipelineResult) {
	got := map[string]int64{}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Namespace() == "jemcheck" {
			got[c.Name()] = tasks.SatAdd(got[c.Name()], c.Result())
		}
	}
	lines := []struct{ stage, text string }{
		{"GenerateTables", fmt.Sprintf("%d tables", got["tables_generated"])},
		{"SampleDatasets", fmt.Sprintf("%d datasets, %d samples", got["datasets_sampled"], got["samples_drawn"])},
		{"Train", fmt.Sprintf("%d runs", got["runs_trained"])},
		{"Evaluate", fmt.Sprintf("%d runs evaluated, %d diverged", got["runs_trained"], got["runs_diverged"])},
		{"Publish", fmt.Sprintf("%d files, %s last", got["files_published"], storage.ManifestKey)},
	}
	for _, l := range lines {
		if l.stage == "Train" || l.stage == "Evaluate" {
			if _, ok := got["runs_trained"]; !ok {
				continue // a pipeline that trains nothing (an export)
			}
		}
		fmt.Fprintf(w, "  stage %-15s %s\n", l.stage, l.text)
	}
	var rest []string
	for k := range got {
		if !strings.Contains("tables_generated datasets_sampled samples_drawn runs_trained runs_diverged files_published", k) {
			rest = append(rest, fmt.Sprintf("%s=%d", k, got[k]))
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 {
		fmt.Fprintf(w, "  counters %s\n", strings.Join(rest, " "))
	}
}

func totalTables(ps []stages.Point) int {
	n := 0
	for _, p := range ps {
		n += p.Tables
	}
	return n
}

func stringFlag(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func boolFlag(name string) bool { return stringFlag(name) == "true" }

// Given reports whether the flag name was set on the command line.
func Given(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// RunnerName is the runner the --runner flag selects.
func RunnerName() string {
	if f := flag.Lookup("runner"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return "prism"
}

// Exit prints err and exits: 2 for any error (bad input or a failed run).
func Exit(name string, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: error: %v\n", name, err)
	os.Exit(2)
}

// Location joins an output location and a key for printing.
func Location(out, key string) string {
	if i := strings.Index(out, "?"); i >= 0 {
		out = out[:i]
	}
	return strings.TrimSuffix(out, "/") + "/" + key
}

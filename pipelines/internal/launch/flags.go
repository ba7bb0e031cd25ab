package launch

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// Flags are the experiment flags the control and regress commands share. Mains
// register them on their own FlagSet (normally flag.CommandLine) and call Config after
// parsing; nothing here reads flags on its own.
type Flags struct {
	*OptionFlags
	tables, xValues, classes, samples, steps, batchSize *int
	generator, methods, model, encoding                 *string
	lr, pxWeight                                        *float64
}

// OptionFlags are the run-wide flags every pipeline has (stages.Options).
type OptionFlags struct {
	trainBatch, reportTables *int
	tablesFrom, backend, out *string
	margin, maxP             *float64
	seed                     *uint64
	writeSamples, timings    *bool
	overwrite                *bool
}

// Defaults are a command's flag defaults that differ between commands.
type Defaults struct {
	Tables  int
	Methods string
	Out     string
}

// RegisterFlags defines the experiment flags on fs.
func RegisterFlags(fs *flag.FlagSet, d Defaults) *Flags {
	return &Flags{
		OptionFlags: RegisterOptionFlags(fs, d.Out),
		tables:      fs.Int("tables", d.Tables, "number of random joint tables"),
		xValues:     fs.Int("x_values", 2, "number of x values |X|"),
		classes:     fs.Int("classes", 2, "number of classes K"),
		generator:   fs.String("generator", "uniform", "table generator: uniform (X·K uniforms in (0,1), normalised) or dirichlet:ALPHA"),
		samples:     fs.Int("samples", 1000, "N: i.i.d. samples drawn per table"),
		methods:     fs.String("methods", d.Methods, "comma-separated methods: baseline, jem, oracle"),
		model:       fs.String("model", "linear", "model: linear or mlp:H1,H2,..."),
		encoding:    fs.String("x_encoding", "scalar", "how x enters the model: scalar or onehot"),
		lr:          fs.Float64("lr", 0.05, "Adam learning rate"),
		steps:       fs.Int("steps", 300, "optimiser steps"),
		batchSize:   fs.Int("batch_size", 0, "minibatch size; 0 = full batch on cell counts"),
		pxWeight:    fs.Float64("jem_px_weight", 1, "weight of the log p(x) term in the jem and oracle losses (0 turns jem into the baseline)"),
	}
}

// RegisterOptionFlags defines the run-wide flags on fs, and makes a flag error short
// (see shortUsage).
func RegisterOptionFlags(fs *flag.FlagSet, out string) *OptionFlags {
	shortUsage(fs)
	th := stages.DefaultThresholds()
	return &OptionFlags{
		tablesFrom:   fs.String("tables_from", "", "read the true tables from this Parquet or CSV file (path or URL) instead of generating them"),
		seed:         fs.Uint64("seed", 1, "run seed: every random draw derives from it"),
		out:          fs.String("out", out, "output location: a path or a gocloud.dev URL (file://, mem://, gs://, s3://)"),
		trainBatch:   fs.Int("train_batch", stages.DefaultTrainBatch, "runs trained together in one GoMLX graph"),
		backend:      fs.String("backend", "", `training backend: "" = fastest on CPU (fused float32 kernels where they cover the model, else GoMLX go:ops_sequential); kernel = fused kernels only; go or go:ops_sequential = GoMLX pure Go; xla:cuda or xla:cpu when built with -tags xla`),
		writeSamples: fs.Bool("write_samples", true, "write the sampled datasets to samples/ as Parquet"),
		overwrite: fs.Bool("overwrite", false, "write into a non-empty --out that holds no jemcheck manifest.json, replacing "+
			"only objects with jemcheck's output names (deletes nothing)"),
		timings:      fs.Bool("timings", false, "record per-run training wall time in the results/ files (train_ms); off keeps every output byte-identical across runs"),
		reportTables: fs.Int("report_tables", 3, "tables per point shown in the report's triple plots"),
		margin: fs.Float64("margin", th.Margin, "verdict: JEM's optimisation gap (joint and q(x)) and the family's approximation error "+
			"must each be ≤ this share of the statistical error (upper end of a bootstrap 95% CI)"),
		maxP: fs.Float64("max_p", th.MaxP, "secondary verdict line (reported, not deciding): the paired Wilcoxon p-value of baseline vs JEM must be < this"),
	}
}

// Options resolves the parsed run-wide flags.
func (f *OptionFlags) Options() stages.Options {
	return stages.Options{
		Seed: *f.seed, Out: *f.out, TablesFrom: *f.tablesFrom, TrainBatch: *f.trainBatch, Backend: *f.backend,
		WriteSamples: *f.writeSamples, Timings: *f.timings, ReportTables: *f.reportTables,
		Thresholds: stages.Thresholds{Margin: *f.margin, MaxP: *f.maxP},
	}
}

// Overwrite is the --overwrite flag: see Config.Overwrite.
func (f *OptionFlags) Overwrite() bool { return *f.overwrite }

// Config resolves the parsed flags into a one-point configuration.
func (f *Flags) Config(pipeline string) (Config, error) {
	ms, err := stages.ParseMethods(*f.methods)
	if err != nil {
		return Config{}, BadInput("methods: %v", err)
	}
	return Config{
		Pipeline:  pipeline,
		Runner:    RunnerName(),
		Options:   f.Options(),
		Overwrite: f.Overwrite(),
		Points: []stages.Point{{
			Grid: schemas.Grid{XValues: *f.xValues, Classes: *f.classes, Encoding: *f.encoding, Generator: *f.generator,
				Samples: *f.samples, Model: *f.model, LR: *f.lr, Steps: *f.steps, BatchSize: *f.batchSize, PxWeight: *f.pxWeight},
			Tables: *f.tables, Methods: ms,
		}},
	}, nil
}

// shortUsage makes a parse error on fs print one line, "NAME: error: MESSAGE (run with
// -help for the flags)", instead of the error followed by the usage of every flag
// (Beam's included); -help and -h still print them all. The flag package writes an
// error to fs.Output() and then calls fs.Usage, while -help calls fs.Usage alone, so
// fs's output is held back until Usage decides which case it is. The exit status
// (2 for an error with flag.ExitOnError) is unchanged.
func shortUsage(fs *flag.FlagSet) {
	out := &heldOutput{w: fs.Output()}
	fs.SetOutput(out)
	name := filepath.Base(fs.Name())
	fs.Usage = func() {
		msg := strings.TrimSpace(out.held.String())
		out.held.Reset()
		if msg != "" {
			fmt.Fprintf(out.w, "%s: error: %s (run with -help for the flags)\n", name, strings.ReplaceAll(msg, "\n", "; "))
			return
		}
		out.direct = true
		defer func() { out.direct = false }()
		fmt.Fprintf(out.w, "Usage of %s:\n", name)
		fs.PrintDefaults()
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

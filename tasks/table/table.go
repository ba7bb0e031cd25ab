package table

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() { tasks.Register(Kind{}) }

// Encodings of x the table models take.
var Encodings = []string{models.EncodingScalar, models.EncodingOneHot}

// Kind is the kind of random joint tables: p(x,y) on X·K cells, drawn from a
// generator seeded by the task (or read from --tables_from), N draws as multinomial
// cell counts, models trained on the counts (the fused kernels or a GoMLX graph) and
// every KL exact by enumeration, with the error split against the family's best fit
// and the add-½ reference on the same counts.
type Kind struct{}

// Name is methods.KindTable.
func (Kind) Name() string { return methods.KindTable }

// Owns the task "table".
func (Kind) Owns(task string) bool { return task == tasks.TaskTable }

// Noun names tables.
func (Kind) Noun() string { return "tables" }

// About is the report's sentence on the kind.
func (Kind) About() string {
	return "Random joint tables p(x,y) over X·K cells; each model's q = softmax of its logits over every cell, so every KL is exact by enumeration."
}

// Axes only generated tables read (a 2-D task sets its own classes and cells).
func (Kind) Axes() []string { return []string{"x_values", "classes", "generator", "x_encoding"} }

// Defaults: the flags' defaults are the tables'.
func (Kind) Defaults(*tasks.Point, func(string) bool) {}

// Resolve zeroes the 2-D fields.
func (Kind) Resolve(p *tasks.Point) { p.GridCells, p.Box, p.TrainGrid, p.Components = 0, 0, 0, 0 }

// Rule: exact JEM's error split decides.
func (Kind) Rule(tasks.Point) verdict.Rule { return verdict.Tables }

// Dimension: a table's x is a value of a set, with no dimension.
func (Kind) Dimension(tasks.Point) int { return 0 }

// Family: tables are on no rung of the dimension ladder.
func (Kind) Family(tasks.Point) string { return "" }

// Seed identifies a table by its shape, generator, replicate and ordinal.
func (Kind) Seed(runSeed uint64, p tasks.Point, o int64) uint64 {
	return prob.Seed(runSeed, tagTable, uint64(p.XValues), uint64(p.Classes),
		prob.SeedString(p.Generator), uint64(p.Replicate), uint64(o))
}

var tagTable = prob.SeedString("table")

// BlockSize: a block's runs of one training shape are one training graph of at most
// trainBatch runs.
func (Kind) BlockSize(p tasks.Point, trainBatch int) int64 {
	return int64(max(1, trainBatch/max(1, len(p.Methods))))
}

// Check: a table's truth needs no check beyond Validate (a --tables_from file is
// checked as it is read).
func (Kind) Check(context.Context, tasks.Options, tasks.Point) error { return nil }

// Shape is the training shape of a point's runs for a method (the oracle always
// trains full batch on the true table).
func Shape(p tasks.Point, method string) models.Shape {
	sh := models.Shape{XValues: p.XValues, Classes: p.Classes, Encoding: p.Encoding,
		Model: p.Model, Steps: p.Steps, BatchSize: p.BatchSize}
	if methods.Has(method, fresh) {
		sh.BatchSize = 0
	}
	return sh
}

// Validate checks a table point's values and the limits that hold on every runner.
func (Kind) Validate(p tasks.Point) error {
	switch {
	case p.XValues < 1:
		return fmt.Errorf("x_values must be >= 1, got %d", p.XValues)
	case p.Classes < 2:
		return fmt.Errorf("classes must be >= 2, got %d", p.Classes)
	case p.XValues > tasks.MaxCells || p.Classes > tasks.MaxCells || p.XValues*p.Classes > tasks.MaxCells:
		return fmt.Errorf("x_values*classes = %s cells is too many (max %d)", tasks.Count(tasks.SatMul(int64(p.XValues), int64(p.Classes))), tasks.MaxCells)
	case p.Samples < 1:
		return fmt.Errorf("samples must be >= 1, got %d", p.Samples)
	case p.Steps < 1:
		return fmt.Errorf("steps must be >= 1, got %d", p.Steps)
	case p.Tables < 1:
		return fmt.Errorf("tables must be >= 1, got %d", p.Tables)
	case p.BatchSize < 0:
		return fmt.Errorf("batch_size must be >= 0 (0 = full batch), got %d", p.BatchSize)
	case p.BatchSize > p.Samples:
		return fmt.Errorf("batch_size %d exceeds samples %d", p.BatchSize, p.Samples)
	case !slices.Contains(Encodings, p.Encoding):
		return fmt.Errorf("unknown encoding %q (known: %s)", p.Encoding, strings.Join(Encodings, ", "))
	}
	if p.Generator != tasks.GeneratorFile {
		if _, err := prob.ParseGenerator(p.Generator); err != nil {
			return fmt.Errorf("generator: %w", err)
		}
	}
	if _, err := models.ParseModel(p.Model); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	for _, m := range p.Methods {
		if err := Shape(p, m).Validate(); err != nil {
			return err
		}
	}
	return checkPointLimits(p)
}

// checkPointLimits checks the limits of one point that hold on every runner (after the
// fields are known to be in range).
func checkPointLimits(p tasks.Point) error {
	switch {
	case p.Samples > tasks.MaxSamples:
		return fmt.Errorf("samples: %d draws per table is over the limit of %d", p.Samples, int64(tasks.MaxSamples))
	case p.Tables > tasks.MaxTables:
		return fmt.Errorf("tables: %d tables is over the limit of %d on any runner (%d on a local run)", p.Tables, tasks.MaxTables, tasks.MaxTablesLocal)
	case p.Steps > tasks.MaxSteps:
		return fmt.Errorf("steps: %d is over the limit of %d", p.Steps, tasks.MaxSteps)
	}
	params, err := tasks.ModelParams(p)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if params > tasks.MaxModelParams {
		return fmt.Errorf("model: %s on %dx%d tables (%s x) has %d parameters per run, over the limit of %d (use fewer or narrower hidden layers)",
			p.Model, p.XValues, p.Classes, p.Encoding, params, tasks.MaxModelParams)
	}
	return nil
}

// Limits checks a table point's held draws and training graphs, and its backend: the
// samplers need the fused kernels, which must cover the model, as must every run on
// --backend=kernel.
func (Kind) Limits(o tasks.Options, p tasks.Point, local bool) error {
	if err := o.CheckBackend(p, false); err != nil {
		return err
	}
	if err := checkKernels(o, p); err != nil {
		return err
	}
	if o.WriteSamples || p.BatchSize > 0 { // the draws of a table are held in memory
		other := "pass --write_samples=false"
		if p.BatchSize > 0 {
			other = "train full batch with --batch_size=0 and --write_samples=false"
		}
		if lim := tasks.Pick(local, tasks.MaxHeldSamplesLocal, tasks.MaxHeldSamples); int64(p.Samples) > lim {
			return fmt.Errorf("samples: %d draws per table is over %s of %d (%s)", p.Samples, tasks.LimitName(local), lim, tasks.Lift(local, other))
		}
	}
	perRun, err := tasks.GraphValuesPerRun(p)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if perRun > tasks.MaxGraphValues {
		return fmt.Errorf("model: one run of %s on %dx%d tables (%s x) needs %s values in a training graph, over the limit of %s (use a smaller model or fewer x values)",
			p.Model, p.XValues, p.Classes, p.Encoding, tasks.Count(perRun), tasks.Count(tasks.MaxGraphValues))
	}
	runs := int64(min(max(o.TrainBatch, 1), max(p.Tables, 1)*max(len(p.Methods), 1)))
	if v := tasks.SatMul(runs, perRun); v > tasks.MaxGraphValues {
		return fmt.Errorf("train_batch: %d runs of %s on %dx%d tables (%s x) need %s values in one training graph, over the limit of %s (pass --train_batch=%d or less)",
			runs, p.Model, p.XValues, p.Classes, p.Encoding, tasks.Count(v), tasks.Count(tasks.MaxGraphValues), tasks.MaxGraphValues/perRun)
	}
	if p.BatchSize > 0 { // every jem and baseline run of a minibatch graph holds its N draws
		held := 0
		for _, m := range p.Methods {
			if !methods.Has(m, fresh) {
				held++
			}
		}
		runs := int64(min(max(o.TrainBatch, 1), max(p.Tables, 1)*max(held, 1)))
		if v := tasks.SatMul(runs, int64(p.Samples)); v > tasks.MaxGraphDraws {
			return fmt.Errorf("train_batch: %d minibatch runs with %d draws each hold %s draws in one training graph, over the limit of %s (pass --train_batch=%d or less, or --batch_size=0)",
				runs, p.Samples, tasks.Count(v), tasks.Count(tasks.MaxGraphDraws), max(tasks.MaxGraphDraws/int64(p.Samples), 1))
		}
	}
	return nil
}

// checkKernels checks that the fused kernels cover the point's model where its runs
// need them: a kernel-only method, or --backend=kernel.
func checkKernels(o tasks.Options, p tasks.Point) error {
	var only []string
	for _, name := range p.Methods {
		if m, _ := methods.Lookup(name); m.KernelOnly {
			only = append(only, name)
		}
	}
	if len(only) == 0 && o.Backend != models.BackendKernel {
		return nil
	}
	hidden, err := models.ParseModel(p.Model)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if !kernel.Covers(p.XValues, p.Classes, p.Encoding == models.EncodingOneHot, hidden) {
		need := "--backend=kernel"
		if len(only) > 0 {
			need = strings.Join(only, " and ")
		}
		return fmt.Errorf("backend: the fused float32 kernels, which %s needs, do not cover %s on %dx%d tables (%s x): "+
			"they take at most 4 hidden layers of 1 to 256 units, x_values·classes ≤ 4096 and 65,536 parameters", need, p.Model, p.XValues, p.Classes, p.Encoding)
	}
	return nil
}

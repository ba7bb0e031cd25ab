package tasks

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
)

// # Limits
//
// jemcheck refuses a configuration that a machine cannot run before anything runs or
// is written (exit 2, a message that names the limit and what lifts it). Some limits
// hold on every runner; others are lower for a local run (prism, direct, or any runner
// with --environment_type=LOOPBACK: everything in this process, sized for a 24 GiB,
// 2-core machine) and are lifted on a distributed runner (--runner=dataflow).
//
//	limit                                        local          distributed    lifted by
//	N: samples per table                         10^12          10^12          (counts only; exact in float64)
//	N when the draws are held in memory          10^7           10^8           --runner=dataflow; --write_samples=false with --batch_size=0
//	  (--write_samples, or --batch_size > 0)
//	tables per grid point, and over all points   2,000,000      10^7           --runner=dataflow
//	cells X·K per table                          65,536         65,536         -
//	steps                                        16,777,216     16,777,216     -
//	parameters of one run's model                4,194,304      4,194,304      a smaller model
//	values in one training graph:                2^27           2^27           a lower --train_batch
//	  runs in a batch × (parameters + X·(hidden widths + K))
//	minibatch draws in one training graph:       2^28           2^28           a lower --train_batch
//	  runs in a batch × N (--batch_size > 0)
//	grid points in a sweep                       10,000         10,000         -
//	learned cells: Σ tables × methods × X·K      2·10^7         10^8           --runner=dataflow
//	sample rows written: Σ tables × N            10^9           10^12          --write_samples=false; --runner=dataflow
//	draws: Σ tables × N                          10^18          10^18          -
//	2-D: N per task (the draws are held)         10^7           10^8           --runner=dataflow
//	2-D: draws held by one block, N × its tasks  5·10^7         5·10^8         a lower --train_batch
//	2-D: curve points per run, steps/eval_every  10,000         10,000         a larger --eval_every
//
// The memory figures behind them: a table held with its draws costs about 100 bytes
// per draw (N = 10^7 with one table peaks near 1 GB). Blocks of tables stream through
// the fused stages and Aggregate keeps a fixed-size partial aggregate per block (see
// PointAcc), so the tables cost little memory: regress peaked at 340 MB at 2·10^5
// tables and 760 MB at 10^6 (scripts/bench-e2e.sh; the rest of the growth is the
// single tables.parquet of a point, written from all its tables at once). The local
// table limit is one of wall time (10^6 2×2 tables took 89 s on 2 cores) and disk;
// the learned-cells limit bounds learned/ on disk. A training graph keeps about six
// float32 copies of its values (parameters, Adam moments, gradients, activations).
// A 2-D task holds its draws whatever the options: training keeps every task of a block
// in float32 (about 20 bytes a draw with the slices' growth), and one task at a time is
// drawn in float64 and, with --write_samples, turned into rows: a peak of about 85
// bytes a draw for one task (N = 10^7 at one task peaked at 1.0 GB, 0.49 GB with
// --write_samples=false; 16 tasks of 5·10^6 draws in one block at 1.75 GB).
// Point.Validate checks the per-point limits that hold on every runner;
// Options.CheckLimits checks the rest.
const (
	MaxSamples           = 1_000_000_000_000         // N per table (counts only), any runner
	MaxHeldSamplesLocal  = 10_000_000                // N per table when the draws are held in memory, local run
	MaxHeldSamples       = 100_000_000               // N per table when the draws are held in memory, distributed run
	MaxTablesLocal       = 2_000_000                 // tables per point and over all points, local run
	MaxTables            = 10_000_000                // tables per point and over all points, distributed run
	MaxCells             = 1 << 16                   // cells X·K per table
	MaxSteps             = 1 << 24                   // optimiser steps
	MaxModelParams       = 1 << 22                   // parameters of one run's model
	MaxGraphValues       = 1 << 27                   // runs in a batch × (parameters + activations) of one training graph
	MaxGraphDraws        = 1 << 28                   // runs in a batch × N of one minibatch training graph
	MaxPoints            = 10_000                    // grid points in a sweep
	MaxLearnedCellsLocal = 20_000_000                // Σ tables × methods × cells, local run
	MaxLearnedCells      = 100_000_000               // Σ tables × methods × cells, distributed run
	MaxSampleRowsLocal   = 1_000_000_000             // Σ tables × N written to samples/, local run
	MaxSampleRows        = 1_000_000_000_000         // Σ tables × N written to samples/, distributed run
	MaxDraws             = 1_000_000_000_000_000_000 // Σ tables × N drawn, any runner (counters are int64)
	MaxBlockDraws2DLocal = 50_000_000                // N × tasks of one 2-D block, local run
	MaxBlockDraws2D      = 500_000_000               // N × tasks of one 2-D block, distributed run
	MaxCurvePoints       = 10_000                    // curve points per 2-D run: steps / eval_every
	MaxBuffer            = 1 << 20                   // a sampler's replay buffer per run
)

// liftLocal is what a local run's message suggests to go beyond a local limit.
const liftLocal = "run on Dataflow with --runner=dataflow to go higher"

// ModelParams is the number of parameters of one run's model at p (the general path's
// count: a dense layer per hidden width, then one to the K classes; x enters as one
// input, or X with one-hot encoding), or an error when p.Model does not parse.
func ModelParams(p Point) (int64, error) {
	hidden, err := models.ParseModel(p.Model)
	if err != nil {
		return 0, err
	}
	in := int64(1)
	if p.Encoding == models.EncodingOneHot {
		in = int64(max(p.XValues, 0))
	}
	var n int64
	for _, h := range append(hidden, max(p.Classes, 0)) {
		n = SatAdd(n, SatAdd(SatMul(in, int64(h)), int64(h)))
		in = int64(h)
	}
	return n, nil
}

// GraphValuesPerRun is the size of one run in a training graph: its parameters and its
// activations over the X values (every hidden layer and the K logits).
func GraphValuesPerRun(p Point) (int64, error) {
	params, err := ModelParams(p)
	if err != nil {
		return 0, err
	}
	hidden, _ := models.ParseModel(p.Model)
	width := int64(max(p.Classes, 0))
	for _, h := range hidden {
		width = SatAdd(width, int64(h))
	}
	return SatAdd(params, SatMul(int64(max(p.XValues, 0)), width)), nil
}

// CheckGrid checks the limits on a set of grid points that hold on every runner and do
// not depend on the options: the number of points, the tables over all points and the
// draws over all points.
func CheckGrid(points []Point) error {
	if len(points) > MaxPoints {
		return fmt.Errorf("%d grid points is over the limit of %d", len(points), MaxPoints)
	}
	var tables, draws int64
	for _, p := range points {
		tables = SatAdd(tables, int64(max(p.Tables, 0)))
		draws = SatAdd(draws, SatMul(int64(max(p.Tables, 0)), int64(max(p.Samples, 0))))
	}
	if tables > MaxTables {
		return fmt.Errorf("%s tables over %d grid points is over the limit of %d", Count(tables), len(points), MaxTables)
	}
	if draws > MaxDraws {
		return fmt.Errorf("%s draws (tables × samples%s) is over the limit of %d", Count(draws), overPoints(len(points)), int64(MaxDraws))
	}
	return nil
}

// CheckLimits checks points, run with these options, against the documented limits
// (see Limits above) before anything runs: local is true when the workers run in this
// process (prism, direct, or --environment_type=LOOPBACK), false on a distributed
// runner such as Dataflow. It assumes o and every point passed Validate. Its error
// gives the value, the limit and the flag or runner that lifts it; with several
// points it names the grid point.
func (o Options) CheckLimits(points []Point, local bool) error {
	if err := CheckGrid(points); err != nil {
		return err
	}
	where := func(p Point) string {
		if len(points) > 1 {
			return fmt.Sprintf("grid point %d: ", p.ID)
		}
		return ""
	}
	var tables, learned, rows int64
	for _, p := range points {
		if err := o.checkPoint(p, local); err != nil {
			return fmt.Errorf("%s%w", where(p), err)
		}
		t := int64(p.Tables)
		tables = SatAdd(tables, t)
		learned = SatAdd(learned, LearnedCells(o, p))
		if o.WriteSamples {
			rows = SatAdd(rows, SatMul(t, int64(p.Samples)))
		}
	}
	n := len(points)
	if local && tables > MaxTablesLocal && n > 1 {
		return fmt.Errorf("%s tables over %d grid points is over the local limit of %s (%s, or use fewer tables or points)",
			Count(tables), n, Count(MaxTablesLocal), liftLocal)
	}
	if lim := Pick(local, MaxLearnedCellsLocal, MaxLearnedCells); learned > lim {
		return fmt.Errorf("%s learned cells (tables × methods × x_values·classes%s) is over %s of %s (%s)",
			Count(learned), overPoints(n), LimitName(local), Count(lim), Lift(local, "use fewer tables, methods or cells"))
	}
	if lim := Pick(local, MaxSampleRowsLocal, MaxSampleRows); rows > lim {
		return fmt.Errorf("%s sample rows to write (tables × samples%s) is over %s of %s (%s)",
			Count(rows), overPoints(n), LimitName(local), Count(lim), Lift(local, "pass --write_samples=false"))
	}
	return nil
}

// checkPoint checks the limits of one point that depend on the runner or the options.
func (o Options) checkPoint(p Point, local bool) error {
	if local && p.Tables > MaxTablesLocal {
		return fmt.Errorf("tables: %d tables is over the local limit of %d (%s)", p.Tables, MaxTablesLocal, liftLocal)
	}
	return MustOf(p.Task).Limits(o, p, local)
}

// CheckFloat32 refuses a finite option that the fused kernels, which compute in
// float32, would turn into an infinity or (from a value > 0) into 0.
func CheckFloat32(name string, v float64) error { return methods.CheckFloat32(name, v) }

// CheckBackend refuses a point whose methods cannot train on --backend before anything
// runs: a kind that trains on the fused float32 kernels only (kernelOnly), or a method
// of the table that does (methods.Method.KernelOnly), is refused on a GoMLX backend.
func (o Options) CheckBackend(p Point, kernelOnly bool) error {
	gomlx := o.Backend != models.BackendAuto && o.Backend != models.BackendKernel
	if !gomlx {
		return nil
	}
	if kernelOnly {
		noun := strings.TrimSuffix(methods.KindNoun(MustOf(p.Task).Name()), "s")
		return fmt.Errorf("backend: --backend=%s does not apply to the %s %s: its runs train on the fused float32 kernels only "+
			"(leave --backend out, or pass --backend=kernel)", o.Backend, noun, p.Task)
	}
	var only []string
	for _, name := range p.Methods {
		if m, _ := methods.Lookup(name); m.KernelOnly {
			only = append(only, name)
		}
	}
	if len(only) == 0 {
		return nil
	}
	verb := "trains"
	if len(only) > 1 {
		verb = "train"
	}
	return fmt.Errorf("backend: %s %s on the fused float32 kernels only, not on --backend=%s "+
		"(leave --backend out, pass --backend=kernel, or drop %s from --methods)", strings.Join(only, " and "), verb, o.Backend, strings.Join(only, ", "))
}

// pick is the local or the distributed value of a limit.
func Pick(local bool, localLimit, distributed int64) int64 {
	if local {
		return localLimit
	}
	return distributed
}

// limitName names the limit that applies in a message.
func LimitName(local bool) string {
	if local {
		return "the local limit"
	}
	return "the limit on a distributed runner"
}

// lift is what a message suggests to stay within a limit: on a local run, Dataflow
// first, then other.
func Lift(local bool, other string) string {
	if local {
		return liftLocal + ", or " + other
	}
	return other
}

// overPoints says over how many grid points a total was taken (nothing for one).
func overPoints(n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(", over %d grid points", n)
}

// count prints a non-negative count; math.MaxInt64 stands for a saturated product.
func Count(n int64) string {
	if n == math.MaxInt64 {
		return "more than 9.2e18"
	}
	return fmt.Sprint(n)
}

// SatMul returns a·b for non-negative a and b, or math.MaxInt64 when the product does
// not fit: a count that saturates instead of wrapping to a negative number.
func SatMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// SatAdd returns a+b for non-negative a and b, or math.MaxInt64 when the sum does not fit.
func SatAdd(a, b int64) int64 {
	if s := a + b; s >= a && s >= b {
		return s
	}
	return math.MaxInt64
}

// learnedCounter is a kind that writes the learned joints of fewer runs than all
// (tasks/bits above MaxCells cells: the report's tasks only).
type learnedCounter interface {
	LearnedCells(o Options, p Point) int64
}

// LearnedCells are the learned cells a point writes: tables × methods × X·K, or what its
// kind says.
func LearnedCells(o Options, p Point) int64 {
	if k, err := Of(p.Task); err == nil {
		if c, ok := k.(learnedCounter); ok {
			return c.LearnedCells(o, p)
		}
	}
	return SatMul(SatMul(int64(p.Tables), int64(len(p.Methods))), int64(p.XValues)*int64(p.Classes))
}

// KeepsCells reports whether task ordinal o of point p writes its runs' learned joints,
// for a kind that writes every task's up to MaxCells cells a task and above only the
// report's tasks (--report_tables): binary tables and block tasks, whose output would
// otherwise grow by hundreds of thousands of cells a run.
func KeepsCells(opts Options, p Point, o int64) bool {
	return p.XValues*p.Classes <= MaxCells || o < int64(opts.ReportTables)
}

// ReportCells are the learned cells a KeepsCells kind's point writes.
func ReportCells(o Options, p Point) int64 {
	cells := int64(p.XValues) * int64(p.Classes)
	t := int64(p.Tables)
	if cells > MaxCells {
		t = min(t, int64(max(0, o.ReportTables)))
	}
	return SatMul(SatMul(t, int64(len(p.Methods))), cells)
}

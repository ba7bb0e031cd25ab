// Package tasks is the task-kind interface and what every kind works with: a run's
// Options, its grid Points, the elements that flow between the stages (blocks of
// tasks, their trained runs) and the exact evaluation of a learned joint on an
// enumerated support. One kind is one subpackage registered here by name (tasks/table:
// random joint tables; tasks/bits: binary tables in D dimensions; tasks/plane:
// continuous 2-D densities on a grid; tasks/blocks: block tasks in D = 2B dimensions;
// tasks/all imports them all); the stages, the verdict and the report call the Kind and
// Source interfaces and never ask which kind they hold. The package is Beam-free: the stages are thin wrappers over it.
package tasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/verdict"
)

// Kind is a task kind: its options and their validation, its defaults and limits, the
// source of its tasks (truth from a seed, datasets, training and evaluation on its
// support), the verdict rule of its points and what the report says of it.
type Kind interface {
	// Name is the kind's name (methods.KindTable, methods.KindPlane, ...).
	Name() string
	// Owns reports whether a point's task (schemas.Grid.Task) is of this kind.
	Owns(task string) bool
	// Noun names the kind's tasks in counts and messages ("tables", "tasks").
	Noun() string
	// About is the report's sentence on what the kind's tasks are and how they are
	// evaluated.
	About() string
	// Axes are the flags (grid axes and run-wide options) only this kind reads: one of
	// them given for another kind's point is refused, and a run-wide option no kind of
	// a run reads is zeroed in its config.json (Options.Resolve).
	Axes() []string
	// Defaults sets the kind's defaults of the axes given reports the user did not set.
	Defaults(p *Point, given func(axis string) bool)
	// Resolve sets a point's derived values (and zeroes the options that do not apply),
	// before Validate.
	Resolve(p *Point)
	// Validate checks a resolved point's values.
	Validate(p Point) error
	// Limits checks a valid point against the run's limits (local: the workers run in
	// this process) and its backend.
	Limits(o Options, p Point, local bool) error
	// Check checks, before anything runs, what depends on the point's truth: every task
	// the run would draw or read (e.g. that the grid resolves it and the box holds it).
	Check(ctx context.Context, o Options, p Point) error
	// Seed identifies task ordinal o of the point: it depends on what draws the task
	// (its spec, the replicate, the ordinal), not on the axes a sweep varies around it
	// (N, the model, the steps), so those sweeps are paired on the same tasks.
	Seed(runSeed uint64, p Point, o int64) uint64
	// BlockSize is the number of tasks of one element (a block) of the point.
	BlockSize(p Point, trainBatch int) int64
	// Rule is the verdict rule of a point of the kind (it may depend on the point's
	// model: images with a CNN have no exact JEM, with the MFA model they do).
	Rule(p Point) verdict.Rule
	// Dimension is the dimension D of a point's x (the report's dimension ladder): 2 for
	// a 2-D task, D for bits:D,K, 2B for blocks:B,…; 0 for a kind with no dimension
	// (tables: x is a value of a set, not a point of a space).
	Dimension(p Point) int
	// Family is the point's task with its dimension taken out ("bits:·,2 (3
	// components)", "blocks:·,gmm:3,2"): the points of one family at several dimensions
	// are a rung of the dimension ladder. "" for a kind with no dimension.
	Family(p Point) string
	// Open returns the source of the point's tasks; a stage opens one per point in
	// Setup and closes it in Teardown.
	Open(ctx context.Context, env Env, p Point) (Source, error)
}

// MethodKinder is implemented by a kind some of whose points train the methods of
// another kind's plug: the images kind's MFA model runs the block tasks' objectives
// (methods.Blocks). MethodKind is the kind whose methods the point trains.
type MethodKinder interface {
	MethodKind(p Point) string
}

// MethodKindOf is the kind whose methods a point of kind k trains: k's own name
// unless k is a MethodKinder.
func MethodKindOf(k Kind, p Point) string {
	if mk, ok := k.(MethodKinder); ok {
		return mk.MethodKind(p)
	}
	return k.Name()
}

// Env is what a source needs from the run: its options and where progress lines go.
type Env struct {
	Options Options
	// Progress prints one progress line (a stage passes its Beam logger); nil: none.
	Progress func(ctx context.Context, format string, args ...any)
}

// Progressf prints a progress line when the environment has a printer.
func (e Env) Progressf(ctx context.Context, format string, args ...any) {
	if e.Progress != nil {
		e.Progress(ctx, format, args...)
	}
}

// Source is one point's tasks: everything the stages do to a block of them.
type Source interface {
	// Truth is the user's id of task ordinal o and its true joint on the evaluation
	// support, X·K cells (row-major x·K+y).
	Truth(o int64) (id int64, p []float64, err error)
	// Sample draws the datasets of a block's tasks (for tables the cell counts in
	// Block.Counts; a kind whose draws are a function of the task's seed draws them
	// again where used) and, when bucket is not nil, writes them to key.
	Sample(ctx context.Context, b *Block, bucket *blob.Bucket, key string) error
	// WriteTruth writes the point's true joints (its blocks in ordinal order) to its
	// truth file and returns the key written.
	WriteTruth(ctx context.Context, bucket *blob.Bucket, blocks []Block, multiPoint bool) (string, error)
	// Train trains every method on every task of a block.
	Train(ctx context.Context, b Block) (TrainedBlock, error)
	// Evaluate measures every run of a trained block against its truth: the result
	// rows and the learned joints, in run order.
	Evaluate(ctx context.Context, tb TrainedBlock) (ResultBlock, LearnedBlock, error)
	// Close releases what the source holds (a trainer's backend).
	Close() error
}

var (
	mu    sync.RWMutex
	kinds []Kind
)

// Register adds a kind; each subpackage registers its kind in init.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(kinds, func(o Kind) bool { return o.Name() == k.Name() }) {
		panic("tasks: kind " + k.Name() + " registered twice")
	}
	kinds = append(kinds, k)
}

// Of returns the kind of a point's task; an empty task is the table kind's.
func Of(task string) (Kind, error) {
	if task == "" {
		task = TaskTable
	}
	mu.RLock()
	defer mu.RUnlock()
	for _, k := range kinds {
		if k.Owns(task) {
			return k, nil
		}
	}
	return nil, fmt.Errorf("task: unknown task %s (known kinds: %s)", quote(task), strings.Join(Names(), ", "))
}

// MustOf is Of for a point already validated.
func MustOf(task string) Kind {
	k, err := Of(task)
	if err != nil {
		panic(err)
	}
	return k
}

// Names are the registered kinds' names.
func Names() []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.Name())
	}
	return out
}

// Kinds are the registered kinds, in registration order.
func Kinds() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(kinds)
}

// Sources opens the source of every point (a stage's Setup).
func Sources(ctx context.Context, env Env, points []Point) (map[int64]Source, error) {
	out := make(map[int64]Source, len(points))
	for _, p := range points {
		k, err := Of(p.Task)
		if err != nil {
			return nil, err
		}
		s, err := k.Open(ctx, env, p)
		if err != nil {
			CloseSources(out)
			return nil, fmt.Errorf("point %d: %w", p.ID, err)
		}
		out[p.ID] = s
	}
	return out, nil
}

// CloseSources closes every source (a stage's Teardown); nil-safe.
func CloseSources(srcs map[int64]Source) error {
	var first error
	for _, s := range srcs {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

package stages

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// Resuming an interrupted run (launch's --resume): its staging folder keeps every
// block's part files, written under deterministic names. A block is complete when its
// results file, its learned joints and (with --write_samples) its samples file are
// there as whole Parquet files; a blob write appears under its name only when it is
// closed (a temporary file renamed, or an object store's upload), and WriteLearned
// writes a block's learned joints after its curves and buffers. The resumed run
// recomputes the truth of every block (cheap, and WriteTables needs all of a point's),
// trains only the blocks that are not complete, and reads the result rows (and 2-D KL
// curves) of the others back from their files (Kept), so Aggregate and Report see the
// same rows as an uninterrupted run. Every part file's size and SHA-256 are recorded
// as it is written (sealPart, storage.SealPart); a kept block is reused only if each of
// its files still matches (VerifyBlock), else it is recomputed, and publishing refuses
// a staged file that no longer matches. Blocks holding a table the report plots
// (ordinal < --report_tables) are always recomputed: the report draws their learned
// joints, true tables, buffers and Langevin frames from the run itself.

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*skipBlocksFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*keptFn)(nil)).Elem())
}

// blockParts are the part files a block may have, by folder.
func blockParts(pointID, index int64) []string {
	return []string{SamplePath(pointID, index), ResultsPath(pointID, index), LearnedPath(pointID, index),
		LearnedGridPath(pointID, index), CurvesPath(pointID, index), BuffersPath(pointID, index)}
}

// parquetMagic starts and ends every Parquet file.
var parquetMagic = []byte("PAR1")

// wholeParquet reports whether key in b is there and starts and ends with Parquet's
// magic bytes (a file cut short does not end with them).
func wholeParquet(ctx context.Context, b *blob.Bucket, key string) (bool, error) {
	attrs, err := b.Attributes(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if attrs.Size < 12 {
		return false, nil
	}
	for _, off := range []int64{0, attrs.Size - 4} {
		r, err := b.NewRangeReader(ctx, key, off, 4, nil)
		if err != nil {
			return false, err
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return false, err
		}
		if !bytes.Equal(got, parquetMagic) {
			return false, nil
		}
	}
	return true, nil
}

// BlockComplete reports whether every output of block ref is in b (a run's staging
// folder): its results, its learned joints (learned/ or learned_grid/) and, when
// writeSamples, its samples, each a whole Parquet file.
func BlockComplete(ctx context.Context, b *blob.Bucket, ref BlockRef, writeSamples bool) (bool, error) {
	need := [][]string{{ResultsPath(ref.PointID, ref.Index)}, {LearnedPath(ref.PointID, ref.Index), LearnedGridPath(ref.PointID, ref.Index)}}
	if writeSamples {
		need = append(need, []string{SamplePath(ref.PointID, ref.Index)})
	}
	for _, anyOf := range need {
		found := false
		for _, key := range anyOf {
			ok, err := wholeParquet(ctx, b, key)
			if err != nil {
				return false, err
			}
			if ok {
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// sealPart records the size and SHA-256 of a block's part file just written into b
// (the run's staging folder): a resumed run reuses the block only if it still matches.
func sealPart(ctx context.Context, b *blob.Bucket, key string) error {
	return storage.SealPart(ctx, b, key)
}

// VerifyBlock checks every part file of block ref in b (a run's staging folder)
// against the hash recorded when it was written; a file that differs or has no record
// is an error wrapping storage.ErrPartChanged.
func VerifyBlock(ctx context.Context, b *blob.Bucket, ref BlockRef) error {
	for _, k := range blockParts(ref.PointID, ref.Index) {
		ok, err := b.Exists(ctx, k)
		if err != nil {
			return fmt.Errorf("check %s: %w", k, err)
		}
		if !ok {
			continue
		}
		if err := storage.VerifyPart(ctx, b, k); err != nil {
			return err
		}
	}
	return nil
}

// CompletedBlocks scans a staging folder b for the blocks of a run with these options
// and points: complete are the blocks whose outputs are all there, skippable those of
// them a resumed run need not recompute (no table of the report's plots); total is
// the run's number of blocks.
func CompletedBlocks(ctx context.Context, b *blob.Bucket, opts Options, points []Point) (complete, skippable []BlockRef, total int, err error) {
	byID := tasks.PointsByID(points)
	refs := tasks.BlockRefs(points, opts.TrainBatch)
	for _, ref := range refs {
		ok, err := BlockComplete(ctx, b, ref, opts.WriteSamples)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("check block %d of point %d: %w", ref.Index, ref.PointID, err)
		}
		if !ok {
			continue
		}
		complete = append(complete, ref)
		if ref.Index*tasks.BlockTables(byID[ref.PointID], opts.TrainBatch) >= int64(opts.ReportTables) {
			skippable = append(skippable, ref)
		}
	}
	return complete, skippable, len(refs), nil
}

// SkipBlocks drops the blocks skip names (a resumed run's kept blocks) from blocks.
//
// In: PCollection<Block>. Out: PCollection<Block>.
func SkipBlocks(s beam.Scope, skip []BlockRef, blocks beam.PCollection) beam.PCollection {
	s = s.Scope("stages.SkipKeptBlocks")
	return beam.ParDo(s, &skipBlocksFn{Skip: skip}, blocks)
}

type skipBlocksFn struct {
	Skip []BlockRef
	set  map[BlockRef]bool
}

func (f *skipBlocksFn) Setup() {
	f.set = make(map[BlockRef]bool, len(f.Skip))
	for _, r := range f.Skip {
		f.set[r] = true
	}
}

func (f *skipBlocksFn) ProcessElement(b Block, emit func(Block)) {
	if !f.set[BlockRef{PointID: b.PointID, Index: b.Index}] {
		emit(b)
	}
}

var blocksKept = beam.NewCounter("jemcheck", "blocks_resumed")

// Kept reads back the outputs of the blocks a resumed run kept (refs, complete in its
// staging folder opts.Out): each block's result rows as Evaluate emitted them, its 2-D
// runs' KL curves (the only learned data the report takes from a block without a
// report table) and the keys of its part files, for Publish.
//
// Out: PCollection<ResultBlock>, PCollection<LearnedBlock>, PCollection<string>.
func Kept(s beam.Scope, opts Options, points []Point, refs []BlockRef) (results, learned, keys beam.PCollection) {
	s = s.Scope("stages.ReadKeptBlocks")
	return beam.ParDo3(s, &keptFn{OutBucket: OutBucket{Out: opts.Out}, Points: points, TrainBatch: opts.TrainBatch},
		beam.CreateList(s, refs))
}

type keptFn struct {
	OutBucket
	Points     []Point
	TrainBatch int
}

func (f *keptFn) ProcessElement(ctx context.Context, ref BlockRef, emitRows func(ResultBlock), emitLearned func(LearnedBlock), emitKey func(string)) error {
	var p Point
	for _, q := range f.Points {
		if q.ID == ref.PointID {
			p = q
		}
	}
	key := ResultsPath(ref.PointID, ref.Index)
	rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, f.bucket, key)
	if err != nil {
		return fmt.Errorf("resume: read the kept block %d of point %d: %w", ref.Index, ref.PointID, err)
	}
	emitRows(ResultBlock{PointID: ref.PointID, Index: ref.Index, First: ref.Index * tasks.BlockTables(p, f.TrainBatch), Rows: rows})
	lb := LearnedBlock{PointID: ref.PointID, Index: ref.Index}
	var curves []schemas.CurveRow
	if ok, err := f.bucket.Exists(ctx, CurvesPath(ref.PointID, ref.Index)); err != nil {
		return fmt.Errorf("resume: %w", err)
	} else if ok {
		if curves, err = schemas.ReadParquet[schemas.CurveRow](ctx, f.bucket, CurvesPath(ref.PointID, ref.Index)); err != nil {
			return fmt.Errorf("resume: read the kept block %d of point %d: %w", ref.Index, ref.PointID, err)
		}
	}
	for _, c := range curves { // in run-id order, each run's steps in order (write2D)
		if n := len(lb.Runs); n == 0 || lb.Runs[n-1].RunID != c.RunID {
			ord, err := runOrdinal(c.RunID)
			if err != nil {
				return fmt.Errorf("resume: %s: %w", CurvesPath(ref.PointID, ref.Index), err)
			}
			lb.Runs = append(lb.Runs, Learned{RunID: c.RunID, PointID: c.PointID, TableID: c.TaskID, Ordinal: ord, Method: c.Method})
		}
		l := &lb.Runs[len(lb.Runs)-1]
		l.Curve = append(l.Curve, CurvePoint{Step: int(c.Step), KLJoint: c.KLJoint, KLMarginal: c.KLMarginal, KLConditional: c.KLConditional,
			HeldoutNLL: c.HeldoutNLL, GradEvals: c.GradEvals})
	}
	if len(lb.Runs) > 0 {
		emitLearned(lb)
	}
	for _, k := range blockParts(ref.PointID, ref.Index) {
		if ok, err := f.bucket.Exists(ctx, k); err != nil {
			return fmt.Errorf("resume: %w", err)
		} else if ok {
			emitKey(k)
		}
	}
	blocksKept.Inc(ctx, 1)
	return nil
}

// runOrdinal is the table ordinal in a run id (schemas.RunID: pPPPP-tTTTTTTT-method).
func runOrdinal(runID string) (int64, error) {
	parts := strings.SplitN(runID, "-", 3)
	if len(parts) < 3 || !strings.HasPrefix(parts[1], "t") {
		return 0, fmt.Errorf("run id %q is not pPPPP-tTTTTTTT-method", runID)
	}
	return strconv.ParseInt(parts[1][1:], 10, 64)
}

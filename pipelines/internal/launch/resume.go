package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// Resuming an interrupted run. A run stopped by SIGINT or SIGTERM (or by its caller's
// context) keeps its staging folder when any block of it is complete: config.json and
// every block's part files (stages.BlockComplete says when a block's are all there);
// a crashed run leaves it anyway. A run with --resume into the same --out looks for
// such a folder whose config.json is byte for byte its own (the run id, the lock and
// --overwrite/--resume are not in it; --timings is, since it changes results/), takes
// over its run id and staging folder, and recomputes only the blocks not complete
// there (stages.Kept reads the others' result rows back), then publishes as any run:
// the output is byte-identical to an uninterrupted run's but for manifest.json's run
// id. A folder with another configuration is bad input naming what differs; with none
// to resume the run starts from the beginning and says so. Without --resume the next
// run removes such folders, as it removes any unfinished run's (storage.RecoverStaging).
//
// Nothing kept is trusted unchecked (storage's "Seals"): only a staging folder jemcheck
// sealed is resumed, and only if its config.json still has the hash sealed when the
// folder was made (an edited one is not resumed: the run starts afresh and says so);
// each kept block's files must match the hashes recorded when they were written, and
// hold that block's rows (blockRowsDiffer: the records carry no secret, so another
// block's files with rewritten records match them); a block that does not is
// recomputed, and the run says so on stderr.

// resumeState is what Prepare found to resume.
type resumeState struct {
	note     string            // a line for the user when there is nothing to resume
	complete int               // complete blocks in the kept staging folder
	total    int               // the run's blocks
	skip     []stages.BlockRef // complete blocks the run does not recompute
	changed  int               // complete blocks recomputed because their files changed
	warnings []string          // for stderr: what was found changed and is not trusted
}

// adopted reports whether the run continues an interrupted run's staging folder.
func (c *Config) adopted() bool { return c.resume != nil && c.resume.note == "" }

// Skipped returns the blocks a resumed run reads back instead of computing (none for
// a fresh run).
func (c *Config) Skipped() []stages.BlockRef {
	if c.resume == nil {
		return nil
	}
	return c.resume.skip
}

// findResume looks in --out for the staging folder of an interrupted run with this
// configuration and adopts it (run id, staging folder, its complete blocks).
func (c *Config) findResume(ctx context.Context) error {
	out := c.Options.Out
	ids, err := storage.Resumable(ctx, out)
	if err != nil {
		return fmt.Errorf("resume: look for an interrupted run in %s: %w", out, err)
	}
	want := []byte(c.JSON() + "\n")
	var differs, warnings []string
	for _, id := range slices.Backward(ids) { // the newest first
		st, err := storage.SubLocation(out, storage.StagingKey(id))
		if err != nil {
			return BadInput("out: %v", err)
		}
		seal, err := readSeal(ctx, out, id)
		if err != nil {
			continue // not jemcheck's (storage.Resumable lists only sealed folders)
		}
		b, err := storage.OpenExistingBucket(ctx, st)
		if err != nil {
			return fmt.Errorf("resume: open %s: %w", st, err)
		}
		got, err := storage.ReadSmallKey(ctx, b, "config.json", storage.MaxMetadataBytes)
		if storage.IsNotFound(err) {
			b.Close()
			continue // it never started a block
		}
		if err != nil {
			b.Close()
			return fmt.Errorf("resume: read %s: %w", Location(st, "config.json"), err)
		}
		if h := sha256.Sum256(got); hex.EncodeToString(h[:]) != seal.ConfigSHA256 {
			warnings = append(warnings, fmt.Sprintf("resume: %s was changed after jemcheck wrote it (sha256 %s, sealed %s): "+
				"the interrupted run %s is not trusted and not resumed", Location(st, "config.json"), hex.EncodeToString(h[:]),
				seal.ConfigSHA256, id))
			b.Close()
			continue
		}
		if !bytes.Equal(got, want) {
			differs = append(differs, fmt.Sprintf("run %s: %s", id, configDiff(got, want)))
			b.Close()
			continue
		}
		complete, skip, total, err := stages.CompletedBlocks(ctx, b, c.Options, c.Points)
		if err != nil {
			b.Close()
			return fmt.Errorf("resume: %s: %w", st, err)
		}
		// A kept block is reused only if its files are those written (hash records).
		var kept []stages.BlockRef
		changed := 0
		for _, ref := range skip {
			err := stages.VerifyBlock(ctx, b, ref)
			if errors.Is(err, storage.ErrPartChanged) {
				changed++
				warnings = append(warnings, fmt.Sprintf("resume: block %d of point %d in %s is recomputed: %v", ref.Index, ref.PointID,
					Location(out, storage.StagingKey(id)), err))
				continue
			}
			if err != nil {
				b.Close()
				return fmt.Errorf("resume: %s: block %d of point %d: %w", st, ref.Index, ref.PointID, err)
			}
			// ... and only if they hold that block's rows (hash records carry no secret:
			// review F19, another block's files with rewritten records).
			if why := c.blockRowsDiffer(ctx, b, ref); why != "" {
				changed++
				warnings = append(warnings, fmt.Sprintf("resume: block %d of point %d in %s is recomputed: %s", ref.Index, ref.PointID,
					Location(out, storage.StagingKey(id)), why))
				continue
			}
			kept = append(kept, ref)
		}
		b.Close()
		c.RunID, c.Staging = id, st
		c.resume = &resumeState{complete: len(complete), total: total, skip: kept, changed: changed, warnings: warnings}
		return nil
	}
	if len(differs) > 0 {
		return BadInput("resume: the interrupted run in %s was started with another configuration (%s); "+
			"rerun with its flags, or without --resume to start afresh (which removes it)", out, strings.Join(differs, "; "))
	}
	c.resume = &resumeState{note: fmt.Sprintf("resume: nothing to resume in %s (no interrupted run's staging folder): running from the start", out),
		warnings: warnings}
	if len(warnings) > 0 {
		c.resume.note = fmt.Sprintf("resume: nothing trusted to resume in %s: running from the start", out)
	}
	return nil
}

// readSeal reads the seal of run id's staging folder in out.
func readSeal(ctx context.Context, out, id string) (*storage.StagingSeal, error) {
	b, err := storage.OpenExistingBucket(ctx, out)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return storage.ReadStagingSeal(ctx, b, id)
}

// resumeLines are what the run says, under the lock, of what it resumes.
func (c *Config) resumeLines() []string {
	r := c.resume
	switch {
	case r == nil:
		return nil
	case r.note != "":
		return []string{r.note}
	}
	recomputed := r.total - len(r.skip)
	line := fmt.Sprintf("resuming run %s: %d of %d blocks complete are kept in %s; computing the other %d", c.RunID,
		len(r.skip), r.total, Location(c.Options.Out, storage.StagingKey(c.RunID)), recomputed)
	if r.changed > 0 {
		line += fmt.Sprintf(" (%d kept block(s) changed since they were written: recomputed)", r.changed)
	}
	if n := r.complete - len(r.skip) - r.changed; n > 0 {
		line += fmt.Sprintf(" (%d complete block(s) hold the report's tables, whose plots need the run itself: recomputed)", n)
	}
	return []string{line}
}

// recheckKept verifies, under the lock, that the blocks Prepare found complete still
// are (another run may have removed the folder meanwhile).
func (c *Config) recheckKept(ctx context.Context) error {
	if len(c.Skipped()) == 0 {
		return nil
	}
	b, err := storage.OpenExistingBucket(ctx, c.Staging)
	if err != nil {
		return fmt.Errorf("resume: open %s: %w", c.Staging, err)
	}
	defer b.Close()
	for _, ref := range c.resume.skip {
		ok, err := stages.BlockComplete(ctx, b, ref, c.Options.WriteSamples)
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		if !ok {
			return fmt.Errorf("resume: block %d of point %d in %s changed since it was checked: run again with --resume", ref.Index, ref.PointID, c.Staging)
		}
	}
	return nil
}

// configDiff names the fields two config.json contents differ in, the interrupted
// run's (old) then this run's: "options.seed 7 there, 8 here, points[0].steps 300
// there, 1000 here" (at most 6).
func configDiff(old, cur []byte) string {
	var a, b any
	if json.Unmarshal(old, &a) != nil || json.Unmarshal(cur, &b) != nil {
		return "config.json is not comparable"
	}
	fa, fb := map[string]string{}, map[string]string{}
	flatten("", a, fa)
	flatten("", b, fb)
	var keys []string
	for k := range fa {
		keys = append(keys, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range keys {
		va, oka := fa[k]
		vb, okb := fb[k]
		switch {
		case !oka:
			va = "(absent)"
		case !okb:
			vb = "(absent)"
		}
		if va != vb {
			diffs = append(diffs, fmt.Sprintf("%s %s there, %s here", k, va, vb))
		}
	}
	switch {
	case len(diffs) == 0:
		return "config.json differs in layout"
	case len(diffs) > 6:
		return strings.Join(diffs[:6], ", ") + fmt.Sprintf(" and %d more", len(diffs)-6)
	}
	return strings.Join(diffs, ", ")
}

func flatten(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, x, out)
		}
	case []any:
		for i, x := range v {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	default:
		b, _ := json.Marshal(v)
		out[prefix] = string(b)
	}
}

// stopState is how a stopped run ended: the line Execute's own clean-up wrote, for the
// signal handler to print.
type stopState struct {
	mu   sync.Mutex
	line string
}

func (s *stopState) set(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.line = line
}

func (s *stopState) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.line
}

// keepForResume ends a run that was stopped part-way: its staging folder is kept when
// a block of it is complete (for --resume), removed when none is (kept as well when
// its commit had begun: the next run finishes it), its lock released. It returns what
// it did and what --out holds, for the user.
func (c *Config) keepForResume(ctx context.Context) string {
	var did []string
	kept, total := 0, 0
	begun, err := storage.CommitBegun(ctx, c.Options.Out, c.RunID)
	if err == nil && !begun {
		if b, err := storage.OpenExistingBucket(ctx, c.Staging); err == nil {
			complete, _, n, err := stages.CompletedBlocks(ctx, b, c.Options, c.Points)
			if err == nil {
				kept, total = len(complete), n
			}
			b.Close()
		}
	}
	switch {
	case err != nil:
		did = append(did, fmt.Sprintf("its staging folder %s could not be checked (%v; the next run removes it)", c.Staging, err))
	case begun:
		did = append(did, fmt.Sprintf("publishing had begun, so its staging folder stays for the next run into %s to complete", c.Options.Out))
	case kept > 0:
		did = append(did, fmt.Sprintf("%d of %d blocks complete are kept in %s (rerun with --resume to continue)", kept, total,
			Location(c.Options.Out, storage.StagingKey(c.RunID))))
	default:
		if _, err := storage.Abort(ctx, c.Options.Out, c.RunID); err != nil {
			did = append(did, fmt.Sprintf("no block was complete; its staging folder %s could not be removed (%v; the next run removes it)", c.Staging, err))
		} else {
			did = append(did, "no block was complete: its staging folder is removed")
		}
	}
	if err := storage.ReleaseLock(ctx, c.Options.Out, c.RunID); err != nil {
		did = append(did, fmt.Sprintf("its lock could not be released (%v)", err))
	} else {
		did = append(did, "its lock released")
	}
	if c.createdOut != "" && kept == 0 {
		_ = os.Remove(c.createdOut) // only if empty: the run made it and nothing stayed
	}
	return strings.Join(did, ", ") + "; " + storage.OutputState(ctx, c.Options.Out, c.RunID)
}

// ErrInterrupted marks a run stopped part-way by its context (a signal, or the caller).
var ErrInterrupted = errors.New("interrupted")

// printResume prints the resume lines, and its warnings on stderr.
func (c *Config) printResume(w io.Writer) {
	if c.resume != nil {
		for _, l := range c.resume.warnings {
			fmt.Fprintf(c.stderr(), "%s: warning: %s\n", c.Pipeline, l)
		}
	}
	for _, l := range c.resumeLines() {
		fmt.Fprintf(w, "%s: %s\n", c.Pipeline, l)
	}
}

// totalBlocks is the number of blocks the run computes (all, less those it resumes).
func (c *Config) totalBlocks() int64 {
	return int64(len(tasks.BlockRefs(c.Points, c.Options.TrainBatch)) - len(c.Skipped()))
}

// blockRowsDiffer says why the part files of the kept block ref in b (the staging
// folder) are not that block's, or "" when they are. The plan says what the block holds:
// point p's tables with ordinals First to First+Len-1 (tasks.BlockTables), each trained
// with every method of p. Its results part must hold exactly one row per such run, by
// run id (schemas.RunID: point, ordinal, method), all of point p; the run ids of its
// learned, learned_grid, curves and buffers parts must be among them, and the table ids
// of its samples part among its results' (parts a block lacks are not checked). Every
// file was checked against its hash record before (stages.VerifyBlock); these are read
// one column at a time, streamed, so a large samples part costs no memory.
func (c *Config) blockRowsDiffer(ctx context.Context, b *blob.Bucket, ref stages.BlockRef) string {
	p, ok := tasks.PointsByID(c.Points)[ref.PointID]
	if !ok {
		return fmt.Sprintf("no point %d in this run", ref.PointID)
	}
	size := tasks.BlockTables(p, c.Options.TrainBatch)
	first := ref.Index * size
	n := min(size, int64(p.Tables)-first)
	want := make(map[string]bool, int(n)*len(p.Methods))
	for o := first; o < first+n; o++ {
		for _, m := range p.Methods {
			want[schemas.RunID(p.ID, o, m)] = true
		}
	}
	key := stages.ResultsPath(ref.PointID, ref.Index)
	rows, err := schemas.ReadParquet[blockResult](ctx, b, key)
	if err != nil {
		return err.Error()
	}
	seen := make(map[string]bool, len(rows))
	ids := map[int64]bool{}
	for _, r := range rows {
		switch {
		case r.PointID != p.ID:
			return fmt.Sprintf("%s holds a row of point %d (run %s), not point %d's", key, r.PointID, r.RunID, p.ID)
		case !want[r.RunID]:
			return fmt.Sprintf("%s holds run %s, not one of this block's (point %d, tables %d to %d)", key, r.RunID, p.ID, first, first+n-1)
		case seen[r.RunID]:
			return fmt.Sprintf("%s holds run %s twice", key, r.RunID)
		}
		seen[r.RunID] = true
		ids[r.TableID] = true
	}
	if len(seen) != len(want) {
		return fmt.Sprintf("%s holds %d runs, but the block has %d (point %d, tables %d to %d, %d method(s))", key, len(seen), len(want),
			p.ID, first, first+n-1, len(p.Methods))
	}
	for _, k := range []string{stages.LearnedPath(ref.PointID, ref.Index), stages.LearnedGridPath(ref.PointID, ref.Index),
		stages.CurvesPath(ref.PointID, ref.Index), stages.BuffersPath(ref.PointID, ref.Index)} {
		if why := eachValue(ctx, b, k, []string{"run_id"}, func(v parquet.Value) string {
			if id := v.String(); !want[id] {
				return fmt.Sprintf("%s holds run %s, not one of this block's (point %d, tables %d to %d)", k, id, p.ID, first, first+n-1)
			}
			return ""
		}); why != "" {
			return why
		}
	}
	k := stages.SamplePath(ref.PointID, ref.Index)
	return eachValue(ctx, b, k, []string{"table_id", "task_id"}, func(v parquet.Value) string {
		if id := v.Int64(); !ids[id] {
			return fmt.Sprintf("%s holds draws of table %d, which is not in this block (point %d, tables %d to %d)", k, id, p.ID, first, first+n-1)
		}
		return ""
	})
}

// blockResult is what blockRowsDiffer reads of a results part.
type blockResult struct {
	RunID   string `parquet:"run_id"`
	TableID int64  `parquet:"table_id"`
	PointID int64  `parquet:"point_id"`
}

// eachValue calls check on every value of the first of columns the Parquet file key of
// b has, streamed a page at a time, until check says what is wrong; it returns that,
// or why the file cannot be read, or "" (also when there is no such file).
func eachValue(ctx context.Context, b *blob.Bucket, key string, columns []string, check func(parquet.Value) string) (why string) {
	obj, err := storage.OpenObjectKey(ctx, b, key, math.MaxInt64-1)
	if storage.IsNotFound(err) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("read %s: %v", key, err)
	}
	defer obj.Close()
	defer func() {
		if r := recover(); r != nil { // parquet-go may panic on damaged data
			why = fmt.Sprintf("%s is not a valid Parquet file: %v", key, r)
		}
	}()
	// The footer is read whole: bound it first (its length is the 4 bytes before "PAR1").
	var tail [8]byte
	if obj.Size < 12 {
		return fmt.Sprintf("%s is not a valid Parquet file (%d bytes)", key, obj.Size)
	}
	if _, err := obj.ReadAt(tail[:], obj.Size-8); err != nil {
		return fmt.Sprintf("read %s: %v", key, err)
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > storage.MaxMetadataBytes || n > obj.Size-12 || string(tail[4:]) != "PAR1" {
		return fmt.Sprintf("%s is not a valid Parquet file (a footer of %d bytes in %d)", key, n, obj.Size)
	}
	f, err := parquet.OpenFile(obj, obj.Size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Sprintf("%s is not a valid Parquet file: %v", key, err)
	}
	col := -1
	for _, name := range columns {
		if leaf, ok := f.Schema().Lookup(name); ok {
			col = leaf.ColumnIndex
			break
		}
	}
	if col < 0 {
		return fmt.Sprintf("%s has no %s column", key, strings.Join(columns, " or "))
	}
	buf := make([]parquet.Value, 4096)
	for _, rg := range f.RowGroups() {
		pages := rg.ColumnChunks()[col].Pages()
		for {
			page, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				pages.Close()
				return fmt.Sprintf("read %s: %v", key, err)
			}
			values := page.Values()
			for {
				n, err := values.ReadValues(buf)
				for _, v := range buf[:n] {
					if why := check(v); why != "" {
						parquet.Release(page)
						pages.Close()
						return why
					}
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					parquet.Release(page)
					pages.Close()
					return fmt.Sprintf("read %s: %v", key, err)
				}
			}
			parquet.Release(page)
		}
		pages.Close()
	}
	return ""
}

package schemas

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/storage"
)

// rowsPerGroup caps row groups at about a million rows: large enough for good
// compression and few footers, small enough to stream.
const rowsPerGroup = 1 << 20

// zstdFastest is ZSTD at its fastest level (1): on a 100,000-table job's results it
// writes files 0.7% larger (tables.parquet 5%) than the default level (3) for a tenth
// of the compression time, which had been 8% of the job's CPU.
var zstdFastest = zstd.Codec{Level: zstd.SpeedFastest}

// parquetOptions are the writer options of every file the pipeline writes: ZSTD
// compression (zstdFastest), version-1 data pages (the most widely readable), capped
// row groups. The output holds no timestamps, so equal rows give equal bytes.
func parquetOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&zstdFastest),
		parquet.DataPageVersion(1),
		parquet.MaxRowsPerRowGroup(rowsPerGroup),
	}
}

// EncodeParquet returns rows as the bytes of a Parquet file, as WriteParquet writes it.
func EncodeParquet[T any](rows []T) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeParquet(&buf, rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeParquet[T any](w io.Writer, rows []T) error {
	pw := parquet.NewGenericWriter[T](w, parquetOptions()...)
	if _, err := pw.Write(rows); err != nil {
		pw.Close()
		return err
	}
	return pw.Close()
}

// WriteParquet writes rows as a Parquet file at key in b, with the schema given by T's
// parquet struct tags (int64 → INT64, float64 → DOUBLE, string → BYTE_ARRAY STRING,
// bool → BOOLEAN: all readable by DuckDB, Arrow and Spark). The object appears only if
// everything succeeded: on an error the upload is aborted.
func WriteParquet[T any](ctx context.Context, b *blob.Bucket, key string, rows []T) error {
	return WriteParquetStream(ctx, b, key, func(write func([]T) error) error { return write(rows) })
}

// WriteParquetStream writes a Parquet file at key in b from rows that fill hands to
// write in chunks, so a file of any size never sits in memory whole. Like WriteParquet,
// the object appears only if everything succeeded (the Parquet writer is closed, then
// the blob writer, and both are checked).
func WriteParquetStream[T any](ctx context.Context, b *blob.Bucket, key string, fill func(write func([]T) error) error) (err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/vnd.apache.parquet"})
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			cancel() // abort: no partial object
		}
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("writing %s: %w", key, cerr)
		}
	}()
	pw := parquet.NewGenericWriter[T](w, parquetOptions()...)
	if err := fill(func(rows []T) error { _, err := pw.Write(rows); return err }); err != nil {
		pw.Close()
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	return nil
}

// MaxParquetBytes bounds a Parquet file ReadParquet reads whole: far above any part
// file jemcheck writes (a block's results are a few MB), far below what would exhaust
// memory.
const MaxParquetBytes = storage.MaxParquetBytes // one limit for every whole-file Parquet read

// ReadParquet reads all rows of the Parquet file at key in b. Every column of T must be
// in the file (extra file columns are ignored); errors name the key. The file is checked
// before it is read: a regular file (a FIFO or a device, /dev/zero linked at a results
// name, is refused) of at most MaxParquetBytes.
func ReadParquet[T any](ctx context.Context, b *blob.Bucket, key string) ([]T, error) {
	data, err := storage.ReadSmallKey(ctx, b, key, MaxParquetBytes)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	rows, err := DecodeParquet[T](data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return rows, nil
}

// DecodeParquet decodes the bytes of a Parquet file into rows of T; every column of T
// must be in the file.
func DecodeParquet[T any](data []byte) (rows []T, err error) {
	f, err := openParquet(data)
	if err != nil {
		return nil, err
	}
	want := parquet.SchemaOf(new(T))
	var later []string // columns a file written before they existed may lack
	if l, ok := any(new(T)).(interface{ LaterColumns() []string }); ok {
		later = l.LaterColumns()
	}
	var missing []string
	for _, field := range want.Fields() {
		if _, ok := f.Schema().Lookup(field.Name()); !ok && !slices.Contains(later, field.Name()) {
			missing = append(missing, field.Name())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing column(s) %s (has %s)", strings.Join(missing, ", "), columnNames(f.Schema()))
	}
	defer func() {
		// parquet-go may panic on data that passed the footer checks but is damaged.
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("corrupt Parquet data: %v", r)
		}
	}()
	// Never allocate from the footer's row count: append a batch at a time (one huge
	// Read would also make parquet-go grow a row buffer of that size).
	r := parquet.NewGenericReader[T](f)
	defer r.Close()
	const batch = 8192
	buf := make([]T, min(batch, max(f.NumRows(), 1)))
	for {
		m, err := r.Read(buf)
		rows = append(rows, buf[:m]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("corrupt Parquet data: %w", err)
		}
		if m == 0 {
			break
		}
	}
	if int64(len(rows)) != f.NumRows() {
		return nil, fmt.Errorf("corrupt Parquet data: read %d of %d rows", len(rows), f.NumRows())
	}
	return rows, nil
}

func openParquet(data []byte) (f *parquet.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("not a valid Parquet file: %v", r)
		}
	}()
	if err := checkParquetFooter(data); err != nil {
		return nil, fmt.Errorf("not a valid Parquet file: %w", err)
	}
	f, err = parquet.OpenFile(bytes.NewReader(data), int64(len(data)),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("not a valid Parquet file: %w", err)
	}
	return f, nil
}

func columnNames(s *parquet.Schema) string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name())
	}
	return strings.Join(names, ", ")
}

// WriteSummary writes sum as WriteJSON does, byte for byte, but one point at a time, so
// that a sweep of thousands of points never holds its whole summary.json (tens of MB)
// in memory, nor the copies json.MarshalIndent makes of it.
func WriteSummary(ctx context.Context, b *blob.Bucket, key string, sum Summary) error {
	if len(sum.Points) == 0 {
		return WriteJSON(ctx, b, key, sum) // small, and null or [] as sum has it
	}
	shell := sum
	shell.Points = []PointSummary{}
	head, err := json.MarshalIndent(shell, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	i := bytes.Index(head, []byte(emptyPoints))
	if i < 0 {
		return fmt.Errorf("writing %s: no points field in %s", key, head)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/json"})
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if err := writeSummaryBody(w, head, i, sum.Points); err != nil {
		cancel() // the writer discards what it has, as a failed write must
		w.Close()
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	return nil
}

// emptyPoints is how json.MarshalIndent writes Summary's empty points field.
const emptyPoints = "\n  \"points\": [],\n"

// writeSummaryBody writes the summary whose points-less indented JSON is head (its empty
// points field at i) with points (at least one) in that field.
func writeSummaryBody(w io.Writer, head []byte, i int, points []PointSummary) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(head[:i])
	bw.WriteString("\n  \"points\": [\n")
	for j, p := range points {
		data, err := json.MarshalIndent(p, "    ", "  ")
		if err != nil {
			if nan := NaNFields(p); len(nan) > 0 {
				return fmt.Errorf("point %d: %w (not finite: %s)", p.PointID, err, strings.Join(nan, ", "))
			}
			return fmt.Errorf("point %d: %w", p.PointID, err)
		}
		bw.WriteString("    ")
		bw.Write(data)
		if j < len(points)-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("  ],\n")
	bw.Write(head[i+len(emptyPoints):])
	bw.WriteByte('\n')
	return bw.Flush()
}

// WriteJSON writes v as indented JSON with a trailing newline at key in b.
func WriteJSON(ctx context.Context, b *blob.Bucket, key string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	data = append(data, '\n')
	if err := b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	return nil
}

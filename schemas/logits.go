package schemas

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/storage"
)

// Limits of a logits file (pipelines/evaluate --logits): rows of all its files
// together, bytes of each file (streamed, never held whole), and the models they name.
const (
	MaxLogitsRows   = 40_000_000
	MaxLogitsBytes  = 2 << 30
	MaxLogitsModels = 64
)

var (
	maxLogitsRows  int64 = MaxLogitsRows
	maxLogitsBytes int64 = MaxLogitsBytes
)

// logitsFile is the userFile of the limits and messages a logits file shares with the
// other user files (the bounded reading and the Parquet layout checks).
var logitsFile = userFile{kind: "logits", row: "logit", maxRows: &maxLogitsRows, maxBytes: &maxLogitsBytes}

// LogitColumns are the columns a logits file must have: the task's id (IDColumn: the
// kind's "table_id" or "task_id"), the evaluation point (CellColumn: "x" or "cell"),
// the class y and the logit f(x)[y].
type LogitColumns struct {
	IDColumn, CellColumn string
}

// The class and logit columns of a logits file, and the column that names its model.
const (
	LogitClassColumn = "y"
	LogitValueColumn = "logit"
	LogitModelColumn = "model"
)

// Required are the columns every logits file has, in this order: the task, the point
// of its support, the class and the logit.
func (c LogitColumns) Required() []string {
	return []string{c.IDColumn, c.CellColumn, LogitClassColumn, LogitValueColumn}
}

// LogitRow is one row of a logits file: model Model (an index into Logits.Models) gives
// task ID, at point Cell of its support and class Y, the logit Logit.
type LogitRow struct {
	ID, Cell, Y int64
	Logit       float64
	Model       int32
	At          int64 // the row's place in its file: line (CSV, from 1 with the header) or row (Parquet, from 1)
	File        int32 // an index into Logits.Files
}

// Logits are the rows of a user's logits files, in file and row order.
type Logits struct {
	Files  []string // the files read, in order
	Models []string // the model names, in order of first appearance ("" where no column names one)
	Rows   []LogitRow

	models map[string]int32 // index of Models
	rows   int64            // rows read, in all files
	visit  func(*Logits, LogitRow) error
}

// Where names a row's place for messages: "l.csv line 12".
func (l Logits) Where(r LogitRow) string {
	unit := "row"
	if strings.EqualFold(path.Ext(l.Files[r.File]), ".csv") {
		unit = "line"
	}
	return fmt.Sprintf("%s %s %d", l.Files[r.File], unit, r.At)
}

// The columns that may name a row's model, in order of precedence: a model column, a
// method column (jemcheck's own learned/ files) or a run id (learned_grid/ files:
// p0000-t0000003-jem names the method jem).
var modelColumns = []string{LogitModelColumn, "method", "run_id"}

// ReadLogits reads a user's logits: loc is one file (.parquet or .csv, a path or a
// URL) or a folder of them (a path ending in / or an existing local directory: every
// .parquet and .csv file in it, in name order, as jemcheck's own learned/ folders).
// Columns besides cols, y, logit and the model's are ignored. Values must be integers
// and a number; the caller checks them against the tasks.
func ReadLogits(ctx context.Context, loc string, cols LogitColumns) (Logits, error) {
	l, err := ScanLogits(ctx, loc, cols, func(l *Logits, r LogitRow) error {
		l.Rows = append(l.Rows, r)
		return nil
	})
	if err != nil {
		return Logits{}, err
	}
	return *l, nil
}

// ScanLogits reads a user's logits as ReadLogits does, but hands each row to visit as
// it is read (with the Logits so far: its Files and Models name the row's file and
// model) instead of keeping it: the files are streamed, never held whole, so memory is
// what visit keeps. visit's first error stops the read and is returned, naming the
// file. The rows are limited to MaxLogitsRows, the models to MaxLogitsModels.
func ScanLogits(ctx context.Context, loc string, cols LogitColumns, visit func(*Logits, LogitRow) error) (*Logits, error) {
	files, err := logitFiles(ctx, loc)
	if err != nil {
		return nil, err
	}
	out := &Logits{visit: visit, models: map[string]int32{}}
	for _, f := range files {
		key, o, err := logitsFile.open(ctx, f)
		if err != nil {
			return nil, err
		}
		out.Files = append(out.Files, f)
		err = out.parse(key, objectSource(o), cols)
		o.Close()
		var ve visitError
		if errors.As(err, &ve) {
			return nil, ve.err // names the file and row itself
		}
		if err != nil {
			return nil, fmt.Errorf("logits file %s: %w", f, err)
		}
	}
	return out, nil
}

// logitFiles lists the files of loc: itself, or the .parquet and .csv files of a folder.
func logitFiles(ctx context.Context, loc string) ([]string, error) {
	dir, key, err := storage.SplitObject(loc)
	if err != nil {
		return nil, fmt.Errorf("logits %q: %w", loc, err)
	}
	local, isLocal := storage.LocalDir(loc)
	isDir := strings.HasSuffix(loc, "/") || key == ""
	if isLocal && !isDir {
		if err := checkRegular(local); err != nil && strings.Contains(err.Error(), "directory") {
			isDir = true
		}
	}
	if !isDir {
		return []string{loc}, nil
	}
	folder := strings.TrimSuffix(loc, "/")
	if key != "" && !strings.HasSuffix(loc, "/") {
		folder = loc
	} else if key == "" {
		folder = dir
	}
	b, err := storage.OpenExistingBucket(ctx, folder)
	if err != nil {
		return nil, fmt.Errorf("logits folder %s: %w", loc, err)
	}
	defer b.Close()
	var files []string
	it := b.List(&blob.ListOptions{Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("logits folder %s: %w", loc, err)
		}
		if _, ferr := fileFormat(o.Key); !o.IsDir && ferr == nil {
			files = append(files, storageJoin(folder, o.Key))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("logits folder %s holds no .parquet or .csv file", loc)
	}
	slices.Sort(files)
	return files, nil
}

// storageJoin joins a folder location (path or URL, maybe with a query) and a key.
func storageJoin(folder, key string) string {
	q := ""
	if i := strings.Index(folder, "?"); i >= 0 {
		folder, q = folder[:i], folder[i:]
	}
	return strings.TrimSuffix(folder, "/") + "/" + key + q
}

// parse reads the rows of one file.
func (l *Logits) parse(key string, src userSource, cols LogitColumns) error {
	format, err := fileFormat(key)
	if err != nil {
		return err
	}
	want := cols.Required()
	if format == "csv" {
		return l.parseCSV(src.r, want)
	}
	return l.parseParquet(src.ra, src.size, want)
}

// model returns the index of a model name (a map: constant time however many), adding
// it when new; more than MaxLogitsModels is an error naming the row (unit, at).
func (l *Logits) model(name, unit string, at int64) (int32, error) {
	if l.models == nil {
		l.models = map[string]int32{}
	}
	i, ok := l.models[name]
	if !ok {
		if len(l.Models) >= MaxLogitsModels {
			return 0, fmt.Errorf("%s %d: model %s is the %dth: the logits may name at most %d models",
				unit, at, quoteName(name), len(l.Models)+1, MaxLogitsModels)
		}
		l.Models = append(l.Models, name)
		i = int32(len(l.Models) - 1)
		l.models[name] = i
	}
	return i, nil
}

// quoteName quotes a model name for a message, cut to 60 bytes.
func quoteName(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// modelName is the model a row's name column gives: the method of a run id.
func modelName(column, v string) string {
	v = strings.TrimSpace(v)
	if column == "run_id" { // p0000-t0000003-jem
		parts := strings.SplitN(v, "-", 3)
		if len(parts) == 3 && strings.HasPrefix(parts[0], "p") && strings.HasPrefix(parts[1], "t") {
			v = parts[2]
		}
	}
	return strings.TrimPrefix(v, "external:") // an evaluated run's own outputs fed back
}

func (l *Logits) add(unit string, ints [3]int64, logit float64, model int32, at int64) error {
	if l.rows >= maxLogitsRows {
		return logitsFile.tooManyRows(unit, at)
	}
	l.rows++
	r := LogitRow{ID: ints[0], Cell: ints[1], Y: ints[2], Logit: logit, Model: model, At: at, File: int32(len(l.Files) - 1)}
	if l.visit == nil {
		l.Rows = append(l.Rows, r)
		return nil
	}
	if err := l.visit(l, r); err != nil {
		return visitError{err}
	}
	return nil
}

// visitError is an error of ScanLogits' visitor, returned as it is.
type visitError struct{ err error }

func (e visitError) Error() string { return e.err.Error() }

func (l *Logits) parseCSV(src io.Reader, want []string) error {
	r, ll := csvReader(src)
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("empty file: want a header %s and rows", strings.Join(want, ","))
	}
	if err != nil {
		return csvError(err, ll)
	}
	col := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[name]; dup {
			return fmt.Errorf("line 1: column %q appears twice", name)
		}
		col[name] = i
	}
	for _, name := range want {
		if _, ok := col[name]; !ok {
			return fmt.Errorf("line 1: missing column %q: want %s (and optionally model)", name, strings.Join(want, ", "))
		}
	}
	modelCol, named := "", -1
	for _, c := range modelColumns {
		if i, ok := col[c]; ok {
			modelCol, named = c, i
			break
		}
	}
	none := int32(-1)
	if named < 0 {
		if none, err = l.model("", "line", 1); err != nil {
			return err
		}
	}
	var ints [3]int64
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvError(err, ll)
		}
		line, _ := r.FieldPos(0)
		for j, name := range want[:3] {
			s := strings.TrimSpace(rec[col[name]])
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("line %d: %s %q is not an integer", line, name, s)
			}
			ints[j] = v
		}
		s := strings.TrimSpace(rec[col["logit"]])
		v, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("line %d: logit %q is not a number", line, s)
		}
		m := none
		if named >= 0 {
			if m, err = l.model(modelName(modelCol, rec[named]), "line", int64(line)); err != nil {
				return err
			}
		}
		if err := l.add("line", ints, v, m, int64(line)); err != nil {
			return err
		}
	}
}

func (l *Logits) parseParquet(ra io.ReaderAt, size int64, want []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not a readable logits Parquet file: the Parquet reader failed: %v", r)
		}
	}()
	pf, err := openUserParquet(ra, size)
	if err != nil {
		return err
	}
	if err := logitsFile.checkLayout(ra, size, pf.Metadata()); err != nil {
		return err
	}
	idx := make([]int, len(want))
	for i, name := range want {
		leaf, ok := pf.Schema().Lookup(name)
		if !ok {
			return fmt.Errorf("missing column %q: want %s (and optionally model)", name, strings.Join(want, ", "))
		}
		idx[i] = leaf.ColumnIndex
	}
	modelCol, named := "", -1
	for _, c := range modelColumns {
		if leaf, ok := pf.Schema().Lookup(c); ok {
			modelCol, named = c, leaf.ColumnIndex
			break
		}
	}
	none := int32(-1)
	if named < 0 {
		if none, err = l.model("", "row", 1); err != nil {
			return err
		}
	}
	var at int64
	var ints [3]int64
	return eachRow(pf, func(row parquet.Row) error {
		at++
		var logit float64
		m, seen := none, 0
		for _, v := range row {
			c := v.Column()
			j := slices.Index(idx, c)
			if c == named {
				if v.IsNull() {
					return fmt.Errorf("row %d: %s is null", at, modelCol)
				}
				if m, err = l.model(modelName(modelCol, v.String()), "row", at); err != nil {
					return err
				}
				continue
			}
			if j < 0 {
				continue
			}
			if v.IsNull() {
				return fmt.Errorf("row %d: %s is null", at, want[j])
			}
			seen++
			switch k := v.Kind(); {
			case j < 3 && k == parquet.Int64:
				ints[j] = v.Int64()
			case j < 3 && k == parquet.Int32:
				ints[j] = int64(v.Int32())
			case j == 3 && k == parquet.Double:
				logit = v.Double()
			case j == 3 && k == parquet.Float:
				logit = float64(v.Float())
			default:
				typ := "an integer (INT32 or INT64)"
				if j == 3 {
					typ = "a floating-point number (DOUBLE or FLOAT)"
				}
				return fmt.Errorf("row %d: %s holds a value of type %s, want %s", at, want[j], k, typ)
			}
		}
		if seen != len(want) {
			return fmt.Errorf("row %d: a value of %s is missing", at, strings.Join(want, ", "))
		}
		return l.add("row", ints, logit, m, at)
	})
}

// eachRow calls f with every row of pf, in order, read a batch at a time (the row is
// reused: f must copy what it keeps); it stops at f's first error.
func eachRow(pf *parquet.File, f func(parquet.Row) error) error {
	buf := make([]parquet.Row, readBatch)
	for _, rg := range pf.RowGroups() {
		if err := func() error {
			rows := rg.Rows()
			defer rows.Close()
			for {
				n, err := rows.ReadRows(buf)
				for _, row := range buf[:n] {
					if ferr := f(row); ferr != nil {
						return ferr
					}
				}
				if errors.Is(err, io.EOF) || (err == nil && n == 0) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("not a readable Parquet file: %w", err)
				}
			}
		}(); err != nil {
			return err
		}
	}
	return nil
}

// ParquetToCSV writes the flat Parquet object key of b (one jemcheck wrote) as the CSV
// object out: a header of its columns, then its rows; floats in the shortest form that
// reads back exactly. The blob writer is closed and checked.
func ParquetToCSV(ctx context.Context, b *blob.Bucket, key, out string) (err error) {
	data, err := b.ReadAll(ctx, key)
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	w, err := b.NewWriter(ctx, out, &blob.WriterOptions{ContentType: "text/csv"})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	cw := csv.NewWriter(w)
	var header []string
	for _, path := range pf.Schema().Columns() {
		header = append(header, strings.Join(path, "."))
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(header))
	if err := eachRow(pf, func(row parquet.Row) error {
		for _, v := range row {
			rec[v.Column()] = csvValue(v)
		}
		return cw.Write(rec)
	}); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// ParquetColumns are the columns of the Parquet file at key, read from its footer (the
// rows are not read).
func ParquetColumns(ctx context.Context, b *blob.Bucket, key string) ([]string, error) {
	attrs, err := b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(rangeReader{ctx, b, key}, attrs.Size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	var cols []string
	for _, p := range pf.Schema().Columns() {
		cols = append(cols, strings.Join(p, "."))
	}
	return cols, nil
}

// rangeReader reads an object by ranges (an io.ReaderAt).
type rangeReader struct {
	ctx context.Context
	b   *blob.Bucket
	key string
}

func (r rangeReader) ReadAt(p []byte, off int64) (int, error) {
	rr, err := r.b.NewRangeReader(r.ctx, r.key, off, int64(len(p)), nil)
	if err != nil {
		return 0, err
	}
	defer rr.Close()
	n, err := io.ReadFull(rr, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}

// csvValue formats a Parquet value for CSV.
func csvValue(v parquet.Value) string {
	switch v.Kind() {
	case parquet.Int32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case parquet.Int64:
		return strconv.FormatInt(v.Int64(), 10)
	case parquet.Double:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case parquet.Float:
		return strconv.FormatFloat(float64(v.Float()), 'g', -1, 32)
	case parquet.Boolean:
		return strconv.FormatBool(v.Boolean())
	}
	return v.String()
}

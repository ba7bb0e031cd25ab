package schemas

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/storage"
)

// Limits of a logits file (pipelines/evaluate --logits): rows of all its files
// together, and bytes of each file (read whole).
const (
	MaxLogitsRows  = 40_000_000
	MaxLogitsBytes = 2 << 30
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
var modelColumns = []string{"model", "method", "run_id"}

// ReadLogits reads a user's logits: loc is one file (.parquet or .csv, a path or a
// URL) or a folder of them (a path ending in / or an existing local directory: every
// .parquet and .csv file in it, in name order, as jemcheck's own learned/ folders).
// Columns besides cols, y, logit and the model's are ignored. Values must be integers
// and a number; the caller checks them against the tasks.
func ReadLogits(ctx context.Context, loc string, cols LogitColumns) (Logits, error) {
	files, err := logitFiles(ctx, loc)
	if err != nil {
		return Logits{}, err
	}
	var out Logits
	for _, f := range files {
		key, data, err := logitsFile.load(ctx, f)
		if err != nil {
			return Logits{}, err
		}
		out.Files = append(out.Files, f)
		if err := out.parse(key, data, cols); err != nil {
			return Logits{}, fmt.Errorf("logits file %s: %w", f, err)
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

// parse appends the rows of one file.
func (l *Logits) parse(key string, data []byte, cols LogitColumns) error {
	format, err := fileFormat(key)
	if err != nil {
		return err
	}
	want := []string{cols.IDColumn, cols.CellColumn, "y", "logit"}
	if format == "csv" {
		return l.parseCSV(data, want)
	}
	return l.parseParquet(data, want)
}

// model returns the index of a model name, adding it when new.
func (l *Logits) model(name string) int32 {
	i := slices.Index(l.Models, name)
	if i < 0 {
		l.Models = append(l.Models, name)
		i = len(l.Models) - 1
	}
	return int32(i)
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

func (l *Logits) add(ints [3]int64, logit float64, model int32, at int64) error {
	if int64(len(l.Rows)) >= maxLogitsRows {
		return logitsFile.tooManyRows("row", at)
	}
	l.Rows = append(l.Rows, LogitRow{ID: ints[0], Cell: ints[1], Y: ints[2], Logit: logit, Model: model, At: at, File: int32(len(l.Files) - 1)})
	return nil
}

func (l *Logits) parseCSV(data []byte, want []string) error {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("empty file: want a header %s and rows", strings.Join(want, ","))
	}
	if err != nil {
		return fmt.Errorf("malformed CSV: %w", err)
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
		none = l.model("")
	}
	var ints [3]int64
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("malformed CSV: %w", err)
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
			m = l.model(modelName(modelCol, rec[named]))
		}
		if err := l.add(ints, v, m, int64(line)); err != nil {
			return err
		}
	}
}

func (l *Logits) parseParquet(data []byte, want []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not a readable logits Parquet file: the Parquet reader failed: %v", r)
		}
	}()
	if err := checkParquetFooter(data); err != nil {
		return fmt.Errorf("not a valid Parquet file: %w", err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("not a valid Parquet file: %w", err)
	}
	if err := logitsFile.checkLayout(data, pf.Metadata()); err != nil {
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
		none = l.model("")
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
				m = l.model(modelName(modelCol, v.String()))
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
		return l.add(ints, logit, m, at)
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

// Finite reports whether v is a finite number (a logit must be).
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

package schemas

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"gocloud.dev/gcerrors"

	"github.com/jemcheck/jemcheck/models/prob"
)

// tableColumns are the columns of a user tables file, in TableRow's order.
var tableColumns = []string{"table_id", "x", "y", "p"}

// TableRows flattens tables into TableRow cells: tables in the given order, each
// table's cells row-major (x, then y).
func TableRows(ts []prob.Table) []TableRow {
	n := 0
	for _, t := range ts {
		n += len(t.P)
	}
	rows := make([]TableRow, 0, n)
	for _, t := range ts {
		for i, p := range t.P {
			rows = append(rows, TableRow{TableID: t.ID, X: int64(i / t.K), Y: int64(i % t.K), P: p})
		}
	}
	return rows
}

// splitObject splits the location of one file into the location of its directory (or
// bucket) and its key.
func splitObject(loc string) (dir, key string, err error) {
	if !isURL(loc) {
		return filepath.Dir(loc), filepath.Base(loc), nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", "", fmt.Errorf("tables file %q: %w", loc, err)
	}
	if strings.EqualFold(u.Scheme, "file") {
		d, k := path.Split(u.Path)
		u.Path = d
		return u.String(), k, nil
	}
	// Buckets: the host is the bucket, the path the key.
	key = strings.TrimPrefix(u.Path, "/")
	u.Path, u.RawPath = "", ""
	return u.String(), key, nil
}

// ReadTables reads user-supplied true tables from loc: a path or URL of a .csv or
// .parquet file (chosen by extension) with exactly the columns table_id, x, y, p (CSV:
// a header row, in any column order). Every table must hold each of its X·K cells
// exactly once, where X = max x + 1 and K = max y + 1, all tables must share one
// shape, and each table must be a distribution (see prob.NewTable). The tables come
// back sorted by id. Errors name the file and the problem (with the CSV line or the
// Parquet row).
func ReadTables(ctx context.Context, loc string) ([]prob.Table, error) {
	dir, key, err := splitObject(loc)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("tables file %q: no file name", loc)
	}
	if _, err := tablesFormat(key); err != nil {
		return nil, fmt.Errorf("tables file %s: %w", loc, err)
	}
	b, err := openBucket(ctx, dir, false)
	if err != nil {
		return nil, fmt.Errorf("tables file %s: %w", loc, err)
	}
	defer b.Close()
	data, err := b.ReadAll(ctx, key)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("tables file %s does not exist", loc)
		}
		return nil, fmt.Errorf("tables file %s: %w", loc, err)
	}
	ts, err := ParseTables(key, data)
	if err != nil {
		return nil, fmt.Errorf("tables file %s: %w", loc, err)
	}
	return ts, nil
}

func tablesFormat(name string) (string, error) {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".csv":
		return "csv", nil
	case ".parquet":
		return "parquet", nil
	default:
		return "", fmt.Errorf("unknown extension %q, want .csv or .parquet", ext)
	}
}

// ParseTables parses and validates the bytes of a tables file as ReadTables does; the
// extension of name (.csv or .parquet) chooses the format.
func ParseTables(name string, data []byte) ([]prob.Table, error) {
	format, err := tablesFormat(name)
	if err != nil {
		return nil, err
	}
	var cells []cell
	if format == "csv" {
		cells, err = parseTablesCSV(data)
	} else {
		cells, err = parseTablesParquet(data)
	}
	if err != nil {
		return nil, err
	}
	return assembleTables(cells)
}

// cell is one parsed row with where it came from ("line 4", "row 3").
type cell struct {
	TableRow
	where string
}

func parseTablesCSV(data []byte) ([]cell, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a BOM from spreadsheet exports
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty file: want a header table_id,x,y,p and rows")
	}
	if err != nil {
		return nil, fmt.Errorf("malformed CSV: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		if !slices.Contains(tableColumns, name) {
			return nil, fmt.Errorf("line 1: unexpected column %q: want exactly table_id, x, y, p", h)
		}
		if _, dup := col[name]; dup {
			return nil, fmt.Errorf("line 1: column %q appears twice", name)
		}
		col[name] = i
	}
	for _, name := range tableColumns {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("line 1: missing column %q: want exactly table_id, x, y, p", name)
		}
	}
	var cells []cell
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("malformed CSV: %w", err)
		}
		line, _ := r.FieldPos(0)
		where := fmt.Sprintf("line %d", line)
		var c cell
		c.where = where
		ints := []*int64{&c.TableID, &c.X, &c.Y}
		for j, name := range tableColumns[:3] {
			s := strings.TrimSpace(rec[col[name]])
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %q is not an integer", where, name, s)
			}
			*ints[j] = v
		}
		s := strings.TrimSpace(rec[col["p"]])
		c.P, err = strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: p %q is not a number", where, s)
		}
		cells = append(cells, c)
	}
	return cells, nil
}

// userTableRow reads a user's Parquet tables file, whose columns may be optional
// (DuckDB writes nullable columns) and narrower (INT32, FLOAT): nulls come back nil.
type userTableRow struct {
	TableID *int64   `parquet:"table_id,optional"`
	X       *int64   `parquet:"x,optional"`
	Y       *int64   `parquet:"y,optional"`
	P       *float64 `parquet:"p,optional"`
}

func parseTablesParquet(data []byte) ([]cell, error) {
	f, err := openParquet(data)
	if err != nil {
		return nil, err
	}
	if err := checkTableSchema(f.Schema()); err != nil {
		return nil, err
	}
	rows, err := DecodeParquet[userTableRow](data)
	if err != nil {
		return nil, err
	}
	cells := make([]cell, len(rows))
	for i, r := range rows {
		where := fmt.Sprintf("row %d", i+1)
		for j, isNull := range []bool{r.TableID == nil, r.X == nil, r.Y == nil, r.P == nil} {
			if isNull {
				return nil, fmt.Errorf("%s: %s is null", where, tableColumns[j])
			}
		}
		cells[i] = cell{TableRow: TableRow{TableID: *r.TableID, X: *r.X, Y: *r.Y, P: *r.P}, where: where}
	}
	return cells, nil
}

// checkTableSchema requires exactly the columns table_id, x, y, p, the first three of
// plain integer types (INT32 or INT64) and p of a floating type (FLOAT or DOUBLE).
// DECIMAL in particular is refused: it would be read as its unscaled integer.
func checkTableSchema(s *parquet.Schema) error {
	have := map[string]parquet.Field{}
	var extra []string
	for _, field := range s.Fields() {
		if !slices.Contains(tableColumns, field.Name()) {
			extra = append(extra, field.Name())
		}
		have[field.Name()] = field
	}
	if len(extra) > 0 {
		return fmt.Errorf("unexpected column(s) %s: want exactly table_id, x, y, p", strings.Join(extra, ", "))
	}
	for _, name := range tableColumns {
		field, ok := have[name]
		if !ok {
			return fmt.Errorf("missing column %q: want exactly table_id, x, y, p", name)
		}
		if !field.Leaf() || field.Repeated() {
			return fmt.Errorf("column %q is not a plain value column", name)
		}
		typ := field.Type()
		kind, lt := typ.Kind(), typ.LogicalType()
		want := "an integer (INT32 or INT64)"
		ok = (kind == parquet.Int32 || kind == parquet.Int64) && (lt == nil || isIntLogical(lt))
		if name == "p" {
			want = "a floating-point number (DOUBLE or FLOAT)"
			ok = (kind == parquet.Double || kind == parquet.Float) && (lt == nil || lt.Value == nil)
		}
		if !ok {
			return fmt.Errorf("column %q has type %s, want %s (in DuckDB, cast it: %s::%s)",
				name, typ, want, name, map[bool]string{true: "DOUBLE", false: "BIGINT"}[name == "p"])
		}
	}
	return nil
}

func isIntLogical(lt *format.LogicalType) bool {
	if lt.Value == nil {
		return true
	}
	_, ok := lt.Value.(*format.IntType)
	return ok
}

// assembleTables groups validated cells into tables sorted by id.
func assembleTables(cells []cell) ([]prob.Table, error) {
	if len(cells) == 0 {
		return nil, errors.New("no tables: the file has no rows")
	}
	type acc struct {
		id         int64
		maxX, maxY int64
		seen       map[[2]int64]string // cell → where it was
		p          map[[2]int64]float64
	}
	byID := map[int64]*acc{}
	var ids []int64
	for _, c := range cells {
		switch {
		case c.X < 0 || c.Y < 0:
			return nil, fmt.Errorf("%s: negative index x=%d, y=%d", c.where, c.X, c.Y)
		case math.IsNaN(c.P):
			return nil, fmt.Errorf("%s: p is NaN", c.where)
		case math.IsInf(c.P, 0):
			return nil, fmt.Errorf("%s: p is %v", c.where, c.P)
		case c.P < 0:
			return nil, fmt.Errorf("%s: p is negative (%g)", c.where, c.P)
		}
		a := byID[c.TableID]
		if a == nil {
			a = &acc{id: c.TableID, seen: map[[2]int64]string{}, p: map[[2]int64]float64{}}
			byID[c.TableID] = a
			ids = append(ids, c.TableID)
		}
		k := [2]int64{c.X, c.Y}
		if first, dup := a.seen[k]; dup {
			return nil, fmt.Errorf("%s: duplicate cell (table %d, x=%d, y=%d), first at %s", c.where, c.TableID, c.X, c.Y, first)
		}
		a.seen[k] = c.where
		a.p[k] = c.P
		a.maxX = max(a.maxX, c.X)
		a.maxY = max(a.maxY, c.Y)
	}
	slices.Sort(ids)
	tables := make([]prob.Table, 0, len(ids))
	for _, id := range ids {
		a := byID[id]
		x, k := a.maxX+1, a.maxY+1
		// len(seen) ≤ the number of rows, so an incomplete table is found before any
		// allocation of x·k cells, however large the indices.
		if n := int64(len(a.seen)); x > math.MaxInt32 || k > math.MaxInt32 || n != x*k {
			return nil, fmt.Errorf("table %d is incomplete: has %d cells, want X·K = %d·%d = %d (X = max x + 1, K = max y + 1); %s",
				id, n, x, k, x*k, firstMissing(a.seen, x, k))
		}
		if len(tables) > 0 && (int64(tables[0].X) != x || int64(tables[0].K) != k) {
			return nil, fmt.Errorf("table %d has shape X=%d, K=%d but table %d has X=%d, K=%d: all tables must share one shape",
				id, x, k, tables[0].ID, tables[0].X, tables[0].K)
		}
		p := make([]float64, x*k)
		for c, v := range a.p {
			p[c[0]*k+c[1]] = v
		}
		t, err := prob.NewTable(id, int(x), int(k), p)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// firstMissing names the first absent cell in row-major order; it stops after
// len(seen)+1 probes, so it is cheap whatever x·k is.
func firstMissing(seen map[[2]int64]string, x, k int64) string {
	for i := range x {
		for j := range k {
			if _, ok := seen[[2]int64{i, j}]; !ok {
				return fmt.Sprintf("missing (x=%d,y=%d)", i, j)
			}
		}
	}
	return "no cell missing"
}

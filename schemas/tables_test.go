package schemas

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"

	"github.com/jemcheck/jemcheck/models/prob"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustParquet[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	data, err := EncodeParquet(rows)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func wantTables(t *testing.T) []prob.Table {
	t.Helper()
	t1, err := prob.NewTable(1, 2, 2, []float64{0.1, 0.2, 0.3, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	t7, err := prob.NewTable(7, 2, 2, []float64{0.25, 0.25, 0, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	return []prob.Table{t1, t7}
}

func TestReadTablesGood(t *testing.T) {
	dir := t.TempDir()
	want := wantTables(t)
	// Narrow and nullable types, as DuckDB writes them by default.
	type narrow struct {
		TableID int32    `parquet:"table_id"`
		X       *int32   `parquet:"x,optional"`
		Y       int64    `parquet:"y"`
		P       *float32 `parquet:"p,optional"`
	}
	i32 := func(v int32) *int32 { return &v }
	f32 := func(v float32) *float32 { return &v }
	cases := []struct {
		name string
		file string
		data []byte
	}{
		{"csv", "t.csv", []byte("table_id,x,y,p\n1,0,0,0.1\n1,0,1,0.2\n1,1,0,0.3\n1,1,1,0.4\n7,0,0,0.25\n7,0,1,0.25\n7,1,0,0\n7,1,1,0.5\n")},
		{"csv shuffled columns, rows, spaces, BOM, CRLF", "t.CSV", []byte("\uFEFFp, y ,table_id,x\r\n0.5,1,7,1\r\n0.4,1,1,1\r\n0.25,0,7,0\r\n0.1,0,1,0\r\n0.3,0,1,1\r\n0.25,1,7,0\r\n 0 ,0,7,1\r\n0.2,1,1,0\r\n")},
		{"parquet", "t.parquet", mustParquet(t, TableRows([]prob.Table{want[1], want[0]}))},
		{"parquet narrow optional types", "narrow.parquet", mustParquet(t, []narrow{
			{1, i32(0), 0, f32(0.1)}, {1, i32(0), 1, f32(0.2)}, {1, i32(1), 0, f32(0.3)}, {1, i32(1), 1, f32(0.4)},
			{7, i32(0), 0, f32(0.25)}, {7, i32(0), 1, f32(0.25)}, {7, i32(1), 0, f32(0)}, {7, i32(1), 1, f32(0.5)},
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, c.file, c.data)
			got, err := ReadTables(context.Background(), p)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if c.name == "parquet narrow optional types" { // float32 p: compare rounded
				for i := range got {
					for j := range got[i].P {
						if float32(got[i].P[j]) == float32(want[i].P[j]) {
							got[i].P[j] = want[i].P[j]
						}
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
	t.Run("file URL", func(t *testing.T) {
		p := writeFile(t, dir, "u.csv", cases[0].data)
		got, err := ReadTables(context.Background(), "file://"+filepath.ToSlash(p))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v, want %+v", got, err, want)
		}
	})
	t.Run("relative path", func(t *testing.T) {
		writeFile(t, dir, "rel.csv", cases[0].data)
		t.Chdir(dir)
		got, err := ReadTables(context.Background(), "rel.csv")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v, want %+v", got, err, want)
		}
	})
}

func TestReadTablesBad(t *testing.T) {
	dir := t.TempDir()
	type nullable struct {
		TableID int64    `parquet:"table_id"`
		X       int64    `parquet:"x"`
		Y       int64    `parquet:"y"`
		P       *float64 `parquet:"p,optional"`
	}
	type decimal struct {
		TableID int64 `parquet:"table_id"`
		X       int64 `parquet:"x"`
		Y       int64 `parquet:"y"`
		P       int32 `parquet:"p,decimal(2:9)"`
	}
	type stringy struct {
		TableID string  `parquet:"table_id"`
		X       int64   `parquet:"x"`
		Y       int64   `parquet:"y"`
		P       float64 `parquet:"p"`
	}
	half := 0.5
	good := mustParquet(t, TableRows(wantTables(t)))
	cases := []struct {
		name string
		file string
		data string
		want []string // substrings of the error besides the file name
	}{
		{"empty file", "e.csv", "", []string{"empty file"}},
		{"header only", "h.csv", "table_id,x,y,p\n", []string{"no tables"}},
		{"malformed quote", "m.csv", "table_id,x,y,p\n1,0,0,\"0.5\n", []string{"malformed CSV", "line 2"}},
		{"wrong field count", "w.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1\n", []string{"malformed CSV", "line 3", "wrong number of fields"}},
		{"extra column", "x.csv", "table_id,x,y,p,q\n1,0,0,0.5,1\n", []string{`unexpected column "q"`}},
		{"missing column", "mc.csv", "table_id,x,y\n1,0,0\n", []string{`missing column "p"`}},
		{"duplicate column", "dc.csv", "table_id,x,y,p,x\n1,0,0,0.5,0\n", []string{`column "x" appears twice`}},
		{"x not an integer", "ni.csv", "table_id,x,y,p\n1,0,0,0.5\n1,a,1,0.5\n", []string{`line 3: x "a" is not an integer`}},
		{"x fractional", "nf.csv", "table_id,x,y,p\n1,0.5,0,1\n", []string{`line 2: x "0.5" is not an integer`}},
		{"p not a number", "nn.csv", "table_id,x,y,p\n1,0,0,half\n", []string{`line 2: p "half" is not a number`}},
		{"unnormalised", "u.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1,0.6\n", []string{"table 1: sums to 1.1, want 1 within 1e-06"}},
		{"negative p", "neg.csv", "table_id,x,y,p\n1,0,0,1.1\n1,0,1,-0.1\n", []string{"line 3: p is negative (-0.1)"}},
		{"NaN p", "nan.csv", "table_id,x,y,p\n1,0,0,NaN\n1,0,1,0.5\n", []string{"line 2: p is NaN"}},
		{"subnormal p", "sub.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1,0.5\n2,0,0,1\n2,0,1,1e-320\n", []string{"line 5: p = 1e-320 is below 2.23e-308, the smallest normal float64", "give 0 for an impossible cell"}},
		{"smallest subnormal p", "sub2.csv", "table_id,x,y,p\n1,0,0,1\n1,0,1,5e-324\n", []string{"line 3: p = 5e-324 is below"}},
		{"parquet subnormal p", "sub.parquet", string(mustParquet(t, []TableRow{{TableID: 3, Y: 0, P: 1}, {TableID: 3, Y: 1, P: 1e-310}})), []string{"row 2: p = 1e-310 is below"}},
		{"Inf p", "inf.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1,Inf\n", []string{"line 3: p is +Inf"}},
		{"negative x", "nx.csv", "table_id,x,y,p\n1,-1,0,0.5\n1,0,1,0.5\n", []string{"line 2: negative index x=-1, y=0"}},
		{"incomplete", "inc.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1,0.25\n1,1,1,0.25\n", []string{"table 1 is incomplete", "has 3 cells, want X·K = 2·2 = 4", "missing (x=1,y=0)"}},
		{"incomplete huge index", "big.csv", "table_id,x,y,p\n1,0,0,0.5\n1,1000000000000,1,0.5\n", []string{"table 1 is incomplete", "missing (x=0,y=1)"}},
		{"duplicate cell", "dup.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1,0.25\n1,0,1,0.25\n", []string{"line 4: duplicate cell (table 1, x=0, y=1), first at line 3"}},
		{"shapes differ", "sh.csv", "table_id,x,y,p\n1,0,0,0.5\n1,0,1,0.5\n2,0,0,0.25\n2,0,1,0.25\n2,1,0,0.25\n2,1,1,0.25\n", []string{"table 2 has shape X=2, K=2 but table 1 has X=1, K=2", "share one shape"}},
		{"one class", "k1.csv", "table_id,x,y,p\n1,0,0,0.5\n1,1,0,0.5\n", []string{"table 1: K must be at least 2, got 1"}},
		{"unknown extension", "t.json", "{}", []string{`unknown extension ".json", want .csv or .parquet`}},
		{"corrupted parquet", "c.parquet", "PAR1 this is not parquet PAR1", []string{"not a valid Parquet file"}},
		{"truncated parquet", "tr.parquet", string(good[:len(good)/2]), []string{"not a valid Parquet file"}},
		{"csv named parquet", "csv.parquet", "table_id,x,y,p\n1,0,0,1\n", []string{"not a valid Parquet file"}},
		{"parquet extra column", "ex.parquet", string(mustParquet(t, sampleResults())), []string{"unexpected column(s) run_id, method"}},
		{"parquet missing column", "mi.parquet", string(mustParquet(t, []struct {
			TableID int64 `parquet:"table_id"`
			X       int64 `parquet:"x"`
			Y       int64 `parquet:"y"`
		}{{TableID: 1}})), []string{`missing column "p"`}},
		{"parquet null p", "null.parquet", string(mustParquet(t, []nullable{{1, 0, 0, &half}, {1, 0, 1, nil}})), []string{"row 2: p is null"}},
		{"parquet decimal p", "dec.parquet", string(mustParquet(t, []decimal{{1, 0, 0, 50}, {1, 0, 1, 50}})), []string{`column "p" has type DECIMAL(9,2)`, "p::DOUBLE"}},
		{"parquet string id", "str.parquet", string(mustParquet(t, []stringy{{"a", 0, 0, 1}})), []string{`column "table_id" has type STRING, want an integer`}},
		{"parquet unnormalised", "un.parquet", string(mustParquet(t, []TableRow{{TableID: 3, Y: 0, P: 0.5}, {TableID: 3, Y: 1, P: 0.6}})), []string{"table 3: sums to 1.1"}},
		{"parquet duplicate", "du.parquet", string(mustParquet(t, []TableRow{{TableID: 3, P: 0.5}, {TableID: 3, P: 0.5}})), []string{"row 2: duplicate cell (table 3, x=0, y=0), first at row 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, c.file, []byte(c.data))
			expectReadError(t, p, c.want)
		})
	}
	for _, c := range []struct{ name, loc, want string }{
		{"no such file", filepath.Join(dir, "absent.csv"), "does not exist"},
		{"no such directory", filepath.Join(dir, "nodir", "t.csv"), "nodir"},
		{"unknown scheme", "foo://bucket/t.csv", `unknown scheme "foo"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadTables(context.Background(), c.loc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one mentioning %q", err, c.want)
			}
			if _, serr := os.Stat(filepath.Join(dir, "nodir")); serr == nil {
				t.Fatalf("got directory nodir created by a read, want nothing created")
			}
		})
	}
}

func TestTableRows(t *testing.T) {
	tabs := wantTables(t)
	got := TableRows(tabs)
	want := []TableRow{
		{TableID: 1, X: 0, Y: 0, P: 0.1}, {TableID: 1, X: 0, Y: 1, P: 0.2}, {TableID: 1, X: 1, Y: 0, P: 0.3}, {TableID: 1, X: 1, Y: 1, P: 0.4},
		{TableID: 7, X: 0, Y: 0, P: 0.25}, {TableID: 7, X: 0, Y: 1, P: 0.25}, {TableID: 7, X: 1, Y: 0, P: 0}, {TableID: 7, X: 1, Y: 1, P: 0.5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := TableRows(nil); len(got) != 0 {
		t.Fatalf("got %v for no tables, want none", got)
	}
}

// TestReadTablesCrafted reads the hostile Parquet files of the audit (P5, P6): each
// must give an error naming the file, never a panic or an allocation of the forged
// row count.
func TestReadTablesCrafted(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"MAP_KEY_VALUE on leaf x", craftedMapKeyValue(t, "x"), []string{`column "x" is not a plain value column`}},
		{"MAP_KEY_VALUE on leaf p", craftedMapKeyValue(t, "p"), []string{`column "p" is not a plain value column`}},
		{"DECIMAL on DOUBLE p: parquet-go panics", craftedDecimalDouble(t), []string{"not a readable tables Parquet file: the Parquet reader failed: DECIMAL must be of type"}},
		{"file num_rows 1e9", craftedNumRows(t, 1e9, false), []string{"declares 1000000000 rows, more than the 10000000 a tables file may hold"}},
		{"file and row group num_rows 1e9", craftedNumRows(t, 1e9, true), []string{"declares 1000000000 rows, more than the 10000000 a tables file may hold"}},
		{"file and row group num_rows 1e11", craftedNumRows(t, 1e11, true), []string{"declares 100000000000 rows, more than the 10000000"}},
		{"num_rows 1e6, within the limit", craftedNumRows(t, 1e6, true), []string{"not a readable tables Parquet file: the footer declares 1000000 rows but 4 could be read"}},
		{"num_rows negative", craftedNumRows(t, -1, true), []string{"not a valid Parquet file", "num_rows=-1 is negative"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, "crafted.parquet", c.data)
			expectReadError(t, p, c.want)
		})
	}
}

// TestCheckTableSchemaGroupLeaf gives checkTableSchema a leaf column whose type is a
// group, as parquet-go builds for a leaf marked MAP_KEY_VALUE: Kind panics on it.
func TestCheckTableSchemaGroupLeaf(t *testing.T) {
	s := parquet.NewSchema("t", parquet.Group{
		"table_id": parquet.Int(64),
		"x":        parquet.Leaf(parquet.Group{}.Type()),
		"y":        parquet.Int(64),
		"p":        parquet.Leaf(parquet.DoubleType),
	})
	_, err := checkTableSchema(s)
	if want := `column "x" is not a plain value column`; err == nil || err.Error() != want {
		t.Fatalf("got error %v, want %q", err, want)
	}
}

// TestReadTablesIDs: ids that are negative, sparse or huge are kept as they are;
// unsigned ids are read by value, and those above MaxInt64 refused, never wrapped.
func TestReadTablesIDs(t *testing.T) {
	type u64 struct {
		TableID uint64  `parquet:"table_id"`
		X       uint64  `parquet:"x"`
		Y       int64   `parquet:"y"`
		P       float64 `parquet:"p"`
	}
	type u32 struct {
		TableID uint32  `parquet:"table_id"`
		X       int32   `parquet:"x"`
		Y       uint32  `parquet:"y"`
		P       float64 `parquet:"p"`
	}
	cases := []struct {
		name, file string
		data       []byte
		ids        []int64 // the tables' ids, or nil for an error
		err        string
	}{
		{"csv negative, sparse, huge", "t.csv", []byte("table_id,x,y,p\n9223372036854775807,0,0,1\n9223372036854775807,0,1,0\n-5,0,0,0.5\n-5,0,1,0.5\n100,0,0,0\n100,0,1,1\n"),
			[]int64{-5, 100, math.MaxInt64}, ""},
		{"csv id above MaxInt64", "t.csv", []byte("table_id,x,y,p\n18446744073709551615,0,0,1\n"), nil,
			"line 2: table_id 18446744073709551615 is out of range: it must be in [-9223372036854775808, 9223372036854775807] (a signed 64-bit integer)"},
		{"csv id below MinInt64", "t.csv", []byte("table_id,x,y,p\n-9223372036854775809,0,0,1\n"), nil,
			"line 2: table_id -9223372036854775809 is out of range"},
		{"parquet UBIGINT ids up to MaxInt64", "t.parquet", mustParquet(t, []u64{{math.MaxInt64, 0, 0, 1}, {math.MaxInt64, 0, 1, 0}, {3, 0, 0, 0}, {3, 0, 1, 1}}),
			[]int64{3, math.MaxInt64}, ""},
		{"parquet UBIGINT id above MaxInt64", "t.parquet", mustParquet(t, []u64{{0, 0, 0, 0.5}, {1 << 63, 0, 1, 0.5}}), nil,
			"row 2: table_id 9223372036854775808 is too large: the largest supported value is 9223372036854775807 (a signed 64-bit integer)"},
		{"parquet UBIGINT x above MaxInt64", "t.parquet", mustParquet(t, []u64{{0, math.MaxUint64, 0, 1}}), nil,
			"row 1: x 18446744073709551615 is too large"},
		{"parquet UINTEGER ids above MaxInt32", "t.parquet", mustParquet(t, []u32{{math.MaxUint32, 0, 0, 0.5}, {math.MaxUint32, 0, 1, 0.5}}),
			[]int64{math.MaxUint32}, ""},
		{"parquet UINTEGER y above MaxInt32", "t.parquet", mustParquet(t, []u32{{0, 0, 0, 0.5}, {0, 0, math.MaxUint32, 0.5}}), nil,
			"table 0 is incomplete: has 2 cells, want X·K = 1·4294967296 = 4294967296"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := ParseTables(c.file, c.data)
			if c.ids == nil {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got error %v, want one mentioning %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			var ids []int64
			for _, tab := range ts {
				ids = append(ids, tab.ID)
			}
			if !reflect.DeepEqual(ids, c.ids) {
				t.Fatalf("got ids %v, want %v", ids, c.ids)
			}
		})
	}
}

// setLimits lowers the tables file limits for one test.
func setLimits(t *testing.T, cells, bytes int64) {
	oldCells, oldBytes := maxTablesCells, maxTablesBytes
	maxTablesCells, maxTablesBytes = cells, bytes
	t.Cleanup(func() { maxTablesCells, maxTablesBytes = oldCells, oldBytes })
}

func TestReadTablesLimits(t *testing.T) {
	four := "table_id,x,y,p\n0,0,0,0.1\n0,0,1,0.2\n0,1,0,0.3\n0,1,1,0.4\n"
	cases := []struct {
		name, file, data string
		err              string // "" for none
	}{
		{"csv at the row limit", "t.csv", four, ""},
		{"csv over the row limit", "t.csv", four + "1,0,0,1\n", "line 6: more than 4 rows: a tables file holds at most 4 cells (one row per cell)"},
		{"parquet at the row limit", "t.parquet", string(smallTablesParquet(t)), ""},
		{"parquet over the row limit", "t.parquet", string(mustParquet(t, TableRows(wantTables(t)))),
			"the file declares 8 rows, more than the 4 a tables file may hold (one row per cell)"},
		{"file over the byte limit", "t.csv", four + strings.Repeat(" ", 2000), "the file has 2055 bytes, more than the 2000 a tables file may have"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setLimits(t, 4, 2000)
			p := writeFile(t, t.TempDir(), c.file, []byte(c.data))
			_, err := ReadTables(context.Background(), p)
			if c.err == "" && err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if c.err != "" && (err == nil || err.Error() != "tables file "+p+": "+c.err) {
				t.Fatalf("got error %v, want %q", err, "tables file "+p+": "+c.err)
			}
		})
	}
}

// TestCheckTablesPages gives forged page headers to the check that runs before
// parquet-go allocates what they declare.
func TestCheckTablesPages(t *testing.T) {
	page := func(h format.PageHeader, payload int) []byte {
		b, err := thrift.Marshal(new(thrift.CompactProtocol), &h)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, make([]byte, payload)...)
	}
	data := func(values, uncompressed, compressed int32) format.PageHeader {
		return format.PageHeader{Type: format.DataPage, UncompressedPageSize: uncompressed, CompressedPageSize: compressed,
			DataPageHeader: thrift.New(format.DataPageHeader{NumValues: values})}
	}
	setLimits(t, 100, MaxTablesFileBytes)
	cases := []struct {
		name  string
		chunk []byte
		err   string
	}{
		{"two good pages", append(page(data(60, 10, 10), 10), page(data(40, 10, 10), 10)...), ""},
		{"beyond its chunk", page(data(4, 10, 11), 10), "declares 11 bytes, beyond its column chunk"},
		{"negative size", page(data(4, -1, 10), 10), "declares -1 uncompressed bytes"},
		{"huge uncompressed size", page(data(4, math.MaxInt32, 10), 10), "declares 2147483647 uncompressed bytes, more than the 134217728 allowed"},
		{"too many values", page(data(101, 10, 10), 10), "declares 101 values"},
		{"too many values in all", append(page(data(60, 10, 10), 10), page(data(41, 10, 10), 10)...), "declares 41 values"},
		{"huge dictionary", page(format.PageHeader{Type: format.DictionaryPage, CompressedPageSize: 1,
			DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: math.MaxInt32})}, 1), "declares 2147483647 values"},
		{"garbage", []byte{0xff, 0xff, 0xff}, "page header at byte 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkTablesPages(c.chunk, 4, format.Uncompressed)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("got error %v, want one mentioning %q", err, c.err)
			}
		})
	}
}

// TestCheckTablesFooter gives forged footers to the check that runs before parquet-go
// allocates what they declare.
func TestCheckTablesFooter(t *testing.T) {
	frame := func(footer []byte) []byte {
		b := append([]byte("PAR1"), footer...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
		return append(b, "PAR1"...)
	}
	good := smallTablesParquet(t)
	long := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(long[len(long)-8:], math.MaxUint32)
	deep := append(bytes.Repeat([]byte{0x1c}, 40), bytes.Repeat([]byte{0}, 41)...) // field 1: struct, 40 deep
	cases := []struct {
		name string
		data []byte
		err  string
	}{
		{"valid", good, ""},
		{"no magic", []byte("PAR1 not a parquet file"), "no PAR1 magic at both ends"},
		{"footer longer than the file", long, fmt.Sprintf("the footer declares 4294967295 bytes, in a file of %d", len(long))},
		// Field 2 (schema), a list of 2^31-1 structs, in 9 bytes: parquet-go would
		// allocate them all before reading one.
		{"list longer than the footer", frame([]byte{0x29, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 0}),
			"malformed footer: a length of 2147483647 at byte 7 exceeds the 2 bytes left"},
		{"nested too deep", frame(deep), "malformed footer: nested more than 32 deep"},
		{"truncated", frame([]byte{0x15}), "malformed footer: bad varint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkParquetFooter(c.data)
			if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err) {
				t.Fatalf("got error %v, want %q", err, c.err)
			}
		})
	}
}

// TestCheckPageBody: every codec's page is decompressed with an output bound before
// parquet-go sees it (its LZ4 decoder grows without end on corrupt input; snappy
// allocates what a block claims; gzip, brotli and zstd can be bombs).
func TestCheckPageBody(t *testing.T) {
	big := bytes.Repeat([]byte{0}, 1<<20)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(big)
	zw.Close()
	lz := make([]byte, lz4.CompressBlockBound(len(big)))
	n, err := lz4.CompressBlock(big, lz, nil)
	if err != nil {
		t.Fatal(err)
	}
	lz = lz[:n]
	zs, _ := zstd.NewWriter(nil)
	zst := zs.EncodeAll(big, nil)
	sn := snappy.Encode(nil, big)
	cases := []struct {
		name  string
		codec format.CompressionCodec
		body  []byte
		limit int64
		want  string // "" = accepted
	}{
		{"gzip within", format.Gzip, gz.Bytes(), 1 << 20, ""},
		{"gzip bomb", format.Gzip, gz.Bytes(), 1 << 10, "more than the 1024 bytes declared"},
		{"gzip garbage", format.Gzip, []byte("not gzip"), 1 << 10, "corrupt"},
		{"lz4 within", format.Lz4Raw, lz, 1 << 20, ""},
		{"lz4 over the declared size", format.Lz4Raw, lz, 1 << 10, "LZ4"},
		{"lz4 corrupt", format.Lz4Raw, []byte{0xf0, 0xff, 0xff, 0xff, 0xff}, 1 << 10, "corrupt LZ4"},
		{"zstd within", format.Zstd, zst, 1 << 20, ""},
		{"zstd bomb", format.Zstd, zst, 1 << 10, "declared"},
		{"snappy within", format.Snappy, sn, 1 << 20, ""},
		{"snappy claims more", format.Snappy, sn, 1 << 10, "more than the 1024 declared"},
		{"snappy claims 4 GiB", format.Snappy, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0}, 1 << 20, "snappy"},
		{"lzo", format.LZO, []byte{1}, 1, "not supported"},
		{"uncompressed", format.Uncompressed, []byte{1, 2, 3}, 3, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkPageBody(c.codec, c.body, c.limit)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}

// expectReadError reads the tables file at p and wants an error naming p and each of want.
func expectReadError(t *testing.T, p string, want []string) {
	t.Helper()
	_, err := ReadTables(context.Background(), p)
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", want)
	}
	for _, w := range append([]string{p}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("got error %q, want it to mention %q", err, w)
		}
	}
}

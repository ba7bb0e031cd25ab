package schemas

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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
		{"parquet missing column", "mi.parquet", string(mustParquet(t, []SampleRow{{TableID: 1}})), []string{`missing column "p"`}},
		{"parquet null p", "null.parquet", string(mustParquet(t, []nullable{{1, 0, 0, &half}, {1, 0, 1, nil}})), []string{"row 2: p is null"}},
		{"parquet decimal p", "dec.parquet", string(mustParquet(t, []decimal{{1, 0, 0, 50}, {1, 0, 1, 50}})), []string{`column "p" has type DECIMAL(9,2)`, "p::DOUBLE"}},
		{"parquet string id", "str.parquet", string(mustParquet(t, []stringy{{"a", 0, 0, 1}})), []string{`column "table_id" has type STRING, want an integer`}},
		{"parquet unnormalised", "un.parquet", string(mustParquet(t, []TableRow{{TableID: 3, Y: 0, P: 0.5}, {TableID: 3, Y: 1, P: 0.6}})), []string{"table 3: sums to 1.1"}},
		{"parquet duplicate", "du.parquet", string(mustParquet(t, []TableRow{{TableID: 3, P: 0.5}, {TableID: 3, P: 0.5}})), []string{"row 2: duplicate cell (table 3, x=0, y=0), first at row 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, c.file, []byte(c.data))
			_, err := ReadTables(context.Background(), p)
			if err == nil {
				t.Fatalf("got no error, want one mentioning %q", c.want)
			}
			for _, w := range append([]string{p}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to mention %q", err, w)
				}
			}
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

func TestSplitObject(t *testing.T) {
	cases := []struct{ loc, dir, key string }{
		{"t.csv", ".", "t.csv"},
		{"data/t.csv", "data", "t.csv"},
		{"/abs/data/t.parquet", "/abs/data", "t.parquet"},
		{"file:///abs/data/t.csv", "file:///abs/data/", "t.csv"},
		{"file://./rel/t.csv", "file://./rel/", "t.csv"},
		{"gs://bucket/dir/t.csv", "gs://bucket", "dir/t.csv"},
		{"s3://bucket/t.parquet?region=eu-west-1", "s3://bucket?region=eu-west-1", "t.parquet"},
	}
	for _, c := range cases {
		t.Run(c.loc, func(t *testing.T) {
			dir, key, err := splitObject(c.loc)
			if err != nil || dir != filepath.FromSlash(c.dir) && dir != c.dir || key != c.key {
				t.Fatalf("got %q, %q, %v, want %q, %q", dir, key, err, c.dir, c.key)
			}
		})
	}
}

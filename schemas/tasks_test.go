package schemas

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/jemcheck/jemcheck/models/prob"
)

// wantTasks are the tasks of goodTasksCSV: task 2 (K=2, three components) and task 9.
func wantTasks(t testing.TB) ([]prob.Task2D, []int64) {
	t.Helper()
	t2, err := prob.NewMixture(2, []prob.Component{
		{Y: 0, Weight: 0.25, Mu0: -1, Mu1: 0.5, SD: 0.4},
		{Y: 0, Weight: 0.25, Mu0: 1.5, Mu1: 1, SD: 0.3},
		{Y: 1, Weight: 0.5, Mu0: 0, Mu1: -1, SD: 0.6},
	})
	if err != nil {
		t.Fatal(err)
	}
	t9, err := prob.NewMixture(9, []prob.Component{
		{Y: 0, Weight: 0.75, Mu0: 0, Mu1: 0, SD: 1},
		{Y: 1, Weight: 0.25, Mu0: 2, Mu1: -2, SD: 0.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []prob.Task2D{t2, t9}, []int64{2, 9}
}

const goodTasksCSV = "task_id,y,component,weight,mu0,mu1,sd\n" +
	"2,0,0,0.25,-1,0.5,0.4\n2,0,1,0.25,1.5,1,0.3\n2,1,0,0.5,0,-1,0.6\n" +
	"9,0,0,0.75,0,0,1\n9,1,0,0.25,2,-2,0.5\n"

// smallTasksParquet is a valid tasks file: the tasks of wantTasks.
func smallTasksParquet(t testing.TB) []byte {
	t.Helper()
	tasks, ids := wantTasks(t)
	data, err := EncodeParquet(TaskRows(ids, tasks))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestReadTasksGood(t *testing.T) {
	want, wantIDs := wantTasks(t)
	// Narrow, nullable and unsigned types, as DuckDB may write them.
	type narrow struct {
		TaskID    uint32   `parquet:"task_id"`
		Y         *int32   `parquet:"y,optional"`
		Component uint64   `parquet:"component"`
		Weight    float64  `parquet:"weight"`
		Mu0       *float32 `parquet:"mu0,optional"`
		Mu1       float32  `parquet:"mu1"`
		SD        *float64 `parquet:"sd,optional"`
	}
	i32 := func(v int32) *int32 { return &v }
	f32 := func(v float32) *float32 { return &v }
	f64 := func(v float64) *float64 { return &v }
	// Components numbered sparsely, rows shuffled: the tasks come back sorted by
	// id, each task's components by class and component.
	shuffled := []TaskRow{
		{9, 1, 7, 0.25, 2, -2, 0.5}, {2, 1, 3, 0.5, 0, -1, 0.6}, {2, 0, 10, 0.25, 1.5, 1, 0.3},
		{9, 0, 0, 0.75, 0, 0, 1}, {2, 0, 4, 0.25, -1, 0.5, 0.4},
	}
	cases := []struct {
		name, file string
		data       []byte
	}{
		{"csv", "t.csv", []byte(goodTasksCSV)},
		{"csv shuffled columns and rows, spaces, case, BOM, CRLF", "t.CSV", []byte("\uFEFFsd, MU1 ,mu0,weight,component,y,task_id\r\n" +
			"0.5,-2,2,0.25,0,1,9\r\n0.3,1,1.5,0.25,1,0,2\r\n 1 ,0,0,0.75,0,0,9\r\n0.6,-1,0,0.5,0,1,2\r\n0.4,0.5,-1,0.25,0,0,2\r\n")},
		{"csv exponents and weights within the tolerance", "t.csv", []byte("task_id,y,component,weight,mu0,mu1,sd\n" +
			"2,0,0,2.5e-1,-1e0,0.5,0.4\n2,0,1,0.25,1.5,1,0.3\n2,1,0,0.5000009,0,-1,0.6\n9,0,0,0.75,0,0,1\n9,1,0,0.25,2,-2,5E-1\n")},
		{"parquet round trip", "t.parquet", smallTasksParquet(t)},
		{"parquet shuffled, sparse components", "t.parquet", mustParquet(t, shuffled)},
		{"parquet narrow optional unsigned types", "narrow.parquet", mustParquet(t, []narrow{
			{9, i32(1), 0, 0.25, f32(2), -2, f64(0.5)}, {2, i32(0), 0, 0.25, f32(-1), 0.5, f64(0.4)},
			{2, i32(0), 1, 0.25, f32(1.5), 1, f64(0.3)}, {2, i32(1), 0, 0.5, f32(0), -1, f64(0.6)},
			{9, i32(0), 0, 0.75, f32(0), 0, f64(1)},
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ids, err := ParseTasks(c.file, c.data)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if !reflect.DeepEqual(ids, wantIDs) {
				t.Fatalf("got ids %v, want %v", ids, wantIDs)
			}
			if c.name == "csv exponents and weights within the tolerance" { // one weight is off by 9e-7
				if got[0].Components(0)[2].Weight != 0.5000009 {
					t.Fatalf("got weight %v, want 0.5000009 kept as it is", got[0].Components(0)[2].Weight)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
	t.Run("ReadTasks of a path", func(t *testing.T) {
		p := writeFile(t, t.TempDir(), "tasks.csv", []byte(goodTasksCSV))
		got, ids, err := ReadTasks(context.Background(), p)
		if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ids, wantIDs) {
			t.Fatalf("got %+v, %v, %v, want %+v, %v", got, ids, err, want, wantIDs)
		}
	})
	t.Run("ReadTasks of a file URL", func(t *testing.T) {
		p := writeFile(t, t.TempDir(), "tasks.parquet", smallTasksParquet(t))
		got, ids, err := ReadTasks(context.Background(), "file://"+filepath.ToSlash(p))
		if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ids, wantIDs) {
			t.Fatalf("got %+v, %v, %v, want %+v, %v", got, ids, err, want, wantIDs)
		}
	})
}

// TestTasksParquetRoundTrip writes random gmm tasks with parquet-go and reads them
// back: the same components, bit for bit, in the same order.
func TestTasksParquetRoundTrip(t *testing.T) {
	spec, err := prob.ParseTaskSpec("gmm:3,4")
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{-4, 0, 17, math.MaxInt64}
	var tasks []prob.Task2D
	for i := range ids {
		tasks = append(tasks, spec.Draw(uint64(i)))
	}
	rows := TaskRows(ids, tasks)
	if len(rows) != 4*3*4 || rows[5].Component != 1 || rows[5].Y != 1 {
		t.Fatalf("got %d rows, row 5 %+v: want 48 rows, row 5 of class 1, component 1", len(rows), rows[5])
	}
	got, gotIDs, err := ParseTasks("t.parquet", mustParquet(t, rows))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotIDs, ids) {
		t.Fatalf("got ids %v, want %v", gotIDs, ids)
	}
	for i := range tasks {
		if got[i].Kind != "mixture" || got[i].K != 3 {
			t.Fatalf("task %d: got kind %q, K=%d, want a mixture of K=3", ids[i], got[i].Kind, got[i].K)
		}
		if g, w := got[i].Components(0), tasks[i].Components(0); !reflect.DeepEqual(g, w) {
			t.Fatalf("task %d: got components %+v, want %+v", ids[i], g, w)
		}
	}
}

func TestReadTasksBad(t *testing.T) {
	const h = "task_id,y,component,weight,mu0,mu1,sd\n"
	type stringy struct {
		TaskID    string  `parquet:"task_id"`
		Y         int64   `parquet:"y"`
		Component int64   `parquet:"component"`
		Weight    float64 `parquet:"weight"`
		Mu0       float64 `parquet:"mu0"`
		Mu1       float64 `parquet:"mu1"`
		SD        float64 `parquet:"sd"`
	}
	type decimal struct {
		TaskID    int64   `parquet:"task_id"`
		Y         int64   `parquet:"y"`
		Component int64   `parquet:"component"`
		Weight    int32   `parquet:"weight,decimal(2:9)"`
		Mu0       float64 `parquet:"mu0"`
		Mu1       float64 `parquet:"mu1"`
		SD        float64 `parquet:"sd"`
	}
	type floatY struct {
		TaskID    int64   `parquet:"task_id"`
		Y         float64 `parquet:"y"`
		Component int64   `parquet:"component"`
		Weight    float64 `parquet:"weight"`
		Mu0       float64 `parquet:"mu0"`
		Mu1       float64 `parquet:"mu1"`
		SD        float64 `parquet:"sd"`
	}
	type nullable struct {
		TaskID    int64    `parquet:"task_id"`
		Y         int64    `parquet:"y"`
		Component int64    `parquet:"component"`
		Weight    float64  `parquet:"weight"`
		Mu0       float64  `parquet:"mu0"`
		Mu1       float64  `parquet:"mu1"`
		SD        *float64 `parquet:"sd,optional"`
	}
	type noSD struct {
		TaskID    int64   `parquet:"task_id"`
		Y         int64   `parquet:"y"`
		Component int64   `parquet:"component"`
		Weight    float64 `parquet:"weight"`
		Mu0       float64 `parquet:"mu0"`
		Mu1       float64 `parquet:"mu1"`
	}
	one := 1.0
	good := smallTasksParquet(t)
	cases := []struct {
		name, file, data string
		want             string // the whole error of ParseTasks
	}{
		// The file as a whole.
		{"empty file", "e.csv", "", "empty file: want a header task_id,y,component,weight,mu0,mu1,sd and rows"},
		{"header only", "h.csv", h, "no tasks: the file has no rows"},
		{"unknown extension", "t.json", "{}", `unknown extension ".json", want .csv or .parquet`},
		{"malformed CSV", "m.csv", h + "1,0,0,\"0.5\n", `malformed CSV: parse error on line 2, column 12: extraneous or missing " in quoted-field`},
		{"wrong field count", "w.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.5,0,0\n", "malformed CSV: record on line 3: wrong number of fields"},
		{"tables file given as a tasks file", "t.csv", "table_id,x,y,p\n1,0,0,1\n", `line 1: unexpected column "table_id": want exactly task_id, y, component, weight, mu0, mu1, sd`},
		{"extra column", "x.csv", "task_id,y,component,weight,mu0,mu1,sd,note\n", `line 1: unexpected column "note": want exactly task_id, y, component, weight, mu0, mu1, sd`},
		{"missing column", "mc.csv", "task_id,y,component,weight,mu0,mu1\n1,0,0,1,0,0\n", `line 1: missing column "sd": want exactly task_id, y, component, weight, mu0, mu1, sd`},
		{"duplicate column", "dc.csv", "task_id,y,component,weight,mu0,mu1,sd,Y\n", `line 1: column "y" appears twice`},
		// Values of one row.
		{"task_id not an integer", "ni.csv", h + "a,0,0,1,0,0,1\n", `line 2: task_id "a" is not an integer`},
		{"y fractional", "yf.csv", h + "1,0.5,0,1,0,0,1\n", `line 2: y "0.5" is not an integer`},
		{"component empty", "ce.csv", h + "1,0,,1,0,0,1\n", `line 2: component "" is not an integer`},
		{"task_id out of range", "or.csv", h + "9223372036854775808,0,0,1,0,0,1\n",
			"line 2: task_id 9223372036854775808 is out of range: it must be in [-9223372036854775808, 9223372036854775807] (a signed 64-bit integer)"},
		{"weight not a number", "wn.csv", h + "1,0,0,half,0,0,1\n", `line 2: weight "half" is not a number`},
		{"mu1 not a number", "mn.csv", h + "1,0,0,1,0,0x,1\n", `line 2: mu1 "0x" is not a number`},
		{"weight NaN", "wnan.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,NaN,0,0,1\n", "line 3: weight is NaN"},
		{"weight negative", "wneg.csv", h + "1,0,0,1.5,0,0,1\n1,1,0,-0.5,0,0,1\n", "line 3: weight is negative (-0.5)"},
		{"mu0 Inf", "minf.csv", h + "1,0,0,0.5,-Inf,0,1\n1,1,0,0.5,0,0,1\n", "line 2: mu0 is -Inf"},
		{"mu1 overflows to Inf", "mbig.csv", h + "1,0,0,0.5,0,1e999,1\n1,1,0,0.5,0,0,1\n", "line 2: mu1 is +Inf"},
		{"sd NaN", "snan.csv", h + "1,0,0,0.5,0,0,nan\n1,1,0,0.5,0,0,1\n", "line 2: sd is NaN"},
		{"sd Inf", "sinf.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.5,0,0,+Inf\n", "line 3: sd is +Inf"},
		{"sd 0", "s0.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.5,0,0,0\n", "line 3: sd is 0, want > 0"},
		{"sd underflows to 0", "su.csv", h + "1,0,0,0.5,0,0,1e-999\n1,1,0,0.5,0,0,1\n", "line 2: sd is 0, want > 0"},
		{"sd negative", "sn.csv", h + "1,0,0,0.5,0,0,-1\n1,1,0,0.5,0,0,1\n", "line 2: sd is -1, want > 0"},
		{"y negative", "yn.csv", h + "1,-1,0,0.5,0,0,1\n1,1,0,0.5,0,0,1\n", "line 2: y is negative (-1): classes are 0..K-1"},
		{"y too large", "yl.csv", h + "1,0,0,0.5,0,0,1\n1,64,0,0.5,0,0,1\n", "line 3: y is 64: a task has at most 64 classes (y in 0..63)"},
		{"component negative", "cn.csv", h + "1,0,-2,0.5,0,0,1\n1,1,0,0.5,0,0,1\n", "line 2: component is negative (-2)"},
		{"first bad row in file order", "fo.csv", h + "5,0,0,0.5,0,0,-1\n1,0,0,NaN,0,0,1\n", "line 2: sd is -1, want > 0"},
		// Rows together, and tasks.
		{"duplicate component", "dup.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.25,0,0,1\n1,1,0,0.25,1,1,1\n",
			"line 4: duplicate component (task 1, y=1, component=0), first at line 3"},
		{"duplicate named in file order", "dup2.csv", h + "3,0,0,0.5,0,0,1\n1,1,0,1,0,0,1\n3,0,0,0.5,0,0,1\n1,1,0,1,0,0,1\n",
			"line 4: duplicate component (task 3, y=0, component=0), first at line 2"},
		{"weights sum over 1", "sum.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.5,0,0,1\n4,0,0,0.5,0,0,1\n4,1,0,0.6,0,0,1\n",
			"task 4: weights sum to 1.1, want 1 within 1e-06"},
		{"weights sum just outside the tolerance", "tol.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.499998,0,0,1\n",
			"task 1: weights sum to 0.999998, want 1 within 1e-06"},
		{"weights sum per task, not per file", "pt.csv", h + "1,0,0,0.25,0,0,1\n1,1,0,0.25,0,0,1\n2,0,0,0.25,0,0,1\n2,1,0,0.25,0,0,1\n",
			"task 1: weights sum to 0.5, want 1 within 1e-06"},
		{"weights sum to Inf", "sinf.csv", h + "1,0,0,1e308,0,0,1\n1,1,0,1e308,0,0,1\n", "task 1: weights sum to +Inf, want 1 within 1e-06"},
		{"class missing", "cm.csv", h + "1,0,0,0.5,0,0,1\n1,2,0,0.5,0,0,1\n",
			"task 1 has no component of class 1: its classes must be 0..K-1, K = max y + 1 = 3"},
		{"class 0 missing", "c0.csv", h + "1,1,0,0.5,0,0,1\n1,2,0,0.5,0,0,1\n",
			"task 1 has no component of class 0: its classes must be 0..K-1, K = max y + 1 = 3"},
		{"one class", "k1.csv", h + "1,0,0,0.5,0,0,1\n1,0,1,0.5,0,0,1\n", "task 1 has only class 0: want at least 2 classes (y in 0..K-1)"},
		{"K differs between tasks", "kd.csv", h + "1,0,0,0.5,0,0,1\n1,1,0,0.5,0,0,1\n2,0,0,0.5,0,0,1\n2,1,0,0.25,0,0,1\n2,2,0,0.25,0,0,1\n",
			"task 2 has K=3 classes but task 1 has K=2: all tasks must have the same number of classes"},
		{"class with zero weight", "zw.csv", h + "1,0,0,1,0,0,1\n1,1,0,0,0,0,1\n1,1,1,0,0,0,1\n",
			"task 1: class 1 has weight 0 (its components' weights are all 0), want > 0"},
		// Parquet.
		{"csv named parquet", "csv.parquet", goodTasksCSV, "not a valid Parquet file: no PAR1 magic at both ends"},
		{"corrupted parquet", "c.parquet", "PAR1 this is not parquet PAR1", "not a valid Parquet file: the footer declares 544499061 bytes, in a file of 29"},
		{"truncated parquet", "tr.parquet", string(good[:len(good)/2]), "not a valid Parquet file: no PAR1 magic at both ends"},
		{"tables parquet given as a tasks file", "tab.parquet", string(smallTablesParquet(t)),
			"unexpected column(s) table_id, x, p: want exactly task_id, y, component, weight, mu0, mu1, sd"},
		{"parquet missing column", "mi.parquet", string(mustParquet(t, []noSD{{1, 0, 0, 1, 0, 0}})),
			`missing column "sd": want exactly task_id, y, component, weight, mu0, mu1, sd`},
		{"parquet string task_id", "str.parquet", string(mustParquet(t, []stringy{{"a", 0, 0, 1, 0, 0, 1}})),
			`column "task_id" has type STRING, want an integer (INT32 or INT64) (in DuckDB, cast it: task_id::BIGINT)`},
		{"parquet double y", "fy.parquet", string(mustParquet(t, []floatY{{1, 0, 0, 1, 0, 0, 1}})),
			`column "y" has type DOUBLE, want an integer (INT32 or INT64) (in DuckDB, cast it: y::BIGINT)`},
		{"parquet decimal weight", "dec.parquet", string(mustParquet(t, []decimal{{1, 0, 0, 100, 0, 0, 1}})),
			`column "weight" has type DECIMAL(9,2), want a floating-point number (DOUBLE or FLOAT) (in DuckDB, cast it: weight::DOUBLE)`},
		{"parquet null sd", "null.parquet", string(mustParquet(t, []nullable{{1, 0, 0, 0.5, 0, 0, &one}, {1, 1, 0, 0.5, 0, 0, nil}})),
			"row 2: sd is null"},
		{"parquet sd 0", "sd0.parquet", string(mustParquet(t, []TaskRow{{1, 0, 0, 0.5, 0, 0, 1}, {1, 1, 0, 0.5, 0, 0, 0}})),
			"row 2: sd is 0, want > 0"},
		{"parquet duplicate", "du.parquet", string(mustParquet(t, []TaskRow{{3, 0, 0, 0.5, 0, 0, 1}, {3, 1, 0, 0.5, 0, 0, 1}, {3, 0, 0, 0.5, 0, 0, 1}})),
			"row 3: duplicate component (task 3, y=0, component=0), first at row 1"},
		{"parquet unnormalised", "un.parquet", string(mustParquet(t, []TaskRow{{3, 0, 0, 0.5, 0, 0, 1}, {3, 1, 0, 0.6, 0, 0, 1}})),
			"task 3: weights sum to 1.1, want 1 within 1e-06"},
		{"parquet no rows", "nr.parquet", string(mustParquet(t, []TaskRow{})), "no tasks: the file has no rows"},
		{"parquet forged row count", "fr.parquet", string(patchFooter(t, good, func(md *format.FileMetaData) {
			md.NumRows = 1e9
			for i := range md.RowGroups {
				md.RowGroups[i].NumRows = 1e9
			}
		})), "the file declares 1000000000 rows, more than the 10000000 a tasks file may hold (one row per component)"},
		{"parquet row count within the limit but false", "fl.parquet", string(patchFooter(t, good, func(md *format.FileMetaData) {
			md.NumRows = 1e6
			for i := range md.RowGroups {
				md.RowGroups[i].NumRows = 1e6
			}
		})), "not a readable tasks Parquet file: the footer declares 1000000 rows but 5 could be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tasks, ids, err := ParseTasks(c.file, []byte(c.data))
			if err == nil || err.Error() != c.want {
				t.Fatalf("got error %v, want %q", err, c.want)
			}
			if tasks != nil || ids != nil {
				t.Fatalf("got %d tasks and %d ids with an error, want none", len(tasks), len(ids))
			}
		})
	}
}

// TestReadTasksErrorsNameTheFile: ReadTasks's errors name the file, as ReadTables's
// do, and a missing file or directory is reported without creating anything.
func TestReadTasksErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.csv", []byte("task_id,y,component,weight,mu0,mu1,sd\n1,0,0,1,0,0,1\n"))
	cases := []struct{ name, loc, want string }{
		{"bad content", bad, "tasks file " + bad + ": task 1 has only class 0: want at least 2 classes (y in 0..K-1)"},
		{"no such file", filepath.Join(dir, "absent.csv"), "tasks file " + filepath.Join(dir, "absent.csv") + " does not exist"},
		{"no such directory", filepath.Join(dir, "nodir", "t.parquet"), "nodir"},
		{"unknown extension", filepath.Join(dir, "t.txt"), "tasks file " + filepath.Join(dir, "t.txt") + `: unknown extension ".txt", want .csv or .parquet`},
		{"unknown scheme", "foo://bucket/t.csv", `unknown scheme "foo"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tasks, ids, err := ReadTasks(context.Background(), c.loc)
			if err == nil || !strings.Contains(err.Error(), c.want) || tasks != nil || ids != nil {
				t.Fatalf("got %d tasks, error %v, want an error mentioning %q", len(tasks), err, c.want)
			}
			if _, serr := os.Stat(filepath.Join(dir, "nodir")); serr == nil {
				t.Fatalf("got directory nodir created by a read, want nothing created")
			}
		})
	}
}

// setTasksLimits lowers the tasks file limits for one test.
func setTasksLimits(t testing.TB, rows, bytes int64) {
	oldRows, oldBytes := maxTasksRows, maxTasksBytes
	maxTasksRows, maxTasksBytes = rows, bytes
	t.Cleanup(func() { maxTasksRows, maxTasksBytes = oldRows, oldBytes })
}

func TestReadTasksLimits(t *testing.T) {
	five := goodTasksCSV
	tasks, ids := wantTasks(t)
	cases := []struct {
		name, file, data string
		err              string // "" for none
	}{
		{"csv at the row limit", "t.csv", five, ""},
		{"csv over the row limit", "t.csv", five + "9,1,1,0,0,0,1\n", "line 7: more than 5 rows: a tasks file holds at most 5 components (one row per component)"},
		{"parquet at the row limit", "t.parquet", string(smallTasksParquet(t)), ""},
		{"parquet over the row limit", "t.parquet", string(mustParquet(t, append(TaskRows(ids, tasks), TaskRow{9, 1, 1, 0, 0, 0, 1}))),
			"the file declares 6 rows, more than the 5 a tasks file may hold (one row per component)"},
		{"file over the byte limit", "t.csv", five + strings.Repeat(" ", 2000), "the file has 2137 bytes, more than the 2000 a tasks file may have"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setTasksLimits(t, 5, 2000)
			p := writeFile(t, t.TempDir(), c.file, []byte(c.data))
			_, _, err := ReadTasks(context.Background(), p)
			if c.err == "" && err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if c.err != "" && (err == nil || err.Error() != "tasks file "+p+": "+c.err) {
				t.Fatalf("got error %v, want %q", err, "tasks file "+p+": "+c.err)
			}
		})
	}
	t.Run("the tables limits are apart", func(t *testing.T) {
		setLimits(t, 1, 10) // a tables file of one cell, in 10 bytes
		if _, _, err := ParseTasks("t.csv", []byte(five)); err != nil {
			t.Fatalf("got error %v, want none", err)
		}
	})
}

func TestTaskRows(t *testing.T) {
	tasks, ids := wantTasks(t)
	want := []TaskRow{
		{2, 0, 0, 0.25, -1, 0.5, 0.4}, {2, 0, 1, 0.25, 1.5, 1, 0.3}, {2, 1, 0, 0.5, 0, -1, 0.6},
		{9, 0, 0, 0.75, 0, 0, 1}, {9, 1, 0, 0.25, 2, -2, 0.5},
	}
	if got := TaskRows(ids, tasks); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := TaskRows(nil, nil); len(got) != 0 {
		t.Fatalf("got %v for no tasks, want none", got)
	}
}

// TestUserFiles checks the descriptions the readers share: columns within the scratch
// arrays, integers first, each kind with its own limits.
func TestUserFiles(t *testing.T) {
	for _, f := range []userFile{tablesFile, tasksFile} {
		if len(f.columns) > maxUserColumns || f.ints < 1 || f.ints >= len(f.columns) {
			t.Errorf("%s file: %d columns of which %d integers, want at most %d with at least one of each", f.kind, len(f.columns), f.ints, maxUserColumns)
		}
	}
	if tasksFile.maxRows == tablesFile.maxRows || tasksFile.maxBytes == tablesFile.maxBytes {
		t.Errorf("the tasks file shares a limit variable with the tables file")
	}
	if !reflect.DeepEqual(tasksFile.columns, []string{"task_id", "y", "component", "weight", "mu0", "mu1", "sd"}) {
		t.Errorf("got task columns %v, want those of issue 9", tasksFile.columns)
	}
}

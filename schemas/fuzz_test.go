package schemas

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/jemcheck/jemcheck/models/prob"
)

// patchFooter returns a copy of the Parquet file data with its footer (the thrift
// FileMetaData) rewritten by edit: how hostile files are made from valid ones.
func patchFooter(t testing.TB, data []byte, edit func(*format.FileMetaData)) []byte {
	t.Helper()
	n := len(data)
	if n < 12 || string(data[n-4:]) != "PAR1" {
		t.Fatalf("patchFooter: not a Parquet file")
	}
	size := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	start := n - 8 - size
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), data[start:n-8], &md); err != nil {
		t.Fatalf("patchFooter: %v", err)
	}
	edit(&md)
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		t.Fatalf("patchFooter: %v", err)
	}
	out := append([]byte(nil), data[:start]...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// smallTablesParquet is a valid tables file: one 2×2 table.
func smallTablesParquet(t testing.TB) []byte {
	t.Helper()
	tab, err := prob.NewTable(0, 2, 2, []float64{0.1, 0.2, 0.3, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeParquet(TableRows([]prob.Table{tab}))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// craftedMapKeyValue marks the leaf column col with the converted type MAP_KEY_VALUE
// (and no logical type), which parquet-go turns into a group type on a leaf node
// (audit P5: an unrecovered "cannot call Kind on parquet group" panic).
func craftedMapKeyValue(t testing.TB, col string) []byte {
	return craftedColumn(t, col, func(e *format.SchemaElement) {
		e.ConvertedType = thrift.New(deprecated.MapKeyValue)
	})
}

// craftedDecimalDouble marks the DOUBLE column p as DECIMAL, on which parquet-go
// panics while it opens the file.
func craftedDecimalDouble(t testing.TB) []byte {
	return craftedColumn(t, "p", func(e *format.SchemaElement) {
		e.ConvertedType = thrift.New(deprecated.Decimal)
		e.Scale, e.Precision = thrift.New[int32](2), thrift.New[int32](9)
	})
}

// craftedColumn edits the schema element of column col of a valid file, with its
// logical type cleared (else it takes precedence over a converted type).
func craftedColumn(t testing.TB, col string, edit func(*format.SchemaElement)) []byte {
	return patchFooter(t, smallTablesParquet(t), func(md *format.FileMetaData) {
		for i := range md.Schema {
			if md.Schema[i].Name == col {
				md.Schema[i].LogicalType = format.LogicalType{}
				edit(&md.Schema[i])
			}
		}
	})
}

// craftedNumRows forges the declared row count of a valid file (audit P6: a
// make([]T, NumRows()) of 1e9 rows from a file of a few hundred bytes). With
// rowGroups set, the row group's count is forged as well.
func craftedNumRows(t testing.TB, n int64, rowGroups bool) []byte {
	return patchFooter(t, smallTablesParquet(t), func(md *format.FileMetaData) {
		md.NumRows = n
		if rowGroups {
			for i := range md.RowGroups {
				md.RowGroups[i].NumRows = n
			}
		}
	})
}

// fuzzSeeds are the seed corpus of FuzzParseTables: valid files of both kinds, and the
// crafted ones of the audit.
func fuzzSeeds(t testing.TB) []struct {
	name string
	data []byte
} {
	good := smallTablesParquet(t)
	return []struct {
		name string
		data []byte
	}{
		{"t.csv", []byte("table_id,x,y,p\n0,0,0,0.1\n0,0,1,0.2\n0,1,0,0.3\n0,1,1,0.4\n")},
		{"t.csv", []byte("\uFEFFp, y ,table_id,x\r\n0.5,1,7,1\r\n0.5,0,7,0\r\n0,1,7,0\r\n0,0,7,1\r\n")},
		{"t.csv", []byte("table_id,x,y,p\n-5,0,0,0.5\n-5,0,1,0.5\n9223372036854775807,0,0,1\n9223372036854775807,0,1,0\n")},
		{"t.csv", []byte("table_id,x,y,p\n1,0,0,0.5\n1,1000000000000,1,0.5\n")},
		{"t.parquet", good},
		{"t.parquet", craftedMapKeyValue(t, "x")},
		{"t.parquet", craftedMapKeyValue(t, "p")},
		{"t.parquet", craftedDecimalDouble(t)},
		{"t.parquet", craftedNumRows(t, 1e9, false)},
		{"t.parquet", craftedNumRows(t, 1e9, true)},
		{"t.parquet", craftedNumRows(t, -1, true)},
		// A footer whose schema is a list of 2^31-1 elements in 9 bytes.
		{"t.parquet", []byte("PAR1\x29\xfc\xff\xff\xff\xff\x07\x00\x00\x09\x00\x00\x00PAR1")},
	}
}

// FuzzParseTables feeds arbitrary bytes to ParseTables as a CSV file (csv true) or a
// Parquet file (csv false): it must return tables or an error, never panic, hang or
// exhaust memory. Run it on demand with
//
//	go test -run '^$' -fuzz=FuzzParseTables -fuzztime=60s ./schemas/
func FuzzParseTables(f *testing.F) {
	// A lower row limit keeps each input fast: the limit's code is the same, and a
	// run-length-encoded Parquet file can declare, and hold, millions of rows in a
	// few hundred bytes.
	old := maxTablesCells
	maxTablesCells = 1 << 14
	f.Cleanup(func() { maxTablesCells = old })
	for _, s := range fuzzSeeds(f) {
		f.Add(strings.HasSuffix(s.name, ".csv"), s.data)
	}
	f.Fuzz(func(t *testing.T, csv bool, data []byte) {
		name := "t.parquet"
		if csv {
			name = "t.csv"
		}
		ts, err := ParseTables(name, data)
		if err != nil {
			if len(ts) != 0 {
				t.Fatalf("got %d tables and error %v, want no tables with an error", len(ts), err)
			}
			return
		}
		cells := 0
		for _, tab := range ts {
			if tab.X != ts[0].X || tab.K != ts[0].K || len(tab.P) != tab.X*tab.K {
				t.Fatalf("got table %d of shape %d×%d with %d cells, want all %d×%d", tab.ID, tab.X, tab.K, len(tab.P), ts[0].X, ts[0].K)
			}
			cells += len(tab.P)
		}
		if int64(cells) > maxTablesCells {
			t.Fatalf("got %d cells, want at most the limit, %d", cells, maxTablesCells)
		}
	})
}

// taskFuzzSeeds are the seed corpus of FuzzParseTasks: valid files of both kinds, bad
// rows and tasks, and crafted Parquet footers.
func taskFuzzSeeds(t testing.TB) []struct {
	name string
	data []byte
} {
	good := smallTasksParquet(t)
	forged := func(edit func(*format.FileMetaData)) []byte { return patchFooter(t, good, edit) }
	const h = "task_id,y,component,weight,mu0,mu1,sd\n"
	return []struct {
		name string
		data []byte
	}{
		{"t.csv", []byte(goodTasksCSV)},
		{"t.csv", []byte("\uFEFFsd, MU1 ,mu0,weight,component,y,task_id\r\n0.5,-2,2,0.25,0,1,9\r\n 1 ,0,0,0.75,0,0,9\r\n")},
		{"t.csv", []byte(h + "-9223372036854775808,0,0,0.5,0,0,1e-300\n-9223372036854775808,63,9223372036854775807,0.5,1e300,-1e300,1e300\n")},
		{"t.csv", []byte(h + "1,0,0,0.5,0,0,1\n1,2,0,0.5,0,0,1\n")},
		{"t.csv", []byte(h + "1,0,0,0.5,0,0,1\n1,1,0,0.5,0,0,1\n2,0,0,0.5,0,0,1\n2,1,0,0.25,0,0,1\n2,2,0,0.25,0,0,1\n")},
		{"t.csv", []byte(h + "1,0,0,1,0,0,1\n1,1,0,0,0,0,1\n1,1,0,0,0,0,1\n")},
		{"t.parquet", good},
		{"t.parquet", smallTablesParquet(t)},
		{"t.parquet", forged(func(md *format.FileMetaData) { md.NumRows = 1e9 })},
		{"t.parquet", forged(func(md *format.FileMetaData) {
			md.NumRows = 1e6
			for i := range md.RowGroups {
				md.RowGroups[i].NumRows = 1e6
			}
		})},
		{"t.parquet", forged(func(md *format.FileMetaData) {
			for i := range md.Schema {
				if md.Schema[i].Name == "sd" {
					md.Schema[i].LogicalType = format.LogicalType{}
					md.Schema[i].ConvertedType = thrift.New(deprecated.MapKeyValue)
				}
			}
		})},
	}
}

// checkTruth: a task the box holds (outside mass ≤ prob.MaxOutsideMass, what the
// pipeline checks before it runs) has an exact truth on a coarse grid whose class
// masses are its class weights to 1e-6, whatever its components' widths.
func checkTruth(t *testing.T, id int64, task prob.Task2D, cs []prob.Component) {
	box := task.HoldingBox()
	if box > 1e4 || task.OutsideMass(box) > prob.MaxOutsideMass {
		return
	}
	g := prob.Grid{G: 8, Box: box}
	p := task.Truth(g)
	mass := make([]float64, task.K)
	for i, v := range p {
		if !(v >= 0) {
			t.Fatalf("task %d: truth cell %d is %v", id, i, v)
		}
		mass[i%task.K] += v
	}
	for _, c := range cs {
		mass[c.Y] -= c.Weight
	}
	for y, d := range mass {
		if math.Abs(d) > 1e-6 {
			t.Fatalf("task %d: class %d's mass is off its weight by %g (box %g)", id, y, d, box)
		}
	}
}

// FuzzParseTasks feeds arbitrary bytes to ParseTasks as a CSV file (csv true) or a
// Parquet file (csv false): it must return tasks or an error, never panic, hang or
// exhaust memory, and the tasks it returns must be valid. Run it on demand with
//
//	go test -run '^$' -fuzz=FuzzParseTasks -fuzztime=60s ./schemas/
func FuzzParseTasks(f *testing.F) {
	old := maxTasksRows // as in FuzzParseTables: each input stays fast
	maxTasksRows = 1 << 14
	f.Cleanup(func() { maxTasksRows = old })
	for _, s := range taskFuzzSeeds(f) {
		f.Add(strings.HasSuffix(s.name, ".csv"), s.data)
	}
	f.Fuzz(func(t *testing.T, csv bool, data []byte) {
		name := "t.parquet"
		if csv {
			name = "t.csv"
		}
		tasks, ids, err := ParseTasks(name, data)
		if err != nil {
			if tasks != nil || ids != nil {
				t.Fatalf("got %d tasks, %d ids and error %v, want none with an error", len(tasks), len(ids), err)
			}
			return
		}
		if len(tasks) == 0 || len(ids) != len(tasks) {
			t.Fatalf("got %d tasks and %d ids, want as many, at least one", len(tasks), len(ids))
		}
		comps := 0
		for i, task := range tasks {
			if i > 0 && ids[i] <= ids[i-1] {
				t.Fatalf("got ids %d then %d, want them strictly increasing", ids[i-1], ids[i])
			}
			if task.Kind != "mixture" || task.K != tasks[0].K || task.K < 2 {
				t.Fatalf("task %d: got kind %q with K=%d, want a mixture with K=%d ≥ 2", ids[i], task.Kind, task.K, tasks[0].K)
			}
			cs := task.Components(0)
			if _, err := prob.NewMixture(ids[i], cs); err != nil {
				t.Fatalf("task %d: got components that NewMixture refuses: %v", ids[i], err)
			}
			comps += len(cs)
			checkTruth(t, ids[i], task, cs)
		}
		if int64(comps) > maxTasksRows {
			t.Fatalf("got %d components, want at most the limit, %d", comps, maxTasksRows)
		}
	})
}

package schemas

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// manyRowsParquet writes n rows, row(i) the i-th (from 0), as a Parquet file the way
// the pipeline writes one (zstd, row groups of rowsPerGroup rows), streamed in chunks:
// rows that repeat make a file of a few hundred kilobytes however many they are.
func manyRowsParquet[T any](t testing.TB, n int, row func(i int) T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, parquetOptions()...)
	chunk := make([]T, 0, 1<<16)
	for i := range n {
		chunk = append(chunk, row(i))
		if len(chunk) == cap(chunk) || i == n-1 {
			if _, err := w.Write(chunk); err != nil {
				t.Fatal(err)
			}
			chunk = chunk[:0]
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadRowsStreamed is review F7: a tables file of 10,000,000 identical rows in
// 16 KB needed 2 GB of memory before it was refused at row 2, its rows decoded and
// kept whole before any was checked. Each row is now checked as it is read, so a file
// of millions of rows is refused at its first bad row having allocated a batch, and a
// file that declares more rows than the limit is refused before any is decoded.
func TestReadRowsStreamed(t *testing.T) {
	const n = 2_000_000
	const maxAlloc = 64 << 20 // bytes allocated while reading, at most
	sameCell := func(int) TableRow { return TableRow{P: 1} }
	sameComp := func(int) TaskRow { return TaskRow{Weight: 0.5, SD: 1} }
	tables := func(data []byte) func() error {
		return func() error { _, err := ParseTables("t.parquet", data); return err }
	}
	tasks := func(data []byte) func() error {
		return func() error { _, _, err := ParseTasks("t.parquet", data); return err }
	}
	cases := []struct {
		name  string
		limit int64 // the row limit of both kinds, 0 for the default
		read  func() error
		want  string
	}{
		{"tables: identical rows", 0, tables(manyRowsParquet(t, n, sameCell)),
			"row 2: duplicate cell (table 0, x=0, y=0), first at row 1"},
		{"tables: two cells, alternating", 0, tables(manyRowsParquet(t, n, func(i int) TableRow { return TableRow{Y: int64(i % 2), P: 0.5} })),
			"row 3: duplicate cell (table 0, x=0, y=0), first at row 1"},
		{"tables: descending, then a repeat", 0, tables(manyRowsParquet(t, n, func(i int) TableRow { return TableRow{Y: int64(max(5-i, 1)), P: 0.5} })),
			"row 6: duplicate cell (table 0, x=0, y=1), first at row 5"},
		{"tables: NaN p in every row", 0, tables(manyRowsParquet(t, n, func(i int) TableRow { return TableRow{Y: int64(i), P: math.NaN()} })),
			"row 1: p is NaN"},
		{"tables: more rows than the limit", n / 2, tables(manyRowsParquet(t, n, sameCell)),
			"the file declares 2000000 rows, more than the 1000000 a tables file may hold (one row per cell)"},
		{"tables: a forged row count over the limit", 0, tables(craftedNumRows(t, 1e9, true)),
			"the file declares 1000000000 rows, more than the 10000000 a tables file may hold (one row per cell)"},
		{"tasks: identical rows", 0, tasks(manyRowsParquet(t, n, sameComp)),
			"row 2: duplicate component (task 0, y=0, component=0), first at row 1"},
		{"tasks: a bad sd at row 2", 0, tasks(manyRowsParquet(t, n, func(i int) TaskRow { return TaskRow{Component: int64(i), Weight: 0.5, SD: float64(1 - i)} })),
			"row 2: sd is 0, want > 0"},
		{"tasks: more rows than the limit", n / 2, tasks(manyRowsParquet(t, n, sameComp)),
			"the file declares 2000000 rows, more than the 1000000 a tasks file may hold (one row per component)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.limit > 0 {
				setLimits(t, c.limit, maxTablesBytes)
				setTasksLimits(t, c.limit, maxTasksBytes)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := c.read()
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one with %q", err, c.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxAlloc {
				t.Errorf("reading allocated %d MB, want at most %d MB", alloc>>20, maxAlloc>>20)
			} else {
				t.Logf("allocated %.1f MB", float64(alloc)/(1<<20))
			}
		})
	}
	t.Run("the message names the file and the limit", func(t *testing.T) {
		setLimits(t, n/2, maxTablesBytes)
		p := writeFile(t, t.TempDir(), "big.parquet", manyRowsParquet(t, n, sameCell))
		_, err := ReadTables(context.Background(), p)
		want := "tables file " + p + ": the file declares 2000000 rows, more than the 1000000 a tables file may hold (one row per cell)"
		if err == nil || err.Error() != want {
			t.Fatalf("got error %v, want %q", err, want)
		}
	})
}

// TestReadTablesOutOfOrder reads files whose keys do not ascend, where duplicates are
// found in a hash set of the rows kept (keySet), grown while the rows are read.
func TestReadTablesOutOfOrder(t *testing.T) {
	const k = 256 // one table of k·k cells
	// cellAt is the i-th cell of a permutation of the table's cells.
	cellAt := func(i int) TableRow {
		c := (i * 7919) % (k * k)
		return TableRow{X: int64(c / k), Y: int64(c % k), P: 1.0 / (k * k)}
	}
	again := cellAt(999) // the 1000th row's cell
	cases := []struct {
		name string
		rows int
		row  func(i int) TableRow
		want string // "" for none
	}{
		{"shuffled", k * k, cellAt, ""},
		{"shuffled, then the 1000th cell again", k*k + 1, func(i int) TableRow {
			if i == k*k {
				return again
			}
			return cellAt(i)
		}, fmt.Sprintf("row 65537: duplicate cell (table 0, x=%d, y=%d), first at row 1000", again.X, again.Y)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := ParseTables("t.parquet", manyRowsParquet(t, c.rows, c.row))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("got error %v, want none", err)
			case c.want == "" && (len(ts) != 1 || ts[0].X != k || ts[0].K != k):
				t.Fatalf("got %d tables, want one of %d·%d cells", len(ts), k, k)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got error %v, want one with %q", err, c.want)
			}
		})
	}
}

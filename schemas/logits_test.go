package schemas

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadLogits: jemcheck's own learned/ (method column) and learned_grid/ (run_id)
// Parquet files and a folder of them read as logits, the model named by the column;
// a wrong column type and a missing column are refused with their names.
func TestReadLogits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	learned, _ := EncodeParquet([]LearnedRow{{RunID: "p0000-t0000000-jem", TableID: 4, Method: "jem", X: 1, Y: 0, Logit: -0.5},
		{RunID: "p0000-t0000000-baseline", TableID: 4, Method: "baseline", X: 1, Y: 1, Logit: 2}})
	grid, _ := EncodeParquet([]LearnedGridRow{{RunID: "p0000-t0000002-external:mine", TaskID: 2, Cell: 7, Y: 1, Logit: 3.25}})
	type badRow struct {
		TableID int64 `parquet:"table_id"`
		X       int64 `parquet:"x"`
		Y       int64 `parquet:"y"`
		Logit   int64 `parquet:"logit"`
	}
	bad, _ := EncodeParquet([]badRow{{1, 2, 0, 3}})
	a := write("learned/point-0000-part-00000.parquet", learned)
	write("learned/point-0000-part-00001.parquet", learned)
	g := write("grid.parquet", grid)
	b := write("bad.parquet", bad)
	tables := LogitColumns{IDColumn: "table_id", CellColumn: "x"}

	l, err := ReadLogits(ctx, a, tables)
	if err != nil || !slices.Equal(l.Models, []string{"jem", "baseline"}) || len(l.Rows) != 2 || l.Rows[1].Logit != 2 || l.Rows[0].ID != 4 {
		t.Errorf("learned file: %+v, %v", l, err)
	}
	l, err = ReadLogits(ctx, filepath.Join(dir, "learned")+"/", tables)
	if err != nil || len(l.Files) != 2 || len(l.Rows) != 4 {
		t.Errorf("learned folder: %+v, %v", l, err)
	}
	l, err = ReadLogits(ctx, g, LogitColumns{IDColumn: "task_id", CellColumn: "cell"})
	if err != nil || !slices.Equal(l.Models, []string{"mine"}) || l.Rows[0].Cell != 7 || l.Rows[0].Logit != 3.25 {
		t.Errorf("learned_grid file: %+v, %v", l, err)
	}
	for _, tc := range []struct {
		name, loc string
		cols      LogitColumns
		want      string
	}{
		{"integer logits", b, tables, "logit holds a value of type INT64"},
		{"2-D columns on a table file", a, LogitColumns{IDColumn: "task_id", CellColumn: "cell"}, `missing column "task_id"`},
		{"no such file", filepath.Join(dir, "none.csv"), tables, "does not exist"},
		{"empty folder", t.TempDir() + "/", tables, "holds no .parquet or .csv file"},
	} {
		if _, err := ReadLogits(ctx, tc.loc, tc.cols); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestUserFilesBounded: every user input (logits, tables, tasks) is checked as the
// object it names, whatever the URL's query (the review's D21: a query skipped the
// device, FIFO and size checks: an out-of-memory crash or a hang), and a CSV stream of
// one endless line is refused without buffering it (D5: a 1.9 GB line took 12 GB).
func TestUserFilesBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.csv")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long.csv")
	if err := os.WriteFile(long, bytes.Repeat([]byte("1"), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	longHeader := filepath.Join(dir, "longrow.csv")
	if err := os.WriteFile(longHeader, append([]byte("table_id,x,y,logit\n0,0,0,"), bytes.Repeat([]byte("1"), 3<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	readers := map[string]func(loc string) error{
		"logits": func(loc string) error {
			_, err := ReadLogits(ctx, loc, LogitColumns{IDColumn: "table_id", CellColumn: "x"})
			return err
		},
		"tables": func(loc string) error { _, err := ReadTables(ctx, loc); return err },
		"tasks":  func(loc string) error { _, _, err := ReadTasks(ctx, loc); return err },
	}
	url := func(name, query string) string { return "file://" + filepath.ToSlash(filepath.Join(dir, name)) + query }
	cases := []struct {
		name, loc, want string
	}{
		{"device", filepath.Join(dir, "zero.csv"), "is a device, not a regular file"},
		{"device, file URL", url("zero.csv", ""), "is a device, not a regular file"},
		{"device, URL with a query", url("zero.csv", "?metadata=skip"), "is a device, not a regular file"},
		{"fifo, URL with a query", url("fifo.csv", "?metadata=skip"), "is a named pipe (FIFO), not a regular file"},
		{"fifo, URL with another query", url("fifo.csv", "?metadata=skip&create_dir=true"), "is a named pipe (FIFO), not a regular file"},
		{"one endless line", long, "line 1 is longer than 1048576 bytes"},
		{"an endless row", longHeader, "line 2 is longer than 1048576 bytes"},
	}
	for kind, read := range readers {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				if kind != "logits" && c.name == "an endless row" {
					t.Skip("a logits header")
				}
				done := make(chan error, 1)
				go func() { done <- read(c.loc) }()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), kind+" file") {
						t.Fatalf("error %v, want one naming the %s file and saying %q", err, kind, c.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("hangs")
				}
			})
		}
	}
}

// TestLogitsModels: model names are found in a map (the review's D6: a linear scan
// took 33 s for 80,000 names) and their number is bounded.
func TestLogitsModels(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	b.WriteString("table_id,x,y,logit,model\n")
	for i := range 80_000 {
		fmt.Fprintf(&b, "0,0,0,-1.5,m%d\n", i)
	}
	name := filepath.Join(dir, "models.csv")
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := ReadLogits(context.Background(), name, LogitColumns{IDColumn: "table_id", CellColumn: "x"})
	want := fmt.Sprintf(`line %d: model "m%d" is the %dth: the logits may name at most %d models`, MaxLogitsModels+2, MaxLogitsModels, MaxLogitsModels+1, MaxLogitsModels)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	// Within the bound, the lookups are a map's: 64 names over 200,000 rows.
	b.Reset()
	b.WriteString("table_id,x,y,logit,model\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "%d,0,0,-1.5,m%d\n", i, i%MaxLogitsModels)
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLogits(context.Background(), name, LogitColumns{IDColumn: "table_id", CellColumn: "x"})
	if err != nil || len(l.Models) != MaxLogitsModels || len(l.Rows) != 200_000 || l.Rows[199_999].Model != int32(199_999%MaxLogitsModels) {
		t.Fatalf("%d models, %d rows, %v", len(l.Models), len(l.Rows), err)
	}
}

// TestScanLogitsStops: a row refused by the visitor stops the read there, naming the
// file: the rest of a huge file is not read.
func TestScanLogitsStops(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	b.WriteString("table_id,x,y,logit\n")
	for i := range 100_000 {
		fmt.Fprintf(&b, "%d,0,0,-1.5\n", i)
	}
	name := filepath.Join(dir, "l.csv")
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err := ScanLogits(context.Background(), name, LogitColumns{IDColumn: "table_id", CellColumn: "x"}, func(l *Logits, r LogitRow) error {
		n++
		if r.ID == 80 {
			return fmt.Errorf("%s: stop", l.Where(r))
		}
		return nil
	})
	if err == nil || !strings.HasSuffix(err.Error(), "l.csv line 82: stop") || strings.Contains(err.Error(), "logits file") || n != 81 {
		t.Fatalf("%d rows visited, error %v", n, err)
	}
}

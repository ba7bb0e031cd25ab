package schemas

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// TestMain runs the pipelines on prism in-process; with launchtest.EnvArgs set, the
// test binary is the export command.
func TestMain(m *testing.M) { launchtest.Main(m, "export", main) }

// TestExport exports each kind with a support and checks export.json against the
// files: the support has one row per evaluation point, the samples N draws per task,
// and every CSV sibling the same rows as its Parquet file.
func TestExport(t *testing.T) {
	cases := []struct {
		name    string
		grid    schemas.Grid
		tables  int
		support int
		columns []string // the support file's columns
	}{
		{"tables", schemas.Grid{XValues: 5, Classes: 3, Encoding: "onehot", Generator: "dirichlet:1", Samples: 200, Model: "linear", LR: 0.05, Steps: 10, PxWeight: 1},
			4, 5, []string{"x"}},
		{"2-D", schemas.Grid{Task: "gmm:2,2", Samples: 150, Model: "mlp:8", LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 24, Box: 6, TrainGrid: 24},
			3, 576, []string{"cell", "x0", "x1"}},
		{"binary", schemas.Grid{Task: "bits:4,2", Components: 2, Samples: 100, Model: "mlp:8", LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1},
			3, 16, []string{"x", "bits"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "export")
			p := stages.Point{Grid: tc.grid, Tables: tc.tables, Methods: []string{"baseline", "jem"}}
			cfg := launch.Config{Pipeline: "export", Runner: "prism", Points: []stages.Point{p},
				Options: stages.Options{Seed: 3, Out: out, TrainBatch: 64, ReportTables: 1, Thresholds: stages.DefaultThresholds()}}
			var buf bytes.Buffer
			if err := run(context.Background(), cfg, true, &buf); err != nil {
				t.Fatalf("export: %v\n%s", err, buf.String())
			}
			var ex schemas.Export
			data, err := os.ReadFile(filepath.Join(out, "export.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &ex); err != nil {
				t.Fatal(err)
			}
			if ex.Format != schemas.ExportFormat || len(ex.Points) != 1 {
				t.Fatalf("export.json: %+v", ex)
			}
			ep := ex.Points[0]
			if ep.Support != tc.support || len(ep.IDs) != tc.tables || ep.Tasks != tc.tables || ep.Files.Truth == "" || len(ep.Files.Samples) == 0 {
				t.Errorf("export.json point: %+v", ep)
			}
			header, rows := readCSV(t, filepath.Join(out, ep.Files.PointsCSV))
			if strings.Join(header, ",") != strings.Join(tc.columns, ",") || len(rows) != tc.support {
				t.Errorf("support: columns %v, %d rows; want %v, %d", header, len(rows), tc.columns, tc.support)
			}
			// export.json names every file's columns and CSV sibling, the logits file's
			// columns and the box per axis.
			if !slices.Equal(ep.Files.PointsColumns, header) {
				t.Errorf("points_columns %v, the file has %v", ep.Files.PointsColumns, header)
			}
			if h, _ := readCSV(t, filepath.Join(out, ep.Files.SamplesCSV[0])); !slices.Equal(ep.Files.SamplesColumns, h) || !slices.Contains(h, ep.LabelColumn) {
				t.Errorf("samples_columns %v, label %q; the file has %v", ep.Files.SamplesColumns, ep.LabelColumn, h)
			}
			if h, _ := readCSV(t, filepath.Join(out, ep.Files.TruthCSV)); !slices.Equal(ep.Files.TruthColumns, h) {
				t.Errorf("truth_columns %v, the file has %v", ep.Files.TruthColumns, h)
			}
			if want := []string{ep.IDColumn, ep.SupportColumn, "y", "logit"}; !slices.Equal(ep.Logits.Columns, want) || ep.Logits.LogitColumn != "logit" || ep.Logits.ModelColumn != "model" {
				t.Errorf("logits %+v, want columns %v", ep.Logits, want)
			}
			if wantBounds := tc.grid.Box > 0 && tc.name == "2-D"; wantBounds != (len(ep.Bounds) == ep.Dimension && len(ep.Bounds) > 0) ||
				wantBounds && ep.Bounds[1] != [2]float64{-tc.grid.Box, tc.grid.Box} {
				t.Errorf("bounds %v (dimension %d, box %v)", ep.Bounds, ep.Dimension, tc.grid.Box)
			}
			draws := 0
			for _, key := range ep.Files.Samples {
				_, rows := readCSV(t, filepath.Join(out, strings.TrimSuffix(key, ".parquet")+".csv"))
				draws += len(rows)
			}
			want := tc.tables * tc.grid.Samples
			if draws != want {
				t.Errorf("samples: %d CSV rows, want %d", draws, want)
			}
			if tc.name == "tables" {
				ps, err := schemas.ReadParquet[schemas.SampleRow](context.Background(), launchtest.Bucket(t, out), ep.Files.Samples[0])
				if err != nil || len(ps) != want {
					t.Errorf("samples Parquet: %d rows (%v), want %d", len(ps), err, want)
				}
			}
		})
	}
}

func readCSV(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	return recs[0], recs[1:]
}

// TestExportRefused: flags an export has no use for are refused with exit 2.
func TestExportRefused(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"methods", "-tables=2 -methods=jem", "an export trains nothing"},
		{"bad task", "-task=bits:40,2", "bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, msg := launchtest.RunMain(t, tc.args, out)
			if code != 2 || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 with %q", code, msg, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created for a refused input", out)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/verdict"
)

// writeRun writes a finished run (summary.json and results, published with a
// manifest) into a new folder: one point, jem's joint KL id%4 + shift on 10 tasks.
func writeRun(t *testing.T, seed uint64, shift float64) string {
	return writeRunMethods(t, seed, shift, "jem")
}

// writeRunMethods is writeRun with the given methods, each with the same rows.
func writeRunMethods(t *testing.T, seed uint64, shift float64, methods ...string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	const id = "20260101T000000Z-0000000a"
	if err := storage.SealStaging(ctx, dir, id, "regress", ""); err != nil {
		t.Fatal(err)
	}
	staging, _ := storage.SubLocation(dir, storage.StagingKey(id))
	sum := schemas.Summary{Pipeline: "regress", Seed: seed, Points: []schemas.PointSummary{{Params: schemas.Grid{XValues: 2, Classes: 2},
		Verdict: schemas.Verdict{Reason: "HOLDS"}}}}
	data, _ := json.Marshal(sum)
	b, err := storage.OpenBucket(ctx, staging)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "summary.json", data, nil); err != nil {
		t.Fatal(err)
	}
	var rows []schemas.ResultRow
	for _, m := range methods {
		for id := range 10 {
			rows = append(rows, schemas.ResultRow{TableID: int64(id), Method: m, KLJoint: float64(id%4) + shift})
		}
	}
	if err := schemas.WriteParquet(ctx, b, "results/point-0000-part-00000.parquet", rows); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Commit(ctx, dir, storage.CommitInfo{RunID: id, Pipeline: "regress"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompare: two runs on the same tasks are paired, the page and compare.json are
// published with a manifest; a folder that is no run, or one run, is bad input.
func TestCompare(t *testing.T) {
	a, b := writeRun(t, 1, 0), writeRun(t, 1, 0.25)
	out := filepath.Join(t.TempDir(), "cmp")
	var buf bytes.Buffer
	if err := run(context.Background(), []string{a, b}, out, false, &buf); err != nil {
		t.Fatalf("compare: %v\n%s", err, buf.String())
	}
	var c verdict.Comparison
	data, err := os.ReadFile(filepath.Join(out, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	d := c.Points[0].Methods[0].Diffs[0]
	if !d.Paired || d.N != 10 || d.Mean < 0.2499 || d.Mean > 0.2501 {
		t.Errorf("difference %+v, want paired +0.25 over 10 tasks", d)
	}
	raw, _ := os.ReadFile(filepath.Join(out, "compare.html"))
	page := html.UnescapeString(string(raw))
	if !strings.Contains(page, "1 method(s) changed") || !strings.Contains(page, "+0.25 [+0.25, +0.25] paired, n 10") {
		t.Errorf("compare.html does not state the change:\n%s", page)
	}
	if _, err := storage.VerifyManifest(context.Background(), out); err != nil {
		t.Errorf("manifest: %v", err)
	}
	for _, tc := range []struct {
		name string
		runs []string
		want string
	}{
		{"one run", []string{a}, "two or more"},
		{"not a run", []string{a, t.TempDir()}, "no manifest.json"},
	} {
		err := run(context.Background(), tc.runs, filepath.Join(t.TempDir(), "o"), false, &buf)
		if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input with %q", tc.name, err, tc.want)
		}
	}
}

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
	// The terminal gets the answer, not only the page.
	for _, want := range []string{"answer: 1 of 1 method comparison(s) changed their mean joint KL", "answer: Largest: jem +0.25 nats [+0.25, +0.25] (paired, n 10)."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("terminal lacks %q:\n%s", want, buf.String())
		}
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
	if !strings.Contains(page, "1 of 1 method comparison(s) changed") || !strings.Contains(page, "+0.25 [+0.25, +0.25] paired, n 10") {
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

// TestCompareVerifies (D12, D13, D14): compare reads only what a verified manifest
// lists, refuses a folder without a valid manifest or with a changed file, puts runs
// with different method sets side by side (absent, not NaN), and refuses an --out that
// is one of its runs with its own message.
func TestCompareVerifies(t *testing.T) {
	ctx := context.Background()
	a := writeRun(t, 1, 0)
	copyRun := func(t *testing.T, src string) string {
		dst := t.TempDir()
		entries := []string{"manifest.json", "summary.json", "results/point-0000-part-00000.parquet"}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(e)))
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(filepath.Join(dst, filepath.FromSlash(e))), 0o755)
			os.WriteFile(filepath.Join(dst, filepath.FromSlash(e)), data, 0o644)
		}
		return dst
	}
	cases := []struct {
		name  string
		other func(t *testing.T) string
		out   func(other string) string
		want  string // "" = compared
		check func(t *testing.T, c map[string]any)
	}{
		{"no manifest", func(t *testing.T) string {
			d := copyRun(t, a)
			os.Remove(filepath.Join(d, "manifest.json"))
			return d
		}, nil, "no manifest.json", nil},
		{"summary edited, same size", func(t *testing.T) string {
			d := copyRun(t, a)
			p := filepath.Join(d, "summary.json")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(data, []byte("HOLDS"), []byte("FAILS"), 1), 0o644)
			return d
		}, nil, "changed since jemcheck wrote it", nil},
		{"unlisted results file (D12)", func(t *testing.T) string {
			d := copyRun(t, a)
			b := writeRun(t, 1, 5)
			data, _ := os.ReadFile(filepath.Join(b, "results", "point-0000-part-00000.parquet"))
			os.WriteFile(filepath.Join(d, "results", "point-0000-part-00099.parquet"), data, 0o644)
			return d
		}, nil, "", func(t *testing.T, c map[string]any) {
			d := c["points"].([]any)[0].(map[string]any)["methods"].([]any)[0].(map[string]any)["diffs"].([]any)[0].(map[string]any)
			if d["mean"] != 0.0 || d["n"] != 10.0 {
				t.Errorf("a run against its copy with an unlisted file: difference %v, want 0 over 10 tasks", d)
			}
		}},
		{"different method sets (D13)", func(t *testing.T) string {
			return writeRunMethods(t, 1, 0, "baseline", "jem")
		}, nil, "", func(t *testing.T, c map[string]any) {
			ms := c["points"].([]any)[0].(map[string]any)["methods"].([]any)
			if len(ms) != 2 {
				t.Fatalf("methods %v, want baseline and jem side by side", ms)
			}
			for _, m := range ms {
				m := m.(map[string]any)
				if m["method"] != "baseline" {
					continue
				}
				first := m["runs"].([]any)[0].(map[string]any)
				if first["n"] != 0.0 {
					t.Errorf("baseline in the run without it: %v, want n 0", first)
				}
				if _, ok := first["mean_kl_joint"]; ok {
					t.Errorf("baseline's mean in the run without it is %v, want it absent", first["mean_kl_joint"])
				}
			}
		}},
		{"--out is an input run (D14)", func(t *testing.T) string { return copyRun(t, a) },
			func(other string) string { return other }, "which compare reads", nil},
		{"--out inside an input run", func(t *testing.T) string { return copyRun(t, a) },
			func(other string) string { return filepath.Join(other, "cmp") }, "is inside the run", nil},
		{"a link in an input run", func(t *testing.T) string {
			d := copyRun(t, a)
			os.Symlink("/etc/passwd", filepath.Join(d, "results", "x.parquet"))
			return d
		}, nil, "symbolic link", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			other := c.other(t)
			out := filepath.Join(t.TempDir(), "cmp")
			if c.out != nil {
				out = c.out(other)
			}
			before, _ := os.ReadFile(filepath.Join(other, "manifest.json"))
			var buf bytes.Buffer
			err := run(ctx, []string{a, other}, out, false, &buf)
			if c.want != "" {
				if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("compare = %v, want bad input with %q", err, c.want)
				}
				if after, _ := os.ReadFile(filepath.Join(other, "manifest.json")); !bytes.Equal(before, after) {
					t.Errorf("the input run's manifest changed")
				}
				if c.out == nil {
					if _, err := os.Stat(out); !os.IsNotExist(err) {
						t.Errorf("a refused compare wrote %s", out)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("compare: %v", err)
			}
			data, err := os.ReadFile(filepath.Join(out, "compare.json"))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte("NaN")) {
				t.Errorf("compare.json holds NaN")
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("compare.json: %v", err)
			}
			c.check(t, got)
		})
	}
}

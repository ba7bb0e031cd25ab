package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
)

// boardDir writes a synthetic board run (results/ of exact jem and two recipes on 12
// tasks) into a new folder and returns it.
func boardDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "board")
	b, err := storage.OpenBucket(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var rows []schemas.ResultRow
	for _, r := range synth(12, map[string]float64{"ed": 0.003, "sgld": 2}, map[string]int64{"ed": 100, "sgld": 200}) {
		rows = append(rows, r.ResultRow)
	}
	if err := schemas.WriteParquet(context.Background(), b, "results/point-0000-part-00000.parquet", rows); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportUnderTheRules: leaderboard report publishes as a run does. Into a new
// folder it writes leaderboard.md, leaderboard.json and a manifest, and a second report
// replaces them; a folder holding the user's own leaderboard.md is refused (exit 2,
// the file kept) unless --overwrite; a leaderboard.md that is a link to a file outside
// is refused and the file outside kept; a typo'd --board is bad input and no folder is
// created for it.
func TestReportUnderTheRules(t *testing.T) {
	ctx := context.Background()
	board := boardDir(t)
	report := func(out string, overwrite bool, boards ...string) error {
		return runCmd(ctx, config{Verb: "report", Board: boards, Out: out, Seed: 1, Overwrite: overwrite}, io.Discard)
	}
	t.Run("new folder, then again", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "lb")
		for range 2 {
			if err := report(out, false, board); err != nil {
				t.Fatal(err)
			}
			m, err := storage.VerifyManifest(ctx, out)
			if err != nil {
				t.Fatalf("no complete manifest: %v", err)
			}
			if !m.Has("leaderboard.md") || !m.Has("leaderboard.json") || m.Pipeline != "leaderboard" {
				t.Errorf("manifest %+v", m)
			}
		}
	})
	t.Run("the user's leaderboard.md", func(t *testing.T) {
		out := t.TempDir()
		mine := filepath.Join(out, "leaderboard.md")
		os.WriteFile(mine, []byte("my notes"), 0o644)
		err := report(out, false, board)
		if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "--overwrite") {
			t.Errorf("report = %v, want bad input naming --overwrite", err)
		}
		if got, _ := os.ReadFile(mine); string(got) != "my notes" {
			t.Errorf("the user's leaderboard.md now holds %q", got)
		}
	})
	t.Run("a link at an output name", func(t *testing.T) {
		base := t.TempDir()
		outside := filepath.Join(base, "thesis.md")
		os.WriteFile(outside, []byte("thesis"), 0o644)
		out := filepath.Join(base, "lb")
		os.MkdirAll(out, 0o755)
		os.Symlink(outside, filepath.Join(out, "leaderboard.md"))
		if err := report(out, true, board); err == nil {
			t.Error("report through a link: no error")
		}
		if got, _ := os.ReadFile(outside); string(got) != "thesis" {
			t.Errorf("the file outside now holds %q", got)
		}
	})
	t.Run("typo'd board", func(t *testing.T) {
		typo := filepath.Join(t.TempDir(), "bord")
		err := report(filepath.Join(t.TempDir(), "lb"), false, typo)
		if !errors.Is(err, launch.ErrBadInput) {
			t.Errorf("report = %v, want bad input", err)
		}
		if _, err := os.Stat(typo); !os.IsNotExist(err) {
			t.Errorf("the typo'd board folder was created (%v)", err)
		}
	})
}

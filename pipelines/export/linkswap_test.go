package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// TestLinksSwappedDuringExport: links planted at random moments while exports of a
// 2-D and an image task write (launchtest.SwapLinks) change nothing outside --out.
func TestLinksSwappedDuringExport(t *testing.T) {
	testenv.Slow(t, "runs the export several times")
	base := t.TempDir()
	outside, before := launchtest.UserFolder(t, base)
	grids := []schemas.Grid{
		{Task: "gmm:2,2", Samples: 150, Model: "mlp:8", LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 24, Box: 6, TrainGrid: 24},
		{Task: "images:8,2", Samples: 100, Model: "cnn:8,16", LR: 0.001, Steps: 10, BatchSize: 32, PxWeight: 1},
	}
	for round := range 8 {
		out := filepath.Join(base, "export")
		p := stages.Point{Grid: grids[round%2], Tables: 2, Methods: []string{"baseline"}}
		cfg := launch.Config{Pipeline: "export", Runner: "prism", Points: []stages.Point{p}, Overwrite: true,
			Options: stages.Options{Seed: 3, Out: out, TrainBatch: 64, ReportTables: 1, AISChains: 16, AISTemps: 20, Thresholds: stages.DefaultThresholds()}}
		seed := uint64(round)
		if round < 2 {
			seed = 0 // the first export of each task is left alone
		}
		stop := launchtest.SwapLinks(out, outside, seed, 400*time.Millisecond)
		err := run(context.Background(), cfg, true, &bytes.Buffer{})
		stop()
		t.Logf("round %d (%s): %v", round, p.Task, err)
		if round < 2 && err != nil {
			t.Fatalf("an export without attacks: %v", err)
		}
		launchtest.Unchanged(t, outside, before)
		os.RemoveAll(out)
	}
}

package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// TestLinksSwappedDuringExport: links planted at random moments while exports of a
// 2-D and an image task write (launchtest.UnderLinkSwaps) change nothing outside --out.
func TestLinksSwappedDuringExport(t *testing.T) {
	testenv.Slow(t, "runs the export several times")
	grids := []schemas.Grid{
		{Task: "gmm:2,2", Samples: 150, Model: "mlp:8", LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1, GridCells: 24, Box: 6, TrainGrid: 24},
		{Task: "images:8,2", Samples: 100, Model: "cnn:8,16", LR: 0.001, Steps: 10, BatchSize: 32, PxWeight: 1},
	}
	launchtest.UnderLinkSwaps(t, 8, 400*time.Millisecond, func(out string, round int) error {
		p := stages.Point{Grid: grids[round%2], Tables: 2, Methods: []string{"baseline"}}
		cfg := launch.Config{Pipeline: "export", Runner: "prism", Points: []stages.Point{p}, Overwrite: true,
			Options: stages.Options{Seed: 3, Out: out, TrainBatch: 64, ReportTables: 1, AISChains: 16, AISTemps: 20, Thresholds: stages.DefaultThresholds()}}
		return run(context.Background(), cfg, true, &bytes.Buffer{})
	})
}

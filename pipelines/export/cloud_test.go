package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/emulators"
	"github.com/jemcheck/jemcheck/internal/emulators/outputs"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// TestCloudExport: an export (with --csv) into gs:// and into s3:// (real protocol
// servers on loopback, internal/emulators) publishes what it publishes into
// file://: every file byte for byte but config.json and manifest.json, which record
// the location and are compared by structure (internal/emulators/outputs).
func TestCloudExport(t *testing.T) {
	testenv.Slow(t, "three pipeline runs against emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	cfg := func(out string) launch.Config {
		p := stages.Point{Grid: schemas.Grid{Task: "gmm:2,2", Samples: 150, Model: "mlp:8", LR: 0.01, Steps: 10, BatchSize: 32, PxWeight: 1,
			GridCells: 24, Box: 6, TrainGrid: 24}, Tables: 3, Methods: []string{"baseline", "jem"}}
		return launch.Config{Pipeline: "export", Runner: "prism", Points: []stages.Point{p},
			Options: stages.Options{Seed: 3, Out: out, TrainBatch: 64, ReportTables: 1, Thresholds: stages.DefaultThresholds()}}
	}
	export := func(t *testing.T, what, out string) {
		t.Helper()
		var buf bytes.Buffer
		start := time.Now()
		if err := run(context.Background(), cfg(out), true, &buf); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, buf.String())
		}
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}
	ref := outputs.Run{Out: "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "export"))}
	ref.Locs = map[string]string{"out": ref.Out}
	export(t, "file:// export", ref.Out)
	for _, s := range servers {
		t.Run(s.Scheme, func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "export")}
			out.Locs = map[string]string{"out": out.Out}
			export(t, s.Scheme+":// export", out.Out)
			n := outputs.Same(t, ref, out, stages.ExportKey, "config.json")
			t.Logf("export into %s://: %d files byte-identical to file://", s.Scheme, n)
		})
	}
	t.Logf("TestCloudExport: %v in all", time.Since(begin).Round(time.Millisecond))
}

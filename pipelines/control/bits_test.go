package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks/bits"
)

// TestControlBits: a binary run through the whole pipeline writes the true joints
// (tables.parquet, x = the state), the draws, the learned joints and one result row per
// task and method whose joint KL an independent enumeration of the truth
// (prob.BitsTask.LogJoint, not the table) and the learned logits from the files gives.
func TestControlBits(t *testing.T) {
	ctx := context.Background()
	out := "mem://control-bits"
	p := stages.Point{Grid: schemas.Grid{Task: "bits:6,2", Components: 2, Samples: 400, Model: "mlp:8", LR: 0.01, Steps: 60,
		BatchSize: 32, PxWeight: 1, BufferSize: 100, ReinitFreq: 0.05, ChainSteps: 2, Proposal: "gwg",
		Recipe: schemas.Recipe{EDNegatives: 4, EDT: 0.1, EDW: 1}},
		Tables: 3, Methods: []string{"baseline", "jem", "pcd", "ed"}}
	cfg := launch.Config{Pipeline: "control", Runner: "prism", Points: []stages.Point{p},
		Options: stages.Options{Seed: 9, Out: out, TrainBatch: 64, WriteSamples: true, ReportTables: 1, Thresholds: stages.DefaultThresholds()}}
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "pcd's joint KL") {
		t.Errorf("verdict line without the sampler comparison:\n%s", buf.String())
	}
	launchtest.ExpectFiles(t, out, "tables.parquet", stages.SamplePath(0, 0), stages.ResultsPath(0, 0), stages.LearnedPath(0, 0),
		"summary.json", "report.html")
	b := launchtest.Bucket(t, out)
	const x, k = 64, 2
	logits := map[string][]float64{}
	ls, err := schemas.ReadParquet[schemas.LearnedRow](ctx, b, stages.LearnedPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if logits[l.RunID] == nil {
			logits[l.RunID] = make([]float64, x*k)
		}
		logits[l.RunID][l.X*k+l.Y] = l.Logit
	}
	rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, stages.ResultsPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 || len(logits) != 12 {
		t.Fatalf("%d result rows and %d learned joints, want 12", len(rows), len(logits))
	}
	for _, r := range rows {
		task := prob.DrawBits(bits.Kind{}.Seed(9, p, r.TableID), 6, k, 2)
		lg := logits[r.RunID]
		m := math.Inf(-1)
		for _, v := range lg {
			m = max(m, v)
		}
		z := 0.0
		for _, v := range lg {
			z += math.Exp(v - m)
		}
		kl := 0.0
		for xi := range x {
			for y := range k {
				lp := task.LogJoint(uint32(xi), y)
				kl += math.Exp(lp) * (lp - (lg[xi*k+y] - m - math.Log(z)))
			}
		}
		if math.Abs(kl-r.KLJoint) > 1e-9 || r.Diverged || r.Nonfinite {
			t.Errorf("%s: kl_joint %v, recomputed from the files %v (diverged %v)", r.RunID, r.KLJoint, kl, r.Diverged)
		}
	}
}

// TestBitsRefused: bad binary tasks are refused with exit 2, one message line and
// nothing written.
func TestBitsRefused(t *testing.T) {
	for _, tt := range []struct{ name, args, want string }{
		{"D zero", "--task=bits:0,2", "D must be in [1, 20]"},
		{"D 21", "--task=bits:21,2", "D must be in [1, 20]"},
		{"one class", "--task=bits:8,1", "K must be in [2, 64]"},
		{"too many cells", "--task=bits:20,8 --methods=baseline", "cells, over the limit"},
		{"components", "--task=bits:8,2 --components=0", "components must be in [1, 64]"},
		{"jem enumeration", "--task=bits:20,2 --steps=1500", "--steps=1024 or less"},
		{"sgld on bits", "--task=bits:8,2 --methods=jem,sgld", "method sgld trains on"},
	} {
		expectRefused(t, tt.name, tt.args, tt.want)
	}
}

// expectRefused runs the command with args as a subtest: it must exit 2 with one
// message line containing want and write nothing.
func expectRefused(t *testing.T, name, args, want string) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "out")
		code, msg := runCommand(t, args, out)
		lines := strings.Split(strings.TrimSpace(msg), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(msg, want) {
			t.Errorf("exit %d, output:\n%s\nwant exit 2 and one line with %q", code, msg, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s was created for a refused input", out)
		}
	})
}

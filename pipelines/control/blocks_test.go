package main

import (
	"bytes"
	"context"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks/blocks"
)

// tinyBlocks is a small block run: 3 tasks of blocks:2,gmm:2,1 on a 36×36 grid per
// block (2·36²·2 = 5,184 cells a task, over the report's triple plots), baseline, exact jem and sgld, 60 steps.
func tinyBlocks(out string) launch.Config {
	p := stages.Point{Grid: schemas.Grid{Samples: 300, Model: "additive:8", LR: 0.01, Steps: 60, BatchSize: 32, PxWeight: 1,
		Task: "blocks:2,gmm:2,1", GridCells: 36, Box: 5, TrainGrid: 16, SGLDPreset: "official", SGLDLR: 1, SGLDSteps: 5,
		BufferSize: 200, ReinitFreq: 0.05},
		Tables: 3, Methods: []string{"baseline", "jem", "sgld"}}
	return launch.Config{
		Pipeline: "control", Runner: "prism",
		Options: stages.Options{Seed: 5, Out: out, TrainBatch: 6, WriteSamples: true, ReportTables: 1, Thresholds: stages.DefaultThresholds()},
		Points:  []stages.Point{p},
	}
}

// TestControlBlocks: a block run through the whole pipeline writes the truth (a
// distribution per task in the kind's layout), the draws (one row per draw and block),
// the learned block logits and one result row per task and method with the exact joint
// KL (recomputed here from truth.parquet and learned/ alone), the Monte Carlo KLs with
// their standard errors, and a report without triple plots of its 5,184-cell joints.
func TestControlBlocks(t *testing.T) {
	testenv.Slow(t, "a block control run end to end, 3 s")
	ctx := context.Background()
	out := "mem://control-blocks"
	var buf bytes.Buffer
	if err := run(ctx, tinyBlocks(out), &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "sgld's joint KL") {
		t.Errorf("verdict line without the sampler comparison:\n%s", buf.String())
	}
	// 6 runs a block over 3 methods: 2 tasks a block.
	launchtest.ExpectFiles(t, out, "truth.parquet", stages.SamplePath(0, 0), stages.SamplePath(0, 1), stages.ResultsPath(0, 1),
		stages.LearnedPath(0, 0), stages.LearnedPath(0, 1), "summary.json", "report.html")
	b := launchtest.Bucket(t, out)
	const B, G, K = 2, 36, 2
	n := B * G * G * K
	truthRows, err := schemas.ReadParquet[schemas.TruthRow](ctx, b, "truth.parquet")
	if err != nil {
		t.Fatal(err)
	}
	truth := map[int64][]float64{}
	for _, r := range truthRows {
		if truth[r.TaskID] == nil {
			truth[r.TaskID] = make([]float64, n)
		}
		truth[r.TaskID][r.Cell*K+r.Y] = r.P
	}
	if len(truthRows) != 3*n || len(truth) != 3 {
		t.Fatalf("truth rows = %d over %d tasks, want %d over 3", len(truthRows), len(truth), 3*n)
	}
	for id, p := range truth {
		s := 0.0
		for _, v := range p {
			s += v
		}
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("task %d: truth sums to %v", id, s)
		}
	}
	samples, err := schemas.ReadParquet[blocks.SampleRow](ctx, b, stages.SamplePath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2*300*B || samples[1].Block != 1 || samples[1].Draw != 0 || samples[1].Y != samples[0].Y {
		t.Errorf("samples of block 0: %d rows (want %d), first two %+v %+v", len(samples), 2*300*B, samples[0], samples[1])
	}
	logits := map[string][]float64{}
	for _, k := range []string{stages.LearnedPath(0, 0), stages.LearnedPath(0, 1)} {
		ls, err := schemas.ReadParquet[schemas.LearnedRow](ctx, b, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if logits[l.RunID] == nil {
				logits[l.RunID] = make([]float64, n)
			}
			logits[l.RunID][l.X*K+l.Y] = l.Logit
		}
	}
	var rows []schemas.ResultRow
	for blk := range int64(2) {
		rs, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, stages.ResultsPath(0, blk))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	if len(rows) != 9 {
		t.Fatalf("%d result rows, want 9", len(rows))
	}
	g := prob.Grid{G: G, Box: 5}
	for _, r := range rows {
		l := logits[r.RunID]
		kl := prob.BlocksJointKL(prob.BlocksTruthFromTable(truth[r.TableID], g, B, K), [][]float64{l[:n/B], l[n/B:]})
		if math.Abs(kl-r.KLJoint) > 1e-12 || !(r.KLJoint >= 0) {
			t.Errorf("%s: kl_joint %v, recomputed from the files %v", r.RunID, r.KLJoint, kl)
		}
		if !(r.KLMarginalSE > 0) || !(r.KLConditionalSE > 0) || math.IsNaN(r.KLMarginal) || math.IsNaN(r.Accuracy) || math.IsNaN(r.BayesAccuracy) {
			t.Errorf("%s: Monte Carlo columns %v ± %v, %v ± %v, accuracy %v (Bayes %v)", r.RunID, r.KLMarginal, r.KLMarginalSE,
				r.KLConditional, r.KLConditionalSE, r.Accuracy, r.BayesAccuracy)
		}
		if r.Task != "blocks:2,gmm:2,1" || r.Model != "additive:8" || r.XValues != B*G*G || r.Diverged || r.Nonfinite {
			t.Errorf("%s: task %s model %s x_values %d diverged %v nonfinite %v", r.RunID, r.Task, r.Model, r.XValues, r.Diverged, r.Nonfinite)
		}
	}
	report, err := b.ReadAll(ctx, "report.html")
	if err != nil {
		t.Fatal(err)
	}
	// A triple plot does not apply to a block joint (too many bars): not drawn, and no
	// internal warning about it in the report.
	if strings.Contains(string(report), "triple_p0") || strings.Contains(string(report), "could not be drawn") {
		t.Errorf("the report draws a triple plot of a block joint, or warns about the one it did not draw")
	}
}

// TestBlocksRefused: bad block tasks are refused with exit 2, one message line and
// nothing written.
func TestBlocksRefused(t *testing.T) {
	for _, tt := range []struct{ name, args, want string }{
		{"no blocks", "--task=blocks:0,gmm:3,2", "B must be in [1, 32]"},
		{"65 blocks", "--task=blocks:65,gmm:3,2", "B must be in [1, 32]"},
		{"unknown block task", "--task=blocks:2,spiral:1", `unknown task "spiral:1"`},
		{"too many cells", "--task=blocks:32,gmm:3,2 --grid=64", "cells per task, over the limit"},
		{"box too small for a block", "--task=blocks:2,gmm:3,2 --box=2.5", "outside the box"},
		{"pcd on block tasks", "--task=blocks:2,gmm:3,2 --methods=jem,pcd", "method pcd trains on"},
	} {
		expectRefused(t, tt.name, tt.args, tt.want)
	}
}

// TestControlJoint: a joint point (one MLP on all D coordinates for baseline and sgld,
// the additive reference for exact jem) runs through the whole pipeline: every run's
// row has kl_joint_is with its SE and ESS from the evaluation points, the joint runs'
// kl_joint is that estimate (no exact log Z), exact jem's its exact KL on ℝ^D with its
// estimate within the CI, the report's task has the AIS check, and the verdict pairs
// sgld with exact jem.
func TestControlJoint(t *testing.T) {
	testenv.Slow(t, "a joint block control run end to end, 3 s")
	ctx := context.Background()
	out := "mem://control-joint"
	cfg := tinyBlocks(out)
	cfg.Points[0].Model, cfg.Points[0].Task, cfg.Points[0].GridCells, cfg.Points[0].Box = "joint:8", "blocks:2,gmm:2,1", 24, 5
	cfg.Points[0].Tables = 2
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "sgld's joint KL") {
		t.Errorf("verdict line without the sampler comparison:\n%s", buf.String())
	}
	b := launchtest.Bucket(t, out)
	rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, stages.ResultsPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d result rows, want 6", len(rows))
	}
	for _, r := range rows {
		t.Logf("%s: kl_joint %.4f, kl_joint_is %.4f ± %.4f (ESS %.0f), log Z %.3f, AIS %.3f", r.RunID, r.KLJoint, r.KLJointIS, r.KLJointISSE, r.ISESS, r.LogZ, r.LogZAIS)
		if r.Model != "joint:8" || !(r.ISESS >= prob.MinESS) || !(r.KLJointISSE > 0) || !(r.KLMarginalSE > 0) || r.Nonfinite || r.Diverged {
			t.Errorf("%s: model %s, ESS %v, SE %v, %v", r.RunID, r.Model, r.ISESS, r.KLJointISSE, r.KLMarginalSE)
		}
		if r.Method == "jem" {
			if math.IsNaN(r.LogZ) || math.Abs(r.KLJointIS-r.KLJoint) > 4*r.KLJointISSE+2e-3 {
				t.Errorf("jem: log Z %v, kl_joint_is %v ± %v against the exact %v", r.LogZ, r.KLJointIS, r.KLJointISSE, r.KLJoint)
			}
		} else if r.KLJoint != r.KLJointIS || !math.IsNaN(r.LogZ) {
			t.Errorf("%s: kl_joint %v, kl_joint_is %v, log Z %v", r.Method, r.KLJoint, r.KLJointIS, r.LogZ)
		}
		if (r.TableID == 0) == math.IsNaN(r.LogZAIS) {
			t.Errorf("%s: AIS log Z %v on task %d", r.RunID, r.LogZAIS, r.TableID)
		}
	}
}

// TestJointRefused: a joint model without widths is refused with exit 2.
func TestJointRefused(t *testing.T) {
	for _, tt := range []struct{ name, args, want string }{
		{"joint without widths", "--task=blocks:2,gmm:3,2 --model=joint:", "the joint model needs its hidden widths"},
		{"joint width 0", "--task=blocks:2,gmm:3,2 --model=joint:0", "the joint model needs its hidden widths"},
		{"unknown method", "--task=blocks:2,gmm:3,2 --model=joint:8 --methods=jem,nosuch", "nosuch"},
		{"pcd on a joint point", "--task=blocks:2,gmm:3,2 --model=joint:8 --methods=jem,pcd", "method pcd trains on"},
	} {
		expectRefused(t, tt.name, tt.args, tt.want)
	}
}

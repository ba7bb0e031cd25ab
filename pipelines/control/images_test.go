package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks/images"
)

// TestControlImages: an images run through the whole pipeline at the smallest AIS
// settings (--ais_chains=16 --ais_temps=20): one row per task and method with the
// Z-free measures against the truth, the calibration's columns on every row, no exact
// joint KL, kl_joint_lower exactly where the calibration accepted, the truths' parameters
// under truth/, the summary and the report; config.json records the AIS settings.
// About 15–30 s on 2 cores (4000 exact draws a task and their densities): JEMCHECK_SLOW=1.
func TestControlImages(t *testing.T) {
	testenv.Slow(t, "an images run: 4000 exact draws a task, their densities and the CNNs' logits")
	ctx := context.Background()
	out := "mem://control-images"
	g := schemas.DefaultGrid()
	g.Task, g.Samples, g.Steps, g.BatchSize, g.LR, g.Model = "images:8,2", 300, 5, 32, 1e-3, images.DefaultModel
	g.SGLDSteps = 2
	p := stages.Point{Grid: g, Tables: 2, Methods: []string{"baseline", "sgld"}}
	cfg := launch.Config{Pipeline: "control", Runner: "prism", Points: []stages.Point{p},
		Options: stages.Options{Seed: 3, Out: out, TrainBatch: 64, WriteSamples: true, ReportTables: 1, Thresholds: stages.DefaultThresholds(),
			AISChains: 16, AISTemps: 20}}
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "exact JEM does not exist on images:8,2") {
		t.Errorf("no no-reference verdict:\n%s", buf.String())
	}
	launchtest.ExpectFiles(t, out, stages.SamplePath(0, 0), stages.ResultsPath(0, 0), "summary.json", "report.html",
		images.TruthFile(0, 0, false), images.TruthFile(0, 1, false))
	b := launchtest.Bucket(t, out)
	rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, stages.ResultsPath(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		switch {
		case !math.IsNaN(r.KLJoint) || !math.IsNaN(r.KLJointUpper):
			t.Errorf("%s task %d: kl_joint %v, kl_joint_upper %v: no exact Z, no exact draws of q", r.Method, r.TableID, r.KLJoint, r.KLJointUpper)
		case !(r.KLConditional >= -1e-9) || !(r.Accuracy >= 0 && r.Accuracy <= 1) || !(r.BayesAccuracy > 0.8 && r.BayesAccuracy < 1):
			t.Errorf("%s task %d: kl_conditional %v, accuracy %v, bayes %v", r.Method, r.TableID, r.KLConditional, r.Accuracy, r.BayesAccuracy)
		case !(r.AUROCTruePx > 0.99) || math.IsNaN(r.AUROCPx) || math.IsNaN(r.ECE):
			t.Errorf("%s task %d: auroc_px %v (ceiling %v), ece %v", r.Method, r.TableID, r.AUROCPx, r.AUROCTruePx, r.ECE)
		case math.IsNaN(r.AISTeacherLower) || math.IsNaN(r.AISTeacherUpper):
			t.Errorf("%s task %d: no calibration (%v, %v)", r.Method, r.TableID, r.AISTeacherLower, r.AISTeacherUpper)
		case r.AISAccepted == math.IsNaN(r.KLJointLower) || r.AISAccepted == (r.AISRefused != ""):
			t.Errorf("%s task %d: accepted %v, kl_joint_lower %v, refused %q", r.Method, r.TableID, r.AISAccepted, r.KLJointLower, r.AISRefused)
		case !(r.FisherDiv > 0 && r.FisherDivSE > 0) || !(r.LogRatioSD > 0 && r.LogRatioSDSE > 0) || !math.IsNaN(r.FisherDivCond):
			t.Errorf("%s task %d: fisher_div %v ± %v, log_ratio_sd %v ± %v, fisher_div_cond %v: want the Z-free divergences (no conditional form)",
				r.Method, r.TableID, r.FisherDiv, r.FisherDivSE, r.LogRatioSD, r.LogRatioSDSE, r.FisherDivCond)
		}
		t.Logf("%s task %d: kl_conditional %.3g, accuracy %.3f (Bayes %.3f), fisher_div %.3g, log_ratio_sd %.3g, calibration gap %.3g accepted %v %s",
			r.Method, r.TableID, r.KLConditional, r.Accuracy, r.BayesAccuracy, r.FisherDiv, r.LogRatioSD, r.AISTeacherGap, r.AISAccepted, r.AISRefused)
	}
	conf, err := b.ReadAll(ctx, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"ais_chains": 16`, `"ais_temps": 20`} {
		if !bytes.Contains(conf, []byte(w)) {
			t.Errorf("config.json does not record %s", w)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// The ONNX test models (scripts/export-onnx-cnn.py, in tasks/images/testdata): the
// truth of images:8,2 task 0 at run seed 1 as a classifier (f(x)[y] = log p(x, y)),
// an untrained CNN on 16×16 images, one with 3 classes, one whose logits are NaN.
const onnxData = "../../tasks/images/testdata/"

// TestONNXBadInput: a model file that does not fit the task, or flags that do not go
// together, are refused with exit 2, one line naming the problem, and nothing written.
func TestONNXBadInput(t *testing.T) {
	tmp := t.TempDir()
	notONNX := filepath.Join(tmp, "notes.onnx")
	if err := os.WriteFile(notONNX, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	truth := onnxData + "truth-8x2-seed1-task0.onnx"
	cases := []struct{ name, args, want string }{
		{"missing file", "-task=images:8,2 -onnx=" + filepath.Join(tmp, "missing.onnx"), "missing.onnx: no such file"},
		{"not ONNX", "-task=images:8,2 -onnx=" + notONNX, "is not a readable ONNX model"},
		{"input size", "-task=images:8,2 -onnx=" + onnxData + "cnn-16x2.onnx", "its input takes 256 values an example, but the task images:8,2 has 8×8 = 64 pixels"},
		{"input size 16", "-task=images:16,2 -onnx=" + truth, "its input takes 64 values an example, but the task images:16,2 has 16×16 = 256 pixels"},
		{"classes", "-task=images:8,2 -onnx=" + onnxData + "cnn-8x3.onnx", "it gives 3 outputs an image, but the task images:8,2 has 2 classes"},
		{"NaN logits", "-task=images:8,2 -onnx=" + onnxData + "nan-8x2.onnx", "is NaN: the logits must be finite numbers"},
		{"not images", "-task=gmm:3,2 -onnx=" + truth, "a model file is judged on images tasks"},
		{"no task", "-onnx=" + truth, "give the images task your model is judged on"},
		{"and logits", "-task=images:8,2 -onnx=" + truth + " -logits=" + notONNX, "give --onnx, or --logits or --command, not both"},
		{"task without onnx", "-task=images:8,2 -logits=" + notONNX, "these apply to --onnx without --from"},
		{"bad task", "-task=images:9,2 -onnx=" + truth, "S must be 8, 16 or 28"},
		{"not an images method", "-task=images:8,2 -methods=jem -onnx=" + truth, "jem"},
		{"bad model name", "-task=images:8,2 -model=a/b -onnx=" + truth, `model: "a/b"`},
		{"too few AIS chains", "-task=images:8,2 -ais_chains=3 -onnx=" + truth, "ais_chains must be in [16, 65536], got 3"},
		{"AIS with logits", "-from=" + tmp + " -ais_temps=50 -logits=" + notONNX, "these apply to --onnx without --from"},
		{"AIS with from", "-from=" + tmp + " -ais_temps=50 -onnx=" + truth, "--from gives them"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			code, msg := launchtest.RunMain(t, tc.args, out)
			lines := strings.Split(strings.TrimSpace(msg), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and one line with %q", code, msg, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created for a refused input", out)
			}
		})
	}
}

// TestONNXTruth: the truth of images:8,2 task 0 (seed 1) exported to ONNX, through the
// real pipeline on two tasks: on task 0 it scores kl_conditional 0 (float32), the Bayes
// accuracy and the AUROC ceiling, and kl_joint_lower within 4 SE + 0.1 nat of 0 where
// the task's calibration accepts the AIS schedule (NaN where it refuses); on task 1,
// whose truth differs, a large kl_conditional. The rows carry the images kind's columns
// (kl_joint NaN: no exact Z; the calibration's ais_* columns), and the report and
// summary are written. About a minute and a half on 2 cores (the AIS): JEMCHECK_SLOW=1.
func TestONNXTruth(t *testing.T) {
	testenv.Slow(t, "the AIS of log Z on two images tasks")
	out := filepath.Join(t.TempDir(), "out")
	var buf bytes.Buffer
	start := time.Now()
	err := run(context.Background(), Config{Task: "images:8,2", Tables: 2, Samples: 1000, Seed: 1, ONNX: onnxData + "truth-8x2-seed1-task0.onnx",
		Model: "truth", Out: out, Stdout: &buf}, &buf)
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, buf.String())
	}
	t.Logf("evaluate --onnx on 2 tasks: %v\n%s", time.Since(start).Round(time.Second), buf.String())
	rows := launchtest.Results(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		t.Logf("task %d %s: kl_conditional %.3g ± %.2g, accuracy %.4f (Bayes %.4f), ece %.3g, auroc_px %.4f (ceiling %.4f), auroc_py %.4f, "+
			"kl_joint_lower %.3g ± %.2g, log Ẑ %.3g (ESS %.1f), calibration [%.3g, %.3g] accepted %v %s", r.TableID, r.Method,
			r.KLConditional, r.KLConditionalSE, r.Accuracy, r.BayesAccuracy, r.ECE, r.AUROCPx, r.AUROCTruePx, r.AUROCPy,
			r.KLJointLower, r.KLJointLowerSE, r.LogZAIS, r.AISESS, r.AISTeacherLower, r.AISTeacherUpper, r.AISAccepted, r.AISRefused)
		if r.Method != "external:truth" || !math.IsNaN(r.KLJoint) || !math.IsNaN(r.KLJointUpper) || math.IsNaN(r.AISTeacherLower) {
			t.Errorf("task %d: method %s, kl_joint %v, kl_joint_upper %v, ais_teacher_lower %v", r.TableID, r.Method, r.KLJoint, r.KLJointUpper, r.AISTeacherLower)
		}
		if r.AISAccepted == math.IsNaN(r.KLJointLower) {
			t.Errorf("task %d: calibration accepted %v, kl_joint_lower %v", r.TableID, r.AISAccepted, r.KLJointLower)
		}
		switch r.TableID {
		case 0:
			if math.Abs(r.KLConditional) > 1e-6 || math.Abs(r.Accuracy-r.BayesAccuracy) > 2e-3 || math.Abs(r.AUROCPx-r.AUROCTruePx) > 1e-3 {
				t.Errorf("task 0: the truth scores kl_conditional %v, accuracy %v (Bayes %v), auroc_px %v (ceiling %v)",
					r.KLConditional, r.Accuracy, r.BayesAccuracy, r.AUROCPx, r.AUROCTruePx)
			}
			if r.AISAccepted && !(math.Abs(r.KLJointLower) <= 4*r.KLJointLowerSE+0.1) {
				t.Errorf("task 0: kl_joint_lower %v ± %v, want 0 within 4 SE + 0.1", r.KLJointLower, r.KLJointLowerSE)
			}
		case 1:
			if !(r.KLConditional > 0.1) {
				t.Errorf("task 1: task 0's truth scores kl_conditional %v, want a large one", r.KLConditional)
			}
		}
	}
	for _, f := range []string{"summary.json", "report.html", "config.json", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	cfg := string(mustRead(t, filepath.Join(out, "config.json")))
	for _, w := range []string{`"onnx": "../../tasks/images/testdata/truth-8x2-seed1-task0.onnx"`, `"onnx_sha256"`} {
		if !strings.Contains(cfg, w) {
			t.Errorf("config.json does not record %s", w)
		}
	}
	if !strings.Contains(buf.String(), "external:truth: kl_conditional") {
		t.Errorf("no line for the model:\n%s", buf.String())
	}
}

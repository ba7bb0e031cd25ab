package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/tasks"
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
		{"missing file", "-task=images:8,2 -tables=1 -onnx=" + filepath.Join(tmp, "missing.onnx"), "missing.onnx: no such file"},
		{"not ONNX", "-task=images:8,2 -tables=1 -onnx=" + notONNX, "is not a readable ONNX model"},
		{"input size", "-task=images:8,2 -tables=1 -onnx=" + onnxData + "cnn-16x2.onnx", "its input takes 256 values an example, but the task images:8,2 has 8×8 = 64 pixels"},
		{"input size 16", "-task=images:16,2 -tables=1 -onnx=" + truth, "its input takes 64 values an example, but the task images:16,2 has 16×16 = 256 pixels"},
		{"classes", "-task=images:8,2 -tables=1 -onnx=" + onnxData + "cnn-8x3.onnx", "it gives 3 outputs an image, but the task images:8,2 has 2 classes"},
		{"NaN logits", "-task=images:8,2 -tables=1 -onnx=" + onnxData + "nan-8x2.onnx", "is NaN: the logits must be finite numbers"},
		{"not images", "-task=gmm:3,2 -onnx=" + truth, "a model file is judged on images tasks"},
		{"no task", "-onnx=" + truth, "give the images task your model is judged on"},
		{"and logits", "-task=images:8,2 -onnx=" + truth + " -logits=" + notONNX, "give --onnx, or --logits or --command, not both"},
		{"task without onnx", "-task=images:8,2 -logits=" + notONNX, "these apply to --onnx without --from"},
		{"bad task", "-task=images:9,2 -tables=1 -onnx=" + truth, "S must be 8, 16 or 28"},
		{"not an images method", "-task=images:8,2 -tables=1 -methods=jem -onnx=" + truth, "jem"},
		{"bad model name", "-task=images:8,2 -model=a/b -onnx=" + truth, `model: "a/b"`},
		{"too few AIS chains", "-task=images:8,2 -tables=1 -ais_chains=3 -onnx=" + truth, "ais_chains must be in [16, 65536], got 3"},
		{"AIS with logits", "-from=" + tmp + " -ais_temps=50 -logits=" + notONNX, "these apply to --onnx without --from"},
		{"AIS with from", "-from=" + tmp + " -ais_temps=50 -onnx=" + truth, "--from gives them"},
		// One model per task: a pattern with {task} or a folder; one file for several
		// tasks (each its own truth) only with --onnx_shared. Every task's model is checked.
		{"one model, several tasks", "-task=images:8,2 -tables=2 -onnx=" + truth,
			"one model (\"" + truth + "\") for 2 tasks, each with its own truth"},
		{"shared with a pattern", "-task=images:8,2 -tables=2 -onnx_shared -onnx=" + filepath.Join(tmp, "m", "model-{task}.onnx"), "--onnx_shared is for one .onnx file"},
		{"shared with a folder", "-task=images:8,2 -tables=2 -onnx_shared -onnx=" + filepath.Join(tmp, "m"), "is a folder of models, one per task"},
		{"pattern, a task's model missing", "-task=images:8,2 -tables=3 -onnx=" + filepath.Join(tmp, "m", "model-{task}.onnx"), filepath.Join(tmp, "m", "model-2.onnx") + ": no such file"},
		{"folder, a task's model missing", "-task=images:8,2 -tables=3 -onnx=" + filepath.Join(tmp, "m"), filepath.Join(tmp, "m", "model-2.onnx") + ": no such file"},
		{"folder, a task's model wrong", "-task=images:8,2 -tables=2 -onnx=" + filepath.Join(tmp, "bad"), "bad/model-1.onnx: its input takes 256 values an example"},
	}
	// tmp/m holds models 0 and 1 (the truths of tasks 0 and 1); tmp/bad a right model
	// for task 0 and one for 16×16 images for task 1.
	for dir, files := range map[string][2]string{"m": {truth, onnxData + "truth-8x2-seed1-task1.onnx"}, "bad": {truth, onnxData + "cnn-16x2.onnx"}} {
		if err := os.MkdirAll(filepath.Join(tmp, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			if err := os.WriteFile(filepath.Join(tmp, dir, fmt.Sprintf("model-%d.onnx", i)), mustRead(t, f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
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
		ONNXShared: true, Model: "truth", Out: out, Stdout: &buf}, &buf) // task 0's truth judged on task 1 too: shared
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

// TestONNXPattern: --onnx resolves into one model location per task (tasks.ModelLocation
// of the pattern): a pattern with {task} is kept, a folder (a location not ending in
// .onnx, a URL's query kept after it) holds model-{task}.onnx, and one .onnx file is
// accepted for one task, or for several with --onnx_shared only.
func TestONNXPattern(t *testing.T) {
	cases := []struct {
		name, loc string
		shared    bool
		tasks     int
		want      string // the pattern, or the refusal's words
		refused   bool
	}{
		{"pattern", "models/model-{task}.onnx", false, 3, "models/model-{task}.onnx", false},
		{"folder", "models", false, 3, "models/model-{task}.onnx", false},
		{"folder with a slash", "models/", false, 3, "models/model-{task}.onnx", false},
		{"folder URL with a query", "s3://bucket/models?region=us-east-1", false, 2, "s3://bucket/models/model-{task}.onnx?region=us-east-1", false},
		{"one file, one task", "model.onnx", false, 1, "model.onnx", false},
		{"one file, upper case", "MODEL.ONNX", false, 1, "MODEL.ONNX", false},
		{"one file, several tasks", "model.onnx", false, 4, "one model (\"model.onnx\") for 4 tasks", true},
		{"one file, several tasks, shared", "model.onnx", true, 4, "model.onnx", false},
		{"pattern, shared", "m-{task}.onnx", true, 4, "--onnx_shared is for one .onnx file", true},
		{"folder, shared", "models", true, 4, "a folder of models", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := make([]int64, c.tasks)
			for i := range ids {
				ids[i] = int64(i)
			}
			got, err := onnxPattern(c.loc, c.shared, ids)
			switch {
			case c.refused && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%q: %q, %v; want a refusal with %q", c.loc, got, err, c.want)
			case !c.refused && (err != nil || got != c.want):
				t.Errorf("%q: %q, %v; want %q", c.loc, got, err, c.want)
			}
		})
	}
	if got := tasks.ModelLocation("m/model-{task}.onnx", 12); got != "m/model-12.onnx" {
		t.Errorf("task 12's model: %q", got)
	}
}

// TestONNXPerTask: one model per task through the real pipeline, each task's truth as
// its own model (tasks/images/testdata/truth-8x2-seed1-task{0,1}.onnx, a folder holding
// model-0.onnx and model-1.onnx): both tasks score kl_conditional 0 (float32) and the
// Bayes accuracy, which only the right model on each task can; config.json records each
// model's sha256 by location. The AIS at its smallest (16 chains, 20 temperatures: the
// calibration is then refused, so no model's AIS runs). JEMCHECK_SLOW=1.
func TestONNXPerTask(t *testing.T) {
	testenv.Slow(t, "two images tasks through the pipeline")
	dir := t.TempDir()
	for i := range 2 {
		src := fmt.Sprintf("%struth-8x2-seed1-task%d.onnx", onnxData, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("model-%d.onnx", i)), mustRead(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	var buf bytes.Buffer
	start := time.Now()
	err := run(context.Background(), Config{Task: "images:8,2", Tables: 2, Samples: 500, Seed: 1, ONNX: dir, AISChains: 16, AISTemps: 20,
		Model: "truths", Out: out, Stdout: &buf}, &buf)
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, buf.String())
	}
	t.Logf("evaluate --onnx=FOLDER on 2 tasks: %v\n%s", time.Since(start).Round(time.Second), buf.String())
	rows := launchtest.Results(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if math.Abs(r.KLConditional) > 1e-6 || math.Abs(r.Accuracy-r.BayesAccuracy) > 2e-3 {
			t.Errorf("task %d: its own truth scores kl_conditional %v, accuracy %v (Bayes %v)", r.TableID, r.KLConditional, r.Accuracy, r.BayesAccuracy)
		}
	}
	cfg := string(mustRead(t, filepath.Join(out, "config.json")))
	for i := range 2 {
		if w := fmt.Sprintf("model-%d.onnx", i); !strings.Contains(cfg, w) {
			t.Errorf("config.json does not record %s's sha256", w)
		}
	}
	if !strings.Contains(buf.String(), "split: your models were to train on the first 400 of each task's 500 draws") {
		t.Errorf("no split line:\n%s", buf.String())
	}
}

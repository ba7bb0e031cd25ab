package examples

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
)

// needPandas skips t unless the slow tests are on and python can import numpy and
// pandas (the Python client's only dependencies).
func needPandas(t *testing.T) {
	t.Helper()
	testenv.Slow(t, "builds export and evaluate, runs Python")
	if err := exec.Command(python, "-c", "import numpy, pandas").Run(); err != nil {
		t.Skipf("%s cannot import numpy and pandas (%v): apt-get install -y python3-numpy python3-pandas", python, err)
	}
}

// TestPythonClient takes tasks of three kinds through the Python client
// (python/jemcheck): export --csv, examples/frequency.py reads the export with
// load_export and writes add-½ counting logits with write_logits, evaluate accepts
// them and scores the model, and the client's unittest file (python/tests/test_client.py)
// runs on the export and the evaluated run (read_summary) with none skipped, under
// Debian's python3 (numpy and pandas, no pyarrow: the export's CSV copies). The
// client's pytest files need pyarrow and pytest: scripts/test runs them in a fresh venv.
func TestPythonClient(t *testing.T) {
	needPandas(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./pipelines/export", "./pipelines/evaluate")
	build.Dir = ".."
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	for _, tc := range []struct{ name, flags string }{
		{"2-D", "--task=gmm:2,2 --tables=3 --samples=200 --grid=24 --steps=50 --model=mlp:8"},
		{"tables", "--tables=3 --samples=200 --steps=50"},
		{"binary", "--task=bits:4,2 --tables=3 --samples=200 --steps=50 --model=mlp:8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			export, logits, run := filepath.Join(dir, "export"), filepath.Join(dir, "logits.csv"), filepath.Join(dir, "evaluated")
			runCmd(t, filepath.Join(bin, "export"), append(strings.Fields(tc.flags), "--csv", "--out="+export)...)
			if out := runCmd(t, python, "frequency.py", export, logits); !strings.Contains(out, "3 tasks") {
				t.Errorf("frequency.py said:\n%s", out)
			}
			out := runCmd(t, filepath.Join(bin, "evaluate"), "--from="+export, "--logits="+logits, "--methods=jem", "--out="+run)
			if !strings.Contains(out, "external:frequency") {
				t.Errorf("evaluate did not score the client's model:\n%s", out)
			}
			tests := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "python/tests", "-p", "test_client.py")
			tests.Dir = ".."
			tests.Env = append(os.Environ(), "PYTHONPATH=python", "JEMCHECK_TEST_EXPORT="+export, "JEMCHECK_TEST_RUN="+run)
			msg, err := tests.CombinedOutput()
			if err != nil || strings.Contains(string(msg), "skipped") {
				t.Fatalf("python/tests: %v (want every test run and passed)\n%s", err, msg)
			}
		})
	}
}

// torchPython is the interpreter of the PyTorch example: $JEMCHECK_PYTHON (scripts/test
// makes a venv with Debian's torch and `pip install ./python`), else python. It skips t
// unless the slow tests are on and the interpreter imports torch and the client's
// dependencies (numpy, pandas, pyarrow).
func torchPython(t *testing.T) string {
	t.Helper()
	testenv.Slow(t, "builds export and evaluate, trains PyTorch models")
	py := os.Getenv("JEMCHECK_PYTHON")
	if py == "" {
		py = python
	}
	if msg, err := exec.Command(py, "-c", "import torch, numpy, pandas, pyarrow").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import torch, numpy, pandas and pyarrow (%v: %s): set JEMCHECK_PYTHON to a Python that can "+
			"(scripts/test makes one: a venv --system-site-packages over python3-torch, then pip install ./python)", py, err, lastLine(msg))
	}
	return py
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// TestTorch2D runs examples/torch_2d.py, an exact JEM in PyTorch, through
// jemcheck.evaluate on 3 tiny gmm:3,2 tasks: the export, the model's logits and the
// evaluated run land in --out and nowhere else, evaluate scores the model beside
// jemcheck's baseline and exact jem, and the model fits the joint better than the
// cross-entropy baseline (an exact JEM should).
func TestTorch2D(t *testing.T) {
	py := torchPython(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./pipelines/export", "./pipelines/evaluate")
	build.Dir = ".."
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(py, "torch_2d.py", "--tables", "3", "--samples", "200", "--steps", "60", "--grid", "24",
		"--model", "mlp:8", "--out", out)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join("..", "python"), "JEMCHECK_BIN="+bin)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("torch_2d.py: %v\n%s", err, msg)
	}
	for _, want := range []string{"held out: the ", "external:torch-jem: mean joint KL", "verdict: undecided"} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("torch_2d.py did not say %q:\n%s", want, msg)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "evaluated export logits.csv" {
		t.Errorf("--out holds %s, want evaluated export logits.csv", got)
	}
	data, err := os.ReadFile(filepath.Join(out, "evaluated", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		Points []struct {
			Methods []struct {
				Method  string
				KLJoint struct{ Mean float64 } `json:"kl_joint"`
			}
		}
	}
	if err := json.Unmarshal(data, &summary); err != nil {
		t.Fatal(err)
	}
	kl := map[string]float64{}
	for _, m := range summary.Points[0].Methods {
		kl[m.Method] = m.KLJoint.Mean
	}
	mine, base := kl["external:torch-jem"], kl["baseline"]
	if !(mine > 0 && mine < base) {
		t.Errorf("mean joint KL: external:torch-jem %v, baseline %v; want 0 < torch-jem < baseline (%v)", mine, base, kl)
	}
}

// runCmd runs name with args in examples/ and returns its output; a failure fails t.
func runCmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join("..", "python"))
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, msg)
	}
	return string(msg)
}

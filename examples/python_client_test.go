package examples

import (
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
// them and scores the model, and the client's unittest files (python/tests) run on
// the export and the evaluated run (read_summary) with none skipped.
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
			tests := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "python/tests")
			tests.Dir = ".."
			tests.Env = append(os.Environ(), "PYTHONPATH=python", "JEMCHECK_TEST_EXPORT="+export, "JEMCHECK_TEST_RUN="+run)
			msg, err := tests.CombinedOutput()
			if err != nil || strings.Contains(string(msg), "skipped") {
				t.Fatalf("python/tests: %v (want every test run and passed)\n%s", err, msg)
			}
		})
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

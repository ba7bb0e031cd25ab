package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestPortableRunner runs scripts/portable.sh: a standalone prism job server on
// loopback, the control pipeline submitted to it with --runner=universal
// --environment_type=LOOPBACK (every element encoded across the Job API). Its Parquet
// outputs must equal, byte for byte, those of the same flags on prism in-process.
func TestPortableRunner(t *testing.T) {
	testenv.Slow(t, "integration: builds prism and the control binary")
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not available")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	flags := "--tables=12 --samples=300 --seed=11 --train_batch=8 --report_tables=1"
	portable := filepath.Join(t.TempDir(), "portable")
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "portable.sh"), "control")
	cmd.Args = append(cmd.Args, strings.Fields(flags)...)
	cmd.Args = append(cmd.Args, "--out="+portable)
	cmd.Dir = root
	// Build prism outside the repository: a test writes nothing into the tree.
	cmd.Env = append(os.Environ(), "PRISM_BIN="+filepath.Join(t.TempDir(), "prism"))
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/portable.sh failed: %v\n%s", err, msg)
	}
	for _, want := range []string{"prism job server on localhost:", "verdict: "} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("portable run output lacks %q:\n%s", want, msg)
		}
	}

	inproc := filepath.Join(t.TempDir(), "inproc")
	cmd = exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+flags+" --out="+inproc)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in-process run failed: %v\n%s", err, msg)
	}

	files, _ := filepath.Glob(filepath.Join(inproc, "*.parquet"))
	more, _ := filepath.Glob(filepath.Join(inproc, "samples", "*.parquet"))
	learned, _ := filepath.Glob(filepath.Join(inproc, "learned", "*.parquet"))
	results, _ := filepath.Glob(filepath.Join(inproc, "results", "*.parquet"))
	files = append(append(append(files, more...), learned...), results...)
	if len(files) < 4 {
		t.Fatalf("in-process run wrote only %v", files)
	}
	for _, f := range append(files, filepath.Join(inproc, "summary.json")) {
		rel, _ := filepath.Rel(inproc, f)
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(portable, rel))
		if err != nil {
			t.Errorf("portable run did not write %s: %v", rel, err)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the portable runner and prism in-process", rel)
		}
	}
	if _, err := os.Stat(filepath.Join(portable, "report.html")); err != nil {
		t.Errorf("portable run wrote no report: %v", err)
	}
}

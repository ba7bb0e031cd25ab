package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/storage"
)

func TestMain(m *testing.M) { launchtest.Main(m, "sweep", main) }

func optionFlags(t *testing.T, args ...string) *launch.OptionFlags {
	t.Helper()
	fs := flagSet()
	of := launch.RegisterOptionFlags(fs, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return of
}

// TestSweepSmoke runs sweeps/smoke.yaml (4 grid points) on prism into mem://.
func TestSweepSmoke(t *testing.T) {
	ctx := context.Background()
	out := "mem://sweep-smoke"
	var buf bytes.Buffer
	if err := run(ctx, "../../sweeps/smoke.yaml", optionFlags(t, "--out="+out), &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	rs := launchtest.Results(t, out)
	if got, want := len(rs), 4*10*3; got != want { // points × tables × methods
		t.Fatalf("%d result rows, want %d", got, want)
	}
	grid := map[[3]int64]bool{}
	for _, r := range rs {
		grid[[3]int64{r.PointID, r.XValues, r.Samples}] = true
	}
	if len(grid) != 4 {
		t.Errorf("grid columns give %d distinct points, want 4: %v", len(grid), grid)
	}
	launchtest.ExpectFiles(t, out, "tables/point-0000.parquet", "tables/point-0003.parquet", "summary.json",
		"report.html", "figures/kl_vs_samples.svg", "config.json")
	if !strings.Contains(buf.String(), "grid points") {
		t.Errorf("no overall verdict in output:\n%s", buf.String())
	}
}

func TestSweepBadSpec(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name, spec, want string
	}{
		{"unknown key", "name: x\ntables: 2\ngrid:\n  lrr: [0.1]\n", "lrr"},
		{"wrong type", "name: x\ntables: two\n", `line 2: cannot unmarshal !!str "two" into an integer`},
		{"empty grid axis", "name: x\ntables: 2\ngrid:\n  lr: []\n", "line 4: a grid axis is a non-empty list"},
		{"bad value", "name: x\ntables: 2\ngrid:\n  lr: [0.1, -1]\n", "lr"},
		{"missing file", "", "nope.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(tmp, "nope.yaml")
			if tt.spec != "" {
				p = filepath.Join(tmp, strings.ReplaceAll(tt.name, " ", "_")+".yaml")
				if err := os.WriteFile(p, []byte(tt.spec), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(tmp, "out-"+strings.ReplaceAll(tt.name, " ", "_"))
			err := run(context.Background(), p, optionFlags(t, "--out="+out), &bytes.Buffer{})
			if err == nil || !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run = %v, want a bad-input error naming %q", err, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("output written for a bad spec")
			}
		})
	}
}

// TestExitStatusFlags runs the command with a flag it does not have: status 2 and one
// line that says what to do (a grid axis or its reference alias goes in the spec).
func TestExitStatusFlags(t *testing.T) {
	tests := []struct{ name, args, want string }{
		{"axis flag", "--spec=x.yaml --sgld_steps=5", "error: flag provided but not defined: -sgld_steps: a grid axis: set sgld_steps in the sweep spec's defaults or grid (run with -help for the flags)\n"},
		{"alias of an axis", "--spec=x.yaml --n_steps=5", "-n_steps: alias of sgld_steps, a grid axis: set sgld_steps (or n_steps) in the sweep spec's defaults or grid"},
		{"mistyped", "--spec=x.yaml --sed=3", "-sed: did you mean --seed?"},
		{"reference epochs", "--spec=x.yaml --n_epochs=3", "-n_epochs: jemcheck counts optimiser steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+tt.args)
			msg, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit = %v, want status 2; output:\n%s", err, msg)
			}
			if !strings.Contains(string(msg), tt.want) || strings.Count(string(msg), "\n") != 1 {
				t.Errorf("output %q is not one line with %q", msg, tt.want)
			}
		})
	}
}

func flagSet() *flag.FlagSet { return flag.NewFlagSet("sweep", flag.ContinueOnError) }

// TestSpecInsideOutSurvives: a spec kept inside --out is an input, not clutter: the
// sweep runs there, twice, and the spec is untouched.
func TestSpecInsideOutSurvives(t *testing.T) {
	out := t.TempDir()
	spec, err := os.ReadFile("../../sweeps/smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(out, "my-spec.yaml")
	if err := os.WriteFile(mine, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var buf bytes.Buffer
		if err := run(context.Background(), mine, optionFlags(t, "--out="+out), &buf); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, buf.String())
		}
	}
	if got, err := os.ReadFile(mine); err != nil || !bytes.Equal(got, spec) {
		t.Errorf("the spec inside --out changed or vanished (err %v)", err)
	}
	if _, err := storage.VerifyManifest(context.Background(), out); err != nil {
		t.Errorf("sweep output incomplete: %v", err)
	}
}

// TestSpecFIFORefused: a sweep spec that is a FIFO is refused at once (it was opened
// and the launcher hung waiting for a writer), as is a device.
func TestSpecFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "spec.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, loc := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := ReadSpec(context.Background(), loc); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("ReadSpec(%s) accepted it", loc)
			} else {
				t.Logf("refused: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadSpec(%s) hangs", loc)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// killSpec is the sweep the kill test runs: sweeps/smoke.yaml's 4 points with 20 times
// its steps, so that each block's training takes long enough to be killed in.
const killSpec = `name: kill
tables: 10
methods: [baseline, jem, oracle]
defaults:
  steps: 4000
  lr: 0.1
grid:
  shape: ["2x2", "3x2"]
  samples: [20, 50]
`

// killArgs runs killSpec in blocks of one table (40 blocks), samples written, one
// report table per point.
func killArgs(spec string) string { return "--spec=" + spec + " --train_batch=2 --report_tables=1" }

// TestKilledSweepResumes kills a multi-block sweep (SIGKILL: no cleanup of any kind) at
// random moments and resumes it: every block that was complete when it died is reused
// (the resume recomputes only the blocks in flight or not begun, and those holding the
// report's tables), and the published files are byte-identical to an uninterrupted
// run's. The moments are drawn from a seeded generator over the uninterrupted run's
// duration (JEMCHECK_KILL_SEED picks another seed).
func TestKilledSweepResumes(t *testing.T) {
	testenv.Slow(t, "starts the sweep as a process, kills and resumes it several times")
	root := t.TempDir()
	spec := filepath.Join(root, "kill.yaml")
	if err := os.WriteFile(spec, []byte(killSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every run goes into out (config.json records --out); the uninterrupted one is
	// then moved aside.
	ref, out := filepath.Join(root, "ref"), filepath.Join(root, "out")
	start := time.Now()
	if code, log := launchtest.RunMain(t, killArgs(spec), out); code != 0 {
		t.Fatalf("uninterrupted sweep: exit %d\n%s", code, log)
	}
	full := time.Since(start)
	if err := os.Rename(out, ref); err != nil {
		t.Fatal(err)
	}
	seed := uint64(41)
	if s, err := strconv.ParseUint(os.Getenv("JEMCHECK_KILL_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, 45))
	for trial := range 4 {
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
		after := time.Duration(float64(full) * (0.05 + 0.75*rng.Float64()))
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+killArgs(spec)+" --out="+out)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		complete, total, committing := completeBlocks(t, out)
		code, resumed := launchtest.RunMain(t, killArgs(spec)+" --resume", out)
		if code != 0 {
			t.Fatalf("trial %d: resumed sweep: exit %d\n%s", trial, code, resumed)
		}
		reused := 0
		if m := regexp.MustCompile(`blocks_resumed=(\d+)`).FindStringSubmatch(resumed); m != nil {
			reused, _ = strconv.Atoi(m[1])
		}
		t.Logf("trial %d: killed after %v of %v: %d of %d blocks complete; the resume reused %d and recomputed %d",
			trial, after.Round(time.Millisecond), full.Round(time.Millisecond), complete, total, reused, total-reused)
		if !committing && reused < complete-4 { // at most one report block per point recomputed (a run killed while it published is completed, not resumed)
			t.Errorf("trial %d: %d blocks were complete when the sweep died, the resume reused %d", trial, complete, reused)
		}
		launchtest.SameOutputs(t, ref, out)
	}
}

// completeBlocks counts the blocks a killed run left complete in its staging folder
// (none if it left no staging folder: killed before it began, or after it published),
// the run's blocks, and whether its publishing had begun (the next run completes it).
func completeBlocks(t *testing.T, out string) (complete, total int, committing bool) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, storage.StagingPrefix+"*"))
	if len(dirs) != 1 {
		return 0, 0, false
	}
	runID := strings.TrimPrefix(filepath.Base(dirs[0]), storage.StagingPrefix)
	committing, _ = storage.CommitBegun(context.Background(), out, runID)
	b, err := storage.OpenExistingBucket(context.Background(), dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	raw, err := b.ReadAll(context.Background(), "config.json")
	if err != nil {
		return 0, 0, committing // killed before it wrote its config
	}
	var cfg launch.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	c, _, n, err := stages.CompletedBlocks(context.Background(), b, cfg.Options, cfg.Points)
	if err != nil {
		t.Fatal(err)
	}
	return len(c), n, committing
}

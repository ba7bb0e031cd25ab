package launch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// TestHandleSignals drives the signal handler with a fake signal channel: a signal
// cancels the run's context, cleanup runs once (after the run returned, or after the
// grace period), the exit status is 128+signal, and a second signal exits at once.
func TestHandleSignals(t *testing.T) {
	cases := []struct {
		name        string
		sigs        []os.Signal
		runReturns  bool // the run returns (stop is called) after the first signal
		blockClean  bool // cleanup hangs (the second signal must still exit)
		wantCleanup bool
		wantExit    []int
	}{
		{name: "no signal", runReturns: true},
		{name: "SIGINT, the run returns", sigs: []os.Signal{os.Interrupt}, runReturns: true, wantCleanup: true, wantExit: []int{130}},
		{name: "SIGTERM, the run hangs", sigs: []os.Signal{syscall.SIGTERM}, wantCleanup: true, wantExit: []int{143}},
		{name: "second SIGINT during cleanup", sigs: []os.Signal{os.Interrupt, os.Interrupt}, blockClean: true, wantCleanup: true, wantExit: []int{130}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			var mu sync.Mutex
			var cleaned []os.Signal
			var exits []int
			exited := make(chan struct{}, 2)
			release := make(chan struct{})
			cleanup := func(s os.Signal) int {
				mu.Lock()
				cleaned = append(cleaned, s)
				mu.Unlock()
				if c.blockClean {
					sigs <- c.sigs[1]
					<-release
				}
				return exitStatus(s)
			}
			exit := func(code int) {
				mu.Lock()
				exits = append(exits, code)
				mu.Unlock()
				exited <- struct{}{}
			}
			ctx, stop := handleSignals(context.Background(), sigs, 50*time.Millisecond, cleanup, exit)
			if len(c.sigs) > 0 {
				sigs <- c.sigs[0]
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("a signal did not cancel the run's context")
				}
			}
			switch {
			case c.blockClean:
				select {
				case <-exited: // the second signal's exit, while cleanup hangs
				case <-time.After(5 * time.Second):
					t.Fatal("a second signal did not exit")
				}
				close(release)
				<-exited
				mu.Lock()
				exits = exits[:1]
				mu.Unlock()
			case c.runReturns:
				stop() // returns only once the handler has exited, after a signal
			default:
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					t.Fatal("no exit after the grace period")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if (len(cleaned) > 0) != c.wantCleanup || len(cleaned) > 1 {
				t.Errorf("cleanup ran for %v, want it once: %v", cleaned, c.wantCleanup)
			}
			if len(exits) != len(c.wantExit) || len(exits) > 0 && exits[0] != c.wantExit[0] {
				t.Errorf("exit statuses %v, want %v", exits, c.wantExit)
			}
		})
	}
}

// TestInterrupted: the cleanup after a signal keeps the run's complete blocks for
// --resume (or removes its staging folder when none is complete), releases its lock,
// keeps the previous run, and says so in one line, only after verifying it.
func TestInterrupted(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		previous bool
		complete bool // block 0 of 2 is complete in the staging folder
		sig      os.Signal
		want     string
		status   int
	}{
		{"SIGINT over a previous run", true, false, os.Interrupt, "no block was complete: its staging folder is removed, its lock released; the previous results in %s are intact (run prev", 130},
		{"SIGTERM into an empty --out", false, false, syscall.SIGTERM, "no block was complete: its staging folder is removed, its lock released; %s holds no published run", 143},
		{"SIGINT with a block complete", true, true, os.Interrupt, "control: interrupted by SIGINT: 1 of 2 blocks complete are kept in %s/.jemcheck-staging-now/ " +
			"(rerun with --resume to continue), its lock released; the previous results in %s are intact (run prev", 130},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			b, err := storage.OpenBucket(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if c.previous {
				if err := b.WriteAll(ctx, storage.StagingKey("prev")+"results.parquet", []byte("r"), nil); err != nil {
					t.Fatal(err)
				}
				if _, err := storage.Commit(ctx, out, storage.CommitInfo{RunID: "prev", Pipeline: "control", ConfigSHA256: strings.Repeat("0", 64)}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := &Config{Pipeline: "control", Runner: "prism", RunID: "now", Points: []stages.Point{{Grid: schemas.Grid{XValues: 2, Classes: 2,
				Encoding: "scalar", Generator: "uniform", Samples: 10, Model: "linear", LR: 0.05, Steps: 10}, Tables: 10, Methods: []string{"jem"}}}}
			cfg.Options = stages.Options{Out: out, TrainBatch: 5, WriteSamples: true}
			if c.complete {
				for _, key := range []string{stages.ResultsPath(0, 0), stages.LearnedPath(0, 0), stages.SamplePath(0, 0)} {
					if err := schemas.WriteParquet(ctx, b, storage.StagingKey("now")+key, []schemas.ResultRow{{RunID: "r"}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			cfg.Staging, _ = storage.SubLocation(out, storage.StagingKey("now"))
			host, _ := os.Hostname()
			if _, err := storage.AcquireLock(ctx, out, storage.LockInfo{RunID: "now", Host: host, PID: os.Getpid(), Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := b.WriteAll(ctx, storage.StagingKey("now")+"samples/s0.parquet", []byte("half"), nil); err != nil {
				t.Fatal(err)
			}
			var errw bytes.Buffer
			if got := cfg.interrupted(&errw, c.sig); got != c.status {
				t.Errorf("status %d, want %d", got, c.status)
			}
			want := strings.ReplaceAll(c.want, "%s", out)
			if line := errw.String(); strings.Count(line, "\n") != 1 || !strings.Contains(line, want) {
				t.Errorf("message %q, want one line saying %q", line, want)
			}
			left, _ := filepath.Glob(filepath.Join(out, ".jemcheck*"))
			if wantLeft := map[bool]int{false: 0, true: 1}[c.complete]; len(left) != wantLeft {
				t.Errorf("left behind: %v, want %d (the kept staging folder)", left, wantLeft)
			}
			if c.previous {
				if _, err := storage.VerifyManifest(ctx, out); err != nil {
					t.Errorf("previous run: %v", err)
				}
			}
		})
	}
}

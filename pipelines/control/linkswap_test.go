package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestLinksSwappedDuringRun: while runs write their outputs, links to a folder of the
// user's files are planted at random moments (launchtest.SwapLinks). Whatever each run's
// fate (it may fail: a link is refused, never followed), nothing outside --out changes;
// round 0 is left alone and publishes.
func TestLinksSwappedDuringRun(t *testing.T) {
	testenv.Slow(t, "runs the pipeline several times")
	base := t.TempDir()
	outside, before := launchtest.UserFolder(t, base)
	for round := range 10 {
		out := filepath.Join(base, "out")
		stop := launchtest.SwapLinks(out, outside, uint64(round), 400*time.Millisecond)
		cfg := small(out)
		cfg.Overwrite = true
		err := run(context.Background(), cfg, &bytes.Buffer{})
		stop()
		t.Logf("round %d: %v", round, err)
		if round == 0 {
			if err != nil {
				t.Fatalf("a run without attacks: %v", err)
			}
			expectComplete(t, out)
		}
		launchtest.Unchanged(t, outside, before)
		os.RemoveAll(out) // the next round starts clean (links removed, never followed)
	}
}

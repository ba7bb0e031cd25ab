package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestLinksSwappedDuringReport: links planted at random moments while leaderboard
// report publishes (launchtest.SwapLinks) change nothing outside --out.
func TestLinksSwappedDuringReport(t *testing.T) {
	board := boardDir(t)
	base := t.TempDir()
	outside, before := launchtest.UserFolder(t, base)
	for round := range 12 {
		out := filepath.Join(base, "lb")
		stop := launchtest.SwapLinks(out, outside, uint64(round), 5*time.Millisecond)
		err := runCmd(context.Background(), config{Verb: "report", Board: []string{board}, Out: out, Seed: 1, Overwrite: true}, io.Discard)
		stop()
		t.Logf("round %d: %v", round, err)
		if round == 0 && err != nil {
			t.Fatalf("a report without attacks: %v", err)
		}
		launchtest.Unchanged(t, outside, before)
		os.RemoveAll(out)
	}
}

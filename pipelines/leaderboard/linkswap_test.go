package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestLinksSwappedDuringReport: links planted at random moments while leaderboard
// report publishes (launchtest.UnderLinkSwaps) change nothing outside --out.
func TestLinksSwappedDuringReport(t *testing.T) {
	board := boardDir(t)
	launchtest.UnderLinkSwaps(t, 12, 5*time.Millisecond, func(out string, _ int) error {
		return runCmd(context.Background(), config{Verb: "report", Board: []string{board}, Out: out, Seed: 1, Overwrite: true}, io.Discard)
	})
}

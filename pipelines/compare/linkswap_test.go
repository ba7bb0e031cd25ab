package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestLinksSwappedDuringCompare: links planted at random moments while compare
// publishes (launchtest.UnderLinkSwaps) change nothing outside --out.
func TestLinksSwappedDuringCompare(t *testing.T) {
	a, b := writeRun(t, 1, 0), writeRun(t, 2, 0.1)
	launchtest.UnderLinkSwaps(t, 12, 5*time.Millisecond, func(out string, _ int) error {
		return run(context.Background(), []string{a, b}, out, true, io.Discard)
	})
}

package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestLinksSwappedDuringRun: while runs write their outputs, links to a folder of the
// user's files are planted at random moments (launchtest.UnderLinkSwaps). Whatever each
// run's fate (it may fail: a link is refused, never followed), nothing outside --out
// changes; round 0 is left alone and publishes a complete run.
func TestLinksSwappedDuringRun(t *testing.T) {
	testenv.Slow(t, "runs the pipeline several times")
	launchtest.UnderLinkSwaps(t, 10, 400*time.Millisecond, func(out string, round int) error {
		cfg := small(out)
		cfg.Overwrite = true
		err := run(context.Background(), cfg, &bytes.Buffer{})
		if round == 0 && err == nil {
			expectComplete(t, out)
		}
		return err
	})
}

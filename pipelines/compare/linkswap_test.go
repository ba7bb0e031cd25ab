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

// TestLinksSwappedDuringCompare: links planted at random moments while compare
// publishes (launchtest.SwapLinks) change nothing outside --out; a compare left alone
// publishes.
func TestLinksSwappedDuringCompare(t *testing.T) {
	a, b := writeRun(t, 1, 0), writeRun(t, 2, 0.1)
	base := t.TempDir()
	outside, before := launchtest.UserFolder(t, base)
	for round := range 12 {
		out := filepath.Join(base, "cmp")
		stop := launchtest.SwapLinks(out, outside, uint64(round), 5*time.Millisecond)
		err := run(context.Background(), []string{a, b}, out, true, io.Discard)
		stop()
		t.Logf("round %d: %v", round, err)
		if round == 0 && err != nil {
			t.Fatalf("a compare without attacks: %v", err)
		}
		launchtest.Unchanged(t, outside, before)
		os.RemoveAll(out)
	}
}

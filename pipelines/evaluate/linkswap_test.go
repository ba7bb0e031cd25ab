package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// TestLinksSwappedDuringEvaluate: links planted at random moments while evaluate
// trains, scores and publishes (launchtest.UnderLinkSwaps) change nothing outside --out.
func TestLinksSwappedDuringEvaluate(t *testing.T) {
	testenv.Slow(t, "runs evaluate several times")
	from := writeFrom(t, tablePoint())
	logits := writeCSV(t, filepath.Join(t.TempDir(), "truth.csv"), []string{"table_id", "x", "y", "logit", "model"}, truthRows(t, from, "truth"))
	launchtest.UnderLinkSwaps(t, 8, 300*time.Millisecond, func(out string, _ int) error {
		var buf bytes.Buffer
		return run(context.Background(), Config{From: from, Logits: logits, Out: out, Methods: "baseline,jem", Model: "external", Overwrite: true, Stdout: &buf}, &buf)
	})
}

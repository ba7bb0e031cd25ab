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

// TestLinksSwappedDuringEvaluate: links planted at random moments while evaluate
// trains, scores and publishes (launchtest.SwapLinks) change nothing outside --out; an
// evaluation left alone publishes.
func TestLinksSwappedDuringEvaluate(t *testing.T) {
	testenv.Slow(t, "runs evaluate several times")
	from := writeFrom(t, tablePoint())
	base := t.TempDir()
	logits := writeCSV(t, filepath.Join(base, "truth.csv"), []string{"table_id", "x", "y", "logit", "model"}, truthRows(t, from, "truth"))
	outside, before := launchtest.UserFolder(t, base)
	for round := range 8 {
		out := filepath.Join(base, "evaluated")
		var buf bytes.Buffer
		stop := launchtest.SwapLinks(out, outside, uint64(round), 300*time.Millisecond)
		err := run(context.Background(), Config{From: from, Logits: logits, Out: out, Methods: "baseline,jem", Model: "external", Overwrite: true, Stdout: &buf}, &buf)
		stop()
		t.Logf("round %d: %v", round, err)
		if round == 0 && err != nil {
			t.Fatalf("an evaluation without attacks: %v\n%s", err, buf.String())
		}
		launchtest.Unchanged(t, outside, before)
		os.RemoveAll(out)
	}
}

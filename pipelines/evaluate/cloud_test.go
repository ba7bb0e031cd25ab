package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/emulators"
	"github.com/jemcheck/jemcheck/internal/emulators/outputs"
	"github.com/jemcheck/jemcheck/internal/testenv"
)

// TestCloudEvaluate: evaluate with --from (an export's folder), --logits (a CSV
// file) and --out all on gs://, then all on s3:// (real protocol servers on
// loopback, internal/emulators), publishes what it publishes with all three on
// file://: every file byte for byte but config.json, manifest.json and report.html,
// which show the locations and are compared by structure (internal/emulators/outputs).
func TestCloudEvaluate(t *testing.T) {
	testenv.Slow(t, "three pipeline runs against emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	from := writeFrom(t, tablePoint())
	logits := writeCSV(t, filepath.Join(t.TempDir(), "logits.csv"), []string{"table_id", "x", "y", "logit", "model"}, truthRows(t, from, "truth"))
	eval := func(t *testing.T, what string, c Config) {
		t.Helper()
		var buf bytes.Buffer
		c.Stdout, c.Methods, c.Model = &buf, "baseline,jem", "external"
		start := time.Now()
		if err := run(context.Background(), c, &buf); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, buf.String())
		}
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}
	ref := outputs.Run{Out: "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "evaluated"))}
	ref.Locs = map[string]string{"out": ref.Out, "from": "file://" + filepath.ToSlash(from), "logits": "file://" + filepath.ToSlash(logits)}
	eval(t, "file:// evaluate", Config{From: ref.Locs["from"], Logits: ref.Locs["logits"], Out: ref.Out})
	for _, s := range servers {
		t.Run(s.Scheme, func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "evaluated")}
			out.Locs = map[string]string{"out": out.Out, "from": s.Loc("jc-test", "export"), "logits": s.Object("jc-test", "inputs/logits.csv")}
			outputs.CopyDir(t, from, out.Locs["from"])
			outputs.CopyFile(t, logits, out.Locs["logits"])
			eval(t, s.Scheme+":// evaluate", Config{From: out.Locs["from"], Logits: out.Locs["logits"], Out: out.Out})
			n := outputs.Same(t, ref, out, "summary.json", "report.html", "config.json")
			t.Logf("evaluate --from, --logits, --out on %s://: %d files byte-identical to file://", s.Scheme, n)
		})
	}
	t.Logf("TestCloudEvaluate: %v in all", time.Since(begin).Round(time.Millisecond))
}

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

// TestCloudCompare: compare with both runs and --out on gs://, then on s3:// (real
// protocol servers on loopback, internal/emulators), publishes what it publishes with
// all on file://: compare.json and compare.html name the runs compared, so they are
// compared once each location is replaced by its role; manifest.json by structure
// (internal/emulators/outputs).
func TestCloudCompare(t *testing.T) {
	testenv.Slow(t, "emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	a, b := writeRun(t, 1, 0), writeRun(t, 1, 0.25)
	cmp := func(t *testing.T, what string, r outputs.Run) {
		t.Helper()
		var buf bytes.Buffer
		start := time.Now()
		if err := run(context.Background(), []string{r.Locs["run0"], r.Locs["run1"]}, r.Out, false, &buf); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, buf.String())
		}
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}
	ref := outputs.Run{Out: "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "cmp"))}
	ref.Locs = map[string]string{"out": ref.Out, "run0": "file://" + filepath.ToSlash(a), "run1": "file://" + filepath.ToSlash(b)}
	cmp(t, "file:// compare", ref)
	for _, s := range servers {
		t.Run(s.Scheme, func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "cmp")}
			out.Locs = map[string]string{"out": out.Out, "run0": s.Loc("jc-test", "runs/a"), "run1": s.Loc("jc-test", "runs/b")}
			outputs.CopyDir(t, a, out.Locs["run0"])
			outputs.CopyDir(t, b, out.Locs["run1"])
			cmp(t, s.Scheme+":// compare", out)
			outputs.Same(t, ref, out, "compare.json", "compare.html")
			t.Logf("compare of runs on %s:// into %s://: compare.json and compare.html identical but for the locations", s.Scheme, s.Scheme)
		})
	}
	t.Logf("TestCloudCompare: %v in all", time.Since(begin).Round(time.Millisecond))
}

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

// TestCloudSweep: sweeps/smoke.yaml with --spec and --out on gs://, then on s3://
// (real protocol servers on loopback, internal/emulators), publishes what it
// publishes with both on file://: every file byte for byte but config.json,
// manifest.json and report.html, which show the locations and are compared by
// structure (internal/emulators/outputs).
func TestCloudSweep(t *testing.T) {
	testenv.Slow(t, "three sweeps against emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	spec, err := filepath.Abs("../../sweeps/smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sweep := func(t *testing.T, what string, r outputs.Run) {
		t.Helper()
		var buf bytes.Buffer
		start := time.Now()
		if err := run(context.Background(), r.Locs["spec"], optionFlags(t, "--out="+r.Out), &buf); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, buf.String())
		}
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}
	ref := outputs.Run{Out: "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "smoke"))}
	ref.Locs = map[string]string{"out": ref.Out, "spec": "file://" + filepath.ToSlash(spec)}
	sweep(t, "file:// sweep", ref)
	for _, s := range servers {
		t.Run(s.Scheme, func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "smoke")}
			out.Locs = map[string]string{"out": out.Out, "spec": s.Object("jc-test", "specs/smoke.yaml")}
			outputs.CopyFile(t, spec, out.Locs["spec"])
			sweep(t, s.Scheme+":// sweep", out)
			n := outputs.Same(t, ref, out, "summary.json", "report.html", "tables/point-0003.parquet", "figures/kl_vs_samples.svg")
			t.Logf("sweep --spec and --out on %s://: %d files byte-identical to file://", s.Scheme, n)
		})
	}
	t.Logf("TestCloudSweep: %v in all", time.Since(begin).Round(time.Millisecond))
}

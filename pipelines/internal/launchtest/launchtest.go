// Package launchtest holds what the pipeline commands' tests share: a TestMain that
// lets the test binary act as the command itself (for exit-status tests) and readers
// for a finished run's outputs.
package launchtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
)

// EnvArgs names the variable that turns a test binary into the command: its value is
// split on spaces into the command's arguments.
const EnvArgs = "JEMCHECK_RUN_MAIN"

// Main is a package's TestMain. With EnvArgs set it runs the command's main (which
// exits on its own on failure) and exits 0; otherwise it runs the tests on prism
// in-process.
func Main(m *testing.M, name string, main func()) {
	if args := os.Getenv(EnvArgs); args != "" {
		os.Args = append([]string{name}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	ptest.Main(m)
}

// Bucket opens out (any bucket URL), closed when the test ends.
func Bucket(t *testing.T, out string) *blob.Bucket {
	t.Helper()
	b, err := storage.OpenBucket(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Results reads the result rows of a finished run under out: every results/ file, in
// key order (point, then block), so the rows come in run-id order within a point.
func Results(t *testing.T, out string) []schemas.ResultRow {
	t.Helper()
	ctx := context.Background()
	b := Bucket(t, out)
	var keys []string
	it := b.List(&blob.ListOptions{Prefix: "results/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, obj.Key)
	}
	slices.Sort(keys)
	var rows []schemas.ResultRow
	for _, k := range keys {
		rs, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, k)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	if len(keys) == 0 {
		t.Fatalf("no results/ files under %s", out)
	}
	return rows
}

// ExpectFiles reports an error for each key missing under out.
func ExpectFiles(t *testing.T, out string, keys ...string) {
	t.Helper()
	b := Bucket(t, out)
	for _, key := range keys {
		if ok, err := b.Exists(context.Background(), key); err != nil || !ok {
			t.Errorf("output %s missing (err %v)", key, err)
		}
	}
}

// CheckTemperature reports an error for each row whose temperature columns are not
// what EvaluateRun gives a run with finite logits (every row that is neither diverged
// nor nonfinite): β* in [prob.TemperatureMin, prob.TemperatureMax] and a joint KL at
// β* that is finite and at most kl_joint (β = 1 is one of the candidates).
func CheckTemperature(t *testing.T, rows []schemas.ResultRow) {
	t.Helper()
	for _, r := range rows {
		if r.Diverged || r.Nonfinite {
			continue
		}
		if !(r.BestTemperature >= prob.TemperatureMin && r.BestTemperature <= prob.TemperatureMax) ||
			!(r.KLJointBestTemperature >= 0 && r.KLJointBestTemperature <= r.KLJoint+1e-12) {
			t.Errorf("%s: best_temperature %v, kl_joint_best_temperature %v (kl_joint %v)", r.RunID, r.BestTemperature, r.KLJointBestTemperature, r.KLJoint)
		}
	}
}

// RunMain runs the test binary as its command (Main) with args and --out=out, and
// returns the exit status and everything it printed.
func RunMain(t *testing.T, args, out string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), EnvArgs+"="+args+" --out="+out)
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(msg)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(msg)
	}
	t.Fatalf("run %s: %v\n%s", args, err, msg)
	return 0, ""
}

// SameOutputs checks that b holds the same files as a, byte for byte, but for
// manifest.json, whose run id differs (its file list must not).
func SameOutputs(t *testing.T, a, b string) {
	t.Helper()
	files := func(dir string) []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		slices.Sort(out)
		return out
	}
	fa, fb := files(a), files(b)
	if !slices.Equal(fa, fb) {
		t.Fatalf("the runs hold different files:\n%v\n%v", fa, fb)
	}
	for _, f := range fa {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if f == storage.ManifestKey {
			var ma, mb storage.Manifest
			if json.Unmarshal(x, &ma) != nil || json.Unmarshal(y, &mb) != nil || !slices.Equal(ma.Files, mb.Files) || ma.ConfigSHA256 != mb.ConfigSHA256 {
				t.Errorf("manifest.json lists other files or another config")
			}
			continue
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
	t.Logf("%d files compared: all identical but manifest.json's run id", len(fa))
}

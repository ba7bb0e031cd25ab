// Package launchtest holds what the pipeline commands' tests share: a TestMain that
// lets the test binary act as the command itself (for exit-status tests) and readers
// for a finished run's outputs.
package launchtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// EnvArgs names the variable that turns a test binary into the command: its value is
// split on spaces into the command's arguments.
const EnvArgs = "JEMCHECK_RUN_MAIN"

// Main is a package's TestMain. With EnvArgs set it runs the command's main (which
// exits on its own on failure) and exits 0; otherwise it runs the tests on prism
// in-process with progress lines silenced.
func Main(m *testing.M, name string, main func()) {
	if args := os.Getenv(EnvArgs); args != "" {
		os.Args = append([]string{name}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	stages.Quiet = true
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

// Results reads results.parquet of a finished run under out.
func Results(t *testing.T, out string) []schemas.ResultRow {
	t.Helper()
	rs, err := schemas.ReadParquet[schemas.ResultRow](context.Background(), Bucket(t, out), "results.parquet")
	if err != nil {
		t.Fatal(err)
	}
	return rs
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

// Package testenv says which tests a run includes: the default `go test ./...` runs
// the fast ones; the slow end-to-end ones (several pipeline runs, the portable runner,
// commands started as processes) run when JEMCHECK_SLOW=1, as scripts/test (and so CI)
// sets it.
package testenv

import (
	"os"
	"testing"
)

// SlowEnv is the environment variable that turns the slow tests on.
const SlowEnv = "JEMCHECK_SLOW"

// Slow skips t unless the slow tests are on (and always under -short); why says what
// makes it slow.
func Slow(t testing.TB, why string) {
	t.Helper()
	if testing.Short() || os.Getenv(SlowEnv) != "1" {
		t.Skipf("slow (%s): runs with %s=1, as scripts/test sets it", why, SlowEnv)
	}
}

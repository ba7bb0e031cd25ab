package stages

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var (
	progressMu sync.Mutex
	started    = time.Now()
)

// Quiet silences progress lines (tests set it).
var Quiet bool

// progress prints one line per unit of work to stderr. On a local runner the workers
// run in this process, so these are the live progress lines; on Dataflow they land in
// the worker logs.
func progress(format string, args ...any) {
	if Quiet {
		return
	}
	progressMu.Lock()
	defer progressMu.Unlock()
	fmt.Fprintf(os.Stderr, "  %6.2fs "+format+"\n", append([]any{time.Since(started).Seconds()}, args...)...)
}

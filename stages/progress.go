package stages

import (
	"fmt"
	"os"
	"sync"
)

var progressMu sync.Mutex

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
	fmt.Fprintf(os.Stderr, "  · "+format+"\n", args...)
}

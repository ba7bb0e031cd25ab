package stages

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// progress logs one line per unit of work through Beam's log package, at info level:
// on Dataflow it lands in the worker logs; on a local runner the worker's log stream
// reaches prism in this process, which re-logs it through log/slog, where the launcher
// prints it as a progress line (see launch.Logging).
func progress(ctx context.Context, format string, args ...any) {
	log.Infof(ctx, ProgressPrefix+format, args...)
}

// ProgressPrefix starts every progress line, so a log handler can tell them from the
// rest of a worker's log.
const ProgressPrefix = "progress: "

package stages

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict"
)

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*writeVerdictFn)(nil)).Elem())
}

// VerdictPath is where WriteVerdict writes.
const VerdictPath = "verdict.json"

// WriteVerdict writes verdict.json for a single-point run (the regression check): the
// verdict of the point, its numbers and the thresholds. It runs inside the pipeline, so
// a job submitted with --async (a Flex Template launch) still leaves its verdict.
//
// In: PCollection<schemas.Summary> (one element). Out: PCollection<string> (the key written).
func WriteVerdict(s beam.Scope, opts Options, summary beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteVerdict")
	return beam.ParDo(s, &writeVerdictFn{OutBucket: OutBucket{Out: opts.Out}, Thresholds: opts.Thresholds}, summary)
}

type writeVerdictFn struct {
	OutBucket
	Thresholds verdict.Thresholds
}

func (f *writeVerdictFn) ProcessElement(ctx context.Context, sum schemas.Summary, emit func(string)) error {
	v, err := verdict.VerdictOf(sum, f.Thresholds)
	if err != nil {
		return err
	}
	if err := schemas.WriteJSON(ctx, f.bucket, VerdictPath, v); err != nil {
		return fmt.Errorf("write %s: %w", VerdictPath, err)
	}
	emit(VerdictPath)
	return nil
}

package stages

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/storage"
)

func init() {
	beam.RegisterFunction(oneFn)
	beam.RegisterFunction(sumFn)
	beam.RegisterDoFn(reflect.TypeOf((*publishFn)(nil)).Elem())
}

// Publication names the run a Publish stage makes visible: the output location the
// user chose (the stages wrote under its staging folder) and what the manifest records.
type Publication struct {
	Out          string // the user's --out
	RunID        string
	Pipeline     string
	ConfigSHA256 string
	Overwrite    bool
}

// Publish runs once every write stage has finished: it commits the run's staging
// folder into the output location (storage.Commit: manifest last, the previous run's
// files kept complete until then) and releases the run's lock. Because it runs inside
// the pipeline, a job that does not wait (Dataflow --async) publishes itself.
//
// In: PCollection<string> per write stage (the keys written). Out: PCollection<string>
// (manifest.json, once published).
func Publish(s beam.Scope, pub Publication, written ...beam.PCollection) beam.PCollection {
	s = s.Scope("stages.Publish")
	keys := beam.Flatten(s, written...)
	count := beam.Combine(s, sumFn, beam.ParDo(s, oneFn, keys))
	return beam.ParDo(s, &publishFn{Publication: pub}, count)
}

func oneFn(string) int   { return 1 }
func sumFn(a, b int) int { return a + b }

type publishFn struct {
	Publication Publication
}

func (f *publishFn) ProcessElement(ctx context.Context, written int, emit func(string)) error {
	p := f.Publication
	if prev, err := storage.Published(ctx, p.Out); err == nil && prev != nil && prev.RunID != p.RunID {
		progress(ctx, "publish: replacing the previous run %s in %s", storage.DescribeRun(prev.RunID, prev.Pipeline), p.Out)
	}
	m, err := storage.Commit(ctx, p.Out, storage.CommitInfo{RunID: p.RunID, Pipeline: p.Pipeline,
		ConfigSHA256: p.ConfigSHA256, Overwrite: p.Overwrite})
	if err != nil {
		return fmt.Errorf("publish run %s into %s: %w", p.RunID, p.Out, err)
	}
	if err := storage.ReleaseLock(ctx, p.Out, p.RunID); err != nil {
		return fmt.Errorf("release the lock of %s: %w", p.Out, err)
	}
	beam.NewCounter("jemcheck", "files_published").Inc(ctx, int64(len(m.Files)))
	progress(ctx, "publish: %d files (%d written by the stages) -> %s", len(m.Files), written, storage.ManifestKey)
	emit(storage.ManifestKey)
	return nil
}

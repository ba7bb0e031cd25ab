package stages

import (
	"context"
	"fmt"
)

// asyncWrite runs a write stage's Parquet writes of table blocks beside the pipeline,
// one at a time: ProcessElement hands the block's write over and emits its key at
// once, so the next block's training and evaluation go on (on another core, where
// there is one) while the file is encoded; the next write, FinishBundle and Teardown
// wait for it. A failed write fails the bundle (at the next write or in FinishBundle),
// and the runner discards the bundle's outputs and retries it, as when ProcessElement
// itself fails: no key is published whose file was not written.
type asyncWrite struct {
	pending chan error // the running write's result; nil when none runs
}

// start waits for the previous write and starts write.
func (a *asyncWrite) start(write func() error) error {
	if err := a.wait(); err != nil {
		return err
	}
	done := make(chan error, 1)
	a.pending = done
	go func() {
		defer func() {
			if r := recover(); r != nil { // fail the bundle, as a panic in ProcessElement would
				done <- fmt.Errorf("write panicked: %v", r)
			}
		}()
		done <- write()
	}()
	return nil
}

// wait waits for the running write, if any, and returns its error.
func (a *asyncWrite) wait() error {
	if a.pending == nil {
		return nil
	}
	err := <-a.pending
	a.pending = nil
	return err
}

// FinishBundle waits for the bundle's last results file.
func (f *writeResultsFn) FinishBundle(_ context.Context, _ func(string)) error { return f.async.wait() }

// Teardown waits for a write still running (a failed bundle's), then closes the bucket.
func (f *writeResultsFn) Teardown() error {
	f.async.wait()
	return f.OutBucket.Teardown()
}

// FinishBundle waits for the bundle's last learned file.
func (f *writeLearnedFn) FinishBundle(_ context.Context, _ func(string)) error { return f.async.wait() }

// Teardown waits for a write still running (a failed bundle's), then closes the bucket.
func (f *writeLearnedFn) Teardown() error {
	f.async.wait()
	return f.OutBucket.Teardown()
}

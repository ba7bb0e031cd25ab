package stages

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAsyncWrite: writes run one at a time, in order; a failed or panicking write is
// returned by the next start or by wait, once.
func TestAsyncWrite(t *testing.T) {
	var a asyncWrite
	if err := a.wait(); err != nil {
		t.Fatalf("wait with nothing running: %v", err)
	}
	var running, order atomic.Int32
	for i := range 5 {
		if err := a.start(func() error {
			if running.Add(1) != 1 {
				t.Error("two writes at once")
			}
			if got := order.Add(1); got != int32(i+1) {
				t.Errorf("write %d ran as %d", i, got)
			}
			running.Add(-1)
			return nil
		}); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if err := a.wait(); err != nil || order.Load() != 5 {
		t.Fatalf("wait: %v after %d writes", err, order.Load())
	}
	boom := errors.New("boom")
	if err := a.start(func() error { return boom }); err != nil {
		t.Fatal(err)
	}
	if err := a.start(func() error { return nil }); !errors.Is(err, boom) {
		t.Fatalf("start after a failed write: %v, want boom", err)
	}
	if err := a.wait(); err != nil {
		t.Fatalf("the failure is returned once: %v", err)
	}
	if err := a.start(func() error { panic("bad") }); err != nil {
		t.Fatal(err)
	}
	if err := a.wait(); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("a panicking write: %v", err)
	}
}

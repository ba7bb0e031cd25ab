package storage

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

var cryptoRand = rand.Reader

// LockInfo is the content of an output location's lock: who holds it.
type LockInfo struct {
	RunID    string    `json:"run_id"`
	Pipeline string    `json:"pipeline"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	// Remote is true when the run's work happens elsewhere (Dataflow, a job server):
	// the launching process may exit while the run goes on, so only the lock's age
	// makes it stale.
	Remote bool `json:"remote"`
}

func (l LockInfo) String() string {
	return fmt.Sprintf("run %s (%s, host %s, pid %d, started %s)", l.RunID, l.Pipeline, l.Host, l.PID,
		l.Started.UTC().Format(time.RFC3339))
}

// LockedError is the refusal to start while another live run holds the location.
type LockedError struct {
	Loc   string
	Other LockInfo
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("--out %s is in use by %s; wait for it to finish or use another --out "+
		"(if that run is dead, delete %s: jemcheck takes a lock over by itself when its process is gone "+
		"on this host or after %v)", e.Loc, e.Other, strings.TrimSuffix(e.Loc, "/")+"/"+LockKey, StaleLockAge)
}

// stale says why a lock held by other can be taken over, or "" if it cannot.
func (l LockInfo) stale(now time.Time, host string) string {
	if age := now.Sub(l.Started); age > StaleLockAge {
		return fmt.Sprintf("it is %v old (stale after %v)", age.Round(time.Minute), StaleLockAge)
	}
	if !l.Remote && l.Host == host && l.PID > 0 && !processAlive(l.PID) {
		return fmt.Sprintf("its process %d is gone", l.PID)
	}
	return ""
}

// AcquireLock takes the lock of loc for the run described by me (creating a local
// directory if it does not exist). A lock held by a live run is a *LockedError; a
// stale one is taken over, and the returned note says so (empty otherwise).
func AcquireLock(ctx context.Context, loc string, me LockInfo) (note string, err error) {
	data, err := json.MarshalIndent(me, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode lock: %w", err)
	}
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return "", err
	}
	defer b.Close()
	for attempt := 0; ; attempt++ {
		held, err := createExclusive(ctx, b, loc, LockKey, data)
		if err != nil {
			return note, fmt.Errorf("create lock %s: %w", LockKey, err)
		}
		if !held {
			return note, nil
		}
		raw, err := b.ReadAll(ctx, LockKey)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue // released meanwhile
		}
		if err != nil {
			return note, fmt.Errorf("read lock %s: %w", LockKey, err)
		}
		var other LockInfo
		if err := json.Unmarshal(raw, &other); err != nil {
			return note, fmt.Errorf("%s exists but is not a jemcheck lock (%v): remove it if no jemcheck run is using --out %s", LockKey, err, loc)
		}
		why := other.stale(time.Now(), me.Host)
		if why == "" || attempt > 0 {
			return note, &LockedError{Loc: loc, Other: other}
		}
		if err := deleteIfExists(ctx, b, LockKey); err != nil {
			return note, err
		}
		note = fmt.Sprintf("took over the lock of %s: %s", other, why)
	}
}

// createExclusive writes key only if it does not exist; held reports that it did.
// Local directories use O_EXCL; other drivers their does-not-exist precondition.
func createExclusive(ctx context.Context, b *blob.Bucket, loc, key string, data []byte) (held bool, err error) {
	if dir, ok := localDir(loc); ok {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		f, err := os.OpenFile(filepath.Join(dir, key), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			os.Remove(f.Name())
			return false, err
		}
		return false, nil
	}
	err = b.WriteAll(ctx, key, data, &blob.WriterOptions{IfNotExist: true, ContentType: "application/json"})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return true, nil
	}
	return false, err
}

// ReleaseLock deletes loc's lock if run runID holds it.
func ReleaseLock(ctx context.Context, loc, runID string) error {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	raw, err := b.ReadAll(ctx, LockKey)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read lock %s: %w", LockKey, err)
	}
	var held LockInfo
	if json.Unmarshal(raw, &held) != nil || held.RunID != runID {
		return nil // not ours
	}
	return deleteIfExists(ctx, b, LockKey)
}

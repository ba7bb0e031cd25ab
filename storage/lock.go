package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
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
	// TakingOver, when set, is the run that holds the claim to take Other's stale lock
	// over (another run found the same stale lock at the same time).
	TakingOver *LockInfo
}

func (e *LockedError) Error() string {
	lock := strings.TrimSuffix(e.Loc, "/") + "/" + LockKey
	if e.TakingOver != nil {
		return fmt.Sprintf("--out %s is in use: %s is taking over the stale lock of %s; wait for it to finish or use another --out "+
			"(if no jemcheck run is using it, delete %s and %s*)", e.Loc, e.TakingOver, e.Other, lock, claimPrefix)
	}
	return fmt.Sprintf("--out %s is in use by %s; wait for it to finish or use another --out "+
		"(if that run is dead, delete %s: jemcheck takes a lock over by itself when its process is gone "+
		"on this host or after %v)", e.Loc, e.Other, lock, StaleLockAge)
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

// Taking a stale lock over.
//
// Deleting a stale lock and creating one's own is not enough: two runs that read the
// same stale lock would both delete it (the second deleting the first one's new lock)
// and both go on. gocloud.dev has no conditional delete, so a takeover is instead
// decided by an exclusive create: the run that takes over the stale lock whose bytes
// are S first creates the claim object claimPrefix+sha256(S) (its own LockInfo) with
// the same exclusive create as the lock itself. Exactly one run can create it; that
// run re-reads the lock, and only if it still holds S (nobody else can delete S: only
// the claim's holder does) deletes it, creates its own lock exclusively, reads it back
// and removes the claims. Every other run sees the claim, waits for the lock to change
// and then meets the new lock like any live lock (a *LockedError). A claim whose
// holder died mid-takeover is stale by the lock's own rule, and is taken over the same
// way (a claim of the claim, keyed by the claim's bytes). A late run that claims S
// after the takeover finished finds the lock changed and backs off.
//
// The exclusive create is atomic on every location jemcheck supports:
//   - local directories (plain paths and file:// URLs, with or without a query):
//     link(2) of a fully written temporary file to the key, which fails with EEXIST if
//     the key exists, done here rather than by fileblob (whose IfNotExist is a stat then
//     a rename, atomic only within one process); across hosts this needs a file system
//     whose link(2) is atomic (local disks; NFS, where it is the classic lock primitive);
//   - mem://: memblob checks and stores the key under the bucket's mutex, and one
//     process shares one bucket per URL (sharedMem); mem:// exists only in-process;
//   - gs://: gcsblob writes with the precondition DoesNotExist (ifGenerationMatch=0),
//     decided by Cloud Storage;
//   - s3://: s3blob writes with If-None-Match: *, decided by S3 (AWS S3 since 2024).
//
// Other drivers get gocloud.dev's IfNotExist, atomic only if the driver makes it so.
// On every location that is not local, a run first checks that the store refuses an
// exclusive create of an existing object, and refuses a store that does not (an
// S3-compatible server that ignores If-None-Match): see "Checked, not assumed".

// claimPrefix starts the key of a claim to take a stale lock (or claim) over.
const claimPrefix = LockKey + ".takeover."

func claimKey(stale []byte) string {
	h := sha256.Sum256(stale)
	return claimPrefix + hex.EncodeToString(h[:16])
}

// IsLockKey reports whether key is the lock or one of its helpers (a takeover claim, a
// lock being written).
func IsLockKey(key string) bool { return key == LockKey || strings.HasPrefix(key, LockKey+".") }

// takeoverWait is how long a run that lost the claim on a stale lock waits for the
// winner to put its own lock in place.
var takeoverWait = 10 * time.Second

// AcquireLock takes the lock of loc for the run described by me (creating a local
// directory if it does not exist). A lock held by a live run is a *LockedError; a
// stale one is taken over (by exactly one run, however many find it at once), and the
// returned note says so (empty otherwise). The lock read back after taking it is me.
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
	if err := probeExclusive(ctx, b, loc, me, data); err != nil {
		return "", err
	}
	for attempt := 0; ; attempt++ {
		if attempt == 10 {
			return note, fmt.Errorf("lock %s keeps changing under this run; try again", LockKey)
		}
		held, err := createExclusive(ctx, b, loc, LockKey, data)
		if err != nil {
			return note, fmt.Errorf("create lock %s: %w", LockKey, err)
		}
		if !held {
			if err := checkLockIs(ctx, b, data); err != nil {
				return note, err
			}
			sweepClaims(ctx, b, loc)
			return note, nil
		}
		raw, err := readLock(ctx, b, LockKey)
		if IsNotFound(err) {
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
		if why == "" {
			return note, &LockedError{Loc: loc, Other: other}
		}
		claims, by, err := claim(ctx, b, loc, raw, data, me.Host, 0)
		if err != nil {
			return note, err
		}
		if claims == nil {
			// Another run is taking this lock over: wait for its own lock, then meet it.
			if !waitChanged(ctx, b, raw) {
				return note, &LockedError{Loc: loc, Other: other, TakingOver: by}
			}
			continue
		}
		took, err := replaceStale(ctx, b, loc, raw, data)
		for _, k := range claims {
			if derr := deleteIfExists(ctx, b, k); derr != nil && err == nil {
				err = derr
			}
		}
		if err != nil {
			return note, err
		}
		if took {
			note = fmt.Sprintf("took over the lock of %s: %s", other, why)
			if err := checkLockIs(ctx, b, data); err != nil {
				return note, err
			}
			sweepClaims(ctx, b, loc)
			return note, nil
		}
		// The lock changed before the claim was made (taken over and perhaps released
		// already): look again.
	}
}

// replaceStale, with the claim on the stale lock raw held, replaces it by data if the
// lock still holds raw; took reports whether it did.
func replaceStale(ctx context.Context, b *blob.Bucket, loc string, raw, data []byte) (took bool, err error) {
	cur, err := readLock(ctx, b, LockKey)
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read lock %s: %w", LockKey, err)
	}
	if !bytes.Equal(cur, raw) {
		return false, nil
	}
	if err := deleteIfExists(ctx, b, LockKey); err != nil {
		return false, err
	}
	held, err := createExclusive(ctx, b, loc, LockKey, data)
	if err != nil {
		return false, fmt.Errorf("create lock %s: %w", LockKey, err)
	}
	return !held, nil // held: a new run took the free lock first
}

// claim creates the claim on the stale object whose bytes are stale, taking over a
// stale claim the same way (depth counts the claims of claims). It returns the claim
// keys this run now holds (to delete once done), or nil and the claim's holder when
// another run holds it.
func claim(ctx context.Context, b *blob.Bucket, loc string, stale, data []byte, host string, depth int) (keys []string, by *LockInfo, err error) {
	k := claimKey(stale)
	held, err := createExclusive(ctx, b, loc, k, data)
	if err != nil {
		return nil, nil, fmt.Errorf("create takeover claim %s: %w", k, err)
	}
	if !held {
		return []string{k}, nil, nil
	}
	raw, err := readLock(ctx, b, k)
	if IsNotFound(err) {
		return nil, &LockInfo{RunID: "(another run, just finished)"}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read takeover claim %s: %w", k, err)
	}
	var holder LockInfo
	if json.Unmarshal(raw, &holder) != nil || depth >= 3 || holder.stale(time.Now(), host) == "" {
		return nil, &holder, nil
	}
	// The claim's holder died mid-takeover: claim its claim, then check it is unchanged.
	keys, by, err = claim(ctx, b, loc, raw, data, host, depth+1)
	if keys == nil {
		return nil, by, err
	}
	if cur, err := readLock(ctx, b, k); err != nil || !bytes.Equal(cur, raw) {
		for _, key := range keys {
			deleteIfExists(ctx, b, key)
		}
		return nil, &holder, nil
	}
	return append(keys, k), nil, nil
}

// waitChanged waits (takeoverWait at most) until the lock no longer holds raw.
func waitChanged(ctx context.Context, b *blob.Bucket, raw []byte) bool {
	deadline := time.Now().Add(takeoverWait)
	for time.Now().Before(deadline) {
		cur, err := readLock(ctx, b, LockKey)
		if IsNotFound(err) || err == nil && !bytes.Equal(cur, raw) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// checkLockIs reads the lock back and checks it holds data.
func checkLockIs(ctx context.Context, b *blob.Bucket, data []byte) error {
	cur, err := readLock(ctx, b, LockKey)
	if err != nil {
		return fmt.Errorf("read back lock %s: %w", LockKey, err)
	}
	if !bytes.Equal(cur, data) {
		return fmt.Errorf("lock %s was replaced right after this run took it (another run is starting into the same --out); try again", LockKey)
	}
	return nil
}

// sweepClaims removes takeover claims left by runs that died mid-takeover (those
// jemcheck sealed: its name and a run's LockInfo); with the lock held every claim is spent (its stale lock is gone, so its holder backs off).
func sweepClaims(ctx context.Context, b *blob.Bucket, loc string) {
	objs, err := list(ctx, b, &blob.ListOptions{Prefix: claimPrefix, Delimiter: "/"})
	if err != nil {
		return
	}
	dir, local := exclusiveDir(loc)
	for _, o := range objs {
		// Only jemcheck's own claims (see "Seals"): a user's file of a similar name stays.
		if !o.IsDir && lockHelperSealed(ctx, b, dir, local, o.Key) {
			deleteIfExists(ctx, b, o.Key)
		}
	}
	// Probes left by a process killed mid-probe, once old enough not to be a live run's.
	probes, err := list(ctx, b, &blob.ListOptions{Prefix: probePrefix, Delimiter: "/"})
	if err != nil {
		return
	}
	for _, o := range probes {
		if o.IsDir || !lockHelperSealed(ctx, b, dir, local, o.Key) {
			continue
		}
		raw, err := readLock(ctx, b, o.Key)
		var l LockInfo
		if err == nil && json.Unmarshal(raw, &l) == nil && time.Since(l.Started) > probeMaxAge {
			deleteIfExists(ctx, b, o.Key)
		}
	}
}

// maxLockBytes bounds a lock or claim read: jemcheck's are a few hundred bytes.
const maxLockBytes = 64 << 10

// readLock reads the lock or claim key, bounded (a lock that is a directory, a device
// or huge is an error, not an endless read).
func readLock(ctx context.Context, b *blob.Bucket, key string) ([]byte, error) {
	return ReadSmallKey(ctx, b, key, maxLockBytes)
}

// createExclusive writes key only if it does not exist; held reports that it did.
// Local directories write a temporary file and hard-link it to key (link(2) fails if
// key exists, and a reader never sees a half-written lock); other drivers use their
// does-not-exist precondition (see "Taking a stale lock over").
func createExclusive(ctx context.Context, b *blob.Bucket, loc, key string, data []byte) (held bool, err error) {
	if dir, ok := exclusiveDir(loc); ok {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		f, err := os.CreateTemp(dir, LockKey+".tmp-*")
		if err != nil {
			return false, err
		}
		defer os.Remove(f.Name())
		_, werr := f.Write(data)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return false, err
		}
		err = os.Link(f.Name(), filepath.Join(dir, filepath.FromSlash(key)))
		if errors.Is(err, fs.ErrExist) {
			return true, nil
		}
		return false, err
	}
	err = b.WriteAll(ctx, key, data, &blob.WriterOptions{IfNotExist: true, ContentType: "application/json"})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return true, nil
	}
	return false, err
}

// Checked, not assumed. A store that ignores the does-not-exist precondition (an
// S3-compatible server that ignores If-None-Match: *) would let a second run overwrite
// a live run's lock, read its own bytes back and go on, deleting the first run's
// staging folder. So before a run on a location that is not local creates its lock,
// it creates a probe object of its own (probeKey: the lock's name, "probe-" and the
// run id's hash, holding its LockInfo) exclusively twice: the second create must be
// refused. A store that accepts it is refused, and nothing is written there but the
// probe, deleted again. A probe left by a process killed between the two creates is
// jemcheck's (lockHelperSealed) and removed by a later run once it is an hour old.

// probePrefix starts the key of a probe of the store's exclusive create.
const probePrefix = LockKey + ".probe-"

// probeMaxAge is how old a left probe must be before a run holding the lock removes
// it (a younger one may be another run's, between its two creates).
const probeMaxAge = time.Hour

func probeKey(runID string) string {
	h := sha256.Sum256([]byte(runID))
	return probePrefix + hex.EncodeToString(h[:8])
}

// NoExclusiveCreateError is the refusal of a store that does not honour exclusive
// creates: jemcheck's lock cannot keep two runs apart there.
type NoExclusiveCreateError struct{ Loc string }

func (e *NoExclusiveCreateError) Error() string {
	return fmt.Sprintf("--out %s: the store does not honour exclusive creates (it replaced an existing object although "+
		"the write asked to create it only if absent: If-None-Match: * on S3), so jemcheck's lock cannot keep two runs "+
		"from writing there at once; jemcheck will not run there: use a store that honours it (AWS S3, Google Cloud "+
		"Storage, MinIO) or a local --out", e.Loc)
}

// probeExclusive checks, on a location that is not local, that the store refuses an
// exclusive create of an existing object (see "Checked, not assumed").
func probeExclusive(ctx context.Context, b *blob.Bucket, loc string, me LockInfo, data []byte) error {
	if _, local := exclusiveDir(loc); local {
		return nil // link(2), decided by the kernel
	}
	k := probeKey(me.RunID)
	held, err := createExclusive(ctx, b, loc, k, data)
	if err != nil {
		return fmt.Errorf("probe the store's exclusive create (%s): %w", k, err)
	}
	defer deleteIfExists(context.WithoutCancel(ctx), b, k)
	if held {
		return fmt.Errorf("probe the store's exclusive create: %s exists already (another run with this run's id?)", k)
	}
	again, err := createExclusive(ctx, b, loc, k, data)
	if err != nil {
		return fmt.Errorf("probe the store's exclusive create (%s): %w", k, err)
	}
	if !again {
		return &NoExclusiveCreateError{Loc: loc}
	}
	return nil
}

// exclusiveDir returns the directory of any local location, a file:// URL with a query
// included (fileblob keeps keys as file names under it).
func exclusiveDir(loc string) (string, bool) {
	pl, err := parseLoc(loc)
	if err != nil || pl.dir == "" {
		return "", false
	}
	abs, err := filepath.Abs(pl.dir)
	if err != nil {
		return "", false
	}
	return abs, true
}

// ReleaseLock deletes loc's lock if run runID holds it.
func ReleaseLock(ctx context.Context, loc, runID string) error {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	raw, err := readLock(ctx, b, LockKey)
	if IsNotFound(err) {
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

// CheckLock reports, reading only, whether a live run holds loc's lock: a *LockedError
// when one does (a stale lock is no obstacle, a run takes it over; a lock that is not
// jemcheck's is an error). For runs that check without running (a dry run).
func CheckLock(ctx context.Context, loc, host string) error {
	if missingDir(loc) {
		return nil
	}
	b, err := OpenExistingBucket(ctx, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	raw, err := readLock(ctx, b, LockKey)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read lock %s: %w", LockKey, err)
	}
	var other LockInfo
	if err := json.Unmarshal(raw, &other); err != nil {
		return fmt.Errorf("%s exists but is not a jemcheck lock (%v): remove it if no jemcheck run is using --out %s", LockKey, err, loc)
	}
	if other.stale(time.Now(), host) == "" {
		return &LockedError{Loc: loc, Other: other}
	}
	return nil
}

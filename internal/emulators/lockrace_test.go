package emulators_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/internal/emulators"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/storage"
)

// TestStorageStaleLockRace is storage's stale-lock race on gs:// and s3:// (the
// storage package's own tests stay on local folders and mem://, without these
// drivers): round after round, 16 runs find the same stale lock at once; exactly one
// takes it over, every other gets a LockedError, and the winner's run, published
// (staging folder, seal, commit) once every racer has its answer, verifies with its
// own run id and leaves no lock, claim or staging object. The stale locks: a day old
// from another host, a gone process of this host, and a gone process's lock whose
// takeover claim a run that died mid-takeover left behind.
func TestStorageStaleLockRace(t *testing.T) {
	testenv.Slow(t, "hundreds of conditional writes against emulators")
	begin := time.Now()
	ctx := context.Background()
	host, _ := os.Hostname()
	dead := gone(t)
	cases := []struct {
		name          string
		racers, round int
		stale         func(r int) storage.LockInfo
		diedClaiming  bool
	}{
		{"day-old lock of another host", 16, 6, func(r int) storage.LockInfo {
			return storage.LockInfo{RunID: fmt.Sprintf("old-%d", r), Host: "elsewhere", PID: 1, Started: time.Now().Add(-storage.StaleLockAge - time.Hour)}
		}, false},
		{"gone process of this host", 16, 6, func(r int) storage.LockInfo {
			return storage.LockInfo{RunID: fmt.Sprintf("dead-%d", r), Host: host, PID: dead, Started: time.Now()}
		}, false},
		{"claim left by a run that died mid-takeover", 8, 4, func(r int) storage.LockInfo {
			return storage.LockInfo{RunID: fmt.Sprintf("dead-%d", r), Host: host, PID: dead, Started: time.Now()}
		}, true},
	}
	for _, s := range emulators.Both(t) {
		for _, c := range cases {
			t.Run(s.Scheme+"/"+strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				start := time.Now()
				loc := s.Loc("jc-test", "storage-race/"+strings.ReplaceAll(c.name, " ", "-"))
				s.Requests()
				for round := range c.round {
					raw := plant(t, loc, storage.LockKey, c.stale(round))
					if c.diedClaiming {
						plant(t, loc, claimKey(raw), storage.LockInfo{RunID: "died-taking-over", Host: host, PID: dead, Started: time.Now()})
					}
					var acquired, done sync.WaitGroup
					var mu sync.Mutex
					var winners []string
					var errs []error
					gate := make(chan struct{})
					for i := range c.racers {
						id := fmt.Sprintf("r%d-%02d", round, i)
						acquired.Add(1)
						done.Add(1)
						go func() {
							defer done.Done()
							<-gate
							_, err := storage.AcquireLock(ctx, loc, storage.LockInfo{RunID: id, Pipeline: "test", Host: host, PID: os.Getpid(), Started: time.Now()})
							mu.Lock()
							if err == nil {
								winners = append(winners, id)
							} else {
								errs = append(errs, err)
							}
							mu.Unlock()
							acquired.Done()
							if err != nil {
								return
							}
							acquired.Wait() // a lock the winner released could be taken afresh
							if err := publish(ctx, loc, id); err != nil {
								t.Errorf("%s: %v", id, err)
							}
							if err := storage.ReleaseLock(ctx, loc, id); err != nil {
								t.Errorf("%s: release: %v", id, err)
							}
						}()
					}
					close(gate)
					done.Wait()
					if len(winners) != 1 {
						t.Fatalf("round %d: %d runs took the stale lock over (%v), want exactly 1", round, len(winners), winners)
					}
					for _, err := range errs {
						if le := (*storage.LockedError)(nil); !errors.As(err, &le) {
							t.Errorf("round %d: a loser got %v, want a LockedError", round, err)
						}
					}
					m, err := storage.VerifyManifest(ctx, loc)
					if err != nil || m.RunID != winners[0] || len(m.Files) != 3 {
						t.Fatalf("round %d: manifest %+v, %v; want run %s's 3 files", round, m, err, winners[0])
					}
					if left := bookkeeping(t, s, loc); len(left) > 0 {
						t.Errorf("round %d: left behind %v", round, left)
					}
				}
				w, refused := emulators.Conditional(s.Requests())
				t.Logf("%s, %s: %d rounds of %d racers, one winner each, every manifest verified; %d create-if-absent requests, %d refused by the server (412); %v",
					s.Scheme, c.name, c.round, c.racers, w, refused, time.Since(start).Round(time.Millisecond))
			})
		}
	}
	t.Logf("TestStorageStaleLockRace: %v in all", time.Since(begin).Round(time.Millisecond))
}

// TestClaimKeyMatches checks this file's claimKey against storage's: with a live
// run's claim planted under it, AcquireLock does not take the stale lock over but
// waits for the claim's holder, and meets the lock that holder then puts in place.
// (Under another key it would take the stale lock over at once.)
func TestClaimKeyMatches(t *testing.T) {
	testenv.Slow(t, "emulators")
	s := emulators.GCS(t)
	loc := s.Loc("jc-test", "claim-key")
	host, _ := os.Hostname()
	taker := storage.LockInfo{RunID: "taker", Host: host, PID: os.Getpid(), Started: time.Now()}
	raw := plant(t, loc, storage.LockKey, storage.LockInfo{RunID: "old", Host: "elsewhere", Started: time.Now().Add(-storage.StaleLockAge - time.Hour)})
	plant(t, loc, claimKey(raw), taker)
	go func() {
		time.Sleep(300 * time.Millisecond)
		plant(t, loc, storage.LockKey, taker) // the holder of the claim took the lock over
	}()
	_, err := storage.AcquireLock(context.Background(), loc, storage.LockInfo{RunID: "me", Host: host, PID: os.Getpid(), Started: time.Now()})
	if le := (*storage.LockedError)(nil); !errors.As(err, &le) || le.Other.RunID != "taker" {
		t.Fatalf("AcquireLock = %v; want a LockedError naming the run that held the claim (is claimKey still storage's?)", err)
	}
}

// claimKey is storage's key of the claim on a stale lock whose bytes are raw
// (storage/lock.go; TestClaimKeyMatches keeps the two in step).
func claimKey(raw []byte) string {
	h := sha256.Sum256(raw)
	return storage.LockKey + ".takeover." + hex.EncodeToString(h[:16])
}

func plant(t *testing.T, loc, key string, info storage.LockInfo) []byte {
	t.Helper()
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b, err := storage.OpenBucket(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(context.Background(), key, data, nil); err != nil {
		t.Fatal(err)
	}
	return data
}

// publish is what a run does with the lock held: clean up earlier runs, stage its
// files in a sealed staging folder, commit.
func publish(ctx context.Context, loc, id string) error {
	if _, err := storage.RecoverStaging(ctx, loc, id); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	sha := strings.Repeat("0", 64)
	if err := storage.SealStaging(ctx, loc, id, "test", sha); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	st, err := storage.SubLocation(loc, storage.StagingKey(id))
	if err != nil {
		return err
	}
	b, err := storage.OpenBucket(ctx, st)
	if err != nil {
		return err
	}
	defer b.Close()
	for k, v := range map[string]string{"config.json": id, "results.parquet": id + strings.Repeat("r", 100), "summary.json": id + "{}"} {
		if err := b.WriteAll(ctx, k, []byte(v), nil); err != nil {
			return err
		}
	}
	_, err = storage.Commit(ctx, loc, storage.CommitInfo{RunID: id, Pipeline: "test", ConfigSHA256: sha})
	return err
}

// bookkeeping lists the lock, claim and staging objects under loc.
func bookkeeping(t *testing.T, s *emulators.Server, loc string) []string {
	t.Helper()
	b, err := storage.OpenBucket(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var left []string
	it := b.List(nil)
	for {
		o, err := it.Next(context.Background())
		if err != nil {
			break
		}
		if storage.IsLockKey(o.Key) || strings.HasPrefix(o.Key, storage.StagingPrefix) {
			left = append(left, o.Key)
		}
	}
	return left
}

// gone returns the id of a process of this host that has exited.
func gone(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestOwnershipWhileClaimsCome: while other runs take a stale lock over (their
// takeover claims appear and are deleted again), the ownership check of a run
// starting into the same --out never takes a claim for the user's file: one that
// vanished between the listing and the read is nothing of the user's. (Found by
// TestCloudStaleLockRace: a racer was refused with "--out ... is not empty
// (.jemcheck.lock.takeover.…) and holds no jemcheck manifest.json".)
func TestOwnershipWhileClaimsCome(t *testing.T) {
	testenv.Slow(t, "emulators")
	ctx := context.Background()
	host, _ := os.Hostname()
	layout := storage.Layout{Owned: func(string) bool { return false }}
	for _, s := range emulators.Both(t) {
		t.Run(s.Scheme, func(t *testing.T) {
			loc := s.Loc("jc-test", "ownership-claims")
			b, err := storage.OpenBucket(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // a run taking stale locks over, again and again
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					data, _ := json.MarshalIndent(storage.LockInfo{RunID: fmt.Sprintf("taker-%d", i), Host: host, PID: os.Getpid(), Started: time.Now()}, "", "  ")
					k := claimKey([]byte(fmt.Sprint(i)))
					if err := b.WriteAll(ctx, k, data, &blob.WriterOptions{IfNotExist: true}); err != nil {
						t.Error(err)
						return
					}
					if err := b.Delete(ctx, k); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			checks, refused := 0, 0
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); checks++ {
				if _, err := storage.CheckOwnership(ctx, loc, layout, nil, false); err != nil {
					refused++
					if refused == 1 {
						t.Errorf("CheckOwnership while claims come and go: %v", err)
					}
				}
			}
			close(stop)
			wg.Wait()
			if refused > 0 {
				t.Errorf("%d of %d ownership checks refused a --out that held only claims", refused, checks)
			} else {
				t.Logf("%d ownership checks while claims came and went: none refused", checks)
			}
		})
	}
}

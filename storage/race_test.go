package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
)

// plantLock writes info as loc's lock, bypassing AcquireLock (a run that died holding it).
func plantLock(t *testing.T, loc, key string, info LockInfo) []byte {
	t.Helper()
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	put(t, loc, map[string]string{key: string(data)})
	return data
}

// leftovers returns the lock, claim and staging objects under loc.
func leftovers(t *testing.T, loc string) []string {
	t.Helper()
	var left []string
	for k := range contents(t, loc) {
		if IsLockKey(k) || strings.HasPrefix(k, StagingPrefix) {
			left = append(left, k)
		}
	}
	return left
}

// TestStaleLockRace: many runs (goroutines) find the same stale lock at once, round
// after round; exactly one takes it over, the others are refused with a LockedError,
// and the winner's run, published after every racer has had its answer, is complete
// (its manifest checked file by file) with no staging folder, claim or lock left.
func TestStaleLockRace(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	dead := deadPID(t)
	cases := []struct {
		name    string
		racers  int
		rounds  int
		stale   func(round int) LockInfo
		claimBy *LockInfo // a claim on the stale lock left by a run that died mid-takeover
	}{
		{name: "old lock from another host", racers: 16, rounds: 8, stale: func(r int) LockInfo {
			return LockInfo{RunID: fmt.Sprintf("old-%d", r), Host: "elsewhere", PID: 1, Started: time.Now().Add(-StaleLockAge - time.Hour)}
		}},
		{name: "dead process on this host", racers: 16, rounds: 8, stale: func(r int) LockInfo {
			return LockInfo{RunID: fmt.Sprintf("dead-%d", r), Host: host, PID: dead, Started: time.Now()}
		}},
		{name: "claim of a run that died mid-takeover", racers: 8, rounds: 4, stale: func(r int) LockInfo {
			return LockInfo{RunID: fmt.Sprintf("dead-%d", r), Host: host, PID: dead, Started: time.Now()}
		}, claimBy: &LockInfo{RunID: "died-taking-over", Host: host, PID: dead, Started: time.Now()}},
	}
	for _, c := range cases {
		for kind, loc := range locations(t) {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				loc += "-" + strings.ReplaceAll(c.name, " ", "_")
				for round := range c.rounds {
					raw := plantLock(t, loc, LockKey, c.stale(round))
					if c.claimBy != nil {
						plantLock(t, loc, claimKey(raw), *c.claimBy)
					}
					var acquired, done sync.WaitGroup
					var mu sync.Mutex
					var winners []string
					var errs []error
					start := make(chan struct{})
					for i := range c.racers {
						id := fmt.Sprintf("r%d-%02d", round, i)
						acquired.Add(1)
						done.Add(1)
						go func() {
							defer done.Done()
							<-start
							_, err := AcquireLock(ctx, loc, LockInfo{RunID: id, Pipeline: "test", Host: host, PID: os.Getpid(), Started: time.Now()})
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
							// Only once every racer has its answer: a run the winner
							// released could otherwise be taken afresh.
							acquired.Wait()
							if _, err := RecoverStaging(ctx, loc, id); err != nil {
								t.Errorf("%s: RecoverStaging: %v", id, err)
							}
							files := map[string]string{}
							for j := range 5 {
								files[fmt.Sprintf("samples/s%d.parquet", j)] = id + strings.Repeat("x", j*100)
							}
							files["config.json"] = id
							if _, err := stage(t, loc, id, files, true); err != nil {
								t.Errorf("%s: publish: %v", id, err)
							}
							if err := ReleaseLock(ctx, loc, id); err != nil {
								t.Errorf("%s: release: %v", id, err)
							}
						}()
					}
					close(start)
					done.Wait()
					if len(winners) != 1 {
						t.Fatalf("round %d: %d runs took the stale lock over (%v), want exactly 1", round, len(winners), winners)
					}
					for _, err := range errs {
						if le := (*LockedError)(nil); !errors.As(err, &le) {
							t.Errorf("round %d: a loser got %v, want a LockedError", round, err)
						}
					}
					m, err := VerifyManifest(ctx, loc)
					if err != nil || m.RunID != winners[0] || len(m.Files) != 6 {
						t.Fatalf("round %d: published manifest %+v, %v; want run %s's 6 files, each in place", round, m, err, winners[0])
					}
					if left := leftovers(t, loc); len(left) > 0 {
						t.Errorf("round %d: left behind %v", round, left)
					}
				}
			})
		}
	}
}

// TestStaleLockClaimHeld: while a live run holds the claim on a stale lock (it is
// taking it over), another run waits, then is refused naming it; the stale lock and
// the claim stay.
func TestStaleLockClaimHeld(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	defer func(d time.Duration) { takeoverWait = d }(takeoverWait)
	takeoverWait = 200 * time.Millisecond
	for kind, loc := range locations(t) {
		t.Run(kind, func(t *testing.T) {
			raw := plantLock(t, loc, LockKey, LockInfo{RunID: "old", Host: "elsewhere", Started: time.Now().Add(-StaleLockAge - time.Hour)})
			claim := plantLock(t, loc, claimKey(raw), LockInfo{RunID: "taker", Host: host, PID: os.Getpid(), Started: time.Now()})
			_, err := AcquireLock(ctx, loc, LockInfo{RunID: "me", Host: host, PID: os.Getpid(), Started: time.Now()})
			var le *LockedError
			if !errors.As(err, &le) || le.TakingOver == nil || le.TakingOver.RunID != "taker" || !strings.Contains(err.Error(), "run taker") {
				t.Fatalf("AcquireLock = %v; want a LockedError naming the run taking the lock over", err)
			}
			got := contents(t, loc)
			if got[LockKey] != string(raw) || got[claimKey(raw)] != string(claim) {
				t.Errorf("the refused run changed the lock or the claim: %v", got)
			}
		})
	}
}

const (
	envRaceLoc = "JEMCHECK_TEST_LOCK_RACE_LOC"
	envRaceID  = "JEMCHECK_TEST_LOCK_RACE_ID"
	envRaceAt  = "JEMCHECK_TEST_LOCK_RACE_AT"
)

// TestLockRaceHelper is one racing process of TestStaleLockRaceProcesses: at the given
// time it tries to take the lock and prints "won" or "lost"; a winner exits holding
// it, once the others are done.
func TestLockRaceHelper(t *testing.T) {
	loc := os.Getenv(envRaceLoc)
	if loc == "" {
		t.Skip("run by TestStaleLockRaceProcesses")
	}
	at, _ := strconv.ParseInt(os.Getenv(envRaceAt), 10, 64)
	time.Sleep(time.Until(time.Unix(0, at)))
	host, _ := os.Hostname()
	_, err := AcquireLock(context.Background(), loc, LockInfo{RunID: os.Getenv(envRaceID), Host: host, PID: os.Getpid(), Started: time.Now()})
	if le := (*LockedError)(nil); err != nil && !errors.As(err, &le) {
		fmt.Printf("RESULT error %v\n", err)
		return
	}
	if err != nil {
		fmt.Println("RESULT lost")
		return
	}
	fmt.Println("RESULT won")
	// Stay alive while the others race: a winner's lock is stale once it exits.
	time.Sleep(time.Until(time.Unix(0, at).Add(1500 * time.Millisecond)))
}

// TestStaleLockRaceProcesses: several processes take the same stale lock of a local
// directory at the same moment, round after round (each round's lock is the previous
// winner's, whose process has exited): exactly one wins, and the lock is its own.
func TestStaleLockRaceProcesses(t *testing.T) {
	testenv.Slow(t, "starts processes")
	host, _ := os.Hostname()
	loc := filepath.Join(t.TempDir(), "out")
	plantLock(t, loc, LockKey, LockInfo{RunID: "old", Host: "elsewhere", Started: time.Now().Add(-StaleLockAge - time.Hour)})
	for round := range 5 {
		const procs = 6
		at := time.Now().Add(300 * time.Millisecond).UnixNano()
		outs := make([]bytes.Buffer, procs)
		cmds := make([]*exec.Cmd, procs)
		for i := range procs {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockRaceHelper$", "-test.v")
			cmd.Env = append(os.Environ(), envRaceLoc+"="+loc, envRaceID+"="+fmt.Sprintf("p%d-%d", round, i), envRaceAt+"="+strconv.FormatInt(at, 10))
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[i] = cmd
		}
		var winners []string
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
			}
			switch out := outs[i].String(); {
			case strings.Contains(out, "RESULT won"):
				winners = append(winners, fmt.Sprintf("p%d-%d", round, i))
			case !strings.Contains(out, "RESULT lost"):
				t.Fatalf("process %d:\n%s", i, out)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d processes took the stale lock over (%v), want exactly 1", round, len(winners), winners)
		}
		var held LockInfo
		if err := json.Unmarshal([]byte(contents(t, loc)[LockKey]), &held); err != nil || held.RunID != winners[0] || held.Host != host {
			t.Fatalf("round %d: lock holds %+v (%v), want the winner %s", round, held, err, winners[0])
		}
		for _, k := range leftovers(t, loc) {
			if k != LockKey {
				t.Errorf("round %d: left behind %s", round, k)
			}
		}
	}
}

// TestPublishVerifiesFiles: a staged file that is deleted or changed after the run
// sealed it stops the publish before anything is touched (no manifest of the new run,
// the previous run complete and byte for byte as it was); a file that goes missing
// while the files are moved in stops it before the manifest is written.
func TestPublishVerifiesFiles(t *testing.T) {
	ctx := context.Background()
	old := map[string]string{"config.json": "1", "results.parquet": "r1", "samples/s0.parquet": "a"}
	next := map[string]string{"config.json": "2", "results.parquet": "r2-new", "samples/s0.parquet": "bb", "samples/s1.parquet": "cc"}
	cases := []struct {
		name     string
		staged   func(t *testing.T, loc string, b func(string) string) // after sealing
		moved    func(t *testing.T, loc string)                        // after moving in
		wantErr  string
		wantPrev bool // the previous run stays complete (else: no manifest at all)
	}{
		{name: "staged file deleted", staged: func(t *testing.T, loc string, k func(string) string) {
			b, _ := OpenBucket(ctx, loc)
			defer b.Close()
			deleteIfExists(ctx, b, k("samples/s1.parquet"))
		}, wantErr: "samples/s1.parquet is missing", wantPrev: true},
		{name: "staged file truncated", staged: func(t *testing.T, loc string, k func(string) string) {
			put(t, loc, map[string]string{k("results.parquet"): "r2"})
		}, wantErr: "has 2 bytes, the manifest says 6", wantPrev: true},
		{name: "staged file changed, same size", staged: func(t *testing.T, loc string, k func(string) string) {
			put(t, loc, map[string]string{k("samples/s0.parquet"): "xx"})
		}, wantErr: "sha256", wantPrev: true},
		{name: "file vanishes while moving in", moved: func(t *testing.T, loc string) {
			b, _ := OpenBucket(ctx, loc)
			defer b.Close()
			deleteIfExists(ctx, b, "samples/s1.parquet")
		}, wantErr: "samples/s1.parquet is missing"},
	}
	for _, c := range cases {
		for kind, loc := range locations(t) {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				loc += "-" + strings.ReplaceAll(c.name, " ", "_")
				if _, err := stage(t, loc, "r1", old, false); err != nil {
					t.Fatal(err)
				}
				before := contents(t, loc)
				st := map[string]string{}
				for k, v := range next {
					st[StagingKey("r2")+k] = v
				}
				sealStaging(t, loc, "r2")
				put(t, loc, st)
				b, err := OpenBucket(ctx, loc)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				info := CommitInfo{RunID: "r2", Pipeline: "test", ConfigSHA256: strings.Repeat("0", 64)}
				if _, err := seal(ctx, b, StagingKey("r2"), info); err != nil {
					t.Fatal(err)
				}
				if c.staged != nil {
					c.staged(t, loc, func(k string) string { return StagingKey("r2") + k })
				}
				if c.moved != nil {
					commitHook = func(string) { c.moved(t, loc) }
					defer func() { commitHook = nil }()
				}
				_, err = Commit(ctx, loc, info)
				commitHook = nil
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Commit = %v; want an error mentioning %q", err, c.wantErr)
				}
				state := OutputState(ctx, loc, "r2")
				if c.wantPrev {
					after := contents(t, loc)
					for k, v := range before {
						if after[k] != v {
							t.Errorf("%s changed: %q, was %q", k, after[k], v)
						}
					}
					if m, err := VerifyManifest(ctx, loc); err != nil || m.RunID != "r1" {
						t.Errorf("previous run: %+v, %v; want r1 complete", m, err)
					}
					if !strings.Contains(state, "previous results in "+loc+" are intact (run r1") {
						t.Errorf("OutputState = %q", state)
					}
					return
				}
				if _, ok := contents(t, loc)[ManifestKey]; ok {
					t.Errorf("a manifest was written for a run with a missing file")
				}
				if ie := (*IncompleteError)(nil); !errors.As(err, &ie) || !strings.Contains(err.Error(), "holds no complete run") {
					t.Errorf("Commit = %v; want an IncompleteError saying the location holds no complete run", err)
				}
				if !strings.Contains(state, "holds no published run") {
					t.Errorf("OutputState = %q", state)
				}
				// The next run cannot finish this commit: it discards it and says so.
				lines, err := RecoverStaging(ctx, loc, "r3")
				if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "could not finish the interrupted commit of run r2") {
					t.Errorf("RecoverStaging = %q, %v", lines, err)
				}
				if _, ok := contents(t, loc)[ManifestKey]; ok {
					t.Errorf("RecoverStaging wrote a manifest for a run with a missing file")
				}
			})
		}
	}
}

package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var testLayout = Layout{
	Owned: regexp.MustCompile(`^(config\.json|results\.parquet|tables\.parquet|summary\.json|figures/[a-z_]+\.svg|samples/s\d+\.parquet)$`).MatchString,
	Dirs:  []string{"figures/", "samples/"},
}

// locations returns a local directory and a mem:// location, fresh per test.
func locations(t *testing.T) map[string]string {
	return map[string]string{
		"local": filepath.Join(t.TempDir(), "out"),
		"mem":   "mem://" + strings.ReplaceAll(t.Name(), "/", "-"),
	}
}

func put(t *testing.T, loc string, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for k, v := range files {
		if err := b.WriteAll(ctx, k, []byte(v), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// contents returns every object under loc (the whole tree, bookkeeping included).
func contents(t *testing.T, loc string) map[string]string {
	t.Helper()
	ctx := context.Background()
	got := map[string]string{}
	b, err := openBucket(ctx, loc, false)
	if err != nil {
		return got // a local directory that does not exist
	}
	defer b.Close()
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			break
		}
		data, err := b.ReadAll(ctx, obj.Key)
		if err != nil {
			t.Fatal(err)
		}
		got[obj.Key] = string(data)
	}
	return got
}

// sealStaging seals run id's staging folder in loc, as a run does when it creates it.
func sealStaging(t *testing.T, loc, id string) {
	t.Helper()
	if err := SealStaging(context.Background(), loc, id, "test", strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
}

// stage writes files into run id's staging folder and commits them.
func stage(t *testing.T, loc, id string, files map[string]string, overwrite bool) (*Manifest, error) {
	t.Helper()
	st := map[string]string{}
	for k, v := range files {
		st[StagingKey(id)+k] = v
	}
	sealStaging(t, loc, id)
	put(t, loc, st)
	return Commit(context.Background(), loc, CommitInfo{RunID: id, Pipeline: "test", ConfigSHA256: strings.Repeat("0", 64), Overwrite: overwrite})
}

func TestCheckOwnership(t *testing.T) {
	run1 := map[string]string{"config.json": "{}", "results.parquet": "r1", "figures/kl.svg": "<svg/>", "samples/s0.parquet": "s"}
	cases := []struct {
		name      string
		setup     func(t *testing.T, loc string)
		inputs    []string // relative to loc
		overwrite bool
		want      []string // substrings of the refusal; nil = allowed
		wantPrev  bool
	}{
		{"missing location", func(*testing.T, string) {}, nil, false, nil, false},
		{"user files, no manifest", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{"results.parquet": "MY THESIS", "figures/holiday.png": "x"})
		}, nil, false, []string{"is not empty", "figures/", "results.parquet", "--overwrite"}, false},
		{"user files, no manifest, overwrite", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{"notes.txt": "mine"})
		}, nil, true, nil, false},
		{"only the run's input inside", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{"mytables.csv": "t"})
		}, []string{"mytables.csv"}, false, nil, false},
		{"input at an output name, no manifest", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{"tables.parquet": "t"})
		}, []string{"tables.parquet"}, true, []string{"input", "tables.parquet", "would replace"}, false},
		{"only jemcheck bookkeeping", func(t *testing.T, loc string) {
			sealStaging(t, loc, "old")
			put(t, loc, map[string]string{LockKey: "{}", StagingKey("old") + "results.parquet": "x",
				claimKey([]byte("x")): `{"run_id": "a", "pipeline": "control", "host": "h", "pid": 1, "started": "2026-01-01T00:00:00Z", "remote": false}`})
		}, nil, false, nil, false},
		// D11: a folder of the user's named like a staging folder, and a file named like
		// a takeover claim, are not jemcheck's: listed, hidden as they are.
		{"user folder named like a staging folder", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{StagingKey("mybackup") + "precious.txt": "mine"})
		}, nil, false, []string{"is not empty", ".jemcheck-staging-mybackup/"}, false},
		{"user file named like a takeover claim", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{LockKey + ".takeover.abc": "mine"})
		}, nil, false, []string{"is not empty", ".jemcheck.lock.takeover.abc"}, false},
		{"staging seal naming another run", func(t *testing.T, loc string) {
			sealStaging(t, loc, "other")
			b, _ := OpenBucket(context.Background(), loc)
			defer b.Close()
			data, _ := b.ReadAll(context.Background(), StagingKey("other")+StagingSealKey)
			put(t, loc, map[string]string{StagingKey("copy") + StagingSealKey: string(data)})
		}, nil, false, []string{"is not empty", ".jemcheck-staging-copy/"}, false},
		{"previous run", func(t *testing.T, loc string) {
			if _, err := stage(t, loc, "r1", run1, false); err != nil {
				t.Fatal(err)
			}
			put(t, loc, map[string]string{"notes.txt": "mine", "figures/My-Plot.png": "mine"})
		}, nil, false, nil, true},
		{"previous run and its own tables as input", func(t *testing.T, loc string) {
			if _, err := stage(t, loc, "r1", map[string]string{"tables.parquet": "t"}, false); err != nil {
				t.Fatal(err)
			}
		}, []string{"tables.parquet"}, false, []string{"input", "tables.parquet", "would replace"}, false},
		{"output name the manifest does not list", func(t *testing.T, loc string) {
			if _, err := stage(t, loc, "r1", run1, false); err != nil {
				t.Fatal(err)
			}
			put(t, loc, map[string]string{"figures/holiday.svg": "mine"})
		}, nil, false, []string{"figures/holiday.svg", "not written by the last jemcheck run"}, false},
		{"listed file changed since", func(t *testing.T, loc string) {
			if _, err := stage(t, loc, "r1", run1, false); err != nil {
				t.Fatal(err)
			}
			put(t, loc, map[string]string{"samples/s0.parquet": "edited by hand"})
		}, nil, false, []string{"samples/s0.parquet", "changed since"}, false},
		{"another run nested inside", func(t *testing.T, loc string) {
			sub, _ := SubLocation(loc, "regress")
			if _, err := stage(t, sub, "r0", run1, false); err != nil {
				t.Fatal(err)
			}
		}, nil, false, nil, false},
		{"a manifest listing a name jemcheck never writes", func(t *testing.T, loc string) {
			if _, err := stage(t, loc, "r1", map[string]string{"config.json": "{}", "notes.txt": "mine"}, false); err != nil {
				t.Fatal(err)
			}
		}, nil, true, []string{"notes.txt", "not a jemcheck output name"}, false},
		{"foreign manifest", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{ManifestKey: `{"files": ["a"]}`})
		}, nil, true, []string{"not a jemcheck manifest"}, false},
	}
	for _, c := range cases {
		for kind, loc := range locations(t) {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				loc := loc + "-" + strings.ReplaceAll(c.name, " ", "_")
				c.setup(t, loc)
				before := contents(t, loc)
				var inputs []string
				for _, in := range c.inputs {
					if kind == "local" {
						inputs = append(inputs, filepath.Join(loc, in))
					} else {
						inputs = append(inputs, loc+"/"+in)
					}
				}
				prev, err := CheckOwnership(context.Background(), loc, testLayout, inputs, c.overwrite)
				if c.want == nil {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if (prev != nil) != c.wantPrev {
						t.Errorf("previous manifest = %v, want one: %v", prev, c.wantPrev)
					}
				} else {
					var oe *OwnershipError
					if !errors.As(err, &oe) {
						t.Fatalf("got %v, want an OwnershipError mentioning %q", err, c.want)
					}
					for _, w := range c.want {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("error %q does not mention %q", err, w)
						}
					}
				}
				if after := contents(t, loc); !mapsEqual(before, after) {
					t.Errorf("CheckOwnership changed the location:\nbefore %v\nafter  %v", before, after)
				}
				if kind == "local" && c.name == "missing location" {
					if _, err := os.Stat(loc); !os.IsNotExist(err) {
						t.Errorf("the missing location was created")
					}
				}
			})
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestCommitReplacesOnlyOwnFiles(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range locations(t) {
		t.Run(kind, func(t *testing.T) {
			if _, err := stage(t, loc, "r1", map[string]string{"config.json": "1", "results.parquet": "r1",
				"samples/s0.parquet": "a", "samples/s1.parquet": "b", "figures/old.svg": "o"}, false); err != nil {
				t.Fatal(err)
			}
			put(t, loc, map[string]string{"notes.txt": "mine", "samples/mydata.parquet": "mine"})
			m, err := stage(t, loc, "r2", map[string]string{"config.json": "2", "results.parquet": "r2", "samples/s0.parquet": "c"}, false)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"config.json": "2", "results.parquet": "r2", "samples/s0.parquet": "c",
				"notes.txt": "mine", "samples/mydata.parquet": "mine"}
			got := contents(t, loc)
			manifest := got[ManifestKey]
			delete(got, ManifestKey)
			if !mapsEqual(got, want) {
				t.Errorf("after the second run:\n got %v\nwant %v", got, want)
			}
			if !strings.Contains(manifest, `"run_id": "r2"`) {
				t.Errorf("manifest is not run r2's:\n%s", manifest)
			}
			if v, err := VerifyManifest(ctx, loc); err != nil || v.RunID != "r2" || len(v.Files) != 3 || len(m.Files) != 3 {
				t.Errorf("VerifyManifest = %+v, %v; want run r2 with 3 files", v, err)
			}
			if kind == "local" {
				if _, err := os.Stat(filepath.Join(loc, "figures")); !os.IsNotExist(err) {
					t.Errorf("emptied figures/ folder left behind (err %v)", err)
				}
			}
			// A retried commit of the same run (Beam may rerun the Publish bundle) is a no-op.
			if again, err := Commit(ctx, loc, CommitInfo{RunID: "r2", Pipeline: "test", ConfigSHA256: strings.Repeat("0", 64)}); err != nil || again.RunID != "r2" {
				t.Errorf("retried commit = %+v, %v; want run r2's manifest", again, err)
			}
			if _, err := VerifyManifest(ctx, loc); err != nil {
				t.Errorf("after a retried commit: %v", err)
			}
			// A commit with nothing staged publishes nothing.
			if _, err := Commit(ctx, loc, CommitInfo{RunID: "r3"}); err == nil || !strings.Contains(err.Error(), "nothing staged") {
				t.Errorf("empty commit = %v, want nothing staged", err)
			}
			if v, err := VerifyManifest(ctx, loc); err != nil || v.RunID != "r2" {
				t.Errorf("after an empty commit: %+v, %v", v, err)
			}
			// A hand edit makes the manifest stop matching.
			put(t, loc, map[string]string{"results.parquet": "edited"})
			if _, err := VerifyManifest(ctx, loc); err == nil || !strings.Contains(err.Error(), "results.parquet") {
				t.Errorf("VerifyManifest after an edit = %v, want a mismatch on results.parquet", err)
			}
		})
	}
}

func TestCommitRefusesObjectsThatAppeared(t *testing.T) {
	for kind, loc := range locations(t) {
		t.Run(kind, func(t *testing.T) {
			put(t, loc, map[string]string{"results.parquet": "MINE"})
			_, err := stage(t, loc, "r1", map[string]string{"results.parquet": "r1", "config.json": "c"}, false)
			var oe *OwnershipError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), "results.parquet") {
				t.Fatalf("commit = %v, want a refusal naming results.parquet", err)
			}
			got := contents(t, loc)
			if got["results.parquet"] != "MINE" {
				t.Errorf("user's results.parquet = %q, want MINE", got["results.parquet"])
			}
			if _, ok := got[ManifestKey]; ok {
				t.Errorf("a manifest was published")
			}
			// With overwrite the same (sealed, unjournaled) commit goes through.
			if _, err := stage(t, loc, "r1", map[string]string{}, true); err != nil {
				t.Fatalf("commit with overwrite: %v", err)
			}
			if got := contents(t, loc)["results.parquet"]; got != "r1" {
				t.Errorf("results.parquet = %q after an overwrite commit, want r1", got)
			}
		})
	}
}

// TestCommitResumes cuts a commit short after each of its steps and checks that a
// later Commit (as RecoverStaging calls it) finishes it with the same result, and that
// up to the point where the old manifest goes, the previous run is still complete.
func TestCommitResumes(t *testing.T) {
	ctx := context.Background()
	old := map[string]string{"config.json": "1", "results.parquet": "r1", "samples/s0.parquet": "a", "samples/s1.parquet": "b"}
	next := map[string]string{"config.json": "2", "results.parquet": "r2", "figures/kl.svg": "k"}
	want := map[string]string{"config.json": "2", "results.parquet": "r2", "figures/kl.svg": "k", "notes.txt": "mine"}
	// cut simulates a crash: it replays the commit's steps by hand up to step n.
	steps := []string{"sealed", "journaled", "old manifest deleted", "half moved", "all moved", "old files deleted"}
	for n := range steps {
		for kind, loc := range locations(t) {
			t.Run(steps[n]+"/"+kind, func(t *testing.T) {
				loc := fmt.Sprintf("%s-%d", loc, n)
				if _, err := stage(t, loc, "r1", old, false); err != nil {
					t.Fatal(err)
				}
				put(t, loc, map[string]string{"notes.txt": "mine"})
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
				m, err := seal(ctx, b, StagingKey("r2"), CommitInfo{RunID: "r2", Pipeline: "test", ConfigSHA256: strings.Repeat("0", 64)})
				if err != nil {
					t.Fatal(err)
				}
				prevData, _ := b.ReadAll(ctx, ManifestKey)
				if n >= 1 {
					put(t, loc, map[string]string{StagingKey("r2") + commitKey: string(prevData)})
				}
				if n >= 2 {
					deleteIfExists(ctx, b, ManifestKey)
				}
				dir, local := localDir(loc)
				for i, f := range m.Files {
					if n >= 4 || n == 3 && i == 0 {
						if err := move(ctx, b, dir, local, StagingKey("r2")+f.Path, f.Path); err != nil {
							t.Fatal(err)
						}
					}
				}
				if n >= 5 {
					deleteIfExists(ctx, b, "samples/s0.parquet")
				}
				if n < 2 {
					if _, err := VerifyManifest(ctx, loc); err != nil {
						t.Errorf("previous run incomplete before its manifest went: %v", err)
					}
				}
				// Whatever the step, the next run may go ahead (and then finishes the commit).
				if _, err := CheckOwnership(ctx, loc, testLayout, nil, false); err != nil {
					t.Errorf("after a commit cut short, the next run is refused: %v", err)
				}
				lines, err := RecoverStaging(ctx, loc, "someone-else")
				if err != nil {
					t.Fatal(err)
				}
				wantLine := "removed the staging files of unfinished run r2"
				if n >= 1 {
					wantLine = "finished publishing run r2"
				}
				if len(lines) != 1 || !strings.Contains(lines[0], wantLine) {
					t.Errorf("RecoverStaging said %q, want %q", lines, wantLine)
				}
				got := contents(t, loc)
				if n == 0 { // never journaled: the old run stays, the staging goes
					delete(got, ManifestKey)
					w := map[string]string{"notes.txt": "mine"}
					for k, v := range old {
						w[k] = v
					}
					if !mapsEqual(got, w) {
						t.Errorf("after discarding an unjournaled staging folder:\n got %v\nwant %v", got, w)
					}
					return
				}
				if v, err := VerifyManifest(ctx, loc); err != nil || v.RunID != "r2" {
					t.Errorf("after finishing the commit: manifest %+v, %v", v, err)
				}
				delete(got, ManifestKey)
				if !mapsEqual(got, want) {
					t.Errorf("after finishing the commit:\n got %v\nwant %v", got, want)
				}
			})
		}
	}
}

func TestAbort(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range locations(t) {
		t.Run(kind, func(t *testing.T) {
			sealStaging(t, loc, "r1")
			put(t, loc, map[string]string{StagingKey("r1") + "results.parquet": "x", StagingKey("r1") + "samples/a.parquet.123.tmp": ""})
			kept, err := Abort(ctx, loc, "r1")
			if err != nil || kept {
				t.Fatalf("Abort = %v, %v; want the folder removed", kept, err)
			}
			if got := contents(t, loc); len(got) != 0 {
				t.Errorf("left behind: %v", got)
			}
			put(t, loc, map[string]string{StagingKey("r2") + commitKey: "null", StagingKey("r2") + ManifestKey: "{}"})
			if kept, err := Abort(ctx, loc, "r2"); err != nil || !kept {
				t.Errorf("Abort of a journaled commit = %v, %v; want it kept", kept, err)
			}
		})
	}
}

func TestLock(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	now := time.Now().UTC()
	dead := deadPID(t)
	cases := []struct {
		name     string
		held     *LockInfo
		wantNote string // "" and !wantErr: acquired without a note
		wantErr  bool
	}{
		{"free", nil, "", false},
		{"live run on this host", &LockInfo{RunID: "a", Host: host, PID: os.Getpid(), Started: now}, "", true},
		{"dead process on this host", &LockInfo{RunID: "a", Host: host, PID: dead, Started: now}, "its process", false},
		{"dead launcher of a remote run", &LockInfo{RunID: "a", Host: host, PID: dead, Started: now, Remote: true}, "", true},
		{"another host, recent", &LockInfo{RunID: "a", Host: "elsewhere", PID: 1, Started: now.Add(-time.Hour)}, "", true},
		{"another host, stale", &LockInfo{RunID: "a", Host: "elsewhere", PID: 1, Started: now.Add(-StaleLockAge - time.Hour)}, "old", false},
	}
	for _, c := range cases {
		for kind, loc := range locations(t) {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				loc += "-" + strings.ReplaceAll(c.name, " ", "_")
				if c.held != nil {
					if note, err := AcquireLock(ctx, loc, *c.held); err != nil || note != "" {
						t.Fatalf("setup lock: %q, %v", note, err)
					}
				}
				me := LockInfo{RunID: "me", Host: host, PID: os.Getpid(), Started: now}
				note, err := AcquireLock(ctx, loc, me)
				var le *LockedError
				if c.wantErr {
					if !errors.As(err, &le) || le.Other.RunID != "a" || !strings.Contains(err.Error(), "in use by run a") {
						t.Fatalf("AcquireLock = %q, %v; want LockedError naming run a", note, err)
					}
					if err := ReleaseLock(ctx, loc, "me"); err != nil {
						t.Fatal(err)
					}
					if got := contents(t, loc)[LockKey]; !strings.Contains(got, `"run_id": "a"`) {
						t.Errorf("releasing someone else's lock removed it: %q", got)
					}
					return
				}
				if err != nil || !strings.Contains(note, c.wantNote) || (c.wantNote == "") != (note == "") {
					t.Fatalf("AcquireLock = %q, %v; want a note mentioning %q", note, err, c.wantNote)
				}
				if _, err := AcquireLock(ctx, loc, LockInfo{RunID: "second", Host: host, PID: os.Getpid(), Started: now}); !errors.As(err, &le) {
					t.Errorf("a second run got the lock: %v", err)
				}
				if err := ReleaseLock(ctx, loc, "me"); err != nil {
					t.Fatal(err)
				}
				if _, ok := contents(t, loc)[LockKey]; ok {
					t.Errorf("lock still there after release")
				}
			})
		}
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// TestSubLocation (gs:// and s3:// cases are in pipelines/internal/launch, which links
// their drivers; this package's tests stay light for the fuzzer's instrumented build).
func TestSubLocation(t *testing.T) {
	cases := []struct{ loc, want string }{
		{"out", filepath.Join("out", ".s")},
		{"/data/run", "/data/run/.s"},
		{"file:///data/run", "/data/run/.s"},
		{"file:///data/run?metadata=skip", "file:///data/run/.s?metadata=skip"},
		{"mem://x", "mem://x?prefix=.s%2F"},
		{"mem://x/runs/r1", "mem://x?prefix=runs%2Fr1%2F.s%2F"},
		{"mem://x?prefix=a/", "mem://x?prefix=a%2F.s%2F"},
	}
	for _, c := range cases {
		t.Run(c.loc, func(t *testing.T) {
			got, err := SubLocation(c.loc, ".s/")
			if err != nil || got != c.want {
				t.Errorf("SubLocation = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestBucketPathIsPrefix: the path of a bucket URL is a folder inside the bucket, and a
// sub-location's objects are the location's objects under the folder.
func TestBucketPathIsPrefix(t *testing.T) {
	ctx := context.Background()
	put(t, "mem://pfx/runs/r1", map[string]string{"a.txt": "1"})
	sub, _ := SubLocation("mem://pfx/runs/r1", "st")
	put(t, sub, map[string]string{"b.txt": "2"})
	got := slices.Sorted(func(yield func(string) bool) {
		for k := range contents(t, "mem://pfx") {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"runs/r1/a.txt", "runs/r1/st/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("keys in the bucket = %v, want %v", got, want)
	}
	b, _ := OpenBucket(ctx, "mem://pfx/runs/r1")
	defer b.Close()
	if ok, _ := b.Exists(ctx, "st/b.txt"); !ok {
		t.Errorf("the sub-location's object is not under the location")
	}
}

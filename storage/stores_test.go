package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	_ "gocloud.dev/blob/s3blob" // the s3:// scheme, for the tests
)

// flawedS3 is an S3-compatible server on loopback (gofakes3, in memory) whose flaws
// the test switches on, as S3-compatible servers jemcheck does not control have them:
// failCopy answers every CopyObject with 404 NoSuchKey (s3rver 3.7 does, decoding the
// copy source wrongly); ignoreIfNoneMatch drops If-None-Match before the store sees it
// (s3rver and other servers ignore it).
type flawedS3 struct {
	addr                        string
	failCopy, ignoreIfNoneMatch atomic.Bool
	copies                      atomic.Int64 // CopyObject requests seen
}

const flawedBucket = "jc-flawed"

func startFlawedS3(t *testing.T) *flawedS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(flawedBucket); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &flawedS3{addr: l.Addr().String()}
	fake := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	hs := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" {
			s.copies.Add(1)
			if s.failCopy.Load() {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
				return
			}
		}
		if s.ignoreIfNoneMatch.Load() {
			r.Header.Del("If-None-Match")
		}
		fake.ServeHTTP(w, r)
	})}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "jemcheck-test", "AWS_SECRET_ACCESS_KEY": "jemcheck-test",
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	return s
}

// loc is the folder dir of the server's bucket, its endpoint spelled host:port.
func (s *flawedS3) loc(dir, host string) string {
	q := url.Values{"region": {"us-east-1"}, "use_path_style": {"true"}, "endpoint": {"http://" + host}}
	return "s3://" + flawedBucket + "/" + dir + "?" + q.Encode()
}

// TestPublishOnStoreThatCannotCopy: on a store whose CopyObject fails, a publish
// stops before it touches anything: the previous run stays complete (before, its
// manifest was deleted first, and every later run failed to finish the commit), the
// next run cleans the unfinished staging folder up, and once the store copies, a run
// publishes.
func TestPublishOnStoreThatCannotCopy(t *testing.T) {
	ctx := context.Background()
	srv := startFlawedS3(t)
	run1 := map[string]string{"config.json": "1", "results.parquet": "r1", "samples/s0.parquet": "a"}
	run2 := map[string]string{"config.json": "2", "results.parquet": "r2", "figures/kl.svg": "k"}
	cases := []struct {
		name     string
		failCopy bool
		want     string // in the refusal; "" when run 2 publishes
	}{
		{"the store copies", false, ""},
		{"CopyObject fails", true, "cannot copy an object"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := srv.loc(fmt.Sprintf("p%d", i), srv.addr)
			srv.failCopy.Store(false)
			if _, err := stage(t, loc, "r1", run1, false); err != nil {
				t.Fatal(err)
			}
			srv.failCopy.Store(c.failCopy)
			before := srv.copies.Load()
			_, err := stage(t, loc, "r2", run2, false)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if m, err := VerifyManifest(ctx, loc); err != nil || m.RunID != "r2" {
					t.Errorf("after run 2: %+v, %v", m, err)
				}
				return
			}
			var ce *CopyError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was published") {
				t.Fatalf("commit = %v, want a *CopyError with %q", err, c.want)
			}
			if n := srv.copies.Load() - before; n != 1 {
				t.Errorf("%d copies tried, want the one test copy", n)
			}
			got := contents(t, loc)
			if m, err := VerifyManifest(ctx, loc); err != nil || m.RunID != "r1" {
				t.Errorf("the previous run is not complete: %+v, %v\n%v", m, err, got)
			}
			if _, ok := got[StagingKey("r2")+commitKey]; ok {
				t.Errorf("the commit was journaled: every later run would try to finish it")
			}
			if _, ok := got[StagingKey("r2")+copyProbeKey]; ok {
				t.Errorf("the test copy was left")
			}
			// The next run (the store still failing) is not wedged: it removes the
			// unfinished staging folder, and its own publish fails the same way.
			lines, err := RecoverStaging(ctx, loc, "r3")
			if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "removed the staging files of unfinished run r2") {
				t.Errorf("RecoverStaging = %q, %v", lines, err)
			}
			if _, err := stage(t, loc, "r3", run2, false); !errors.As(err, &ce) {
				t.Errorf("run 3 on the failing store: %v, want a *CopyError", err)
			}
			if m, err := VerifyManifest(ctx, loc); err != nil || m.RunID != "r1" {
				t.Errorf("after run 3: %+v, %v", m, err)
			}
			// Once the store copies, the next run publishes.
			srv.failCopy.Store(false)
			if _, err := RecoverStaging(ctx, loc, "r4"); err != nil {
				t.Fatal(err)
			}
			if _, err := stage(t, loc, "r4", run2, false); err != nil {
				t.Fatal(err)
			}
			if m, err := VerifyManifest(ctx, loc); err != nil || m.RunID != "r4" {
				t.Errorf("after run 4: %+v, %v", m, err)
			}
		})
	}
}

// TestLockRefusesStoreWithoutExclusiveCreate: a store that ignores If-None-Match is
// found before a run relies on it: the run is refused, a live run's lock untouched
// (before, the second run overwrote the live lock, read its own bytes back and went
// on, deleting the first run's staging folder), and nothing left behind.
func TestLockRefusesStoreWithoutExclusiveCreate(t *testing.T) {
	ctx := context.Background()
	srv := startFlawedS3(t)
	now := time.Now().UTC()
	a := LockInfo{RunID: "20260101T000000Z-aaaaaaaa", Pipeline: "control", Host: "h", PID: 1, Started: now, Remote: true}
	b := LockInfo{RunID: "20260101T000001Z-bbbbbbbb", Pipeline: "control", Host: "h", PID: 2, Started: now, Remote: true}
	cases := []struct {
		name   string
		ignore bool
		held   bool   // run a holds the lock when run b comes
		want   string // in b's error
	}{
		{"honours If-None-Match, free", false, false, ""},
		{"honours If-None-Match, held", false, true, "is in use by run " + a.RunID},
		{"ignores If-None-Match, free", true, false, "does not honour exclusive creates"},
		{"ignores If-None-Match, held", true, true, "does not honour exclusive creates"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := srv.loc(fmt.Sprintf("l%d", i), srv.addr)
			srv.ignoreIfNoneMatch.Store(false)
			var lockA string
			if c.held {
				if _, err := AcquireLock(ctx, loc, a); err != nil {
					t.Fatal(err)
				}
				lockA = contents(t, loc)[LockKey]
			}
			srv.ignoreIfNoneMatch.Store(c.ignore)
			_, err := AcquireLock(ctx, loc, b)
			srv.ignoreIfNoneMatch.Store(false)
			got := contents(t, loc)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(got[LockKey], b.RunID) {
					t.Errorf("lock %q, want run b's", got[LockKey])
				}
				delete(got, LockKey)
			} else if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("AcquireLock = %v, want %q", err, c.want)
			}
			if c.ignore && !errors.As(err, new(*NoExclusiveCreateError)) {
				t.Errorf("error %T, want *NoExclusiveCreateError", err)
			}
			if c.held {
				if got[LockKey] != lockA {
					t.Errorf("run a's live lock changed:\n%s", got[LockKey])
				}
				delete(got, LockKey)
			}
			if len(got) > 0 {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}

// TestLeftProbeRemoved: a probe left by a process killed between its two creates is
// jemcheck's (the ownership check passes it) and removed by a later run holding the
// lock once it is old enough not to be a live run's.
func TestLeftProbeRemoved(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		age  time.Duration
		kept bool
	}{
		{"fresh", time.Minute, true},
		{"old", 2 * probeMaxAge, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := "mem://" + strings.ReplaceAll(t.Name(), "/", "-")
			dead := LockInfo{RunID: "20260101T000000Z-dddddddd", Pipeline: "control", Host: "h", PID: 1, Started: time.Now().Add(-c.age)}
			data, _ := json.Marshal(dead)
			put(t, loc, map[string]string{probeKey(dead.RunID): string(data)})
			if _, err := CheckOwnership(ctx, loc, testLayout, nil, false); err != nil {
				t.Errorf("the ownership check: %v", err)
			}
			me := LockInfo{RunID: "20260101T000001Z-eeeeeeee", Pipeline: "control", Host: "h", PID: 2, Started: time.Now()}
			if _, err := AcquireLock(ctx, loc, me); err != nil {
				t.Fatal(err)
			}
			if _, ok := contents(t, loc)[probeKey(dead.RunID)]; ok != c.kept {
				t.Errorf("probe kept %v, want %v", ok, c.kept)
			}
		})
	}
}

// TestOverlapStoreIdentity: bucket locations are compared by the store they name,
// whatever the spelling of its endpoint (review: --from with 127.0.0.1 and --out with
// localhost were taken for two places, and the export was deleted).
func TestOverlapStoreIdentity(t *testing.T) {
	s3 := func(dir, endpoint string, extra ...string) string {
		q := url.Values{"region": {"us-east-1"}, "use_path_style": {"true"}, "endpoint": {endpoint}}
		for i := 0; i+1 < len(extra); i += 2 {
			q.Set(extra[i], extra[i+1])
		}
		return "s3://jbk/" + dir + "?" + q.Encode()
	}
	cases := []struct {
		name, out, in, want string
	}{
		{"localhost and 127.0.0.1", s3("exp1", "http://localhost:19401"), s3("exp1", "http://127.0.0.1:19401"), "is the same folder as"},
		{"another loopback address", s3("exp1", "http://127.0.0.2:19401"), s3("exp1", "http://[::1]:19401"), "is the same folder as"},
		{"trailing slash", s3("exp1", "http://127.0.0.1:19401/"), s3("exp1", "http://127.0.0.1:19401"), "is the same folder as"},
		{"default port", s3("exp1", "http://minio.example:80"), s3("exp1", "http://MINIO.example"), "is the same folder as"},
		{"default https port", s3("exp1", "https://s3.example:443/"), s3("exp1", "https://s3.example"), "is the same folder as"},
		{"region and path style differ", s3("exp1/cmp", "http://localhost:19401", "region", "eu-west-1", "use_path_style", "false"),
			s3("exp1", "http://127.0.0.1:19401"), "is inside"},
		{"prefix parameter", s3("", "http://localhost:19401", "prefix", "exp1/"), s3("exp1", "http://127.0.0.1:19401"), "is the same folder as"},
		{"other port", s3("exp1", "http://127.0.0.1:19402"), s3("exp1", "http://127.0.0.1:19401"), ""},
		{"other host", s3("exp1", "http://s3a.example"), s3("exp1", "http://s3b.example"), ""},
		{"http and https", s3("exp1", "https://s3.example"), s3("exp1", "http://s3.example"), ""},
		{"other bucket", strings.Replace(s3("exp1", "http://127.0.0.1:19401"), "jbk", "jbl", 1), s3("exp1", "http://127.0.0.1:19401"), ""},
		{"sibling folders", s3("exp10", "http://localhost:19401"), s3("exp1", "http://127.0.0.1:19401"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Overlap(c.out, c.in); got != c.want {
				t.Errorf("Overlap(%s, %s) = %q, want %q", c.out, c.in, got, c.want)
			}
		})
	}
	// An input file inside --out is found through another spelling too.
	if k, ok := keyInside(s3("exp1", "http://localhost:19401"), "s3://jbk/exp1/tables.csv?endpoint="+url.QueryEscape("http://127.0.0.1:19401/")); !ok || k != "tables.csv" {
		t.Errorf("keyInside = %q, %v; want tables.csv", k, ok)
	}
}

// bindEnv, set, makes the test binary the inside of TestOverlapBindMount: a mount
// namespace in which BIND_B is a bind mount of BIND_A.
const bindEnv = "JEMCHECK_TEST_BIND"

// TestOverlapBindMount: the same folder reached through a bind mount is the same
// folder (device and inode), and a folder inside it is inside (review: evaluate
// --from=exb --out=bm, bm a bind mount of exb, deleted the export). It runs the
// check in a private mount namespace (unshare), so nothing is mounted outside it.
func TestOverlapBindMount(t *testing.T) {
	if os.Getenv(bindEnv) == "1" {
		a, b := os.Getenv("BIND_A"), os.Getenv("BIND_B")
		cases := []struct{ name, out, in, want string }{
			{"the mount of the input", b, a, "is the same folder as"},
			{"the input, of the mount", a, b, "is the same folder as"},
			{"a new folder in the mount", filepath.Join(b, "new", "run"), a, "is inside"},
			{"a folder of the input, from the mount", b, filepath.Join(a, "sub"), "contains"},
			{"a sibling", filepath.Join(filepath.Dir(b), "other"), a, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if got := Overlap(c.out, c.in); got != c.want {
					t.Errorf("Overlap(%s, %s) = %q, want %q", c.out, c.in, got, c.want)
				}
			})
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1): a bind mount needs a mount namespace")
	}
	root := t.TempDir()
	a, b := filepath.Join(root, "exb"), filepath.Join(root, "mnt", "bm")
	os.MkdirAll(filepath.Join(a, "sub"), 0o755)
	os.MkdirAll(b, 0o755)
	os.MkdirAll(filepath.Join(root, "mnt", "other"), 0o755)
	self, _ := os.Executable()
	cmd := exec.Command(unshare, "-rm", "--propagation", "private", "sh", "-c",
		`mount --bind "$BIND_A" "$BIND_B" && exec "$0" -test.run='^TestOverlapBindMount$' -test.v`, self)
	cmd.Env = append(os.Environ(), bindEnv+"=1", "BIND_A="+a, "BIND_B="+b)
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "Operation not permitted") || strings.Contains(string(out), "unshare failed") {
		t.Skipf("no mount namespace here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestOverlapBindMount/the_mount_of_the_input") {
		t.Errorf("in the mount namespace: %v\n%s", err, out)
	}
}

// TestSpentStagingRemoved: a staging folder whose removal a kill cut short after its
// seal went (the review found one kept for ever: a journal, the staged manifest and 12
// part records) is recognised as jemcheck's by what it holds and removed by the next
// run that holds the lock; a folder holding anything else stays.
func TestSpentStagingRemoved(t *testing.T) {
	ctx := context.Background()
	const id = "20261127T105529Z-08eb4b1c"
	manifestOf := func(run string) string {
		m := &Manifest{Format: ManifestFormat, Version: "devel", RunID: run, Pipeline: "sweep", ConfigSHA256: strings.Repeat("0", 64),
			Files: []ManifestFile{{Path: "results.parquet", Size: 2, SHA256: strings.Repeat("a", 64)}}}
		data, _ := encodeManifest(m)
		return string(data)
	}
	record := func(key, content string) string {
		f := hashBytes(key, content)
		data, _ := json.Marshal(PartRecord(f))
		return string(data)
	}
	spent := map[string]string{commitKey: "null", ManifestKey: manifestOf(id),
		partSealKey("results/p-0.parquet"): record("results/p-0.parquet", "x"), partSealKey("samples/p-0.parquet"): record("samples/p-0.parquet", "y")}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range spent {
			m[k] = v
		}
		for k, v := range extra {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	cases := []struct {
		name    string
		id      string
		files   map[string]string // in the folder
		link    bool              // local: a link in it too
		empty   bool              // local: an empty folder
		removed bool
	}{
		{"bookkeeping only (the review's)", id, spent, false, false, true},
		{"a part file matching its record", id, with(map[string]string{"results/p-0.parquet": "x"}), false, false, true},
		{"a part file not matching its record", id, with(map[string]string{"results/p-0.parquet": "changed"}), false, false, false},
		{"a file without a record", id, with(map[string]string{"notes.txt": "mine"}), false, false, false},
		{"no staged manifest", id, with(map[string]string{ManifestKey: ""}), false, false, false},
		{"a manifest of another run", id, with(map[string]string{ManifestKey: manifestOf("20261127T000000Z-00000000")}), false, false, false},
		{"a journal that is not one", id, with(map[string]string{commitKey: "my diary"}), false, false, false},
		{"a name that is no run id", "mybackup", spent, false, false, false},
		{"a link in it", id, spent, true, false, false},
		{"empty", id, nil, false, true, true},
		{"empty, a name that is no run id", "mybackup", nil, false, true, false},
	}
	for _, c := range cases {
		for kind, loc := range locations(t) {
			if (c.link || c.empty) && kind != "local" {
				continue
			}
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				loc := loc + "-" + strings.NewReplacer(" ", "", "(", "", ")", "", "'", "", ",", "").Replace(c.name)
				if _, err := stage(t, loc, "r1", map[string]string{"results.parquet": "r1"}, false); err != nil {
					t.Fatal(err)
				}
				st := map[string]string{}
				for k, v := range c.files {
					st[StagingKey(c.id)+k] = v
				}
				put(t, loc, st)
				folder := filepath.Join(loc, StagingPrefix+c.id)
				if c.empty {
					os.MkdirAll(folder, 0o755)
				}
				if c.link {
					os.Symlink(t.TempDir(), filepath.Join(folder, "elsewhere"))
				}
				if _, err := CheckOwnership(ctx, loc, testLayout, nil, false); err != nil {
					t.Errorf("the ownership check: %v", err)
				}
				lines, err := RecoverStaging(ctx, loc, "r2")
				if err != nil {
					t.Fatal(err)
				}
				left := false
				if kind == "local" {
					_, err := os.Lstat(folder)
					left = err == nil
				} else {
					for k := range contents(t, loc) {
						left = left || strings.HasPrefix(k, StagingKey(c.id))
					}
				}
				if left == c.removed {
					t.Errorf("folder left %v, want removed %v; lines %q", left, c.removed, lines)
				}
				want := "left " + StagingKey(c.id) + " alone"
				if c.removed {
					want = "removed " + StagingKey(c.id) + ", a spent staging folder"
				}
				if len(lines) != 1 || !strings.Contains(lines[0], want) {
					t.Errorf("lines %q, want one with %q", lines, want)
				}
				if m, err := VerifyManifest(ctx, loc); err != nil || m.RunID != "r1" {
					t.Errorf("the published run: %+v, %v", m, err)
				}
			})
		}
	}
}

// hashBytes is the ManifestFile of content at key.
func hashBytes(key, content string) ManifestFile {
	h := sha256.Sum256([]byte(content))
	return ManifestFile{Path: key, Size: int64(len(content)), SHA256: hex.EncodeToString(h[:])}
}

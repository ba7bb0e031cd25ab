package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// snapshot maps every file under dir (relative, slash-separated) to its SHA-256.
func snapshot(t *testing.T, dir string) map[string]string { return launchtest.Snapshot(t, dir) }

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed or vanished", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

// expectComplete checks that out holds a complete run and no lock or staging folder.
func expectComplete(t *testing.T, out string) *storage.Manifest {
	t.Helper()
	m, err := storage.VerifyManifest(context.Background(), out)
	if err != nil {
		t.Fatalf("run under %s is not complete: %v", out, err)
	}
	expectNoBookkeeping(t, out)
	return m
}

func expectNoBookkeeping(t *testing.T, out string) {
	t.Helper()
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if e.Name() == storage.LockKey || strings.HasPrefix(e.Name(), storage.StagingPrefix) {
			t.Errorf("%s left behind under %s", e.Name(), out)
		}
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file %s left behind", p)
		}
		return nil
	})
}

func small(out string) launch.Config {
	cfg := tiny(out)
	cfg.Points[0].Tables = 6
	return cfg
}

// TestUserFilesUntouched: a run into a folder of the user's own files (with names
// jemcheck writes) is refused and changes nothing; with --overwrite it replaces only
// the names it writes.
func TestUserFilesUntouched(t *testing.T) {
	out := t.TempDir()
	mine := map[string]string{stages.ResultsPath(0, 0): "MY THESIS RESULTS", "results.parquet": "an older layout's name",
		"config.json": "{}", "figures/holiday.png": "png",
		"figures/arch_v2.svg": "svg", stages.SamplePath(0, 7): "s", "tables/point-0042.parquet": "t", "verdict.json": "v",
		"notes.txt": "n"}
	for k, v := range mine {
		p := filepath.Join(out, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, out)
	err := run(context.Background(), small(out), &bytes.Buffer{})
	if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "is not empty") ||
		!strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("run = %v, want bad input: not empty, --overwrite", err)
	}
	sameSnapshot(t, "refused run", before, snapshot(t, out))

	cfg := small(out)
	cfg.Overwrite = true
	if err := run(context.Background(), cfg, &bytes.Buffer{}); err != nil {
		t.Fatalf("run with overwrite: %v", err)
	}
	after := snapshot(t, out)
	for _, k := range []string{"figures/holiday.png", "figures/arch_v2.svg", stages.SamplePath(0, 7), "tables/point-0042.parquet",
		"verdict.json", "notes.txt", "results.parquet"} {
		if after[k] != before[k] {
			t.Errorf("--overwrite run touched %s, which it does not write", k)
		}
	}
	if k := stages.ResultsPath(0, 0); after[k] == before[k] {
		t.Errorf("--overwrite run did not write %s", k)
	}
	expectComplete(t, out)
}

// TestRerunReplacesOwnOutputs: a second run replaces the first run's files, removes
// those it does not rewrite (sample shards), keeps the user's, and reruns on its own
// tables (copied out of --out: inside it they are refused).
func TestRerunReplacesOwnOutputs(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	if err := run(ctx, small(out), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	first := expectComplete(t, out)
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(out, "figures", "My-Plot.svg"), []byte("mine"), 0o644)
	tablesBefore, err := schemas.ReadTables(ctx, filepath.Join(out, "tables.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// Its own tables inside --out as the input: refused (inputs and outputs never
	// overlap), nothing touched; a copy outside --out is fine.
	cfg := small(out)
	cfg.Options.TablesFrom = filepath.Join(out, "tables.parquet")
	cfg.Options.WriteSamples = false
	before := snapshot(t, out)
	if err := run(ctx, cfg, &bytes.Buffer{}); !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "is inside --out") {
		t.Fatalf("rerun on its own tables inside --out: %v, want bad input: is inside --out", err)
	}
	sameSnapshot(t, "refused rerun", before, snapshot(t, out))
	data, err := os.ReadFile(filepath.Join(out, "tables.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Options.TablesFrom = filepath.Join(t.TempDir(), "tables.parquet")
	if err := os.WriteFile(cfg.Options.TablesFrom, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("rerun on its own tables: %v\n%s", err, buf.String())
	}
	second := expectComplete(t, out)
	if second.RunID == first.RunID {
		t.Errorf("manifest still names the first run")
	}
	if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(stages.SamplePath(0, 0)))); !os.IsNotExist(err) {
		t.Errorf("the first run's sample shard survived a run that wrote none (err %v)", err)
	}
	for _, k := range []string{"notes.txt", "figures/My-Plot.svg"} {
		if b, err := os.ReadFile(filepath.Join(out, k)); err != nil || string(b) != "mine" {
			t.Errorf("user file %s: %q, %v", k, b, err)
		}
	}
	tablesAfter, err := schemas.ReadTables(ctx, filepath.Join(out, "tables.parquet"))
	if err != nil || len(tablesAfter) != len(tablesBefore) {
		t.Fatalf("input tables after the rerun: %d tables, %v; want %d", len(tablesAfter), err, len(tablesBefore))
	}
	for i := range tablesBefore {
		if tablesAfter[i].ID != tablesBefore[i].ID || !equalFloats(tablesAfter[i].P, tablesBefore[i].P) {
			t.Errorf("table %d changed across the rerun", i)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFailedRunKeepsPrevious: a run that fails after validation (its tables file
// vanishes mid-run) leaves the previous run complete and byte for byte as it was.
func TestFailedRunKeepsPrevious(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	if err := run(ctx, small(out), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, out)
	failMidRun(t, out)
	sameSnapshot(t, "after a failed run", before, snapshot(t, out))
	expectComplete(t, out)
}

// TestLockedOutRefused: an --out locked by a live run refuses a second run (exit 2
// naming the other run) and changes nothing.
func TestLockedOutRefused(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	host, _ := os.Hostname()
	other := storage.LockInfo{RunID: "other-run", Pipeline: "control", Host: host, PID: os.Getpid(), Started: time.Now()}
	if _, err := storage.AcquireLock(ctx, out, other); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, out)
	err := run(ctx, small(out), &bytes.Buffer{})
	if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "in use by run other-run") {
		t.Fatalf("run = %v, want bad input naming other-run", err)
	}
	sameSnapshot(t, "refused run", before, snapshot(t, out))
}

// TestKilledRunThenRerun kills a real run (SIGKILL) while it writes, checks that the
// previous run is untouched and that a concurrent run is refused meanwhile, then
// reruns: the stale lock is taken over and the dead run's staging files removed.
func TestKilledRunThenRerun(t *testing.T) {
	testenv.Slow(t, "starts the command several times")
	ctx := context.Background()
	out := t.TempDir()
	if err := run(ctx, small(out), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, out)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), launchtest.EnvArgs+"=--tables=400000 --samples=50 --out="+out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until the run is writing into its staging folder.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ms, _ := filepath.Glob(filepath.Join(out, storage.StagingPrefix+"*", "samples", "*.parquet"))
		if len(ms) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never started writing:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	err := run(ctx, small(out), &bytes.Buffer{})
	if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "in use by run") {
		t.Errorf("concurrent run = %v, want it refused", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	after := snapshot(t, out)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("killed run changed %s", k)
		}
	}
	if _, err := storage.VerifyManifest(ctx, out); err != nil {
		t.Errorf("previous run incomplete after the kill: %v", err)
	}
	var buf bytes.Buffer
	if err := run(ctx, small(out), &buf); err != nil {
		t.Fatalf("rerun: %v\n%s", err, buf.String())
	}
	for _, w := range []string{"took over the lock of run", "is gone", "removed the staging files of unfinished run"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("rerun output does not say %q:\n%s", w, buf.String())
		}
	}
	expectComplete(t, out)
}

// TestDiskFullKeepsPrevious runs into a 1 MiB tmpfs (needs root and mount): the run
// that fills it fails, and the previous run stays complete.
func TestDiskFullKeepsPrevious(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	// Lazy: a failed job's last writer may still hold a file there for a moment.
	defer exec.Command("umount", "-l", dir).Run()
	ctx := context.Background()
	cfg := small(dir)
	cfg.Options.WriteSamples = false
	if err := run(ctx, cfg, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	big := small(dir)
	big.Points[0].Tables = 2000
	big.Points[0].Samples = 2000 // 4e6 sample rows: about 3 MiB of files
	var buf bytes.Buffer
	err := run(ctx, big, &buf)
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("run into a full disk = %v, want no space left\n%s", err, buf.String())
	}
	sameSnapshot(t, "after a disk-full run", before, snapshot(t, dir))
	expectComplete(t, dir)
}

// TestFailedRunIntoNewOut: a run that fails into an --out that did not exist leaves
// nothing behind, not even the directory it made for its lock.
func TestFailedRunIntoNewOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "new")
	failMidRun(t, out)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s left behind by a failed run (err %v)", out, err)
	}
}

// failMidRun runs into out a configuration that passes validation and then fails
// inside the pipeline: its tables file is removed between validation and the run.
func failMidRun(t *testing.T, out string) {
	t.Helper()
	ctx := context.Background()
	csv := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(csv, []byte("table_id,x,y,p\n0,0,0,0.1\n0,0,1,0.2\n0,1,0,0.3\n0,1,1,0.4\n"), 0o644)
	cfg := small(out)
	cfg.Options.TablesFrom = csv
	if err := launch.Prepare(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	os.Remove(csv)
	p, s := beam.NewPipelineWithRoot()
	build(s, &cfg)
	var buf bytes.Buffer
	if _, err := launch.Execute(ctx, &cfg, p, &buf); err == nil {
		t.Fatalf("run without its tables file succeeded:\n%s", buf.String())
	}
}

// TestLinkedOutputFolderRefused (D9, D10): results/ or figures/ of a published run
// replaced by a link to a user's folder: the next run is refused naming the link (with
// --overwrite too), and every file behind it keeps its bytes.
func TestLinkedOutputFolderRefused(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, folder string
		overwrite    bool
	}{
		{"results linked (D9)", "results", false},
		{"figures linked (D10)", "figures", false},
		{"results linked, overwrite", "results", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			out, outside := filepath.Join(root, "out"), filepath.Join(root, "outside")
			if err := run(ctx, small(out), &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			// The user's folder holds files at the very names the run writes.
			if err := os.Rename(filepath.Join(out, c.folder), outside); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(outside)
			for _, e := range entries {
				os.WriteFile(filepath.Join(outside, e.Name()), []byte("MY PRECIOUS DATA, not jemcheck's"), 0o644)
			}
			before, beforeOut := snapshot(t, outside), snapshot(t, out)
			if err := os.Symlink(outside, filepath.Join(out, c.folder)); err != nil {
				t.Fatal(err)
			}
			cfg := small(out)
			cfg.Options.Seed, cfg.Overwrite = 2, c.overwrite
			err := run(ctx, cfg, &bytes.Buffer{})
			if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "symbolic link") ||
				!strings.Contains(err.Error(), filepath.Join(out, c.folder)+" -> "+outside) {
				t.Fatalf("run = %v, want bad input naming the link %s", err, c.folder)
			}
			sameSnapshot(t, "the user's folder behind the link", before, snapshot(t, outside))
			if fi, err := os.Lstat(filepath.Join(out, c.folder)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("the link was removed or replaced (%v)", err)
			}
			os.Remove(filepath.Join(out, c.folder))
			sameSnapshot(t, "--out", beforeOut, snapshot(t, out))
			expectNoBookkeeping(t, out)
		})
	}
}

// TestUserStagingFolderSurvives (D11): a user's folder named .jemcheck-staging-* (and a
// file named like a takeover claim) is never removed: beside a published run, and in a
// user's folder under --overwrite; without --overwrite the refusal lists it.
func TestUserStagingFolderSurvives(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		published bool
		overwrite bool
		refused   bool
	}{
		{"beside a published run", true, false, false},
		{"in a user folder", false, false, true},
		{"in a user folder, overwrite", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			if c.published {
				if err := run(ctx, small(out), &bytes.Buffer{}); err != nil {
					t.Fatal(err)
				}
			}
			mine := map[string]string{storage.StagingPrefix + "userdir/precious.txt": "precious",
				storage.StagingPrefix + "mybackup/.commit.json": "null", storage.LockKey + ".takeover.abc": "mine"}
			for k, v := range mine {
				p := filepath.Join(out, filepath.FromSlash(k))
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(v), 0o644)
			}
			cfg := small(out)
			cfg.Options.Seed, cfg.Overwrite = 2, c.overwrite
			var buf bytes.Buffer
			err := run(ctx, cfg, &buf)
			if c.refused {
				if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), storage.StagingPrefix+"userdir/") {
					t.Errorf("run = %v, want a refusal listing the hidden folder", err)
				}
			} else if err != nil {
				t.Fatalf("run: %v\n%s", err, buf.String())
			} else {
				expectComplete2(t, out)
			}
			for k, v := range mine {
				if got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(k))); err != nil || string(got) != v {
					t.Errorf("user's %s: %q, %v", k, got, err)
				}
			}
		})
	}
}

// expectComplete2 checks the run in out is complete (user entries with jemcheck-like
// names may remain beside it).
func expectComplete2(t *testing.T, out string) {
	t.Helper()
	if _, err := storage.VerifyManifest(context.Background(), out); err != nil {
		t.Fatalf("run under %s is not complete: %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(out, storage.LockKey)); !os.IsNotExist(err) {
		t.Errorf("lock left behind")
	}
}

// TestDryRunWritesNothing (issue 33, item 7): --dry_run on the local runner is refused
// before anything runs: a new --out is not created, a published run is untouched, and
// the lock of a live run is not skipped.
func TestDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	f := flag.Lookup("dry_run")
	if f == nil {
		t.Fatal("--dry_run is not registered")
	}
	defer f.Value.Set(f.Value.String())
	published := t.TempDir()
	if err := run(ctx, small(published), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	f.Value.Set("true")
	for _, c := range []struct{ name, out string }{
		{"new --out", filepath.Join(t.TempDir(), "new")},
		{"--out holding a run", published},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, c.out)
			var buf bytes.Buffer
			err := run(ctx, small(c.out), &buf)
			if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "dry_run") {
				t.Errorf("dry run = %v, want bad input about --dry_run\n%s", err, buf.String())
			}
			sameSnapshot(t, "dry run", before, snapshot(t, c.out))
			if _, err := os.Stat(c.out); c.name == "new --out" && !os.IsNotExist(err) {
				t.Errorf("a dry run created %s", c.out)
			}
		})
	}
}

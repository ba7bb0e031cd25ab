package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// resumeConfig is the tiny run at 300 steps: 24 tables in 5 blocks of 5, of which block
// 0 holds the report's 2 tables.
func resumeConfig(out string) launch.Config {
	cfg := tiny(out)
	cfg.Points[0].Steps = 300
	return cfg
}

// TestResume: a run stopped part-way keeps its complete blocks; --resume with the same
// flags computes only the others and publishes files byte-identical to an
// uninterrupted run's (manifest.json differs in its run id only); --resume with other
// flags is refused, naming what differs; --resume with nothing to resume runs afresh.
func TestResume(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ref, out := filepath.Join(root, "ref"), filepath.Join(root, "out")

	// The uninterrupted run, with --resume and nothing to resume, into out (config.json
	// records --out), then moved aside.
	cfg := resumeConfig(out)
	cfg.Resume = true
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("reference run: %v\n%s", err, buf.String())
	}
	if want := "nothing to resume in " + out; !strings.Contains(buf.String(), want) {
		t.Errorf("a --resume run into an empty --out printed\n%s\nwant %q", buf.String(), want)
	}
	if err := os.Rename(out, ref); err != nil {
		t.Fatal(err)
	}

	// A previous run in out (another seed), then the run stopped once 2 blocks without a
	// report table are complete.
	prev := resumeConfig(out)
	prev.Options.Seed = 8
	if err := run(ctx, prev, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var once sync.Once
	stages.AfterResultsWritten = func(_, block int64) {
		// Called in a block's results writer: the next block's results wait, the
		// learned joints do not.
		time.Sleep(100 * time.Millisecond)
		if skippable(t, out) >= 2 {
			once.Do(cancel)
		}
	}
	buf.Reset()
	err := run(runCtx, resumeConfig(out), &buf)
	cancel()
	if !errors.Is(err, launch.ErrInterrupted) {
		t.Fatalf("stopped run: %v, want it interrupted\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "this run replaces it when it publishes") {
		t.Errorf("no line says the previous run will be replaced:\n%s", buf.String())
	}
	if m := regexp.MustCompile(`(\d) of 5 blocks complete are kept in .*\.jemcheck-staging-.*rerun with --resume.*the previous results in .* are intact`).
		FindStringSubmatch(err.Error()); m == nil || m[1] == "0" {
		t.Fatalf("stopped run's message %q, want some of 5 blocks kept and the previous results intact", err)
	}
	waitSettled(t, out)
	stages.AfterResultsWritten = nil

	// Resumed with another seed: refused, naming the difference, nothing touched.
	other := resumeConfig(out)
	other.Resume, other.Options.Seed = true, 9
	if err := run(ctx, other, &bytes.Buffer{}); !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), "options.seed 7 there, 9 here") {
		t.Errorf("resume with another seed: %v, want bad input naming options.seed", err)
	} else {
		t.Logf("refused: %v", err)
	}

	// Resumed: only the other blocks are computed.
	cfg = resumeConfig(out)
	cfg.Resume = true
	buf.Reset()
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, buf.String())
	}
	m := regexp.MustCompile(`resuming run \S+: (\d) of 5 blocks complete are kept`).FindStringSubmatch(buf.String())
	if m == nil || m[1] == "0" {
		t.Errorf("resumed run printed\n%s\nwant it to resume some of the 5 blocks", buf.String())
	}
	t.Logf("stopped: %v\nresumed: %s", err, m[0])
	sameOutputs(t, ref, out)
}

// skippable counts the blocks a resume of the run staged in out would not recompute.
func skippable(t *testing.T, out string) int {
	dirs, _ := filepath.Glob(filepath.Join(out, storage.StagingPrefix+"*"))
	if len(dirs) != 1 {
		return 0
	}
	b, err := storage.OpenExistingBucket(context.Background(), dirs[0])
	if err != nil {
		return 0
	}
	defer b.Close()
	cfg := resumeConfig(out)
	cfg.Options.ReportTables = 2
	_, skip, _, err := stages.CompletedBlocks(context.Background(), b, cfg.Options, cfg.Points)
	if err != nil {
		t.Error(err)
	}
	return len(skip)
}

// waitSettled waits until the stopped run's last writes (bundles still finishing in this
// process) have landed: no file changes under out for 500 ms.
func waitSettled(t *testing.T, out string) {
	t.Helper()
	last, since := "", time.Now()
	for time.Since(since) < 500*time.Millisecond {
		var b strings.Builder
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b.WriteString(p + "\n")
			}
			return nil
		})
		if b.String() != last {
			last, since = b.String(), time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameOutputs checks that b holds the same files as a, byte for byte, but for
// manifest.json's run id (launchtest.SameOutputs).
func sameOutputs(t *testing.T, a, b string) { t.Helper(); launchtest.SameOutputs(t, a, b) }

// copyTree copies the folder src to dst (files and folders only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestResumeVerifiesKept (D15): a kept block swapped with another, or with bytes
// flipped, is recomputed (and the run says so on stderr), so the resumed run publishes
// what an uninterrupted run does; an edited staging config.json is not trusted.
func TestResumeVerifiesKept(t *testing.T) {
	testenv.Slow(t, "four pipeline runs")
	ctx := context.Background()
	root := t.TempDir()
	ref, out, saved := filepath.Join(root, "ref"), filepath.Join(root, "out"), filepath.Join(root, "saved")
	if err := run(ctx, resumeConfig(out), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(out, ref); err != nil {
		t.Fatal(err)
	}
	// Stopped with at least 2 kept blocks that the resumed run would not recompute.
	runCtx, cancel := context.WithCancel(ctx)
	var once sync.Once
	stages.AfterResultsWritten = func(_, _ int64) {
		time.Sleep(100 * time.Millisecond)
		if skippable(t, out) >= 2 {
			once.Do(cancel)
		}
	}
	err := run(runCtx, resumeConfig(out), &bytes.Buffer{})
	cancel()
	if !errors.Is(err, launch.ErrInterrupted) {
		t.Fatalf("stopped run: %v, want it interrupted", err)
	}
	waitSettled(t, out)
	stages.AfterResultsWritten = nil
	copyTree(t, out, saved)
	dirs, _ := filepath.Glob(filepath.Join(saved, storage.StagingPrefix+"*"))
	if len(dirs) != 1 {
		t.Fatalf("staging folders kept: %v", dirs)
	}
	stName := filepath.Base(dirs[0])
	b, err := storage.OpenExistingBucket(ctx, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	c := resumeConfig(out)
	c.Options.ReportTables = 2
	_, skip, _, err := stages.CompletedBlocks(ctx, b, c.Options, c.Points)
	b.Close()
	if err != nil || len(skip) < 2 {
		t.Fatalf("kept blocks %v, %v; want 2 or more", skip, err)
	}
	b1, b2 := skip[0], skip[1]
	cases := []struct {
		name   string
		tamper func(t *testing.T, st string)
		want   []string // on stderr
		same   bool     // the published files are the uninterrupted run's
	}{
		{"block swapped with another", func(t *testing.T, st string) {
			for _, k := range []string{stages.ResultsPath(0, b2.Index), stages.LearnedPath(0, b2.Index)} {
				data, err := os.ReadFile(filepath.Join(st, filepath.FromSlash(k)))
				if err != nil {
					t.Fatal(err)
				}
				k1 := strings.Replace(k, fmt.Sprintf("part-%05d", b2.Index), fmt.Sprintf("part-%05d", b1.Index), 1)
				os.WriteFile(filepath.Join(st, filepath.FromSlash(k1)), data, 0o644)
			}
		}, []string{fmt.Sprintf("block %d of point 0", b1.Index), "is recomputed", "were recorded when it was written"}, true},
		{"bytes flipped in a kept results file", func(t *testing.T, st string) {
			p := filepath.Join(st, filepath.FromSlash(stages.ResultsPath(0, b1.Index)))
			data, _ := os.ReadFile(p)
			for i := len(data) / 2; i < len(data)/2+16 && i < len(data)-8; i++ {
				data[i] ^= 0xff
			}
			os.WriteFile(p, data, 0o644)
		}, []string{fmt.Sprintf("block %d of point 0", b1.Index), "is recomputed"}, true},
		{"staging config.json edited", func(t *testing.T, st string) {
			p := filepath.Join(st, "config.json")
			data, _ := os.ReadFile(p)
			edited := strings.Replace(string(data), `"steps": 300`, `"steps": 301`, 1)
			if edited == string(data) {
				t.Fatalf("config.json has no steps 300:\n%s", data)
			}
			os.WriteFile(p, []byte(edited), 0o644)
		}, []string{"config.json was changed after jemcheck wrote it", "not resumed"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(out)
			copyTree(t, saved, out)
			tc.tamper(t, filepath.Join(out, stName))
			cfg := resumeConfig(out)
			cfg.Resume = true
			var buf, errBuf bytes.Buffer
			cfg.Stderr = &errBuf
			if err := run(ctx, cfg, &buf); err != nil {
				t.Fatalf("resumed run: %v\n%s", err, buf.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errBuf.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errBuf.String())
				}
			}
			t.Logf("stderr: %s", strings.TrimSpace(errBuf.String()))
			if tc.same {
				sameOutputs(t, ref, out)
			}
		})
	}
}

// referenceRun runs resumeConfig uninterrupted into a folder out (config.json records
// --out), then moves it to ref: the run a stopped and resumed run into out must equal.
func referenceRun(t *testing.T) (ref, out string) {
	t.Helper()
	root := t.TempDir()
	ref, out = filepath.Join(root, "ref"), filepath.Join(root, "out")
	if err := run(context.Background(), resumeConfig(out), &bytes.Buffer{}); err != nil {
		t.Fatalf("reference run: %v", err)
	}
	if err := os.Rename(out, ref); err != nil {
		t.Fatal(err)
	}
	return ref, out
}

// TestResumeAfterRunnerFailure: a runner that fails after every block is done (here the
// report stage's error; prism's progress panic on a runner transform fails the job the
// same way) keeps the finished blocks in the staging folder instead of removing them
// with the run, says so, and --resume recomputes only the blocks a resume always
// recomputes (those holding the report's tables) and publishes files byte-identical to
// an uninterrupted run's.
func TestResumeAfterRunnerFailure(t *testing.T) {
	ctx := context.Background()
	ref, out := referenceRun(t)
	stages.FailReport = func() error { return errors.New("injected runner failure") }
	var buf bytes.Buffer
	err := run(ctx, resumeConfig(out), &buf)
	stages.FailReport = nil
	if err == nil || !strings.Contains(err.Error(), "injected runner failure") {
		t.Fatalf("failed run: %v, want the injected failure\n%s", err, buf.String())
	}
	m := regexp.MustCompile(`(\d) of 5 blocks complete are kept in .*rerun with --resume`).FindStringSubmatch(err.Error())
	if m == nil || m[1] != "5" {
		t.Fatalf("failed run's message %q, want all 5 blocks kept for --resume", err)
	}
	waitSettled(t, out)
	cfg := resumeConfig(out)
	cfg.Resume = true
	buf.Reset()
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, buf.String())
	}
	// Of the 5 blocks, block 0 holds the report's tables (always recomputed): 4 are reused.
	if !strings.Contains(buf.String(), "4 of 5 blocks complete are kept") || !strings.Contains(buf.String(), "computing the other 1 ") ||
		!strings.Contains(buf.String(), "blocks_resumed=4") {
		t.Errorf("resumed run printed\n%s\nwant 4 of 5 blocks reused and 1 (the report's) recomputed", buf.String())
	}
	t.Logf("failed: %v", err)
	sameOutputs(t, ref, out)
}

// prismPanic reads like prism's progress panic on a runner transform (stage.Execute
// recovers it and fails the job with the stack): see docs/scale.md.
const prismPanic = "panic in stage.Execute bundle processing goroutine: runtime error: invalid memory address or nil pointer dereference " +
	"goroutine 1 [running]: worker.(*W).sendInstruction(0x0) worker.(*B).Progress(...)"

// TestPrismPanicResumedOnce: a run that prism fails with its progress panic is resumed
// once in the same process from the blocks it finished, and publishes what an
// uninterrupted run does; a panic that comes again fails the run (one retry, never a
// loop), still keeping its finished blocks for --resume.
func TestPrismPanicResumedOnce(t *testing.T) {
	ctx := context.Background()
	ref, out := referenceRun(t)
	fails := 1
	stages.FailReport = func() error {
		if fails == 0 {
			return nil
		}
		fails--
		return errors.New(prismPanic)
	}
	defer func() { stages.FailReport = nil }()
	var buf bytes.Buffer
	if err := run(ctx, resumeConfig(out), &buf); err != nil {
		t.Fatalf("run with one prism panic: %v\n%s", err, buf.String())
	}
	for _, want := range []string{"resuming once from the blocks it finished", "4 of 5 blocks complete are kept", "blocks_resumed=4"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("run with one prism panic printed\n%s\nwant %q", buf.String(), want)
		}
	}
	sameOutputs(t, ref, out)

	fails = 2
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	err := run(ctx, resumeConfig(out), &buf)
	if err == nil || !strings.Contains(err.Error(), "panic in stage.Execute") || !strings.Contains(err.Error(), "rerun with --resume") {
		t.Fatalf("run with two prism panics: %v, want the panic and the blocks kept\n%s", err, buf.String())
	}
	if n := strings.Count(buf.String(), "resuming once"); n != 1 {
		t.Errorf("run with two prism panics resumed %d times, want once", n)
	}
}

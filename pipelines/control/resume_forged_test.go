package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// TestResumeForgedRecords (review F19): the hash records of a staging folder's part
// files carry no secret, so another block's files copied over a kept block's, with their
// records rewritten to match, pass the hash check. The resumed run must still see that
// the rows are not the block's (its run ids, table ids) and recompute it: the published
// run is the uninterrupted run's, byte for byte, every table once (before the fix block
// 2's tables were published twice and block 1's not at all).
func TestResumeForgedRecords(t *testing.T) {
	ctx := context.Background()
	ref, out := referenceRun(t)
	stages.FailReport = func() error { return errors.New("injected runner failure") }
	err := run(ctx, resumeConfig(out), &bytes.Buffer{})
	stages.FailReport = nil
	if err == nil || !regexp.MustCompile(`5 of 5 blocks complete are kept`).MatchString(err.Error()) {
		t.Fatalf("failed run: %v, want all 5 blocks kept for --resume", err)
	}
	waitSettled(t, out)
	saved := filepath.Join(t.TempDir(), "saved")
	copyTree(t, out, saved)
	dirs, _ := filepath.Glob(filepath.Join(saved, storage.StagingPrefix+"*"))
	if len(dirs) != 1 {
		t.Fatalf("staging folders kept: %v", dirs)
	}
	stName := filepath.Base(dirs[0])
	// Block 0 holds the report's tables (always recomputed); 1 to 4 are kept. Block 2's
	// files go over block 1's.
	const from, to = 2, 1
	cases := []struct {
		name  string
		parts []func(pointID, block int64) string
		want  string // on stderr, after "block 1 of point 0 in ... is recomputed: "
	}{
		{"results, learned and samples swapped (the review's)", []func(int64, int64) string{stages.ResultsPath, stages.LearnedPath, stages.SamplePath},
			"results/point-0000-part-00001.parquet holds run p0000-t0000010-"},
		{"learned swapped", []func(int64, int64) string{stages.LearnedPath}, "learned/point-0000-part-00001.parquet holds run p0000-t0000010-"},
		{"samples swapped", []func(int64, int64) string{stages.SamplePath}, "samples/point-0000-part-00001.parquet holds draws of table 10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(out)
			copyTree(t, saved, out)
			st := filepath.Join(out, stName)
			for _, part := range tc.parts {
				src, dst := part(0, from), part(0, to)
				data, err := os.ReadFile(filepath.Join(st, filepath.FromSlash(src)))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(st, filepath.FromSlash(dst)), data, 0o644); err != nil {
					t.Fatal(err)
				}
				h := sha256.Sum256(data)
				rec, _ := json.Marshal(storage.PartRecord{Path: dst, Size: int64(len(data)), SHA256: hex.EncodeToString(h[:])})
				if err := os.WriteFile(filepath.Join(st, ".jemcheck-parts", filepath.FromSlash(dst)+".json"), rec, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := resumeConfig(out)
			cfg.Resume = true
			var buf, errBuf bytes.Buffer
			cfg.Stderr = &errBuf
			if err := run(ctx, cfg, &buf); err != nil {
				t.Fatalf("resumed run: %v\n%s", err, buf.String())
			}
			if !strings.Contains(errBuf.String(), "block 1 of point 0") || !strings.Contains(errBuf.String(), "is recomputed: "+tc.want) {
				t.Errorf("stderr lacks block 1 recomputed because %q:\n%s", tc.want, errBuf.String())
			}
			if n := strings.Count(strings.TrimSpace(errBuf.String()), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one:\n%s", n+1, errBuf.String())
			}
			if !strings.Contains(buf.String(), "3 of 5 blocks complete are kept") || !strings.Contains(buf.String(), "(1 kept block(s) changed since") {
				t.Errorf("resumed run printed\n%s\nwant 3 of 5 blocks kept, 1 changed", buf.String())
			}
			t.Logf("stderr: %s", strings.TrimSpace(errBuf.String()))
			// Every table once: 24 tables × 3 methods, distinct run ids.
			b, err := storage.OpenExistingBucket(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ids := map[string]bool{}
			keys, _ := filepath.Glob(filepath.Join(out, "results", "*.parquet"))
			for _, k := range keys {
				rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, "results/"+filepath.Base(k))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					ids[r.RunID] = true
				}
			}
			if len(ids) != 24*3 {
				t.Errorf("published %d distinct runs, want 72 (24 tables, 3 methods)", len(ids))
			}
			sameOutputs(t, ref, out)
		})
	}
}

package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/storage"
)

// TestLinksSwappedDuringRun: while runs write their outputs, a goroutine plants links
// to a folder of the user's files at random moments: in place of the staging folder
// (after moving it away), of its subfolders, of output names inside it, and of --out's
// own output folders. Whatever each run's fate (it may fail: a link is refused, never
// followed), nothing outside --out changes, and no file appears there.
func TestLinksSwappedDuringRun(t *testing.T) {
	testenv.Slow(t, "runs the pipeline several times")
	base := t.TempDir()
	outside := filepath.Join(base, "user")
	for _, n := range []string{"thesis.tex", "results/point-0000-part-00000.parquet", "figures/kl_dist.svg", "summary.json", "manifest.json"} {
		p := filepath.Join(outside, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("the user's "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, outside)
	for round := range 10 {
		out := filepath.Join(base, "out")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the attacker: needs write access to --out only
			defer wg.Done()
			if round == 0 {
				return // a run left alone publishes
			}
			rng := rand.New(rand.NewPCG(uint64(round), 1))
			wait := time.Duration(rng.IntN(400)) * time.Millisecond // the first attack: early in the run, or late (the commit)
			for {
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
				wait = time.Duration(rng.IntN(60)) * time.Millisecond
				entries, _ := os.ReadDir(out)
				for _, e := range entries {
					p := filepath.Join(out, e.Name())
					switch {
					case strings.HasPrefix(e.Name(), storage.StagingPrefix) && e.IsDir():
						switch rng.IntN(3) {
						case 0: // the staging folder itself swapped for a link
							if os.Rename(p, p+".moved") == nil {
								os.Symlink(outside, p)
							}
						case 1: // a subfolder of it
							os.RemoveAll(filepath.Join(p, "results"))
							os.Symlink(filepath.Join(outside, "results"), filepath.Join(p, "results"))
						case 2: // an output name inside it
							os.Symlink(filepath.Join(outside, "summary.json"), filepath.Join(p, "summary.json"))
						}
					case e.Name() == "figures" || e.Name() == "results":
						if os.Rename(p, p+".moved") == nil {
							os.Symlink(filepath.Join(outside, e.Name()), p)
						}
					case e.Name() == "manifest.json" && rng.IntN(2) == 0:
						os.Remove(p)
						os.Symlink(filepath.Join(outside, "manifest.json"), p)
					}
				}
			}
		}()
		cfg := small(out)
		cfg.Overwrite = true
		err := run(context.Background(), cfg, &bytes.Buffer{})
		close(stop)
		wg.Wait()
		t.Logf("round %d: %v", round, err)
		if round == 0 {
			if err != nil {
				t.Fatalf("a run without attacks: %v", err)
			}
			expectComplete(t, out)
		}
		sameSnapshot(t, "the user's folder outside --out", before, snapshot(t, outside))
		os.RemoveAll(out) // the next round starts clean (links removed, never followed)
	}
}

package launchtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/storage"
)

// UserFolder makes a folder of the user's own files beside the runs, named like
// jemcheck's outputs (the files an attack would want a run to overwrite), and returns
// it with a snapshot of its contents.
func UserFolder(t *testing.T, base string) (string, map[string]string) {
	t.Helper()
	dir := filepath.Join(base, "user")
	for _, n := range []string{"thesis.tex", "results/point-0000-part-00000.parquet", "figures/kl_dist.svg", "summary.json",
		"manifest.json", "export.json", "compare.html", "leaderboard.md"} {
		p := filepath.Join(dir, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("the user's "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, Snapshot(t, dir)
}

// Snapshot maps every file under dir (relative, slash-separated) to its SHA-256.
func Snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := sha256.Sum256(data)
		got[filepath.ToSlash(rel)] = hex.EncodeToString(h[:])
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return got
}

// Unchanged fails the test if dir's files differ from the snapshot before: one
// changed, vanished or appeared.
func Unchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := Snapshot(t, dir)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed or vanished", dir, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", dir, k)
		}
	}
}

// SwapLinks is the attacker of the link tests: it needs write access to out only.
// From a random moment (within the first window after it starts; seed 0: it does
// nothing, a run left alone) until the returned stop is called, it plants links to
// outside every millisecond or so: in place of a staging folder (moved away first), of the staging
// folder's results/ and of an output name in it, of out's own output folders
// (figures/, results/, arrays/) and of manifest.json and the command's files.
func SwapLinks(out, outside string, seed uint64, window time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if seed == 0 {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		wait := time.Duration(rng.Int64N(int64(window) + 1))
		for {
			select {
			case <-done:
				return
			case <-time.After(wait):
			}
			wait = time.Duration(rng.IntN(2000)) * time.Microsecond
			entries, _ := os.ReadDir(out)
			for _, e := range entries {
				p := filepath.Join(out, e.Name())
				switch name := e.Name(); {
				case strings.HasPrefix(name, storage.StagingPrefix) && e.IsDir():
					switch rng.IntN(3) {
					case 0:
						if os.Rename(p, p+".moved") == nil {
							os.Symlink(outside, p)
						}
					case 1:
						os.RemoveAll(filepath.Join(p, "results"))
						os.Symlink(filepath.Join(outside, "results"), filepath.Join(p, "results"))
					case 2:
						os.Symlink(filepath.Join(outside, "summary.json"), filepath.Join(p, "summary.json"))
					}
				case name == "figures" || name == "results" || name == "arrays":
					if os.Rename(p, p+".moved") == nil {
						os.Symlink(filepath.Join(outside, name), p)
					}
				case name == "manifest.json" || name == "export.json" || name == "compare.html" || name == "leaderboard.md":
					if rng.IntN(2) == 0 {
						os.Remove(p)
						os.Symlink(filepath.Join(outside, name), p)
					}
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// UnderLinkSwaps runs a command rounds times into base/out while SwapLinks attacks it
// (round r with seed r: round 0 is left alone and must succeed), and after every round
// checks that the user's folder beside it (UserFolder) is unchanged; out is removed
// between rounds (links removed, never followed). window bounds the first attack's
// moment: about the command's run time.
func UnderLinkSwaps(t *testing.T, rounds int, window time.Duration, run func(out string, round int) error) {
	t.Helper()
	base := t.TempDir()
	outside, before := UserFolder(t, base)
	for round := range rounds {
		out := filepath.Join(base, "out")
		stop := SwapLinks(out, outside, uint64(round), window)
		err := run(out, round)
		stop()
		t.Logf("round %d: %v", round, err)
		if round == 0 && err != nil {
			t.Fatalf("a run without attacks: %v", err)
		}
		Unchanged(t, outside, before)
		os.RemoveAll(out)
	}
}

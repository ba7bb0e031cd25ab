package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFile writes a local file, creating its folders.
func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLinksUnderOutRefused (D9, D10): a symbolic link where a run reads, writes or
// deletes under --out is refused by name, by the ownership check and by the commit,
// and the files behind it keep their bytes.
func TestLinksUnderOutRefused(t *testing.T) {
	ctx := context.Background()
	run1 := map[string]string{"config.json": "1", "results.parquet": "r1", "samples/s0.parquet": "a", "figures/kl.svg": "k"}
	run2 := map[string]string{"config.json": "2", "results.parquet": "r2", "samples/s0.parquet": "b"}
	cases := []struct {
		name string
		// link makes the link inside loc to outside and returns its path relative to loc.
		link func(t *testing.T, loc, outside string) string
	}{
		{"output folder samples/ linked to a user's folder (D9)", func(t *testing.T, loc, outside string) string {
			writeFile(t, filepath.Join(outside, "s0.parquet"), "MY PRECIOUS DATA")
			os.RemoveAll(filepath.Join(loc, "samples"))
			os.Symlink(outside, filepath.Join(loc, "samples"))
			return "samples"
		}},
		{"output folder figures/ linked, holding a listed file (D10)", func(t *testing.T, loc, outside string) string {
			writeFile(t, filepath.Join(outside, "kl.svg"), "k") // same size: the check by size passed it
			os.RemoveAll(filepath.Join(loc, "figures"))
			os.Symlink(outside, filepath.Join(loc, "figures"))
			return "figures"
		}},
		{"an output file linked to a user's file", func(t *testing.T, loc, outside string) string {
			writeFile(t, filepath.Join(outside, "mine"), "M")
			os.Remove(filepath.Join(loc, "samples", "s0.parquet"))
			os.Symlink(filepath.Join(outside, "mine"), filepath.Join(loc, "samples", "s0.parquet"))
			return "samples/s0.parquet"
		}},
		{"manifest.json linked", func(t *testing.T, loc, outside string) string {
			data, _ := os.ReadFile(filepath.Join(loc, ManifestKey))
			writeFile(t, filepath.Join(outside, "m.json"), string(data))
			os.Remove(filepath.Join(loc, ManifestKey))
			os.Symlink(filepath.Join(outside, "m.json"), filepath.Join(loc, ManifestKey))
			return ManifestKey
		}},
		{"a staging folder linked to a user's folder", func(t *testing.T, loc, outside string) string {
			writeFile(t, filepath.Join(outside, "precious.txt"), "mine")
			os.Symlink(outside, filepath.Join(loc, StagingPrefix+"evil"))
			return StagingPrefix + "evil"
		}},
		{"a link inside a sealed staging folder", func(t *testing.T, loc, outside string) string {
			writeFile(t, filepath.Join(outside, "x.parquet"), "mine")
			sealStaging(t, loc, "old")
			os.MkdirAll(filepath.Join(loc, StagingPrefix+"old", "samples"), 0o755)
			os.Symlink(filepath.Join(outside, "x.parquet"), filepath.Join(loc, StagingPrefix+"old", "samples", "s9.parquet"))
			return StagingPrefix + "old/samples/s9.parquet"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			loc, outside := filepath.Join(root, "out"), filepath.Join(root, "outside")
			if _, err := stage(t, loc, "r1", run1, false); err != nil {
				t.Fatal(err)
			}
			link := c.link(t, loc, outside)
			before := contents(t, outside)
			for _, overwrite := range []bool{false, true} {
				_, err := CheckOwnership(ctx, loc, testLayout, nil, overwrite)
				var oe *OwnershipError
				if !errors.As(err, &oe) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), filepath.Join(loc, filepath.FromSlash(link))) {
					t.Errorf("CheckOwnership(overwrite %v) = %v; want a refusal naming the link %s", overwrite, err, link)
				}
			}
			// The commit refuses too, before it begins (a run that got past the check).
			_, err := stage(t, loc, "r2", run2, true)
			var oe *OwnershipError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("Commit = %v; want a refusal naming a link", err)
			}
			if after := contents(t, outside); !mapsEqual(before, after) {
				t.Errorf("files outside --out changed:\nbefore %v\nafter  %v", before, after)
			}
			if fi, err := os.Lstat(filepath.Join(loc, filepath.FromSlash(link))); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link %s was removed or replaced (%v)", link, err)
			}
		})
	}
}

// TestMoveLocalRefusesLinkThatAppeared: a link put in place after the checks (a race)
// is still not followed by the commit's renames and deletes.
func TestMoveLocalRefusesLinkThatAppeared(t *testing.T) {
	root := t.TempDir()
	dir, outside := filepath.Join(root, "out"), filepath.Join(root, "outside")
	writeFile(t, filepath.Join(dir, ".st", "results", "a.parquet"), "new")
	writeFile(t, filepath.Join(outside, "a.parquet"), "MINE")
	os.Symlink(outside, filepath.Join(dir, "results"))
	if err := moveLocal(dir, ".st/results/a.parquet", "results/a.parquet"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("moveLocal through a linked folder = %v, want a refusal", err)
	}
	if err := deleteLocal(dir, "results/a.parquet"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("deleteLocal through a linked folder = %v, want a refusal", err)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "a.parquet")); string(got) != "MINE" {
		t.Errorf("the file outside --out is now %q", got)
	}
}

// TestOnlySealedCleanedUp (D11): a folder named like a staging folder and files named
// like takeover claims that jemcheck did not seal are left alone by the clean-up of
// earlier runs and by taking the lock; jemcheck's own are removed.
func TestOnlySealedCleanedUp(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	for kind, loc := range locations(t) {
		t.Run(kind, func(t *testing.T) {
			ownClaim := `{"run_id": "x", "pipeline": "control", "host": "h", "pid": 1, "started": "2026-01-01T00:00:00Z", "remote": false}`
			put(t, loc, map[string]string{
				StagingKey("userdir") + "precious.txt": "mine",
				StagingKey("userdir") + commitKey:      "null", // even one that looks mid-commit
				LockKey + ".takeover.abc":              "mine",
				claimKey([]byte("y")):                  "mine, not a lock",
				claimKey([]byte("z")):                  ownClaim,
			})
			sealStaging(t, loc, "dead")
			put(t, loc, map[string]string{StagingKey("dead") + "results.parquet": "x"})
			if _, err := AcquireLock(ctx, loc, LockInfo{RunID: "me", Pipeline: "control", Host: host, PID: os.Getpid(), Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			ids, err := Resumable(ctx, loc)
			if err != nil || len(ids) != 1 || ids[0] != "dead" {
				t.Errorf("Resumable = %v, %v; want only the sealed run dead", ids, err)
			}
			lines, err := RecoverStaging(ctx, loc, "me")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(lines, "\n"), "left "+StagingKey("userdir")+" alone") {
				t.Errorf("RecoverStaging said %q; want it to say the user's folder is left alone", lines)
			}
			got := contents(t, loc)
			for _, k := range []string{StagingKey("userdir") + "precious.txt", LockKey + ".takeover.abc", claimKey([]byte("y"))} {
				if _, ok := got[k]; !ok {
					t.Errorf("%s was removed", k)
				}
			}
			for _, k := range []string{StagingKey("dead") + "results.parquet", claimKey([]byte("z"))} {
				if _, ok := got[k]; ok {
					t.Errorf("jemcheck's own %s was not removed", k)
				}
			}
		})
	}
}

// TestVerifyOwnershipFindsSameSizeEdit (D20): a hand edit that keeps the size is found
// by hash.
func TestVerifyOwnershipFindsSameSizeEdit(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range locations(t) {
		t.Run(kind, func(t *testing.T) {
			if _, err := stage(t, loc, "r1", map[string]string{"config.json": "{}", "results.parquet": "r1"}, false); err != nil {
				t.Fatal(err)
			}
			put(t, loc, map[string]string{"results.parquet": "R1"})
			if _, err := CheckOwnership(ctx, loc, testLayout, nil, false); err != nil {
				t.Errorf("CheckOwnership (sizes) = %v, want it to pass", err)
			}
			_, err := VerifyOwnership(ctx, loc, testLayout, nil, false)
			if oe := (*OwnershipError)(nil); !errors.As(err, &oe) || !strings.Contains(err.Error(), "results.parquet (changed since jemcheck wrote it: sha256") {
				t.Errorf("VerifyOwnership = %v, want a refusal naming the edited file", err)
			}
		})
	}
}

// TestPartRecords: a part file is checked against the hash recorded when it was
// written; a changed file, a record copied from another file, and no record are all
// ErrPartChanged; publishing refuses a staged file that changed since.
func TestPartRecords(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		tamper func(t *testing.T, loc string)
	}{
		{"byte flipped", func(t *testing.T, loc string) {
			put(t, loc, map[string]string{StagingKey("r1") + "samples/s0.parquet": "AAAB"})
		}},
		{"swapped with another part, record and all", func(t *testing.T, loc string) {
			b, _ := OpenBucket(ctx, loc)
			defer b.Close()
			data, _ := b.ReadAll(ctx, StagingKey("r1")+"samples/s1.parquet")
			rec, _ := b.ReadAll(ctx, StagingKey("r1")+partSealKey("samples/s1.parquet"))
			put(t, loc, map[string]string{StagingKey("r1") + "samples/s0.parquet": string(data),
				StagingKey("r1") + partSealKey("samples/s0.parquet"): string(rec)})
		}},
	}
	for _, c := range cases {
		for kind, loc := range locations(t) {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				loc += "-" + strings.ReplaceAll(c.name, " ", "_")
				sealStaging(t, loc, "r1")
				put(t, loc, map[string]string{StagingKey("r1") + "samples/s0.parquet": "AAAA", StagingKey("r1") + "samples/s1.parquet": "BBBBBB",
					StagingKey("r1") + "config.json": "{}"})
				st, _ := SubLocation(loc, StagingKey("r1"))
				sb, err := OpenBucket(ctx, st)
				if err != nil {
					t.Fatal(err)
				}
				defer sb.Close()
				for _, k := range []string{"samples/s0.parquet", "samples/s1.parquet"} {
					if err := SealPart(ctx, sb, k); err != nil {
						t.Fatal(err)
					}
					if err := VerifyPart(ctx, sb, k); err != nil {
						t.Errorf("VerifyPart(%s) right after SealPart = %v", k, err)
					}
				}
				if err := VerifyPart(ctx, sb, "config.json"); !errors.Is(err, ErrPartChanged) {
					t.Errorf("VerifyPart of a file without a record = %v, want ErrPartChanged", err)
				}
				c.tamper(t, loc)
				if err := VerifyPart(ctx, sb, "samples/s0.parquet"); !errors.Is(err, ErrPartChanged) {
					t.Errorf("VerifyPart after tampering = %v, want ErrPartChanged", err)
				}
				_, err = Commit(ctx, loc, CommitInfo{RunID: "r1", Pipeline: "test"})
				if err == nil || !strings.Contains(err.Error(), "samples/s0.parquet") {
					t.Errorf("Commit of a tampered staging folder = %v, want a refusal naming samples/s0.parquet", err)
				}
				if _, ok := contents(t, loc)[ManifestKey]; ok {
					t.Errorf("a manifest was published")
				}
			})
		}
	}
}

// TestOverlap: --out and an input folder or file, compared after resolving links.
func TestOverlap(t *testing.T) {
	root := t.TempDir()
	from := filepath.Join(root, "export")
	os.MkdirAll(filepath.Join(from, "sub"), 0o755)
	os.Symlink(from, filepath.Join(root, "alias"))
	cases := []struct {
		name, out, in, want string
	}{
		{"same folder", from, from, "is the same folder as"},
		{"same folder, trailing slash", from + "/", from, "is the same folder as"},
		{"same folder through a link", filepath.Join(root, "alias"), from, "is the same folder as"},
		{"out inside the input", filepath.Join(from, "sub", "new"), from, "is inside"},
		{"out contains the input", root, from, "contains"},
		{"siblings", filepath.Join(root, "exp"), from, ""},
		{"file URL of the same folder", "file://" + from, from, "is the same folder as"},
		{"same bucket folder", "mem://b/runs/r1", "mem://b/runs/r1/", "is the same folder as"},
		{"bucket folder inside", "mem://b/runs/r1/cmp", "mem://b/runs/r1", "is inside"},
		{"bucket folder contains", "mem://b/runs", "mem://b/runs/r1", "contains"},
		{"bucket siblings", "mem://b/runs/r1", "mem://b/runs/r10", ""},
		{"other bucket", "mem://b/runs/r1", "mem://c/runs/r1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Overlap(c.out, c.in); got != c.want {
				t.Errorf("Overlap(%s, %s) = %q, want %q", c.out, c.in, got, c.want)
			}
		})
	}
	if !FileInside(root, filepath.Join(from, "tables.csv")) || FileInside(filepath.Join(root, "x"), filepath.Join(from, "tables.csv")) {
		t.Errorf("FileInside is wrong")
	}
}

// TestCheckNoLinks: an input given as a folder may be a link itself, but holds none.
func TestCheckNoLinks(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "run")
	writeFile(t, filepath.Join(in, "results", "a.parquet"), "a")
	os.Symlink(in, filepath.Join(root, "alias"))
	if err := CheckNoLinks(filepath.Join(root, "alias"), "--from"); err != nil {
		t.Errorf("a linked input folder without links inside: %v", err)
	}
	os.Symlink("/etc/passwd", filepath.Join(in, "results", "b.parquet"))
	if err := CheckNoLinks(in, "--from "+in); err == nil || !strings.Contains(err.Error(), "b.parquet -> /etc/passwd") {
		t.Errorf("CheckNoLinks = %v, want a refusal naming results/b.parquet", err)
	}
}

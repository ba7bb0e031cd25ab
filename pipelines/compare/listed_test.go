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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/storage"
)

// TestCompareListedSizes (review F8): the size a run's manifest lists is checked, never
// used as a read limit or an allocation. A manifest edited to list an 8 GiB file, a
// sparse 8 GiB file at a listed name, or a listed file changed in place is refused
// with one message naming the file, before more than a few MB are allocated.
func TestCompareListedSizes(t *testing.T) {
	ctx := context.Background()
	a := writeRun(t, 1, 0)
	const part = "results/point-0000-part-00000.parquet"
	const extra = "results/point-0000-part-00001.parquet"
	const gib8 = int64(8) << 30
	// edit rewrites the manifest of run d, listing key with size and sha256 (added or replaced).
	edit := func(t *testing.T, d, key string, size int64, sum string) {
		t.Helper()
		p := filepath.Join(d, storage.ManifestKey)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m storage.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		f := storage.ManifestFile{Path: key, Size: size, SHA256: sum}
		if i := slices.IndexFunc(m.Files, func(f storage.ManifestFile) bool { return f.Path == key }); i >= 0 {
			m.Files[i] = f
		} else {
			m.Files = append(m.Files, f)
			slices.SortFunc(m.Files, func(x, y storage.ManifestFile) int { return strings.Compare(x.Path, y.Path) })
		}
		if data, err = json.MarshalIndent(m, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyRun := func(t *testing.T) string {
		d := t.TempDir()
		for _, e := range []string{storage.ManifestKey, "summary.json", part} {
			data, err := os.ReadFile(filepath.Join(a, filepath.FromSlash(e)))
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(filepath.Join(d, filepath.FromSlash(e))), 0o755)
			if err := os.WriteFile(filepath.Join(d, filepath.FromSlash(e)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	zeros := strings.Repeat("0", 64)
	partData, err := os.ReadFile(filepath.Join(a, filepath.FromSlash(part)))
	if err != nil {
		t.Fatal(err)
	}
	partSize := int64(len(partData))
	cases := []struct {
		name string
		make func(t *testing.T, d string)
		want string
	}{
		{"8 GiB listed, the file small", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, filepath.FromSlash(extra)), partData, 0o644)
			edit(t, d, extra, gib8, zeros)
		}, extra + ": manifest.json lists it with 8589934592 bytes, more than the 1073741824 jemcheck reads of such a file"},
		{"sparse 8 GiB file, 8 GiB listed (the review's)", func(t *testing.T, d string) {
			p := filepath.Join(d, filepath.FromSlash(extra))
			os.WriteFile(p, nil, 0o644)
			if err := os.Truncate(p, gib8); err != nil {
				t.Skipf("no sparse 8 GiB file here: %v", err)
			}
			edit(t, d, extra, gib8, zeros)
		}, extra + ": manifest.json lists it with 8589934592 bytes, more than the 1073741824"},
		{"sparse 8 GiB file, its old size listed", func(t *testing.T, d string) {
			if err := os.Truncate(filepath.Join(d, filepath.FromSlash(part)), gib8); err != nil {
				t.Skipf("no sparse 8 GiB file here: %v", err)
			}
		}, part + " has 8589934592 bytes, but manifest.json lists"},
		{"sparse summary.json, 8 GiB listed", func(t *testing.T, d string) {
			if err := os.Truncate(filepath.Join(d, "summary.json"), gib8); err != nil {
				t.Skipf("no sparse 8 GiB file here: %v", err)
			}
			edit(t, d, "summary.json", gib8, zeros)
		}, "summary.json: manifest.json lists it with 8589934592 bytes, more than the 1073741824"},
		{"listed size under the limit, the file shorter", func(t *testing.T, d string) {
			edit(t, d, part, 900<<20, zeros)
		}, part + " has " + itoa(partSize) + " bytes, but manifest.json lists 943718400"},
		{"bytes changed, size kept", func(t *testing.T, d string) {
			changed := bytes.Clone(partData)
			changed[len(changed)/2] ^= 0xff
			os.WriteFile(filepath.Join(d, filepath.FromSlash(part)), changed, 0o644)
		}, part + ": sha256 "},
		{"bytes and listed hash changed, size kept", func(t *testing.T, d string) {
			changed := bytes.Clone(partData)
			changed[len(changed)/2] ^= 0xff
			os.WriteFile(filepath.Join(d, filepath.FromSlash(part)), changed, 0o644)
			h := sha256.Sum256(partData[:1]) // any other hash
			edit(t, d, part, partSize, hex.EncodeToString(h[:]))
		}, "(changed since jemcheck wrote it)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := copyRun(t)
			c.make(t, d)
			out := filepath.Join(t.TempDir(), "cmp")
			var buf bytes.Buffer
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := run(ctx, []string{a, d}, out, false, &buf)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("compare = %v, want bad input with %q", err, c.want)
			}
			if n := strings.Count(err.Error(), "\n"); n > 0 {
				t.Errorf("the refusal is %d lines, want one: %v", n+1, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("compare allocated %d bytes to refuse it, want < 32 MiB", alloc)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused compare wrote %s", out)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

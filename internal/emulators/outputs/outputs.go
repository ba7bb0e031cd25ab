// Package outputs compares what two runs of the same command published into two
// output locations (a file:// reference and a gs:// or s3:// one, say): every object,
// byte for byte, except the two files that name the run or its locations, which are
// compared by structure:
//
//   - config.json records the command's locations (--out, --tables_from, --logits,
//     --from, --spec): decoded, with each location replaced by its role, it must be
//     equal;
//   - manifest.json carries the run id and config.json's hash: both runs' manifests
//     must verify (every listed file in place with its size and SHA-256), list the
//     same files, and agree on every file's size and hash but those of the files
//     that show locations (config.json and NamingLocations, compared on their own).
//
// The pages and compare.json show the locations too (report.html embeds config.json;
// compare.html and compare.json name the runs compared): they must be byte-identical
// once each location, in every escaped form it takes there, is replaced by its role.
// Every other file (Parquet, summary.json, figures, export.json, CSV) must be
// byte-identical as it is.
package outputs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/storage"
)

// Structural are the files compared by structure rather than by bytes.
var Structural = []string{"config.json", storage.ManifestKey}

// NamingLocations are the files compared byte for byte once the locations they
// show are replaced by their roles.
var NamingLocations = []string{"report.html", "compare.html", "compare.json"}

// Snapshot returns every object under loc (a folder: its keys relative to it).
func Snapshot(ctx context.Context, loc string) (map[string][]byte, error) {
	b, err := storage.OpenExistingBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	files := map[string][]byte{}
	it := b.List(nil)
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", loc, err)
		}
		data, err := b.ReadAll(ctx, o.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s in %s: %w", o.Key, loc, err)
		}
		files[o.Key] = data
	}
}

// Run is one run's output location and the locations its command was given, by role
// ("out", "tables_from", "logits", "from", ...): the roles must be the same in the
// runs compared.
type Run struct {
	Out  string
	Locs map[string]string
}

// Same checks that run b published what run a did (see the package comment) and
// returns the number of files compared byte for byte. Keys that are not Structural
// and appear in want are required to exist (a run that published too little fails
// even if both lost the same file).
func Same(t testing.TB, a, b Run, want ...string) int {
	t.Helper()
	ctx := context.Background()
	fa, err := Snapshot(ctx, a.Out)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := Snapshot(ctx, b.Out)
	if err != nil {
		t.Fatal(err)
	}
	ka, kb := keys(fa), keys(fb)
	if !slices.Equal(ka, kb) {
		t.Fatalf("%s and %s hold different files:\n  %v\n  %v", a.Out, b.Out, ka, kb)
	}
	for _, k := range want {
		if _, ok := fa[k]; !ok {
			t.Errorf("%s missing in both runs", k)
		}
	}
	for _, k := range ka {
		if storage.IsLockKey(k) || strings.HasPrefix(k, storage.StagingPrefix) {
			t.Errorf("bookkeeping object %s left behind", k)
		}
	}
	ma, mb := verify(t, a.Out), verify(t, b.Out)
	same := 0
	for _, k := range ka {
		switch k {
		case storage.ManifestKey:
			sameManifest(t, ma, mb)
		case "config.json":
			sameConfig(t, fa[k], fb[k], a.Locs, b.Locs)
		default:
			x, y := fa[k], fb[k]
			if slices.Contains(NamingLocations, k) {
				x, y = replaceLocs(x, a.Locs), replaceLocs(y, b.Locs)
			}
			if !bytes.Equal(x, y) {
				t.Errorf("%s differs: %d bytes in %s, %d in %s", k, len(fa[k]), a.Out, len(fb[k]), b.Out)
				continue
			}
			same++
		}
	}
	return same
}

// replaceLocs replaces each location in data, raw, JSON-escaped, HTML-escaped or
// both, by "<role>"; longer locations first (one may start with another).
func replaceLocs(data []byte, locs map[string]string) []byte {
	type loc struct{ role, loc string }
	var ls []loc
	for r, l := range locs {
		ls = append(ls, loc{r, l})
	}
	slices.SortFunc(ls, func(a, b loc) int { return len(b.loc) - len(a.loc) })
	for _, l := range ls {
		js, _ := json.Marshal(l.loc)
		j := string(js[1 : len(js)-1])
		for _, form := range []string{l.loc, j, html.EscapeString(l.loc), html.EscapeString(j)} {
			data = bytes.ReplaceAll(data, []byte(form), []byte("<"+l.role+">"))
		}
	}
	return data
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func verify(t testing.TB, loc string) *storage.Manifest {
	t.Helper()
	m, err := storage.VerifyManifest(context.Background(), loc)
	if err != nil {
		t.Fatalf("%s: %v", loc, err)
	}
	return m
}

// sameManifest: the same files, each with the same size and hash but those that
// name locations (config.json, NamingLocations).
func sameManifest(t testing.TB, a, b *storage.Manifest) {
	t.Helper()
	if a.Format != b.Format || a.Version != b.Version || a.Pipeline != b.Pipeline {
		t.Errorf("manifests differ: %s %s %s vs %s %s %s", a.Format, a.Version, a.Pipeline, b.Format, b.Version, b.Pipeline)
	}
	if a.RunID == b.RunID {
		t.Errorf("both runs have the run id %s", a.RunID)
	}
	if len(a.Files) != len(b.Files) {
		t.Errorf("manifests list %d and %d files", len(a.Files), len(b.Files))
		return
	}
	for i, f := range a.Files {
		g := b.Files[i]
		named := f.Path == "config.json" || slices.Contains(NamingLocations, f.Path) // compared on their own
		if f.Path != g.Path || !named && f != g {
			t.Errorf("manifest entry %d: %+v vs %+v", i, f, g)
		}
	}
}

// sameConfig decodes both config.json files, replaces each run's locations by their
// roles, and compares.
func sameConfig(t testing.TB, a, b []byte, la, lb map[string]string) {
	t.Helper()
	if !slices.Equal(roles(la), roles(lb)) {
		t.Fatalf("the runs have different location roles: %v vs %v", roles(la), roles(lb))
	}
	na, err := normalize(a, la)
	if err != nil {
		t.Fatalf("config.json: %v", err)
	}
	nb, err := normalize(b, lb)
	if err != nil {
		t.Fatalf("config.json: %v", err)
	}
	if !reflect.DeepEqual(na, nb) {
		ja, _ := json.MarshalIndent(na, "", " ")
		jb, _ := json.MarshalIndent(nb, "", " ")
		t.Errorf("config.json differs beyond its locations:\n%s\n---\n%s", ja, jb)
	}
}

func roles(l map[string]string) []string {
	var r []string
	for k := range l {
		r = append(r, k)
	}
	slices.Sort(r)
	return r
}

// normalize decodes a JSON document and replaces every string (value or object key)
// equal to one of locs' locations by "<role>".
func normalize(data []byte, locs map[string]string) (any, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	byLoc := map[string]string{}
	for role, loc := range locs {
		byLoc[loc] = "<" + role + ">"
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if r, ok := byLoc[x]; ok {
				return r
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			y := make(map[string]any, len(x))
			for k, e := range x {
				if r, ok := byLoc[k]; ok {
					k = r // a map keyed by location (evaluate's logits_sha256)
				}
				y[k] = walk(e)
			}
			return y
		}
		return v
	}
	return walk(v), nil
}

// Keys lists the keys of the objects under loc.
func Keys(ctx context.Context, loc string) ([]string, error) {
	b, err := storage.OpenExistingBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var ks []string
	it := b.List(&blob.ListOptions{})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			slices.Sort(ks)
			return ks, nil
		}
		if err != nil {
			return nil, err
		}
		ks = append(ks, o.Key)
	}
}

// CopyFile copies the local file src to the object loc names (a file path or a bucket
// URL whose path is the key): an input given to a run on another store.
func CopyFile(t testing.TB, src, loc string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir, key, err := storage.SplitObject(loc)
	if err != nil {
		t.Fatal(err)
	}
	put(t, dir, map[string][]byte{key: data})
}

// CopyDir copies every file under the local folder src into the folder loc.
func CopyDir(t testing.TB, src, loc string) {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	put(t, loc, files)
}

func put(t testing.TB, loc string, files map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	b, err := storage.OpenBucket(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for k, data := range files {
		if err := b.WriteAll(ctx, k, data, nil); err != nil {
			t.Fatal(err)
		}
	}
}

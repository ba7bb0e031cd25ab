package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// TestRootBucketObjects: the confined bucket behaves as a blob bucket: writes, reads
// (ranges too), attributes, lists (recursive, by folder, paged), copies, deletes and
// the exclusive create, with the error codes callers test for.
func TestRootBucketObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBucket(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{"a.json", "results/p0.parquet", "results/p1.parquet", "z/deep/x.txt"} {
		if err := b.WriteAll(ctx, k, []byte("data of "+k), nil); err != nil {
			t.Fatalf("write %s: %v", k, err)
		}
	}
	if got, err := b.ReadAll(ctx, "results/p1.parquet"); err != nil || string(got) != "data of results/p1.parquet" {
		t.Fatalf("read: %q, %v", got, err)
	}
	r, err := b.NewRangeReader(ctx, "a.json", 3, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(r); string(got) != "a " {
		t.Errorf("range [3, 5): %q", got)
	}
	r.Close()
	if a, err := b.Attributes(ctx, "a.json"); err != nil || a.Size != int64(len("data of a.json")) {
		t.Errorf("attributes: %+v, %v", a, err)
	}
	list := func(opts *blob.ListOptions) (keys []string) {
		it := b.List(opts)
		for {
			o, err := it.Next(ctx)
			if err == io.EOF {
				return keys
			}
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, o.Key)
		}
	}
	if got, want := list(nil), []string{"a.json", "results/p0.parquet", "results/p1.parquet", "z/deep/x.txt"}; !slices.Equal(got, want) {
		t.Errorf("list: %v, want %v", got, want)
	}
	if got, want := list(&blob.ListOptions{Delimiter: "/"}), []string{"a.json", "results/", "z/"}; !slices.Equal(got, want) {
		t.Errorf("list by folder: %v, want %v", got, want)
	}
	if got, want := list(&blob.ListOptions{Prefix: "results/"}), []string{"results/p0.parquet", "results/p1.parquet"}; !slices.Equal(got, want) {
		t.Errorf("list results/: %v, want %v", got, want)
	}
	if got := list(&blob.ListOptions{Prefix: "nothing/"}); len(got) != 0 {
		t.Errorf("list of a missing folder: %v", got)
	}
	page, next, err := b.ListPage(ctx, blob.FirstPageToken, 2, nil)
	if err != nil || len(page) != 2 || page[1].Key != "results/p0.parquet" {
		t.Fatalf("first page: %v, %v", page, err)
	}
	if page, _, err = b.ListPage(ctx, next, 2, nil); err != nil || len(page) != 2 || page[0].Key != "results/p1.parquet" {
		t.Fatalf("second page: %v, %v", page, err)
	}
	if err := b.Copy(ctx, "copy.json", "a.json", nil); err != nil {
		t.Fatal(err)
	}
	err = b.WriteAll(ctx, "copy.json", []byte("x"), &blob.WriterOptions{IfNotExist: true})
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Errorf("exclusive create over an object: %v (code %v), want FailedPrecondition", err, gcerrors.Code(err))
	}
	if err := b.WriteAll(ctx, "new.json", []byte("x"), &blob.WriterOptions{IfNotExist: true}); err != nil {
		t.Errorf("exclusive create: %v", err)
	}
	if err := b.Delete(ctx, "copy.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadAll(ctx, "copy.json"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Errorf("read after delete: %v, want NotFound", err)
	}
	for _, k := range []string{"../x", "/abs", "a//b", "./a", "a/../b", `a\b`} {
		if err := b.WriteAll(ctx, k, []byte("x"), nil); err == nil {
			t.Errorf("key %q: written", k)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestRootBucketLinks: nothing outside the folder is written, read or deleted through a
// link: a symbolic link or a hard link at an output name is refused (the linked file
// keeps its bytes), a subfolder that is a link leading out is refused, a folder opened
// through a link that leads out of its parent is refused, deleting a link removes the
// link only, and a subfolder swapped for such a link between writes sends nothing out.
func TestRootBucketLinks(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	out := filepath.Join(base, "out")
	for _, d := range []string{outside, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "victim.txt")
	if err := os.WriteFile(victim, []byte("user data"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(victim, filepath.Join(out, "summary.json")))
	must(os.Link(victim, filepath.Join(out, "report.html")))
	must(os.Symlink(outside, filepath.Join(out, "results")))
	b, err := OpenBucket(ctx, out)
	must(err)
	defer b.Close()
	var oe *OwnershipError
	for _, k := range []string{"summary.json", "report.html"} {
		if err := b.WriteAll(ctx, k, []byte("jemcheck"), nil); !errors.As(err, &oe) {
			t.Errorf("write over the link %s: %v, want an OwnershipError", k, err)
		}
	}
	if _, err := b.ReadAll(ctx, "summary.json"); !errors.As(err, &oe) {
		t.Errorf("read of the symbolic link: %v, want an OwnershipError", err)
	}
	if got, err := b.ReadAll(ctx, "report.html"); err != nil || string(got) != "user data" {
		t.Errorf("read of a hard-linked file: %q, %v (reading it is harmless: the same bytes)", got, err)
	}
	if err := b.WriteAll(ctx, "results/victim.txt", []byte("jemcheck"), nil); err == nil {
		t.Error("write through a linked folder: no error")
	}
	if err := b.WriteAll(ctx, "results/new.txt", []byte("jemcheck"), nil); err == nil {
		t.Error("create through a linked folder: no error")
	}
	if err := b.Delete(ctx, "results/victim.txt"); err == nil {
		t.Error("delete through a linked folder: no error")
	}
	must(b.Delete(ctx, "summary.json")) // the link itself
	if _, err := os.Lstat(filepath.Join(out, "summary.json")); !os.IsNotExist(err) {
		t.Errorf("the link is still there: %v", err)
	}
	// A staging folder swapped for a link leading out of --out: refused; --out itself
	// may be a link (the user named it).
	must(os.Symlink(outside, filepath.Join(out, StagingPrefix+"r1")))
	if sb, err := OpenBucket(ctx, filepath.Join(out, StagingPrefix+"r1")); err == nil {
		sb.Close()
		t.Error("a staging folder that is a link out of --out: opened")
	}
	must(os.Symlink(out, filepath.Join(base, "out-link")))
	if ob, err := OpenBucket(ctx, filepath.Join(base, "out-link")); err != nil {
		t.Errorf("--out given as a link: %v", err)
	} else {
		ob.Close()
	}
	// A subfolder swapped for a link out between writes.
	must(b.WriteAll(ctx, "part/a.txt", []byte("1"), nil))
	must(os.Rename(filepath.Join(out, "part"), filepath.Join(out, "part.moved")))
	must(os.Symlink(outside, filepath.Join(out, "part")))
	if err := b.WriteAll(ctx, "part/victim.txt", []byte("jemcheck"), nil); err == nil {
		t.Error("write through a swapped-in link: no error")
	}
	if got, _ := os.ReadFile(victim); string(got) != "user data" {
		t.Errorf("the outside file now holds %q", got)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("outside holds %d entries, want 1 (victim.txt)", len(entries))
	}
}

// TestFileURLQuery: a file:// URL with a query is a confined local folder too; create_dir
// creates it, metadata and no_tmp_dir are accepted, other parameters refused by name.
func TestFileURLQuery(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "q")
	if _, err := OpenBucket(ctx, "file://"+dir+"?metadata=skip"); err == nil {
		t.Error("a missing folder without create_dir: opened")
	}
	b, err := OpenBucket(ctx, "file://"+dir+"?create_dir=1&no_tmp_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var root *os.Root
	if !b.As(&root) {
		t.Error("a file URL with a query is not a confined bucket")
	}
	if d, ok := LocalDir("file://" + dir + "?metadata=skip"); !ok || d != dir {
		t.Errorf("LocalDir: %q, %v", d, ok)
	}
	if _, err := OpenBucket(ctx, "file://"+dir+"?base_url=http://x"); err == nil || !strings.Contains(err.Error(), `"base_url"`) {
		t.Errorf("base_url: %v, want a refusal naming it", err)
	}
}

package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "gocloud.dev/blob/memblob" // the mem:// scheme, for the tests
)

func TestOpenBucket(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Chdir(tmp)
	cases := []struct {
		name    string
		loc     string
		file    string // where the object "k/obj.txt" must land, relative to tmp
		wantErr []string
	}{
		{"relative path", "out/run1", "out/run1/k/obj.txt", nil},
		{"dot-relative path", "./out2", "out2/k/obj.txt", nil},
		{"absolute path", filepath.Join(tmp, "abs", "deep"), "abs/deep/k/obj.txt", nil},
		{"file URL", "file://" + filepath.ToSlash(filepath.Join(tmp, "furl")), "furl/k/obj.txt", nil},
		{"relative file URL", "file://./frel", "frel/k/obj.txt", nil},
		{"mem URL", "mem://", "", nil},
		{"unknown scheme", "foo://bucket/dir", "", []string{`unknown scheme "foo"`, "file", "mem"}},
		{"file URL with host", "file://somehost/x", "", []string{`host "somehost"`}},
		{"empty", "", "", []string{"empty storage location"}},
		{"file URL query without create_dir", "file://" + filepath.ToSlash(filepath.Join(tmp, "noq")) + "?metadata=skip", "", []string{"noq"}},
		{"file URL with bad query", "file://" + filepath.ToSlash(tmp) + "?bogus=1", "", []string{"bogus"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := OpenBucket(ctx, c.loc)
			if c.wantErr != nil {
				if err == nil {
					b.Close()
					t.Fatalf("got no error, want one mentioning %q", c.wantErr)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got error %q, want it to mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			defer b.Close()
			if err := b.WriteAll(ctx, "k/obj.txt", []byte("hi"), nil); err != nil {
				t.Fatalf("write: %v", err)
			}
			if c.file == "" {
				return
			}
			got, err := os.ReadFile(filepath.Join(tmp, filepath.FromSlash(c.file)))
			if err != nil || string(got) != "hi" {
				t.Fatalf("got %q, %v at %s, want \"hi\"", got, err, c.file)
			}
			entries, _ := os.ReadDir(filepath.Dir(filepath.Join(tmp, filepath.FromSlash(c.file))))
			if len(entries) != 1 {
				t.Errorf("got %d entries beside the object (sidecars or temporary files?), want 1", len(entries))
			}
		})
	}
}

func TestCheckWritable(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	regular := filepath.Join(tmp, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(tmp, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		loc     string
		wantErr []string
		rootOK  bool // root may write anywhere: skip as root
	}{
		{"existing dir", tmp, nil, false},
		{"deep missing path", filepath.Join(tmp, "a", "b", "c"), nil, false},
		{"relative path", "some/relative/dir", nil, false},
		{"file URL", "file://" + filepath.ToSlash(filepath.Join(tmp, "u")), nil, false},
		{"file URL with create_dir", "file://" + filepath.ToSlash(filepath.Join(tmp, "u2")) + "?create_dir=1", nil, false},
		{"mem", "mem://", nil, false},
		{"path is a regular file", regular, []string{"exists and is not a directory"}, false},
		{"path under a regular file", filepath.Join(regular, "sub", "dir"), []string{regular + " is not a directory"}, false},
		{"file URL under a regular file", "file://" + filepath.ToSlash(filepath.Join(regular, "x")), []string{"is not a directory"}, false},
		{"file URL query, missing dir", "file://" + filepath.ToSlash(filepath.Join(tmp, "absent")) + "?metadata=skip", []string{"does not exist", "create_dir"}, false},
		{"unknown scheme", "foo://x", []string{`unknown scheme "foo"`}, false},
		{"empty", " ", []string{"empty storage location"}, false},
		{"read-only dir", filepath.Join(readOnly, "out"), []string{readOnly + " is not writable"}, true},
	}
	t.Chdir(tmp)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.rootOK && os.Geteuid() == 0 {
				t.Skip("root may write to a read-only directory")
			}
			err := CheckWritable(ctx, c.loc)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one mentioning %q", c.wantErr)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to mention %q", err, w)
				}
			}
		})
	}
	// Nothing was created.
	for _, p := range []string{"a", "some", "u", "u2", "absent"} {
		if _, err := os.Stat(filepath.Join(tmp, p)); err == nil {
			t.Errorf("got %s created, want CheckWritable to write nothing", p)
		}
	}
}

func TestMemBucketShared(t *testing.T) {
	ctx := context.Background()
	a, err := OpenBucket(ctx, "mem://shared-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteAll(ctx, "k", []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(ctx, "mem://shared-test")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.ReadAll(ctx, "k")
	if err != nil || string(got) != "v" {
		t.Fatalf("second open read %q, %v; want the object written through the first", got, err)
	}
	c, err := OpenBucket(ctx, "mem://other-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Exists(ctx, "k"); ok {
		t.Errorf("a different mem:// URL sees the object")
	}
}

func TestSplitObject(t *testing.T) {
	cases := []struct{ loc, dir, key string }{
		{"t.csv", ".", "t.csv"},
		{"data/t.csv", "data", "t.csv"},
		{"/abs/data/t.parquet", "/abs/data", "t.parquet"},
		{"file:///abs/data/t.csv", "file:///abs/data/", "t.csv"},
		{"file://./rel/t.csv", "file://./rel/", "t.csv"},
		{"gs://bucket/dir/t.csv", "gs://bucket", "dir/t.csv"},
		{"s3://bucket/t.parquet?region=eu-west-1", "s3://bucket?region=eu-west-1", "t.parquet"},
	}
	for _, c := range cases {
		t.Run(c.loc, func(t *testing.T) {
			dir, key, err := SplitObject(c.loc)
			if err != nil || dir != filepath.FromSlash(c.dir) && dir != c.dir || key != c.key {
				t.Fatalf("got %q, %q, %v, want %q, %q", dir, key, err, c.dir, c.key)
			}
		})
	}
}

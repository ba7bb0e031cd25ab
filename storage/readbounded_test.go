package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "gocloud.dev/blob/memblob" // the mem:// scheme, for the tests
)

// TestReadSmall: a metadata file or user input that is a device, a FIFO, a directory
// or over the limit is refused with a clear error, before it is read, whatever the
// location's form (plain path, file:// URL with or without a query).
func TestReadSmall(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.json", `{"a":1}`)
	write("big.json", strings.Repeat("x", 101))
	if err := os.Symlink("/dev/zero", filepath.Join(tmp, "zero.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tmp, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tmp, "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A sparse file far over the limit: refused by its size, never read.
	f, err := os.Create(filepath.Join(tmp, "sparse.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	forms := map[string]func(name string) string{
		"path":           func(n string) string { return filepath.Join(tmp, n) },
		"file URL":       func(n string) string { return "file://" + filepath.ToSlash(filepath.Join(tmp, n)) },
		"file URL query": func(n string) string { return "file://" + filepath.ToSlash(filepath.Join(tmp, n)) + "?metadata=skip" },
	}
	cases := []struct {
		name, file string
		want       string // "" for success
	}{
		{"regular", "ok.json", ""},
		{"over the limit", "big.json", "101 bytes, more than the 100 allowed"},
		{"link to /dev/zero", "zero.json", "is a device, not a regular file"},
		{"fifo", "fifo.json", "is a named pipe (FIFO)"},
		{"directory", "dir.json", "code=NotFound"}, // fileblob reports a directory as missing
		{"sparse 8 GiB", "sparse.json", "8589934592 bytes, more than the 100 allowed"},
		{"missing", "nope.json", "code=NotFound"},
	}
	for form, loc := range forms {
		for _, c := range cases {
			t.Run(form+"/"+c.name, func(t *testing.T) {
				done := make(chan struct{})
				var data []byte
				var err error
				go func() {
					defer close(done)
					data, err = ReadSmall(ctx, loc(c.file), 100)
				}()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("ReadSmall(%s) hangs", c.file)
				}
				if c.want == "" {
					if err != nil || string(data) != `{"a":1}` {
						t.Fatalf("got %q, %v", data, err)
					}
					return
				}
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.want)) {
					t.Fatalf("error %v, want it to say %q", err, c.want)
				}
				if c.file == "nope.json" && !IsNotFound(err) {
					t.Fatalf("missing file: IsNotFound(%v) is false", err)
				}
			})
		}
	}
}

// TestObjectBounded: the streaming and ReaderAt views of an object stay within the
// size checked at open, also if the file grows meanwhile.
func TestObjectBounded(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	name := filepath.Join(tmp, "grow.csv")
	if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := OpenObject(ctx, name, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	p := make([]byte, 4)
	if n, err := o.ReadAt(p, 8); n != 2 || err != io.EOF || string(p[:2]) != "89" {
		t.Fatalf("ReadAt at 8: %d %v %q", n, err, p[:n])
	}
	// The file grows past the limit after the check: the stream stops at the limit.
	if err := os.WriteFile(name, []byte(strings.Repeat("x", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(o)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("reading a file that grew: %v, want TooLargeError", err)
	}
	// mem:// has no file mode: only the size counts.
	b, err := OpenBucket(ctx, "mem://readbounded")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "k.json", []byte("abc"), nil); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadSmallKey(ctx, b, "k.json", 3); err != nil || string(data) != "abc" {
		t.Fatalf("mem: %q %v", data, err)
	}
	if _, err := ReadSmallKey(ctx, b, "k.json", 2); !errors.As(err, &tl) {
		t.Fatalf("mem over the limit: %v", err)
	}
}

package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// The confined local bucket: every local directory jemcheck opens (an output folder,
// its staging folder, an input folder) is a gocloud.dev bucket whose every read, write,
// list and delete goes through an *os.Root opened on the directory, so that no path
// component is followed out of it: a link planted in the folder, or the folder's own
// subfolders swapped for links during a run, cannot send a write, a delete or a read
// outside it (the operating system refuses the escape). On top of that:
//
//   - an object is written to a temporary file beside its name and renamed over it, so
//     a write never goes through an existing file: a hard link at an output name keeps
//     the other name's bytes;
//   - an object name that is a symbolic link, or a file with another hard link, is
//     refused (an *OwnershipError naming it) for writing, and for reading in a folder
//     opened for writing, so jemcheck neither writes over a user's link nor takes a
//     file that lives elsewhere for its own;
//   - a staging folder (jemcheck's own subfolder of --out) is opened through its parent
//     (parent.OpenRoot), so one swapped for a link leading out is refused; --out itself
//     and input folders may be links (the user named them). Once open, the bucket holds
//     the directory, not its name: a rename or a link put in its place later does not
//     move it.
//
// A folder opened only to read (OpenExistingBucket: a user's inputs, a finished run)
// reads its objects through links, as the user's own files may be links; it still
// writes and deletes nothing outside itself.
//
// Keys are slash-separated relative names without empty, "." or ".." components.

// openRootBucket opens the local directory dir as a confined bucket, creating it (and
// its parents) first when create is set; follow: reads follow links (see above).
func openRootBucket(dir string, create, follow bool) (*blob.Bucket, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if create {
		if err := os.MkdirAll(abs, 0o777); err != nil {
			return nil, err
		}
	}
	var r *os.Root
	if strings.HasPrefix(filepath.Base(abs), StagingPrefix) {
		r, err = openDirRoot(abs)
	} else {
		r, err = os.OpenRoot(abs)
	}
	if err != nil {
		return nil, (&rootBucket{dir: filepath.Dir(abs)}).escape(filepath.Base(abs), err)
	}
	return blob.NewBucket(&rootBucket{root: r, dir: abs, follow: follow}), nil
}

// openDirRoot opens the directory abs through its parent, so that abs being a link
// that leads out of its parent is refused.
func openDirRoot(abs string) (*os.Root, error) {
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	if parent == abs { // the file system's root
		return os.OpenRoot(abs)
	}
	p, err := os.OpenRoot(parent)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	r, err := p.OpenRoot(base)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", abs, err)
	}
	return r, nil
}

type rootBucket struct {
	root   *os.Root
	dir    string
	follow bool // reads follow links (a folder opened only to read)
}

// name is the key's path inside the root, or an error for a key that is not a clean
// relative name.
func (b *rootBucket) name(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") {
		return "", fmt.Errorf("storage: invalid key %q: %w", key, fs.ErrInvalid)
	}
	for _, c := range strings.Split(key, "/") {
		if c == "" || c == "." || c == ".." {
			return "", fmt.Errorf("storage: invalid key %q: %w", key, fs.ErrInvalid)
		}
	}
	return filepath.FromSlash(key), nil
}

// checkNotLink refuses a name that is a symbolic link, or (write: a name about to be
// replaced) a file with another hard link; a missing name passes.
func (b *rootBucket) checkNotLink(key, name string, write bool) (os.FileInfo, error) {
	fi, err := b.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fi, linkRefusal(b.dir, b.dir, key)
	case write && fi.Mode().IsRegular() && hardLinks(fi) > 1:
		p := filepath.Join(b.dir, name)
		return fi, &OwnershipError{fmt.Sprintf("%s is a file with %d hard links: jemcheck writes no file that has another name "+
			"(it could be a file outside %s); remove that name, or choose another location", p, hardLinks(fi), b.dir)}
	}
	return fi, nil
}

// stat is the object's file info for reading: after links in a folder opened only to
// read, else refused for a symbolic link; a missing object is fs.ErrNotExist.
func (b *rootBucket) stat(key, name string) (os.FileInfo, error) {
	if b.follow {
		return os.Stat(filepath.Join(b.dir, name))
	}
	fi, err := b.checkNotLink(key, name, false)
	if err == nil && fi == nil {
		err = fmt.Errorf("storage: %s: %w", key, fs.ErrNotExist)
	}
	return fi, err
}

// hardLinks is the file's link count (1 where the system does not say).
func hardLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

func (b *rootBucket) ErrorCode(err error) gcerrors.ErrorCode {
	var oe *OwnershipError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gcerrors.NotFound
	case errors.Is(err, fs.ErrExist):
		return gcerrors.FailedPrecondition
	case errors.Is(err, fs.ErrInvalid):
		return gcerrors.InvalidArgument
	case errors.Is(err, fs.ErrPermission):
		return gcerrors.PermissionDenied
	case errors.As(err, &oe):
		return gcerrors.FailedPrecondition
	}
	return gcerrors.Unknown
}

// As exposes the *os.Root of the bucket.
func (b *rootBucket) As(i any) bool {
	p, ok := i.(**os.Root)
	if ok {
		*p = b.root
	}
	return ok
}

func (b *rootBucket) ErrorAs(err error, i any) bool { return errors.As(err, i) }

// Attributes are the object's size and time (its os.FileInfo through As): after links
// in a folder opened only to read, else refused for a link.
func (b *rootBucket) attributes(_ context.Context, key string) (*driver.Attributes, error) {
	name, err := b.name(key)
	if err != nil {
		return nil, err
	}
	fi, err := b.stat(key, name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("storage: %s is a folder: %w", key, fs.ErrNotExist)
	}
	return &driver.Attributes{ModTime: fi.ModTime(), Size: fi.Size(), AsFunc: fileInfoAs(fi)}, nil
}

func fileInfoAs(fi os.FileInfo) func(any) bool {
	return func(i any) bool {
		p, ok := i.(*os.FileInfo)
		if ok {
			*p = fi
		}
		return ok
	}
}

// ListPaged lists the objects under the prefix in key order, walking the root without
// following links (a link is listed as an object; reading or writing it is refused).
func (b *rootBucket) listPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	start := "."
	if i := strings.LastIndex(opts.Prefix, "/"); i > 0 {
		start = opts.Prefix[:i]
		if _, err := b.name(start); err != nil {
			return nil, err
		}
	}
	var keys []*driver.ListObject
	err := fs.WalkDir(b.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // unreadable: skipped, as fileblob does
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			if dk := p + "/"; len(dk) > len(opts.Prefix) && !strings.HasPrefix(dk, opts.Prefix) ||
				len(dk) <= len(opts.Prefix) && !strings.HasPrefix(opts.Prefix, dk) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(p, opts.Prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		keys = append(keys, &driver.ListObject{Key: p, ModTime: fi.ModTime(), Size: fi.Size(), AsFunc: fileInfoAs(fi)})
		return nil
	})
	if err != nil && !errors.Is(err, fs.SkipAll) {
		return nil, err
	}
	// Collapse "directories" under the delimiter, then page.
	var objs []*driver.ListObject
	for _, o := range keys {
		if opts.Delimiter != "" {
			rest := o.Key[len(opts.Prefix):]
			if i := strings.Index(rest, opts.Delimiter); i >= 0 {
				dk := opts.Prefix + rest[:i+len(opts.Delimiter)]
				if len(objs) > 0 && objs[len(objs)-1].Key == dk {
					continue
				}
				o = &driver.ListObject{Key: dk, IsDir: true}
			}
		}
		objs = append(objs, o)
	}
	slices.SortStableFunc(objs, func(a, b *driver.ListObject) int { return strings.Compare(a.Key, b.Key) })
	objs = slices.CompactFunc(objs, func(a, b *driver.ListObject) bool { return a.IsDir && b.IsDir && a.Key == b.Key })
	if tok := string(opts.PageToken); tok != "" {
		i, _ := slices.BinarySearchFunc(objs, tok, func(o *driver.ListObject, t string) int { return strings.Compare(o.Key, t) })
		for i < len(objs) && objs[i].Key <= tok {
			i++
		}
		objs = objs[i:]
	}
	size := opts.PageSize
	if size <= 0 {
		size = 1000
	}
	page := &driver.ListPage{Objects: objs}
	if len(objs) > size {
		page.Objects = objs[:size]
		page.NextPageToken = []byte(objs[size-1].Key)
	}
	return page, nil
}

// NewRangeReader opens the object: through links in a folder opened only to read, else
// a file that is not a link.
func (b *rootBucket) newRangeReader(_ context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	name, err := b.name(key)
	if err != nil {
		return nil, err
	}
	fi, err := b.stat(key, name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("storage: %s is a folder: %w", key, fs.ErrNotExist)
	}
	var f *os.File
	if b.follow {
		f, err = os.OpenFile(filepath.Join(b.dir, name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	} else {
		f, err = b.root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, err
	}
	if got, err := f.Stat(); err != nil || !os.SameFile(got, fi) {
		f.Close()
		return nil, fmt.Errorf("storage: %s changed while it was opened: %w", key, fs.ErrNotExist)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
	}
	var r io.Reader = f
	if length >= 0 {
		r = io.LimitReader(f, length)
	}
	return &rootReader{r: r, f: f, attrs: driver.ReaderAttributes{ModTime: fi.ModTime(), Size: fi.Size()}}, nil
}

type rootReader struct {
	r     io.Reader
	f     *os.File
	attrs driver.ReaderAttributes
}

func (r *rootReader) Read(p []byte) (int, error)           { return r.r.Read(p) }
func (r *rootReader) Close() error                         { return r.f.Close() }
func (r *rootReader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *rootReader) As(any) bool                          { return false }

// NewTypedWriter writes the object to a temporary file beside its name; Close renames
// it over the name (or, with IfNotExist, links it there, failing if the name exists).
func (b *rootBucket) newTypedWriter(ctx context.Context, key, _ string, opts *driver.WriterOptions) (driver.Writer, error) {
	name, err := b.name(key)
	if err != nil {
		return nil, err
	}
	if _, err := b.checkNotLink(key, name, true); err != nil {
		return nil, err
	}
	if dir := filepath.Dir(name); dir != "." {
		if err := b.root.MkdirAll(dir, 0o777); err != nil {
			return nil, err
		}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := name + "." + hex.EncodeToString(rnd[:]) + ".tmp" // fileblob's pattern: a crash's leftover is skipped as such
	f, err := b.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o666)
	if err != nil {
		return nil, err
	}
	if opts != nil && opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(func(any) bool { return false }); err != nil {
			f.Close()
			b.root.Remove(tmp)
			return nil, err
		}
	}
	return &rootWriter{ctx: ctx, b: b, f: f, tmp: tmp, name: name, key: key, exclusive: opts != nil && opts.IfNotExist}, nil
}

type rootWriter struct {
	ctx            context.Context
	b              *rootBucket
	f              *os.File
	tmp, name, key string
	exclusive      bool
}

func (w *rootWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *rootWriter) Close() error { return w.b.escape(w.key, w.close()) }

func (w *rootWriter) close() error {
	err := w.f.Close()
	if err == nil {
		err = w.ctx.Err() // a cancelled write leaves nothing
	}
	if err == nil {
		_, err = w.b.checkNotLink(w.key, w.name, true) // planted while it was written
	}
	if err == nil {
		if w.exclusive {
			if err = w.b.root.Link(w.tmp, w.name); err == nil {
				return w.b.root.Remove(w.tmp)
			}
		} else {
			err = w.b.root.Rename(w.tmp, w.name)
		}
	}
	if err != nil {
		w.b.root.Remove(w.tmp)
	}
	return err
}

// Copy copies src to dst through a reader and a writer of this bucket.
func (b *rootBucket) Copy(ctx context.Context, dstKey, srcKey string, _ *driver.CopyOptions) error {
	r, err := b.NewRangeReader(ctx, srcKey, 0, -1, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := b.NewTypedWriter(ctx, dstKey, "", nil)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.(*rootWriter).f.Close()
		b.root.Remove(w.(*rootWriter).tmp)
		return err
	}
	return w.Close()
}

// Delete removes the object (a link is removed itself, never its target); its folder
// stays, as with fileblob.
func (b *rootBucket) delete(_ context.Context, key string, opts *driver.DeleteOptions) error {
	if opts != nil && opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(func(any) bool { return false }); err != nil {
			return err
		}
	}
	name, err := b.name(key)
	if err != nil {
		return err
	}
	fi, err := b.root.Lstat(name)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("storage: %s is a folder: %w", key, fs.ErrNotExist)
	}
	return b.root.Remove(name)
}

func (b *rootBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", fmt.Errorf("storage: a local folder has no signed URLs: %w", errors.ErrUnsupported)
}

func (b *rootBucket) Close() error { return b.root.Close() }

// The driver's entry points: each error that is the operating system refusing a path
// that a link leads out of the folder becomes one clear refusal (escape).

func (b *rootBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := b.attributes(ctx, key)
	return a, b.escape(key, err)
}

func (b *rootBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	p, err := b.listPaged(ctx, opts)
	return p, b.escape(opts.Prefix, err)
}

func (b *rootBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	r, err := b.newRangeReader(ctx, key, offset, length, opts)
	return r, b.escape(key, err)
}

func (b *rootBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	w, err := b.newTypedWriter(ctx, key, contentType, opts)
	return w, b.escape(key, err)
}

func (b *rootBucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	return b.escape(key, b.delete(ctx, key, opts))
}

// escape turns the operating system's refusal of a path that leaves the folder (a link
// on the way leads out of it) into an *OwnershipError naming the object and the folder.
func (b *rootBucket) escape(key string, err error) error {
	if err == nil || !strings.Contains(err.Error(), "path escapes from parent") {
		return err
	}
	return &OwnershipError{fmt.Sprintf("%s: a link under %s leads outside it: jemcheck neither follows nor writes through links "+
		"in its folders (a link could make it write or delete files elsewhere); remove the link, or choose another location", key, b.dir)}
}

package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Bounded reading: every object jemcheck reads, a small metadata file (config.json,
// summary.json, manifest.json, .jemcheck.lock, a staging config) or a user's input
// file (logits, tables, tasks), is checked before it is opened and read within a size
// limit, so that a link to /dev/zero, a named pipe, or a huge or growing file gives one
// clear error instead of an out-of-memory crash or an endless wait.
//
// The checks apply to the object itself, through its bucket's attributes, whatever the
// location's form: a plain path, a file:// URL with or without a query, a bucket URL.
// On a local bucket (fileblob) the attributes carry the file's os.FileInfo (after
// symbolic links), and anything but a regular file is refused before it is opened; on
// other buckets objects are always plain bytes and only the size is checked. The size
// is checked twice: the declared size before reading, and the bytes really read (a
// file that grows meanwhile, or a device whose declared size is 0).

// MaxMetadataBytes is the limit for jemcheck's own small JSON files (config.json,
// manifest.json, .jemcheck.lock, the staging config): far above what jemcheck writes
// (a sweep of 10,000 grid points writes a config.json of 9 MB and a manifest.json of
// 12 MB), far below what could exhaust memory.
const MaxMetadataBytes = 64 << 20

// MaxSummaryBytes is the limit for summary.json, which grows with points × methods:
// ~1.5 KB a point plus ~4.2 KB a method (a sweep of 10,000 points × 2 methods writes
// 183 MB; 10,000 × 14 methods would be ~600 MB).
const MaxSummaryBytes = 1 << 30

// MaxParquetBytes is the limit for a Parquet file a run's manifest lists that jemcheck
// reads whole (a block's results part: a few MB); schemas.MaxParquetBytes is this one.
const MaxParquetBytes = 1 << 30

// ListedLimit is the most bytes ReadListed reads of the file key a manifest lists, by
// its kind: MaxParquetBytes for a .parquet file, MaxSummaryBytes for summary.json,
// MaxMetadataBytes for anything else (config.json, ...). The size the manifest declares is never the limit:
// a manifest is a file like any other, and one edited to list an 8 GiB file must not
// make a reader allocate 8 GiB.
func ListedLimit(key string) int64 {
	switch {
	case path.Ext(key) == ".parquet":
		return MaxParquetBytes
	case key == "summary.json":
		return MaxSummaryBytes
	}
	return MaxMetadataBytes
}

// ReadListed reads the file key of a run whose manifest m lists it (b is the run's
// location) and checks it against the manifest: a file the manifest does not list, or
// one changed since jemcheck wrote it, is refused with one message naming key. Before
// anything is read, the size m lists and the object's own (its bucket's attributes,
// which also refuse a local object that is not a regular file) must both be within
// ListedLimit(key) and equal; the bytes are then hashed as they stream in, at most
// that size plus one read, and must have m's SHA-256. Nothing beyond the limit is ever
// allocated, whatever m declares.
func ReadListed(ctx context.Context, b *blob.Bucket, m *Manifest, key string) ([]byte, error) {
	i, ok := findFile(m, key)
	if !ok {
		return nil, fmt.Errorf("%s is not listed in %s", key, ManifestKey)
	}
	f := m.Files[i]
	limit := ListedLimit(key)
	if f.Size > limit {
		return nil, fmt.Errorf("%s: %s lists it with %d bytes, more than the %d jemcheck reads of such a file "+
			"(the manifest was edited or damaged): not read", key, ManifestKey, f.Size, limit)
	}
	size, err := CheckObject(ctx, b, key, limit)
	if tl := (*TooLargeError)(nil); errors.As(err, &tl) {
		return nil, fmt.Errorf("%s has %d bytes, but %s lists %d (changed since jemcheck wrote it): not read", key, tl.Size, ManifestKey, f.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if size != f.Size {
		return nil, fmt.Errorf("%s has %d bytes, but %s lists %d (changed since jemcheck wrote it): not read", key, size, ManifestKey, f.Size)
	}
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	defer r.Close()
	h := sha256.New()
	// size ≤ limit: checked above, so this allocation is bounded by the limit.
	data, err := readAllInto(make([]byte, 0, size+1), io.TeeReader(io.LimitReader(r, size+1), h))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(data)) != f.Size {
		return nil, fmt.Errorf("%s: %d bytes came, but it had %d when it was opened and %s lists %d (changed while read)",
			key, len(data), size, ManifestKey, f.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return nil, fmt.Errorf("%s: sha256 %s, but %s lists sha256 %s (changed since jemcheck wrote it)", key, got, ManifestKey, f.SHA256)
	}
	return data, nil
}

// hashObject hashes the object key of b as it streams (nothing is held): its size and
// SHA-256. The object is checked first (CheckObject: a local FIFO would block, a device
// never end), and at most its declared size plus one byte is read, so a file that grows
// meanwhile ends there (and shows as a size mismatch to the caller).
func hashObject(ctx context.Context, b *blob.Bucket, key string) (ManifestFile, error) {
	size, err := CheckObject(ctx, b, key, math.MaxInt64-1)
	if err != nil {
		return ManifestFile{}, fmt.Errorf("read %s: %w", key, err)
	}
	return hashObjectSize(ctx, b, key, size)
}

// hashObjectSize is hashObject of an object whose size was checked as size.
func hashObjectSize(ctx context.Context, b *blob.Bucket, key string, size int64) (ManifestFile, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return ManifestFile{}, fmt.Errorf("read %s: %w", key, err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, size+1))
	if err != nil {
		return ManifestFile{}, fmt.Errorf("read %s: %w", key, err)
	}
	return ManifestFile{Path: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// checkListed checks the object key of b against want (a manifest's entry or a hash
// record): its size first, from its bucket's attributes (a local object that is not a
// regular file is refused), and only if that matches its SHA-256, streamed. It returns
// what the object has (SHA256 empty when the sizes differ).
func checkListed(ctx context.Context, b *blob.Bucket, key string, want ManifestFile) (ManifestFile, error) {
	size, err := CheckObject(ctx, b, key, math.MaxInt64-1)
	if err != nil {
		return ManifestFile{}, fmt.Errorf("read %s: %w", key, err)
	}
	if size != want.Size {
		return ManifestFile{Path: key, Size: size}, nil
	}
	return hashObjectSize(ctx, b, key, size)
}

// TooLargeError is the error for an object over its size limit.
type TooLargeError struct {
	Key   string
	Size  int64 // the bytes declared or read (at least Limit+1)
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s has %d bytes, more than the %d allowed", e.Key, e.Size, e.Limit)
}

// NotRegularError is the error for a local object that is not a regular file.
type NotRegularError struct {
	Key  string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s %s", e.Key, describeMode(e.Mode))
}

// describeMode says what a file that is not a regular file is.
func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "is a directory, not a file"
	case m&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO), not a regular file"
	case m&fs.ModeDevice != 0:
		return "is a device, not a regular file"
	case m&fs.ModeSocket != 0:
		return "is a socket, not a regular file"
	default:
		return fmt.Sprintf("is not a regular file (mode %v)", m.Type())
	}
}

// CheckObject checks the object key of b before it is opened: it must exist (the
// error's gcerrors code is NotFound otherwise), be a regular file where b is local,
// and hold at most limit bytes. It returns the object's declared size.
func CheckObject(ctx context.Context, b *blob.Bucket, key string, limit int64) (int64, error) {
	attrs, err := b.Attributes(ctx, key)
	if err != nil {
		return 0, err
	}
	var fi os.FileInfo
	if attrs.As(&fi) && fi != nil && !fi.Mode().IsRegular() {
		return 0, &NotRegularError{Key: key, Mode: fi.Mode()}
	}
	if attrs.Size > limit || attrs.Size < 0 {
		return 0, &TooLargeError{Key: key, Size: attrs.Size, Limit: limit}
	}
	return attrs.Size, nil
}

// ReadSmallKey reads the object key of b whole after CheckObject, refusing it if more
// than limit bytes come (a file that grew, or one whose size was not declared).
// A missing object gives an error whose gcerrors code is NotFound.
func ReadSmallKey(ctx context.Context, b *blob.Bucket, key string, limit int64) ([]byte, error) {
	size, err := CheckObject(ctx, b, key, limit)
	if err != nil {
		return nil, err
	}
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, 0, min(size+1, limit+1))
	data, err = readAllInto(data, io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Key: key, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// readAllInto is io.ReadAll appending to data.
func readAllInto(data []byte, r io.Reader) ([]byte, error) {
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// ReadSmall reads the object that loc (a path or URL; see SplitObject) names whole,
// after the checks of CheckObject, within limit bytes. Errors name loc; a missing
// object gives an error whose gcerrors code is NotFound.
func ReadSmall(ctx context.Context, loc string, limit int64) ([]byte, error) {
	dir, key, err := SplitObject(loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if key == "" {
		return nil, fmt.Errorf("%s: no file name", loc)
	}
	b, err := OpenExistingBucket(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := ReadSmallKey(ctx, b, key, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return data, nil
}

// Object is one object opened for bounded reading, both as a stream (Reader, which
// fails once more than the limit has come) and at offsets (ReadAt, within the size
// checked at open).
type Object struct {
	Key  string
	Size int64 // the size checked at open

	ctx    context.Context
	b      *blob.Bucket
	own    bool // b is closed with the object
	limit  int64
	stream *blob.Reader
	read   int64 // bytes read from stream
}

// OpenObject opens the object that loc (a path or URL) names for bounded reading,
// after the checks of CheckObject with limit. The caller closes it.
func OpenObject(ctx context.Context, loc string, limit int64) (*Object, error) {
	dir, key, err := SplitObject(loc)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errors.New("no file name")
	}
	b, err := OpenExistingBucket(ctx, dir)
	if err != nil {
		return nil, err
	}
	o, err := OpenObjectKey(ctx, b, key, limit)
	if err != nil {
		b.Close()
		return nil, err
	}
	o.own = true
	return o, nil
}

// OpenObjectKey is OpenObject of the object key of b; closing the object leaves b open.
func OpenObjectKey(ctx context.Context, b *blob.Bucket, key string, limit int64) (*Object, error) {
	size, err := CheckObject(ctx, b, key, limit)
	if err != nil {
		return nil, err
	}
	return &Object{Key: key, Size: size, ctx: ctx, b: b, limit: limit}, nil
}

// Read reads the object from its start, as a stream; more than the limit is an error
// (*TooLargeError).
func (o *Object) Read(p []byte) (int, error) {
	if o.stream == nil {
		r, err := o.b.NewReader(o.ctx, o.Key, nil)
		if err != nil {
			return 0, err
		}
		o.stream = r
	}
	if int64(len(p)) > o.limit+1-o.read {
		p = p[:o.limit+1-o.read]
	}
	n, err := o.stream.Read(p)
	if o.read += int64(n); o.read > o.limit {
		return 0, &TooLargeError{Key: o.Key, Size: o.read, Limit: o.limit}
	}
	return n, err
}

// ReadAt reads len(p) bytes at off, within the size checked at open.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", o.Key, off)
	}
	if off >= o.Size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := min(int64(len(p)), o.Size-off)
	r, err := o.b.NewRangeReader(o.ctx, o.Key, off, want, nil)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n, err := io.ReadFull(r, p[:want])
	if err == nil && want < int64(len(p)) {
		err = io.EOF
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%s: shorter than its %d bytes (changed while read?)", o.Key, o.Size)
	}
	return n, err
}

// Close closes the stream, and the bucket when OpenObject opened it.
func (o *Object) Close() error {
	var err error
	if o.stream != nil {
		err = o.stream.Close()
	}
	if o.own {
		if cerr := o.b.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// IsNotFound reports whether err says an object does not exist.
func IsNotFound(err error) bool {
	return gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, fs.ErrNotExist)
}

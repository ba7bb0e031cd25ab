package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

// A storage location (loc) names a directory-like place for the pipeline's files:
//
//   - a plain path, relative or absolute ("out", "/data/run1"): a local directory,
//     created on open if missing;
//   - a file:// URL ("file:///data/run1", "file://./out" for a relative path): the same,
//     unless the URL has a query, which then goes to gocloud.dev's fileblob opener as
//     written (e.g. "file:///data?metadata=skip" does not create the directory);
//   - any other URL whose scheme is registered with gocloud.dev's blob.DefaultURLMux:
//     "mem://", "gs://bucket", "s3://bucket?region=...", and so on. Drivers other than
//     fileblob are registered by blank imports in main packages (gcsblob, s3blob,
//     memblob); this package imports only fileblob. A path after the bucket
//     ("gs://bucket/runs/run1") is a folder inside the bucket: every key is prefixed
//     with "runs/run1/" (after the URL's own "prefix" query parameter, if any), so
//     a location never spills into the rest of its bucket.
//
// Local directories (a plain path, or a file:// URL with or without a query) are
// opened by this package as confined buckets (rootblob.go): every operation goes
// through an *os.Root on the folder, no link is followed out of it, and each object is
// written to a temporary file beside its name and renamed over it.

// parsedLoc is a location taken apart: either a local directory (dir != "") or a URL
// for blob.DefaultURLMux.
type parsedLoc struct {
	dir       string // local directory, when the location is local and opened by us
	url       string // otherwise, the URL to open through the mux
	scheme    string
	fileQuery bool   // a file:// URL with a query (local all the same: SubLocation keeps its form)
	noCreate  bool   // a file:// URL whose query lacks create_dir: a missing folder is not created
	prefix    string // for bucket URLs, the key prefix (the "prefix" parameter, then the path)
}

// isURL reports whether loc looks like scheme://...; everything else is a path.
func isURL(loc string) bool {
	i := strings.Index(loc, "://")
	if i <= 0 {
		return false
	}
	for _, c := range loc[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// knownSchemes describes the schemes this binary can open, for error messages.
func knownSchemes() string {
	s := slices.Clone(blob.DefaultURLMux().BucketSchemes())
	slices.Sort(s)
	return fmt.Sprintf("registered here: %s (gs and s3 work only where their drivers are linked in)",
		strings.Join(s, ", "))
}

// fileURLPath returns the local path of a file:// URL (host "." marks a relative path).
func fileURLPath(u *url.URL) (string, error) {
	switch u.Host {
	case "", "localhost":
		if u.Path == "" {
			return "", fmt.Errorf("storage location %q: file URL without a path", u.Redacted())
		}
		return filepath.FromSlash(u.Path), nil
	case ".":
		p := strings.TrimPrefix(u.Path, "/")
		if p == "" {
			p = "."
		}
		return filepath.FromSlash(p), nil
	default:
		return "", fmt.Errorf("storage location %q: file URL with host %q (want file:///abs/path or file://./rel/path)", u.Redacted(), u.Host)
	}
}

func parseLoc(loc string) (parsedLoc, error) {
	if strings.TrimSpace(loc) == "" {
		return parsedLoc{}, errors.New("empty storage location")
	}
	if !isURL(loc) {
		return parsedLoc{dir: loc, scheme: fileblob.Scheme}, nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return parsedLoc{}, fmt.Errorf("storage location %q: %w", loc, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
		return parsedLoc{}, fmt.Errorf("storage location %q: unknown scheme %q; %s", loc, u.Scheme, knownSchemes())
	}
	if scheme == fileblob.Scheme {
		p, err := fileURLPath(u)
		if err != nil {
			return parsedLoc{}, err
		}
		if u.RawQuery != "" {
			// jemcheck opens every local folder itself, confined (rootblob.go), whatever
			// the query: fileblob's options that only tune its own writes are accepted,
			// create_dir kept; the rest (signed URLs) have no use here.
			noCreate := true
			for k := range u.Query() {
				switch k {
				case "create_dir":
					noCreate = false
				case "metadata", "no_tmp_dir", "dir_file_mode":
				default:
					return parsedLoc{}, fmt.Errorf("storage location %q: the file URL query parameter %q is not supported (jemcheck opens local folders itself; accepted: create_dir, metadata, no_tmp_dir, dir_file_mode)", u.Redacted(), k)
				}
			}
			return parsedLoc{dir: p, url: loc, scheme: scheme, fileQuery: true, noCreate: noCreate}, nil
		}
		return parsedLoc{dir: p, scheme: scheme}, nil
	}
	// A bucket URL's path names a folder inside the bucket: fold it, after the URL's
	// own prefix parameter, into the key prefix, and open the bare bucket.
	q := u.Query()
	prefix := q.Get("prefix")
	if p := strings.Trim(u.Path, "/"); p != "" {
		prefix += p + "/"
	}
	q.Del("prefix")
	u.Path, u.RawPath, u.RawQuery = "", "", q.Encode()
	return parsedLoc{url: u.String(), scheme: scheme, prefix: prefix}, nil
}

// SubLocation returns the location of the folder sub (a relative, slash-separated
// name) inside loc, in loc's own form: a path for a local directory, a file URL with
// its query kept, or a bucket URL whose "prefix" parameter names the folder.
func SubLocation(loc, sub string) (string, error) {
	pl, err := parseLoc(loc)
	if err != nil {
		return "", err
	}
	sub = strings.Trim(sub, "/")
	switch {
	case pl.fileQuery:
		u, _ := url.Parse(pl.url) // parsed before
		u.Path = path.Join(u.Path, sub)
		return u.String(), nil
	case pl.dir != "":
		return filepath.Join(pl.dir, filepath.FromSlash(sub)), nil
	}
	u, _ := url.Parse(pl.url) // built by parseLoc
	q := u.Query()
	q.Set("prefix", pl.prefix+sub+"/")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// LocalDir returns the absolute directory of a local location (a plain path or a
// query-less file URL), and false for any other location.
func LocalDir(loc string) (string, bool) { return localDir(loc) }

// localDir returns the directory of a local location opened by this package with the
// default options (a plain path or a query-less file URL), where files can be renamed
// and created exclusively with the operating system's calls.
func localDir(loc string) (string, bool) {
	pl, err := parseLoc(loc)
	if err != nil || pl.dir == "" {
		return "", false
	}
	abs, err := filepath.Abs(pl.dir)
	if err != nil {
		return "", false
	}
	return abs, true
}

// SplitObject splits the location of one file (a path or URL) into the location of its
// directory (or bucket) and its key.
func SplitObject(loc string) (dir, key string, err error) {
	if !isURL(loc) {
		return filepath.Dir(loc), filepath.Base(loc), nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", "", err
	}
	if strings.EqualFold(u.Scheme, "file") {
		d, k := path.Split(u.Path)
		u.Path = d
		return u.String(), k, nil
	}
	// Buckets: the host is the bucket, the path the key.
	key = strings.TrimPrefix(u.Path, "/")
	u.Path, u.RawPath = "", ""
	return u.String(), key, nil
}

// OpenBucket opens the storage location loc (see the package's description of
// locations). A plain path or query-less file:// URL is a local directory that is
// created (with its parents) if it does not exist. An unknown scheme is an error that
// names it and the schemes registered in this binary.
func OpenBucket(ctx context.Context, loc string) (*blob.Bucket, error) {
	return openBucket(ctx, loc, true)
}

// OpenExistingBucket opens the storage location loc like OpenBucket but never creates
// a missing local directory (for locations only read from).
func OpenExistingBucket(ctx context.Context, loc string) (*blob.Bucket, error) {
	return openBucket(ctx, loc, false)
}

// openBucket opens loc; create says whether a missing local directory is created
// (false when only reading).
func openBucket(ctx context.Context, loc string, create bool) (*blob.Bucket, error) {
	pl, err := parseLoc(loc)
	if err != nil {
		return nil, err
	}
	if pl.dir != "" { // a local folder, with or without a file URL query: confined
		b, err := openRootBucket(pl.dir, create && !pl.noCreate, !create)
		if err != nil {
			return nil, fmt.Errorf("opening storage location %q: %w", loc, err)
		}
		return b, nil
	}
	if pl.url != "" {
		var b *blob.Bucket
		if strings.HasPrefix(pl.url, "mem://") {
			b, err = sharedMem(ctx, pl.url)
		} else {
			b, err = blob.OpenBucket(ctx, pl.url)
		}
		if err != nil {
			return nil, fmt.Errorf("opening storage location %q: %w", loc, err)
		}
		if pl.prefix != "" {
			b = blob.PrefixedBucket(b, pl.prefix)
		}
		return b, nil
	}
	return nil, fmt.Errorf("storage location %q: nothing to open", loc)
}

var (
	memMu    sync.Mutex
	memRoots = map[string]*blob.Bucket{}
)

// sharedMem opens a mem:// bucket shared by everything in this process that opens the
// same URL: the launcher, every DoFn of an in-process runner and the tests see the same
// objects (memblob alone gives every OpenBucket call a fresh, empty bucket). Each call
// returns its own *blob.Bucket, which the caller closes as usual.
func sharedMem(ctx context.Context, u string) (*blob.Bucket, error) {
	memMu.Lock()
	defer memMu.Unlock()
	root, ok := memRoots[u]
	if !ok {
		b, err := blob.OpenBucket(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("opening storage location %q: %w", u, err)
		}
		memRoots[u], root = b, b
	}
	// PrefixedBucket wraps root's driver in a new Bucket; closing that one closes the
	// memblob driver, which is a no-op, so the objects survive.
	return blob.PrefixedBucket(root, ""), nil
}

// CheckReachable lists one object of a remote location (any scheme but file:// and
// mem://), reading and writing nothing, so that missing credentials, a wrong bucket
// name or region fail before the run instead of after its first stage. Local and
// in-memory locations always pass.
func CheckReachable(ctx context.Context, loc string) error {
	pl, err := parseLoc(loc)
	if err != nil {
		return err
	}
	if pl.dir != "" || pl.scheme == fileblob.Scheme || strings.HasPrefix(pl.url, "mem://") {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	if _, err := b.List(&blob.ListOptions{}).Next(ctx); err != nil && err != io.EOF {
		return fmt.Errorf("output location %q cannot be listed (credentials, bucket name, region?): %w", loc, err)
	}
	return nil
}

// CheckWritable validates loc as an output location without writing or creating
// anything, so that a run fails at once rather than after hours of work. It checks that
// loc parses and that its scheme is registered. For a local location (a plain path or a
// file:// URL) the path, if it exists, must be a directory, and the nearest existing
// ancestor must be a writable directory (access(2) with W_OK|X_OK where available);
// for a file:// URL with a query but no create_dir, the directory must already exist.
// For other schemes only the scheme is checked: credentials and permissions show on
// the first write.
func CheckWritable(ctx context.Context, loc string) error {
	pl, err := parseLoc(loc)
	if err != nil {
		return err
	}
	if pl.dir == "" {
		return nil
	}
	mustExist := false
	if pl.fileQuery {
		u, _ := url.Parse(pl.url) // parsed before
		mustExist = u.Query().Get("create_dir") == ""
	}
	abs, err := filepath.Abs(pl.dir)
	if err != nil {
		return fmt.Errorf("output location %q: %w", loc, err)
	}
	for p := abs; ; {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			if !fi.IsDir() {
				if p == abs {
					return fmt.Errorf("output location %q: %s exists and is not a directory", loc, p)
				}
				return fmt.Errorf("output location %q: cannot create %s: %s is not a directory", loc, abs, p)
			}
			if p != abs && mustExist {
				return fmt.Errorf("output location %q: directory %s does not exist (add create_dir=true to the URL, or drop its query)", loc, abs)
			}
			if err := accessWritable(p); err != nil {
				return fmt.Errorf("output location %q: directory %s is not writable: %w", loc, p, err)
			}
			return nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			// Missing, or under a non-directory: look further up.
		default:
			return fmt.Errorf("output location %q: %w", loc, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return fmt.Errorf("output location %q: no existing ancestor of %s", loc, abs)
		}
		p = parent
	}
}

package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// An output location (--out) is owned by jemcheck run by run:
//
//   - A finished run's files are listed, with their sizes and SHA-256, in manifest.json
//     at the root, written last. A run is complete if and only if its manifest exists
//     and matches (VerifyManifest). jemcheck only ever deletes or overwrites files listed
//     in the previous run's manifest; everything else under --out is the user's.
//   - A location that is not empty and has no manifest is refused (CheckOwnership),
//     unless the user passes Overwrite, which still deletes nothing: the new run's
//     files replace only objects of the same names.
//   - A run writes everything under its staging folder ".jemcheck-staging-<run id>/"
//     inside the location; the previous run's files stay complete and readable until
//     the new run has finished. Commit then seals the staging folder with the new
//     manifest, journals the previous one, deletes the old manifest, moves the new
//     files in (a rename for local directories; copy then delete on object stores),
//     deletes the previous run's files the new run did not rewrite, and writes the new
//     manifest last. Every step can be repeated: a commit cut short (a killed process)
//     is finished by the next run, and a staging folder that was never sealed (a failed
//     or killed run) is deleted by the next run.
//   - A lock object ".jemcheck.lock" (run id, host, process, start time) is created
//     exclusively (link(2) for local directories, a does-not-exist precondition on gs://
//     and s3://, an in-process check on mem://) and refuses a second run into the same
//     location while one is live. A lock whose process is gone (same host, a run whose
//     workers ran in that process) or that is older than StaleLockAge is taken over, by
//     exactly one run however many find it at once (lock.go: "Taking a stale lock over").

// Names jemcheck keeps at the root of an output location besides the run's files.
const (
	ManifestKey   = "manifest.json"
	LockKey       = ".jemcheck.lock"
	StagingPrefix = ".jemcheck-staging-"
	// commitKey, inside a staging folder, journals a commit in progress: it holds the
	// previous run's manifest (or null), so that the commit can be finished later.
	commitKey = ".commit.json"
	// ManifestFormat identifies jemcheck manifests.
	ManifestFormat = "jemcheck-manifest/1"
	// StaleLockAge is how old a lock must be before another host's run takes it over.
	StaleLockAge = 24 * time.Hour
)

// ManifestFile is one output file of a finished run.
type ManifestFile struct {
	Path   string `json:"path"` // relative to the output location, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest lists every file of a finished run.
type Manifest struct {
	Format       string         `json:"format"`
	Version      string         `json:"jemcheck_version"`
	RunID        string         `json:"run_id"`
	Pipeline     string         `json:"pipeline"`
	ConfigSHA256 string         `json:"config_sha256"`
	Files        []ManifestFile `json:"files"`
}

// Has reports whether the manifest lists key.
func (m *Manifest) Has(key string) bool {
	if m == nil {
		return false
	}
	_, ok := slices.BinarySearchFunc(m.Files, key, func(f ManifestFile, k string) int { return strings.Compare(f.Path, k) })
	return ok
}

// Version is this binary's jemcheck version: the module version, or the VCS revision
// it was built from ("devel" when neither is known).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// NewRunID returns a fresh run id: the UTC start time and a random suffix.
func NewRunID(now time.Time) string {
	var r [4]byte
	if _, err := io.ReadFull(cryptoRand, r[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the system's randomness is gone
	}
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(r[:])
}

// StagingKey is the key prefix of a run's staging folder inside its output location.
func StagingKey(runID string) string { return StagingPrefix + runID + "/" }

// Layout tells CheckOwnership which names are jemcheck outputs: Owned matches an
// output key, Dirs are the folders outputs live in (listed fully; nothing else under
// the location is walked).
type Layout struct {
	Owned func(key string) bool
	Dirs  []string // e.g. "figures/"
	// Others names the jemcheck tool that writes key when this layout does not own it
	// ("compare" for compare.html), "" for a name no jemcheck tool writes: a location
	// holding another tool's output is refused by that name, never as an edited
	// manifest or as the user's files. Nil: none.
	Others func(key string) string
}

// other is the jemcheck tool that writes key outside this layout, or "".
func (l Layout) other(key string) string {
	if l.Others == nil || l.Owned(key) {
		return ""
	}
	return l.Others(key)
}

// OwnershipError is the refusal to run into a location jemcheck does not own.
type OwnershipError struct{ Msg string }

func (e *OwnershipError) Error() string { return e.Msg }

// CheckOwnership decides, reading only, whether a run may write into loc, and returns
// the previous run's manifest (nil for an empty or new location). It refuses:
//   - a non-empty location without a jemcheck manifest, unless overwrite (the run's
//     inputs inside loc and jemcheck's own lock and staging folders do not count);
//   - a location with a manifest that holds an object with an output name that the
//     manifest does not list, or a listed file whose size changed (the user's now),
//     unless overwrite;
//   - an input (inputs are locations the run reads) that sits at an output name the
//     previous manifest does not list: the run would replace it.
//
// Only the root and layout.Dirs are listed, never the whole tree. A symbolic link where
// a run would read, write or delete is refused (see "Symbolic links"), and a folder
// named like a staging folder, or a file named like a lock helper, that jemcheck did
// not seal is the user's (see "Seals"): listed, never touched. Listed files are compared
// by size; VerifyOwnership compares their SHA-256 too.
func CheckOwnership(ctx context.Context, loc string, layout Layout, inputs []string, overwrite bool) (*Manifest, error) {
	return checkOwnership(ctx, loc, layout, inputs, overwrite, false)
}

// VerifyOwnership is CheckOwnership that also hashes every file the previous manifest
// lists: a hand edit that kept a file's size is found too (call it under the lock,
// just before the run).
func VerifyOwnership(ctx context.Context, loc string, layout Layout, inputs []string, overwrite bool) (*Manifest, error) {
	return checkOwnership(ctx, loc, layout, inputs, overwrite, true)
}

func checkOwnership(ctx context.Context, loc string, layout Layout, inputs []string, overwrite, hash bool) (*Manifest, error) {
	if dir, ok := localDir(loc); ok {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	b, err := openBucket(ctx, loc, false)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if err := checkLocalLinks(ctx, b, loc, layout); err != nil {
		return nil, err
	}
	dir, local := exclusiveDir(loc)
	var prev *Manifest
	var foreign []string
	committing := false
	top, err := list(ctx, b, &blob.ListOptions{Delimiter: "/"})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", loc, err)
	}
	for _, obj := range top {
		switch {
		case obj.Key == ManifestKey:
			if prev, err = readManifest(ctx, b, ManifestKey); err != nil {
				return nil, &OwnershipError{fmt.Sprintf("%s holds a %s that is not a jemcheck manifest (%v): "+
					"it is not a jemcheck output location; choose an empty or new --out", loc, ManifestKey, err)}
			}
		case obj.Key == LockKey:
			// jemcheck's own (a lock that is not a jemcheck lock is refused when taken).
		case IsLockKey(obj.Key) && !obj.IsDir && lockHelperSealed(ctx, b, dir, local, obj.Key):
			// jemcheck's own takeover claim or temporary lock file.
		case strings.HasPrefix(obj.Key, StagingPrefix) && obj.IsDir && sealedFolder(ctx, b, dir, local, obj.Key):
			// jemcheck's own; one whose commit had begun makes the location jemcheck's
			// even while no manifest is there (the next run, under the lock, finishes it).
			if ok, err := b.Exists(ctx, obj.Key+commitKey); err == nil && ok {
				committing = true
			}
		case strings.HasPrefix(obj.Key, StagingPrefix) && obj.IsDir &&
			spentStaging(ctx, b, dir, local, strings.TrimSuffix(strings.TrimPrefix(obj.Key, StagingPrefix), "/")):
			// jemcheck's own, spent (its removal cut short): the next run removes it.
		case obj.IsDir && isRunFolder(ctx, b, obj.Key):
			// Another jemcheck run's output nested inside (./out/regress in ./out):
			// not in this run's layout, so never touched, and not the user's clutter.
		default:
			foreign = append(foreign, obj.Key)
		}
	}
	if committing && prev == nil {
		return nil, nil
	}
	// A manifest may only list jemcheck's output names: anything else was added by
	// hand, and a run would delete it.
	if prev != nil {
		for _, f := range prev.Files {
			if tool := layout.other(f.Path); tool != "" {
				// Another jemcheck tool's output (compare's in a regress --out): never
				// replaced, its files are not this layout's to delete.
				if prev.Pipeline != "" {
					tool = prev.Pipeline
				}
				return nil, &OwnershipError{fmt.Sprintf("%s holds a %s output (run %s, whose %s lists %s); choose another --out",
					strings.TrimSuffix(loc, "/"), tool, prev.RunID, ManifestKey, f.Path)}
			}
			if !layout.Owned(f.Path) {
				return nil, &OwnershipError{fmt.Sprintf("%s/%s lists %s, which is not a jemcheck output name (the manifest "+
					"was edited): jemcheck will not delete it; restore the manifest or choose another --out",
					strings.TrimSuffix(loc, "/"), ManifestKey, f.Path)}
			}
		}
	}
	inKeys := map[string]bool{}
	for _, in := range inputs {
		if k, ok := keyInside(loc, in); ok {
			inKeys[k] = true
			if layout.Owned(k) || strings.HasPrefix(k, StagingPrefix) {
				return nil, &OwnershipError{fmt.Sprintf("input %s is inside --out %s at the name of a jemcheck output (%s), "+
					"which the run would replace; move it out of %s or choose another --out", in, loc, k, loc)}
			}
		}
	}
	if prev == nil {
		var others []string
		for _, k := range foreign {
			if !inKeys[k] {
				others = append(others, k)
			}
		}
		if len(others) > 0 && !overwrite {
			for _, k := range others {
				if tool := layout.other(k); tool != "" {
					return nil, &OwnershipError{fmt.Sprintf("%s holds a %s output (%s); choose another --out, or pass --overwrite "+
						"to write jemcheck's files beside it (none of its files is touched)", strings.TrimSuffix(loc, "/"), tool, describeKeys(others))}
				}
			}
			return nil, &OwnershipError{fmt.Sprintf("--out %s is not empty (%s) and holds no jemcheck %s, "+
				"so jemcheck will not write there: choose an empty or new directory, or pass --overwrite to write "+
				"jemcheck's files beside these (objects with jemcheck's output names are then replaced; nothing else "+
				"is touched)", loc, describeKeys(others), ManifestKey)}
		}
		return nil, nil
	}
	if overwrite {
		return prev, nil
	}
	// With a manifest: outputs the manifest does not list, or that changed since.
	listed := map[string]ManifestFile{}
	for _, f := range prev.Files {
		listed[f.Path] = f
	}
	var problems []string
	check := func(key string, size int64) error {
		if inKeys[key] || !layout.Owned(key) {
			return nil
		}
		want, ok := listed[key]
		switch {
		case !ok:
			problems = append(problems, key+" (not written by the last jemcheck run)")
		case want.Size != size:
			problems = append(problems, fmt.Sprintf("%s (changed since jemcheck wrote it: %d bytes, manifest says %d)", key, size, want.Size))
		case hash:
			got, err := hashObject(ctx, b, key)
			if err != nil {
				return err
			}
			if got.SHA256 != want.SHA256 {
				problems = append(problems, fmt.Sprintf("%s (changed since jemcheck wrote it: sha256 %s, manifest says %s)", key, got.SHA256, want.SHA256))
			}
		}
		return nil
	}
	for _, d := range append([]string{""}, layout.Dirs...) {
		opts := &blob.ListOptions{Prefix: d}
		if d == "" {
			opts.Delimiter = "/"
		}
		objs, err := list(ctx, b, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", loc, err)
		}
		for _, obj := range objs {
			if !obj.IsDir {
				if err := check(obj.Key, obj.Size); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, &OwnershipError{fmt.Sprintf("--out %s holds files with jemcheck's output names that its last run's %s "+
			"does not account for: %s; they may be yours, so jemcheck will not run there: move them, choose another "+
			"--out, or pass --overwrite to run anyway (the run then replaces those of them it writes again and leaves the rest)", loc, ManifestKey, describeKeys(problems))}
	}
	return prev, nil
}

// isRunFolder reports whether the folder dir (a key prefix ending in "/") holds a
// jemcheck run: a readable jemcheck manifest at its top.
func isRunFolder(ctx context.Context, b *blob.Bucket, dir string) bool {
	_, err := readManifest(ctx, b, dir+ManifestKey)
	return err == nil
}

// describeKeys lists up to five keys and how many more there are.
func describeKeys(keys []string) string {
	const show = 5
	slices.Sort(keys)
	if len(keys) <= show {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:show], ", "), len(keys)-show)
}

// keyInside returns the key of location in inside the output location out, if it is
// there: both local paths under one directory, or the same bucket URL with in's key
// under out's prefix.
func keyInside(out, in string) (string, bool) {
	if od, ok := localDir(out); ok {
		if isURL(in) {
			pl, err := parseLoc(in)
			if err != nil || pl.dir == "" {
				return "", false
			}
			in = pl.dir
		}
		abs, err := filepath.Abs(in)
		if err != nil {
			return "", false
		}
		rel, err := filepath.Rel(od, abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	po, err := parseLoc(out)
	if err != nil || po.url == "" || po.fileQuery {
		return "", false
	}
	dir, key, err := SplitObject(in)
	if err != nil {
		return "", false
	}
	pi, err := parseLoc(dir)
	if err != nil || pi.dir != "" || !sameStore(pi.url, po.url) {
		return "", false
	}
	full := pi.prefix + key
	if !strings.HasPrefix(full, po.prefix) {
		return "", false
	}
	return strings.TrimPrefix(full, po.prefix), true
}

// sealedFolder reports whether the staging-named folder key ("<prefix><id>/") is a
// staging folder jemcheck sealed.
func sealedFolder(ctx context.Context, b *blob.Bucket, dir string, local bool, key string) bool {
	ok, _ := stagingSealed(ctx, b, dir, local, strings.TrimSuffix(strings.TrimPrefix(key, StagingPrefix), "/"))
	return ok
}

func readManifest(ctx context.Context, b *blob.Bucket, key string) (*Manifest, error) {
	data, err := ReadSmallKey(ctx, b, key, MaxMetadataBytes)
	if err != nil {
		return nil, err
	}
	return decodeManifest(data)
}

func decodeManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("format %q, want %q", m.Format, ManifestFormat)
	}
	for i, f := range m.Files {
		if !validKey(f.Path) || f.Size < 0 || len(f.SHA256) != 64 {
			return nil, fmt.Errorf("file %d: bad entry %+v", i, f)
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			return nil, fmt.Errorf("files not sorted or repeated at %q", f.Path)
		}
	}
	return &m, nil
}

// validKey reports whether key is a clean relative slash-separated name that stays
// inside the location and is none of jemcheck's own bookkeeping names.
func validKey(key string) bool {
	return key != "" && !strings.HasPrefix(key, "/") && path.Clean(key) == key && !strings.HasPrefix(key, "../") &&
		key != ".." && key != ManifestKey && !IsLockKey(key) && !strings.HasPrefix(key, StagingPrefix)
}

// VerifyManifest checks that loc holds a complete run: its manifest exists and every
// file it lists is there with the listed size and SHA-256.
func VerifyManifest(ctx context.Context, loc string) (*Manifest, error) {
	b, err := openBucket(ctx, loc, false)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	m, err := readManifest(ctx, b, ManifestKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestKey, err)
	}
	for _, f := range m.Files {
		got, err := checkListed(ctx, b, f.Path, f)
		if err != nil {
			return nil, err
		}
		if got.Size != f.Size {
			return nil, fmt.Errorf("%s: %d bytes, manifest says %d", f.Path, got.Size, f.Size)
		}
		if got != f {
			return nil, fmt.Errorf("%s: %d bytes sha256 %s, manifest says %d bytes sha256 %s", f.Path, got.Size, got.SHA256, f.Size, f.SHA256)
		}
	}
	return m, nil
}

// CommitInfo describes the run a commit publishes.
type CommitInfo struct {
	RunID        string
	Pipeline     string
	ConfigSHA256 string
	Overwrite    bool // replace objects of the same names that no manifest lists
}

// Commit publishes the run whose files are in its staging folder inside loc (see the
// package's description of output locations) and returns its manifest. It may be
// called again after being cut short, by the same or a later process, and finishes
// the same commit.
func Commit(ctx context.Context, loc string, info CommitInfo) (*Manifest, error) {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	st := StagingKey(info.RunID)
	// 1. Seal: the new manifest, written into the staging folder after every file.
	m, err := readManifest(ctx, b, st+ManifestKey)
	if gcerrors.Code(err) == gcerrors.NotFound {
		// A retried Publish after a complete commit finds its own manifest published.
		if done, err := readManifest(ctx, b, ManifestKey); err == nil && done.RunID == info.RunID {
			return done, nil
		}
		if m, err = seal(ctx, b, st, info); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("read staged %s: %w", ManifestKey, err)
	}
	// 2. Journal the previous manifest (first pass), or read it back (a later pass).
	var prev *Manifest
	j, err := ReadSmallKey(ctx, b, st+commitKey, MaxMetadataBytes)
	switch {
	case err == nil:
		if !bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			if prev, err = decodeManifest(j); err != nil {
				return nil, fmt.Errorf("read commit journal %s: %w", st+commitKey, err)
			}
		}
	case gcerrors.Code(err) == gcerrors.NotFound:
		// Nothing has been touched yet: the staged files must be those sealed (a file
		// deleted or changed since, e.g. by another run, stops the commit here, with the
		// previous run complete).
		if err := checkFiles(ctx, b, st, m.Files); err != nil {
			return nil, fmt.Errorf("staged files changed after they were sealed, nothing published: %w", err)
		}
		prev, err = readManifest(ctx, b, ManifestKey)
		if gcerrors.Code(err) == gcerrors.NotFound {
			prev, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the previous %s: %w", ManifestKey, err)
		}
		if !info.Overwrite {
			if err := checkCollisions(ctx, b, m, prev); err != nil {
				return nil, err
			}
		}
		// No link where this commit moves or deletes files (see "Symbolic links"),
		// checked before the commit begins.
		if err := checkCommitLinks(ctx, b, loc, m, prev); err != nil {
			return nil, err
		}
		// The store can copy: else the commit would stop after deleting the previous
		// manifest (step 3), and every later run would fail to finish it.
		if err := probeCopy(ctx, b, loc, st); err != nil {
			return nil, err
		}
		data, _ := json.Marshal(prev) // nil → null
		if err := b.WriteAll(ctx, st+commitKey, data, nil); err != nil {
			return nil, fmt.Errorf("write commit journal: %w", err)
		}
	default:
		return nil, fmt.Errorf("read commit journal %s: %w", st+commitKey, err)
	}
	// A commit finished later is checked again (a link may have appeared meanwhile).
	if err := checkCommitLinks(ctx, b, loc, m, prev); err != nil {
		return nil, err
	}
	// 3. From here on the location holds no complete run until step 6. (A later pass
	// that still finds the previous manifest checks again that the store can copy.)
	dir, local := localDir(loc)
	if !local {
		if ok, err := b.Exists(ctx, ManifestKey); err == nil && ok {
			if err := probeCopy(ctx, b, loc, st); err != nil {
				return nil, err
			}
		}
	}
	if err := deleteKey(ctx, b, dir, local, ManifestKey); err != nil {
		return nil, err
	}
	// 4. Move the new files in.
	for _, f := range m.Files {
		if err := move(ctx, b, dir, local, st+f.Path, f.Path); err != nil {
			return nil, err
		}
	}
	// 5. Delete the previous run's files this run did not rewrite.
	if prev != nil {
		for _, f := range prev.Files {
			if m.Has(f.Path) {
				continue
			}
			if err := deleteKey(ctx, b, dir, local, f.Path); err != nil {
				return nil, err
			}
			if local {
				removeEmptyParents(dir, f.Path)
			}
		}
	}
	// 6. The manifest, last, once every file it lists is in place with its size and hash.
	if commitHook != nil {
		commitHook("verify")
	}
	if err := checkFiles(ctx, b, "", m.Files); err != nil {
		return nil, &IncompleteError{Loc: loc, RunID: info.RunID, Err: err}
	}
	data, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	if err := b.WriteAll(ctx, ManifestKey, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return nil, fmt.Errorf("write %s: %w", ManifestKey, err)
	}
	// 7. The staging folder is spent.
	if err := removeStaging(ctx, b, dir, local, info.RunID); err != nil {
		return nil, err
	}
	return m, nil
}

// checkCommitLinks refuses a link where a commit of m over prev moves or deletes files.
func checkCommitLinks(ctx context.Context, b *blob.Bucket, loc string, m, prev *Manifest) error {
	dirs := map[string]bool{}
	for _, mf := range []*Manifest{m, prev} {
		if mf == nil {
			continue
		}
		for _, f := range mf.Files {
			if top, _, ok := strings.Cut(f.Path, "/"); ok {
				dirs[top+"/"] = true
			}
		}
	}
	layout := Layout{Owned: func(k string) bool { return m.Has(k) || prev.Has(k) }}
	for d := range dirs {
		layout.Dirs = append(layout.Dirs, d)
	}
	slices.Sort(layout.Dirs)
	return checkLocalLinks(ctx, b, loc, layout)
}

// deleteKey deletes key from the location (b, or the local directory dir without
// following links).
func deleteKey(ctx context.Context, b *blob.Bucket, dir string, local bool, key string) error {
	if local {
		return deleteLocal(dir, key)
	}
	return deleteIfExists(ctx, b, key)
}

// commitHook, set by tests, is called at the named step of a commit.
var commitHook func(step string)

// IncompleteError is a commit that moved files in but found some of them missing or
// different before writing the manifest: the location holds no complete run.
type IncompleteError struct {
	Loc, RunID string
	Err        error
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("publishing run %s into %s stopped before writing %s: %v; the previous run's files had begun to be "+
		"replaced, so %s holds no complete run", e.RunID, e.Loc, ManifestKey, e.Err, e.Loc)
}

func (e *IncompleteError) Unwrap() error { return e.Err }

// checkFiles checks that every file in files is at prefix+its path with its size and
// SHA-256 (sizes first, by listing; then the hashes, in parallel).
func checkFiles(ctx context.Context, b *blob.Bucket, prefix string, files []ManifestFile) error {
	errs := make([]error, len(files))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			key := prefix + f.Path
			attrs, err := b.Attributes(ctx, key)
			if gcerrors.Code(err) == gcerrors.NotFound {
				errs[i] = fmt.Errorf("%s is missing", key)
				return
			}
			if err != nil {
				errs[i] = fmt.Errorf("check %s: %w", key, err)
				return
			}
			if attrs.Size != f.Size {
				errs[i] = fmt.Errorf("%s has %d bytes, the manifest says %d", key, attrs.Size, f.Size)
				return
			}
			got, err := hashObject(ctx, b, key)
			if err != nil {
				errs[i] = err
			} else if got.SHA256 != f.SHA256 || got.Size != f.Size {
				errs[i] = fmt.Errorf("%s: %d bytes sha256 %s, the manifest says %d bytes sha256 %s", key, got.Size, got.SHA256, f.Size, f.SHA256)
			}
		}()
	}
	wg.Wait()
	var bad []string
	var first error
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			bad = append(bad, err.Error())
		}
	}
	if first == nil {
		return nil
	}
	if len(bad) == 1 {
		return first
	}
	return fmt.Errorf("%d of %d files: %s", len(bad), len(files), describeKeys(bad))
}

// OutputState says what loc holds now, checked rather than assumed (for the message
// after a failed or stopped run): the complete run its manifest describes (every file
// verified), or that it holds none. runID is the run that failed.
func OutputState(ctx context.Context, loc, runID string) string {
	if dir, ok := localDir(loc); ok {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("%s does not exist", loc)
		}
	}
	m, err := VerifyManifest(ctx, loc)
	switch {
	case err == nil && m.RunID == runID:
		return fmt.Sprintf("this run was published in %s (%s and its %d files verified)", loc, ManifestKey, len(m.Files))
	case err == nil:
		return fmt.Sprintf("the previous results in %s are intact (run %s: %s and its %d files verified)", loc, m.RunID, ManifestKey, len(m.Files))
	case gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s holds no published run (no %s)", loc, ManifestKey)
	default:
		return fmt.Sprintf("%s holds no complete run: %v", loc, err)
	}
}

// seal hashes every file in the staging folder st and writes the manifest there.
func seal(ctx context.Context, b *blob.Bucket, st string, info CommitInfo) (*Manifest, error) {
	m := &Manifest{Format: ManifestFormat, Version: Version(), RunID: info.RunID, Pipeline: info.Pipeline,
		ConfigSHA256: info.ConfigSHA256, Files: []ManifestFile{}}
	staged, err := list(ctx, b, &blob.ListOptions{Prefix: st})
	if err != nil {
		return nil, fmt.Errorf("list staged files: %w", err)
	}
	var keys []string
	for _, obj := range staged {
		key := strings.TrimPrefix(obj.Key, st)
		if obj.IsDir || stagingBookkeeping(key) || strings.HasSuffix(key, ".tmp") {
			continue // bookkeeping, or a temporary file of an aborted write
		}
		if !validKey(key) {
			return nil, fmt.Errorf("staged file %q has a name jemcheck does not write", obj.Key)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("nothing staged under %s to publish", st)
	}
	// Hash the files in parallel: sample shards can add up to gigabytes.
	m.Files = make([]ManifestFile, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m.Files[i], errs[i] = hashObject(ctx, b, st+key)
			m.Files[i].Path = key
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// A file with a hash record (a block's part, see "Seals") must still be what was
	// written: one changed since (a kept block edited in a resumed run's folder) is not
	// published.
	for _, f := range m.Files {
		want, err := readPartRecord(ctx, b, st, f.Path)
		if errors.Is(err, errNoRecord) {
			continue // no record: a file written whole at the end (summary, report)
		}
		if err != nil {
			return nil, err
		}
		if want.Size != f.Size || want.SHA256 != f.SHA256 {
			return nil, fmt.Errorf("staged %s has %d bytes sha256 %s, but %d bytes sha256 %s were recorded when it was written: "+
				"it changed since, nothing published", f.Path, f.Size, f.SHA256, want.Size, want.SHA256)
		}
	}
	slices.SortFunc(m.Files, func(a, b ManifestFile) int { return strings.Compare(a.Path, b.Path) })
	data, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	if err := b.WriteAll(ctx, st+ManifestKey, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return nil, fmt.Errorf("write staged %s: %w", ManifestKey, err)
	}
	return m, nil
}

func encodeManifest(m *Manifest) ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ManifestKey, err)
	}
	return append(data, '\n'), nil
}

// checkCollisions refuses to publish over objects that exist under the new run's names
// but are in no manifest: they appeared while the run was going (the user's).
func checkCollisions(ctx context.Context, b *blob.Bucket, m, prev *Manifest) error {
	var clash []string
	for _, f := range m.Files {
		if prev.Has(f.Path) {
			continue
		}
		ok, err := b.Exists(ctx, f.Path)
		if err != nil {
			return fmt.Errorf("check %s: %w", f.Path, err)
		}
		if ok {
			clash = append(clash, f.Path)
		}
	}
	if len(clash) > 0 {
		return &OwnershipError{fmt.Sprintf("objects not written by jemcheck appeared at its output names during the run (%s); "+
			"the finished run stays in %s: move those objects away and rerun, or pass --overwrite", describeKeys(clash), StagingKey(m.RunID))}
	}
	return nil
}

// copyProbeKey, inside a staging folder, is the object a commit copies its staged
// manifest to, to check that the store can copy (probeCopy).
const copyProbeKey = ".jemcheck-copy-probe"

// CopyError is the refusal to publish on a store that cannot copy an object: nothing
// was published, and the previous run is as it was.
type CopyError struct {
	Loc string
	Err error
}

func (e *CopyError) Error() string {
	return fmt.Sprintf("the store cannot copy an object (a test copy of the staged %s failed: %v), and publishing a run there "+
		"copies each file into place: nothing was published, and what --out held before is as it was", ManifestKey, e.Err)
}

func (e *CopyError) Unwrap() error { return e.Err }

// probeCopy copies the staged manifest of the staging folder st to st+copyProbeKey,
// checks the copy and deletes it: a location whose moves are copies (an object store)
// must copy before a commit deletes the previous manifest. Local directories rename.
func probeCopy(ctx context.Context, b *blob.Bucket, loc, st string) error {
	if _, local := localDir(loc); local {
		return nil
	}
	src, dst := st+ManifestKey, st+copyProbeKey
	want, err := hashObject(ctx, b, src)
	if err != nil {
		return fmt.Errorf("check the store can copy: %w", err)
	}
	defer deleteIfExists(context.WithoutCancel(ctx), b, dst)
	if err := b.Copy(ctx, dst, src, nil); err != nil {
		return &CopyError{Loc: loc, Err: err}
	}
	got, err := hashObject(ctx, b, dst)
	if err != nil {
		return &CopyError{Loc: loc, Err: err}
	}
	if got.Size != want.Size || got.SHA256 != want.SHA256 {
		return &CopyError{Loc: loc, Err: fmt.Errorf("the copy has %d bytes sha256 %s, the original %d bytes sha256 %s",
			got.Size, got.SHA256, want.Size, want.SHA256)}
	}
	return nil
}

// move moves the object src to dst: a rename within a local directory (creating dst's
// folders), else a copy then a delete of src. A src that is gone was moved already.
func move(ctx context.Context, b *blob.Bucket, dir string, local bool, src, dst string) error {
	if local {
		return moveLocal(dir, src, dst)
	}
	if ok, err := b.Exists(ctx, src); err != nil {
		return fmt.Errorf("publish %s: %w", dst, err)
	} else if !ok {
		return nil
	}
	if err := b.Copy(ctx, dst, src, nil); err != nil {
		return fmt.Errorf("publish %s: %w", dst, err)
	}
	return deleteIfExists(ctx, b, src)
}

func deleteIfExists(ctx context.Context, b *blob.Bucket, key string) error {
	if err := b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// removeEmptyParents removes the now empty folders of a deleted local file, up to the
// location's root (a folder with anything left in it stays).
func removeEmptyParents(dir, key string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	for p := path.Dir(key); p != "." && p != "/"; p = path.Dir(p) {
		if isLink(dir, p) || root.Remove(filepath.FromSlash(p)) != nil {
			return
		}
	}
}

// removeStaging deletes a run's staging folder: everything in it is the run's own.
func removeStaging(ctx context.Context, b *blob.Bucket, dir string, local bool, runID string) error {
	st := StagingKey(runID)
	if local {
		// The seal goes last here too (removeSealLast): a folder cut short while
		// being removed is still jemcheck's to the next run, which removes the rest.
		if err := removeSealLast(dir, strings.TrimSuffix(st, "/"), StagingSealKey); err != nil {
			return fmt.Errorf("remove staging folder %s: %w", st, err)
		}
		return nil
	}
	objs, err := list(ctx, b, &blob.ListOptions{Prefix: st})
	if err != nil {
		return fmt.Errorf("list staging folder %s: %w", st, err)
	}
	// The seal goes last: while any of the folder's objects is left, it still shows
	// as jemcheck's to a run checking ownership meanwhile.
	slices.SortStableFunc(objs, func(a, c *blob.ListObject) int {
		return cmp.Compare(boolInt(a.Key == st+StagingSealKey), boolInt(c.Key == st+StagingSealKey))
	})
	for _, obj := range objs {
		if err := deleteIfExists(ctx, b, obj.Key); err != nil {
			return err
		}
	}
	return nil
}

// boolInt is 1 for true.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Abort discards an unfinished run's staging folder, unless its commit has begun (then
// the folder is kept for the next run to finish the commit); it reports which.
func Abort(ctx context.Context, loc, runID string) (kept bool, err error) {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return false, err
	}
	defer b.Close()
	if ok, err := b.Exists(ctx, StagingKey(runID)+commitKey); err != nil {
		return false, fmt.Errorf("check commit journal: %w", err)
	} else if ok {
		return true, nil
	}
	// A failed job's other bundles may still be finishing their writes in this process
	// when the runner returns: remove the folder until it stays gone for a moment.
	// (Removing a local folder while a file appears in it fails: that is retried too.)
	dir, local := localDir(loc)
	var rerr error
	for range 20 {
		rerr = removeStaging(ctx, b, dir, local, runID)
		time.Sleep(100 * time.Millisecond)
		left, err := list(ctx, b, &blob.ListOptions{Prefix: StagingKey(runID)})
		if err != nil || len(left) == 0 && rerr == nil {
			return false, err
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	if rerr != nil {
		return false, rerr
	}
	return false, fmt.Errorf("files keep appearing in the staging folder %s", StagingKey(runID))
}

// RecoverStaging deals with the staging folders earlier runs left in loc (call it with
// the lock held): a folder whose commit had begun is committed to the end, any other
// is deleted. It returns one line per folder for the user.
func RecoverStaging(ctx context.Context, loc, self string) ([]string, error) {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var ids, lines0 []string
	objs, err := list(ctx, b, &blob.ListOptions{Delimiter: "/", Prefix: StagingPrefix})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", loc, err)
	}
	for _, obj := range objs {
		id := strings.TrimSuffix(strings.TrimPrefix(obj.Key, StagingPrefix), "/")
		if obj.IsDir && id != self && id != "" {
			ids = append(ids, id)
		} else if !obj.IsDir && id != self {
			lines0 = append(lines0, fmt.Sprintf("left %s alone: it is not a staging folder jemcheck sealed (not a folder)", obj.Key))
		}
	}
	lines := lines0
	dir, local := localDir(loc)
	if local {
		// An empty folder is not listed: read the directory itself.
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			id, ok := strings.CutPrefix(e.Name(), StagingPrefix)
			if ok && e.IsDir() && id != self && id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	for _, id := range ids {
		if ok, why := stagingSealed(ctx, b, dir, local, id); !ok {
			if spentStaging(ctx, b, dir, local, id) {
				// jemcheck's own, its removal cut short after the seal went.
				if err := removeStaging(ctx, b, dir, local, id); err != nil {
					return lines, err
				}
				lines = append(lines, fmt.Sprintf("removed %s, a spent staging folder whose removal was cut short "+
					"(no seal left, and nothing in it but jemcheck's bookkeeping and files matching their hash records)", StagingKey(id)))
				continue
			}
			// Not jemcheck's (a user's folder with a staging name): left alone.
			lines = append(lines, fmt.Sprintf("left %s alone: it is not a staging folder jemcheck sealed (%s)", StagingKey(id), why))
			continue
		}
		ok, err := b.Exists(ctx, StagingKey(id)+commitKey)
		if err != nil {
			return lines, fmt.Errorf("check commit journal of run %s: %w", id, err)
		}
		if ok {
			m, err := readManifest(ctx, b, StagingKey(id)+ManifestKey)
			if err != nil {
				return lines, fmt.Errorf("finish the interrupted commit of run %s: %w", id, err)
			}
			_, err = Commit(ctx, loc, CommitInfo{RunID: id, Pipeline: m.Pipeline, ConfigSHA256: m.ConfigSHA256, Overwrite: true})
			if ie := (*IncompleteError)(nil); errors.As(err, &ie) {
				// Its files cannot all be put in place: finishing it is impossible, and
				// keeping it would stop every later run. Discard it; the location then
				// holds no manifest, which CheckOwnership reports.
				if err := removeStaging(ctx, b, dir, local, id); err != nil {
					return lines, err
				}
				lines = append(lines, fmt.Sprintf("could not finish the interrupted commit of run %s (%v): discarded it; "+
					"%s holds no complete run", id, ie.Err, loc))
				continue
			}
			if err != nil {
				return lines, fmt.Errorf("finish the interrupted commit of run %s: %w", id, err)
			}
			lines = append(lines, fmt.Sprintf("finished publishing run %s, whose commit was interrupted", id))
			continue
		}
		if err := removeStaging(ctx, b, dir, local, id); err != nil {
			return lines, err
		}
		lines = append(lines, fmt.Sprintf("removed the staging files of unfinished run %s", id))
	}
	return lines, nil
}

// list returns every object (and, with a delimiter, folder) a listing yields. A local
// listing fails when a file vanishes under it (another run's temporary files, while
// that run holds the lock): it is then listed again, a few times.
func list(ctx context.Context, b *blob.Bucket, opts *blob.ListOptions) ([]*blob.ListObject, error) {
	for attempt := 0; ; attempt++ {
		objs, err := listOnce(ctx, b, opts)
		if gcerrors.Code(err) != gcerrors.NotFound || attempt == 4 {
			return objs, err
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
}

func listOnce(ctx context.Context, b *blob.Bucket, opts *blob.ListOptions) ([]*blob.ListObject, error) {
	var objs []*blob.ListObject
	it := b.List(opts)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

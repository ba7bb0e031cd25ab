package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
)

// Symbolic links. jemcheck never follows a link under an output location: a link there
// would make the ownership check (which lists the tree without following links) and
// the commit's renames and deletes (which the operating system resolves through links)
// see different trees, so that a run could write or delete files outside --out. Every
// place a run reads, writes or deletes under a local --out is checked for links first,
// and a link is refused by name:
//
//   - the entries at the top of --out that jemcheck owns or may create: its output
//     names and output folders (results/, figures/, ...), manifest.json, the lock and
//     its helpers, and the staging folders;
//   - everything inside the output folders and inside jemcheck's (sealed) staging
//     folders;
//   - every input given as a folder (evaluate --from, compare's runs), whole.
//
// The renames and deletes of a commit go through an os.Root opened on --out, so that a
// link that appears after the check cannot lead outside --out either, and each path
// is checked again, component by component, just before it is touched.
//
// --out itself may be a link (the user named it); object stores have no links.

// linkRefusal is the one-line refusal of a link found at rel under the folder dir.
func linkRefusal(what, dir, rel string) *OwnershipError {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	target, err := os.Readlink(p)
	if err != nil {
		target = "?"
	}
	return &OwnershipError{fmt.Sprintf("%s holds a symbolic link, %s -> %s: jemcheck neither follows nor replaces links "+
		"there (a link could make it write or delete files outside %s); replace the link by a real folder or file, or choose "+
		"another location", what, p, target, dir)}
}

// walkNoLinks refuses a link anywhere under dir/rel (rel "" for dir itself, which is
// resolved first: the user may name a linked folder). A missing rel is fine.
func walkNoLinks(what, dir, rel string) error {
	root := filepath.Join(dir, filepath.FromSlash(rel))
	if rel == "" {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			root, dir = r, r
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			r, _ := filepath.Rel(dir, p)
			return linkRefusal(what, dir, filepath.ToSlash(r))
		}
		return nil
	})
	if err != nil {
		if oe := (*OwnershipError)(nil); errors.As(err, &oe) {
			return oe
		}
		return fmt.Errorf("check %s for links: %w", root, err)
	}
	return nil
}

// isLink reports whether dir/rel is a symbolic link (false if it does not exist).
func isLink(dir, rel string) bool {
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// checkOutLinks refuses the links under the local output directory dir that a run
// could follow (see "Symbolic links"): at the top, entries with jemcheck's names;
// inside, the output folders and the staging folders jemcheck sealed.
func checkOutLinks(ctx context.Context, b *blob.Bucket, dir, loc string, layout Layout) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s for links: %w", loc, err)
	}
	what := "--out " + loc
	for _, e := range entries {
		name := e.Name()
		ours := name == ManifestKey || IsLockKey(name) || strings.HasPrefix(name, StagingPrefix) || layout.Owned(name)
		for _, d := range layout.Dirs {
			ours = ours || name == strings.TrimSuffix(d, "/")
		}
		if !ours {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			return linkRefusal(what, dir, name)
		}
		if strings.HasPrefix(name, StagingPrefix) && e.IsDir() {
			id := strings.TrimPrefix(name, StagingPrefix)
			if ok, _ := stagingSealed(ctx, b, dir, true, id); !ok {
				continue // not jemcheck's: never touched
			}
		}
		if e.IsDir() {
			if err := walkNoLinks(what, dir, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkLocalLinks is checkOutLinks for any local form of loc (a plain path, a file://
// URL with or without a query); other locations have no links.
func checkLocalLinks(ctx context.Context, b *blob.Bucket, loc string, layout Layout) error {
	dir, ok := exclusiveDir(loc)
	if !ok {
		return nil
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return checkOutLinks(ctx, b, dir, loc, layout)
}

// CheckNoLinks refuses (an *OwnershipError naming it) a symbolic link anywhere under
// the folder loc, an input given as a folder (what names it for the user: "--from
// out/export"). loc itself may be a link; locations that are not local, and a loc
// that is not a folder, pass.
func CheckNoLinks(loc, what string) error {
	dir, ok := exclusiveDir(loc)
	if !ok {
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	return walkNoLinks(what, dir, "")
}

// noLinkPath refuses a link at any component of rel (slash-separated) under root; a
// missing component ends the check (nothing below it exists).
func noLinkPath(root *os.Root, dir, rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(filepath.FromSlash(p))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return linkRefusal("--out "+dir, dir, p)
		}
	}
	return nil
}

// moveLocal renames src to dst inside the local directory dir without following a
// link (see "Symbolic links"); a src that is gone was moved already.
func moveLocal(dir, src, dst string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("publish %s: %w", dst, err)
	}
	defer root.Close()
	if _, err := root.Lstat(filepath.FromSlash(src)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := noLinkPath(root, dir, src); err != nil {
		return err
	}
	if err := noLinkPath(root, dir, dst); err != nil {
		return err
	}
	if d := path.Dir(dst); d != "." {
		if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
			return fmt.Errorf("publish %s: %w", dst, err)
		}
		if err := noLinkPath(root, dir, d); err != nil { // made, not found: still no link
			return err
		}
	}
	if err := root.Rename(filepath.FromSlash(src), filepath.FromSlash(dst)); err != nil {
		return fmt.Errorf("publish %s: %w", dst, err)
	}
	return nil
}

// deleteLocal deletes the file key inside the local directory dir without following
// a link in its path (a link at key itself is refused too: it is not jemcheck's file).
func deleteLocal(dir, key string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	defer root.Close()
	if err := noLinkPath(root, dir, key); err != nil {
		return err
	}
	if err := root.Remove(filepath.FromSlash(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// removeSealLast removes the folder rel of the local directory dir and everything in
// it, without following links (a link inside is removed, not its target), its file
// seal (a name directly in it) last, and then the emptied folder: a removal cut short
// leaves the seal while anything else is left (also a file that appeared meanwhile:
// then it stops with an error, the seal kept).
func removeSealLast(dir, rel, seal string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if isLink(dir, rel) {
		return linkRefusal("--out "+dir, dir, rel)
	}
	f, err := root.Open(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() != seal {
			if err := root.RemoveAll(filepath.Join(filepath.FromSlash(rel), e.Name())); err != nil {
				return err
			}
		}
	}
	if f, err := root.Open(filepath.FromSlash(rel)); err == nil {
		left, _ := f.ReadDir(-1)
		f.Close()
		for _, e := range left {
			if e.Name() != seal {
				return fmt.Errorf("%s appeared in %s while it was removed", e.Name(), rel)
			}
		}
	}
	if err := root.Remove(filepath.Join(filepath.FromSlash(rel), seal)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := root.Remove(filepath.FromSlash(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Overlap says how the folders out and in overlap: "" when they do not, else "is the
// same folder as", "is inside" (out is inside in) or "contains" (in is inside out).
// Locations are compared by identity, not by spelling:
//   - local paths after resolving links (of the part that exists), and then by device
//     and inode: the same folder reached by another path (a bind mount) is the same;
//   - bucket URLs when they name the same store (sameStore: the scheme, the bucket and
//     the endpoint, normalised: localhost and 127.0.0.1, a default port, a trailing
//     slash), by their key prefixes.
func Overlap(out, in string) string {
	po, err1 := parseLoc(out)
	pi, err2 := parseLoc(in)
	if err1 != nil || err2 != nil {
		return ""
	}
	switch {
	case po.dir != "" && pi.dir != "":
		a, b := resolvePath(po.dir), resolvePath(pi.dir)
		if r := relation(a, b, string(filepath.Separator)); r != "" {
			return r
		}
		return sameFileRelation(a, b)
	case po.dir == "" && pi.dir == "" && sameStore(po.url, pi.url):
		return relation("/"+po.prefix, "/"+pi.prefix, "/")
	}
	return ""
}

// sameFileRelation compares the absolute paths a (out) and b (in) by device and inode:
// "is the same folder as" when a is b, "is inside" when an existing ancestor of a is b,
// "contains" when an existing ancestor of b is a; "" otherwise (or where nothing can
// be compared).
func sameFileRelation(a, b string) string {
	// sameAs reports whether the existing folder p is the folder whose info is fi.
	sameAs := func(p string, fi fs.FileInfo) bool {
		pi, err := os.Stat(p)
		return err == nil && os.SameFile(pi, fi)
	}
	if bi, err := os.Stat(b); err == nil && bi.IsDir() {
		for cur, first := a, true; ; first = false {
			if sameAs(cur, bi) {
				if first {
					return "is the same folder as"
				}
				return "is inside"
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				break
			}
			cur = parent
		}
	}
	if ai, err := os.Stat(a); err == nil && ai.IsDir() {
		for cur := filepath.Dir(b); ; {
			if sameAs(cur, ai) {
				return "contains"
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				break
			}
			cur = parent
		}
	}
	return ""
}

// sameStore reports whether the bucket URLs a and b (as parseLoc builds them: no path,
// no prefix) name the same bucket of the same store: the same scheme and bucket, and
// the same endpoint once normalised (storeEndpoint). The other parameters (region,
// path-style addressing, ...) say how to reach a store, not which store it is.
func sameStore(a, b string) bool {
	if a == b {
		return true
	}
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		storeEndpoint(ua.Query().Get("endpoint")) == storeEndpoint(ub.Query().Get("endpoint"))
}

// storeEndpoint normalises an endpoint URL for comparison: the scheme and host in lower
// case, every loopback name (localhost, 127.0.0.0/8, ::1) as one, the scheme's default
// port dropped, trailing slashes dropped.
func storeEndpoint(e string) string {
	if e == "" {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(e))
	if err != nil || u.Host == "" {
		return strings.ToLower(strings.TrimRight(e, "/"))
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if ip := net.ParseIP(host); host == "localhost" || strings.HasSuffix(host, ".localhost") || ip != nil && ip.IsLoopback() {
		host = "loopback"
	}
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	return scheme + "://" + host + ":" + port + strings.TrimRight(u.EscapedPath(), "/")
}

// relation compares two cleaned paths a (out) and b (in) with separator sep.
func relation(a, b, sep string) string {
	a, b = strings.TrimSuffix(a, sep), strings.TrimSuffix(b, sep)
	switch {
	case a == b:
		return "is the same folder as"
	case strings.HasPrefix(a, b+sep) || b == "":
		return "is inside"
	case strings.HasPrefix(b, a+sep) || a == "":
		return "contains"
	}
	return ""
}

// FileInside reports whether the file location file (a path or URL) is inside the
// folder out (links resolved for local paths).
func FileInside(out, file string) bool {
	po, err := parseLoc(out)
	if err != nil {
		return false
	}
	if po.dir != "" {
		if isURL(file) {
			pf, err := parseLoc(file)
			if err != nil || pf.dir == "" {
				return false
			}
			file = pf.dir
		}
		return relation(resolvePath(po.dir), resolvePath(file), string(filepath.Separator)) == "contains"
	}
	_, ok := keyInside(out, file)
	return ok
}

// resolvePath is p made absolute, with the links of its longest existing ancestor
// resolved.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func findFile(m *Manifest, key string) (int, bool) {
	if m == nil {
		return 0, false
	}
	for i, f := range m.Files {
		if f.Path == key {
			return i, true
		}
	}
	return 0, false
}

// ReadManifest reads and checks the manifest of the finished run at loc (bounded; not
// its files: see VerifyManifest and ReadListed). A location without one gives an error
// whose gcerrors code is NotFound.
func ReadManifest(ctx context.Context, b *blob.Bucket) (*Manifest, error) {
	return readManifest(ctx, b, ManifestKey)
}

// Remote reports whether loc is a location that needs the network (and credentials)
// to reach: neither local (a path, a file:// URL) nor mem://.
func Remote(loc string) bool {
	pl, err := parseLoc(loc)
	if err != nil {
		return false
	}
	return pl.dir == "" && !strings.HasPrefix(pl.url, "mem://")
}

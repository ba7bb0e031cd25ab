package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// Seals. jemcheck removes, finishes or resumes only what it can show it made:
//
//   - A staging folder carries, from its creation, the seal StagingSealKey: its run id
//     (the folder's own), pipeline, creation time and the SHA-256 of the run's
//     config.json. A folder named like a staging folder without a valid seal (a user's
//     folder, a copy) is never removed, committed or resumed; the ownership check lists
//     it like any other entry of the user's. A resumed run trusts the staging
//     config.json only if its hash is the sealed one.
//   - Every part file a run writes into its staging folder (a block's results, learned
//     joints, samples, ...) gets a hash record, partSealPrefix+key, written right after
//     it: its key, size and SHA-256. A resumed run reuses a kept block only if each of
//     its files matches its record (else the block is recomputed), and publishing
//     refuses a staged file that differs from its record.
//   - A takeover claim, temporary lock file or probe (.jemcheck.lock.*) holds the
//     LockInfo of the run that wrote it; anything else under such a name is not
//     jemcheck's.

// StagingSealKey is the seal of a staging folder, inside it.
const StagingSealKey = ".jemcheck-seal.json"

// stagingSealFormat identifies staging seals.
const stagingSealFormat = "jemcheck-staging/1"

// partSealPrefix is the folder, inside a staging folder, of the part files' hash records.
const partSealPrefix = ".jemcheck-parts/"

// StagingSeal is the content of a staging folder's seal.
type StagingSeal struct {
	Format       string    `json:"format"`
	RunID        string    `json:"run_id"`
	Pipeline     string    `json:"pipeline"`
	ConfigSHA256 string    `json:"config_sha256,omitempty"`
	Created      time.Time `json:"created"`
}

// SealStaging writes the seal of run runID's staging folder inside loc (creating the
// folder): call it before anything else is written there. configSHA256 is the hash of
// the config.json the run writes there ("" when it writes none).
func SealStaging(ctx context.Context, loc, runID, pipeline, configSHA256 string) error {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	s := StagingSeal{Format: stagingSealFormat, RunID: runID, Pipeline: pipeline, ConfigSHA256: configSHA256, Created: time.Now().UTC()}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode staging seal: %w", err)
	}
	if err := b.WriteAll(ctx, StagingKey(runID)+StagingSealKey, append(data, '\n'), nil); err != nil {
		return fmt.Errorf("seal staging folder %s: %w", StagingKey(runID), err)
	}
	return nil
}

// ReadStagingSeal reads and checks the seal of run runID's staging folder in b (the
// output location's bucket): it must be jemcheck's and name runID.
func ReadStagingSeal(ctx context.Context, b *blob.Bucket, runID string) (*StagingSeal, error) {
	data, err := ReadSmallKey(ctx, b, StagingKey(runID)+StagingSealKey, 64<<10)
	if err != nil {
		if IsNotFound(err) {
			return nil, fmt.Errorf("it has no %s", StagingSealKey)
		}
		return nil, fmt.Errorf("read %s: %w", StagingSealKey, err)
	}
	var s StagingSeal
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s is not a jemcheck seal: %w", StagingSealKey, err)
	}
	switch {
	case s.Format != stagingSealFormat:
		return nil, fmt.Errorf("%s has format %q, not %q", StagingSealKey, s.Format, stagingSealFormat)
	case s.RunID != runID:
		return nil, fmt.Errorf("%s names run %q, not the folder's %q", StagingSealKey, s.RunID, runID)
	case s.ConfigSHA256 != "" && len(s.ConfigSHA256) != 64:
		return nil, fmt.Errorf("%s has a malformed config hash", StagingSealKey)
	}
	return &s, nil
}

// stagingSealed reports whether run id's staging folder in b is jemcheck's: a real
// folder (not a link, where dir is local) with a valid seal naming id; why says
// what is wrong otherwise.
func stagingSealed(ctx context.Context, b *blob.Bucket, dir string, local bool, id string) (ok bool, why string) {
	if id == "" || strings.Contains(id, "/") {
		return false, "no run id"
	}
	if local {
		fi, err := os.Lstat(filepath.Join(dir, StagingPrefix+id))
		if err != nil {
			return false, err.Error()
		}
		if !fi.IsDir() {
			return false, "not a folder"
		}
	}
	if _, err := ReadStagingSeal(ctx, b, id); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// runIDName matches the run ids NewRunID makes.
var runIDName = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

// spentStaging reports whether run id's staging folder in b, which has no seal, is
// what a removal of jemcheck's cut short left (a kill while a spent staging folder was
// deleted: an earlier jemcheck removed a local folder's seal first, among the rest),
// so that a later run may remove it: its name is a run id's, it is a real folder
// (where dir is local) with no link and nothing but folders and regular files in it,
// and it holds nothing but jemcheck's bookkeeping (its staged manifest, naming run id;
// the commit journal; the copy probe; part records) and part files that match their
// records, with the staged manifest among them; or, a local folder, nothing at all.
// Anything else (a user's folder, one file of unknown origin) is not jemcheck's.
func spentStaging(ctx context.Context, b *blob.Bucket, dir string, local bool, id string) bool {
	if !runIDName.MatchString(id) {
		return false
	}
	st := StagingKey(id)
	if local {
		root := filepath.Join(dir, StagingPrefix+id)
		if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
			return false
		}
		odd := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				return fs.ErrInvalid // a link, a pipe, a device
			}
			return nil
		})
		if odd != nil {
			return false
		}
	}
	objs, err := list(ctx, b, &blob.ListOptions{Prefix: st})
	if err != nil {
		return false
	}
	if len(objs) == 0 {
		return local // an empty folder (an object store has no empty folders)
	}
	named := false
	for _, o := range objs {
		if o.IsDir {
			continue
		}
		k := strings.TrimPrefix(o.Key, st)
		switch {
		case k == ManifestKey, k == copyProbeKey:
			m, err := readManifest(ctx, b, o.Key)
			if err != nil || m.RunID != id {
				return false
			}
			named = named || k == ManifestKey
		case k == commitKey:
			j, err := ReadSmallKey(ctx, b, o.Key, MaxMetadataBytes)
			if err != nil {
				return false
			}
			if !bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
				if _, err := decodeManifest(j); err != nil {
					return false
				}
			}
		case strings.HasPrefix(k, partSealPrefix):
			part, ok := strings.CutSuffix(strings.TrimPrefix(k, partSealPrefix), ".json")
			if !ok {
				return false
			}
			if _, err := readPartRecord(ctx, b, st, part); err != nil {
				return false
			}
		default:
			want, err := readPartRecord(ctx, b, st, k)
			if err != nil {
				return false
			}
			got, err := checkListed(ctx, b, o.Key, ManifestFile(want))
			if err != nil || got.Size != want.Size || got.SHA256 != want.SHA256 {
				return false
			}
		}
	}
	return named
}

// PartRecord is the hash record of a part file, written when the file is written.
type PartRecord struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func partSealKey(key string) string { return partSealPrefix + key + ".json" }

// SealPart records the size and SHA-256 of the file key that b (a run's staging
// folder) now holds, just written: resume and publish check the file against it.
func SealPart(ctx context.Context, b *blob.Bucket, key string) error {
	f, err := hashObject(ctx, b, key)
	if err != nil {
		return fmt.Errorf("hash %s: %w", key, err)
	}
	data, err := json.Marshal(PartRecord(f))
	if err != nil {
		return fmt.Errorf("encode the hash of %s: %w", key, err)
	}
	if err := b.WriteAll(ctx, partSealKey(key), data, nil); err != nil {
		return fmt.Errorf("record the hash of %s: %w", key, err)
	}
	return nil
}

// ErrPartChanged marks a part file that differs from (or has no) hash record.
var ErrPartChanged = errors.New("part file changed since it was written")

// errNoRecord marks a part file without a hash record.
var errNoRecord = fmt.Errorf("%w (no record)", ErrPartChanged)

// readPartRecord reads the hash record of the file key of the staging folder at
// prefix ("" when b is the staging folder itself) in b.
// A missing record is an error wrapping errNoRecord (and ErrPartChanged).
func readPartRecord(ctx context.Context, b *blob.Bucket, prefix, key string) (PartRecord, error) {
	data, err := ReadSmallKey(ctx, b, prefix+partSealKey(key), 64<<10)
	if err != nil {
		if IsNotFound(err) {
			return PartRecord{}, fmt.Errorf("%w: %s has no hash recorded when it was written", errNoRecord, key)
		}
		return PartRecord{}, fmt.Errorf("read the hash record of %s: %w", key, err)
	}
	var r PartRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Path != key || len(r.SHA256) != 64 {
		return PartRecord{}, fmt.Errorf("%w: the hash record of %s is not its own (%s)", ErrPartChanged, key, strings.TrimSpace(string(data)))
	}
	return r, nil
}

// VerifyPart checks the file key of b (a run's staging folder) against the hash
// recorded when it was written; a mismatch, or no record, wraps ErrPartChanged.
func VerifyPart(ctx context.Context, b *blob.Bucket, key string) error {
	want, err := readPartRecord(ctx, b, "", key)
	if err != nil {
		return err
	}
	got, err := checkListed(ctx, b, key, ManifestFile(want))
	if err != nil {
		return fmt.Errorf("hash %s: %w", key, err)
	}
	if got.Size != want.Size {
		return fmt.Errorf("%w: %s has %d bytes, but %d bytes were recorded when it was written", ErrPartChanged, key, got.Size, want.Size)
	}
	if got.SHA256 != want.SHA256 {
		return fmt.Errorf("%w: %s has %d bytes sha256 %s, but %d bytes sha256 %s were recorded when it was written",
			ErrPartChanged, key, got.Size, got.SHA256, want.Size, want.SHA256)
	}
	return nil
}

// claimName matches the names of jemcheck's takeover claims and temporary lock files.
var claimName = regexp.MustCompile(`^` + regexp.QuoteMeta(LockKey) + `\.(takeover\.[0-9a-f]{32}|tmp-[0-9]+|probe-[0-9a-f]{16})$`)

// lockHelperSealed reports whether the lock helper key (a takeover claim or a
// temporary lock file) is jemcheck's: its name is one jemcheck gives and it holds a
// run's LockInfo. One that is gone by the time it is read counts as jemcheck's: a
// claim listed while another run took a stale lock over is deleted when the takeover
// ends, and is nothing of the user's (without this, a run starting beside a takeover
// was refused with "--out is not empty (.jemcheck.lock.takeover.…)":
// internal/emulators TestOwnershipWhileClaimsCome).
func lockHelperSealed(ctx context.Context, b *blob.Bucket, dir string, local bool, key string) bool {
	if !claimName.MatchString(key) {
		return false
	}
	if local {
		if fi, err := os.Lstat(filepath.Join(dir, key)); err != nil || !fi.Mode().IsRegular() {
			return err != nil && IsNotFound(err)
		}
	}
	data, err := ReadSmallKey(ctx, b, key, 64<<10)
	if err != nil {
		return IsNotFound(err)
	}
	return isLockInfo(data)
}

// isLockInfo reports whether data is a LockInfo as jemcheck writes it.
func isLockInfo(data []byte) bool {
	var l LockInfo
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(&l) == nil && l.RunID != "" && !l.Started.IsZero()
}

// stagingBookkeeping reports whether key, relative to a staging folder, is jemcheck's
// bookkeeping there (never published).
func stagingBookkeeping(key string) bool {
	return key == commitKey || key == ManifestKey || key == StagingSealKey || key == copyProbeKey || strings.HasPrefix(key, partSealPrefix)
}

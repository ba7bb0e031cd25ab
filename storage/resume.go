package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Resumable lists the run ids of the staging folders jemcheck sealed in loc whose commit has not begun
// (an interrupted or crashed run's, whose completed blocks a --resume run continues),
// oldest first (run ids start with their UTC start time).
func Resumable(ctx context.Context, loc string) ([]string, error) {
	if missingDir(loc) {
		return nil, nil
	}
	b, err := OpenExistingBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	objs, err := list(ctx, b, &blob.ListOptions{Delimiter: "/", Prefix: StagingPrefix})
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", loc, err)
	}
	var ids []string
	dir, local := localDir(loc)
	for _, obj := range objs {
		id := strings.TrimSuffix(strings.TrimPrefix(obj.Key, StagingPrefix), "/")
		if !obj.IsDir || id == "" {
			continue
		}
		if ok, _ := stagingSealed(ctx, b, dir, local, id); !ok {
			continue // not jemcheck's (see "Seals")
		}
		if ok, err := b.Exists(ctx, StagingKey(id)+commitKey); err != nil {
			return nil, fmt.Errorf("check commit journal of run %s: %w", id, err)
		} else if ok {
			continue // the next run finishes its commit (RecoverStaging)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// CommitBegun reports whether run runID's commit into loc has begun (its staging folder
// then stays for the next run to finish the commit).
func CommitBegun(ctx context.Context, loc, runID string) (bool, error) {
	b, err := OpenBucket(ctx, loc)
	if err != nil {
		return false, err
	}
	defer b.Close()
	return b.Exists(ctx, StagingKey(runID)+commitKey)
}

// Published returns the manifest of the run loc holds now, or nil when it holds none
// (read only: VerifyManifest checks the files too).
func Published(ctx context.Context, loc string) (*Manifest, error) {
	if missingDir(loc) {
		return nil, nil
	}
	b, err := OpenExistingBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	m, err := readManifest(ctx, b, ManifestKey)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, nil
	}
	return m, err
}

// DescribeRun names a run for the user: its id, pipeline and UTC start time (from the
// run id, see NewRunID), e.g. "20261122T232152Z-ebdcdf1d (control, started
// 2026-11-22 23:21:52 UTC)".
func DescribeRun(runID, pipeline string) string {
	stamp, _, _ := strings.Cut(runID, "-")
	if t, err := time.Parse("20060102T150405Z", stamp); err == nil {
		return fmt.Sprintf("%s (%s, started %s)", runID, pipeline, t.Format("2006-01-02 15:04:05 UTC"))
	}
	return fmt.Sprintf("%s (%s)", runID, pipeline)
}

// missingDir reports whether loc is a local directory that does not exist.
func missingDir(loc string) bool {
	dir, ok := localDir(loc)
	if !ok {
		return false
	}
	_, err := os.Stat(dir)
	return errors.Is(err, fs.ErrNotExist)
}

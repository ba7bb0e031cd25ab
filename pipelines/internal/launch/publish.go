package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// PublishFiles writes a command's few files into out as a pipeline run does, for the
// commands that write without Beam (compare, leaderboard): the ownership check, the
// lock, a staging folder sealed and committed with a manifest, so an earlier run of the
// same command is replaced, nothing else is touched, no link is followed and a failure
// leaves the previous files. owned says which names the command writes; inputs are the
// locations it read (never replaced). A refusal to write into out is bad input.
func PublishFiles(ctx context.Context, out, pipeline string, owned func(string) bool, overwrite bool, inputs []string, files map[string][]byte) error {
	if err := storage.CheckWritable(ctx, out); err != nil {
		return BadInput("out: %v", err)
	}
	layout := storage.Layout{Owned: owned, Others: func(k string) string {
		if stages.OwnedOutput(k) {
			return "jemcheck run" // the manifest names its pipeline (a regress run's --out)
		}
		return stages.OtherOutput(k)
	}}
	if _, err := storage.CheckOwnership(ctx, out, layout, inputs, overwrite); err != nil {
		return ownershipBadInput(err)
	}
	runID := storage.NewRunID(time.Now())
	host, _ := os.Hostname()
	if _, err := storage.AcquireLock(ctx, out, storage.LockInfo{RunID: runID, Pipeline: pipeline, Host: host, PID: os.Getpid(), Started: time.Now().UTC()}); err != nil {
		var le *storage.LockedError
		var ne *storage.NoExclusiveCreateError
		if errors.As(err, &le) || errors.As(err, &ne) {
			return BadInput("%v", err)
		}
		return err
	}
	defer storage.ReleaseLock(context.WithoutCancel(ctx), out, runID)
	// Under the lock: the previous files hashed against their manifest, and the staging
	// folders of runs that died removed (those jemcheck sealed only).
	if _, err := storage.VerifyOwnership(ctx, out, layout, inputs, overwrite); err != nil {
		return ownershipBadInput(err)
	}
	if _, err := storage.RecoverStaging(ctx, out, runID); err != nil {
		return fmt.Errorf("clean up earlier %s runs under %s: %w", pipeline, out, err)
	}
	if err := storage.SealStaging(ctx, out, runID, pipeline, ""); err != nil {
		return err
	}
	staging, err := storage.SubLocation(out, storage.StagingKey(runID))
	if err != nil {
		return err
	}
	st, err := storage.OpenBucket(ctx, staging)
	if err != nil {
		return err
	}
	for key, data := range files {
		if err := st.WriteAll(ctx, key, data, nil); err != nil {
			st.Close()
			return ownershipBadInput(fmt.Errorf("write %s: %w", key, err))
		}
	}
	if err := st.Close(); err != nil {
		return err
	}
	if _, err := storage.Commit(ctx, out, storage.CommitInfo{RunID: runID, Pipeline: pipeline, Overwrite: overwrite}); err != nil {
		if _, aerr := storage.Abort(context.WithoutCancel(ctx), out, runID); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return ownershipBadInput(fmt.Errorf("publish into %s: %w", out, err))
	}
	return nil
}

// ownershipBadInput makes a refusal to write into --out (an ownership or link refusal)
// bad input; other errors stay as they are.
func ownershipBadInput(err error) error {
	if oe := (*storage.OwnershipError)(nil); errors.As(err, &oe) {
		return BadInput("%v", err)
	}
	return err
}

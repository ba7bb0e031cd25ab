package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// TestS3Output runs into an s3:// location served by an in-process S3 server (the
// real S3 protocol through gocloud's s3blob and the AWS SDK): the staging folder is a
// key prefix, publishing copies then deletes, the lock is a conditional put
// (If-None-Match), and everything stays under the URL's folder.
func TestS3Output(t *testing.T) {
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	params := "?region=us-east-1&use_path_style=true&endpoint=" + srv.URL
	bucket, out := "s3://jc-test"+params, "s3://jc-test/runs/r1"+params
	ctx := context.Background()
	b := launchtest.Bucket(t, bucket)
	if err := b.WriteAll(ctx, "elsewhere/keep.txt", []byte("mine"), nil); err != nil {
		t.Fatal(err)
	}

	if err := run(ctx, small(out), &bytes.Buffer{}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	first, err := storage.VerifyManifest(ctx, out)
	if err != nil {
		t.Fatalf("first run incomplete: %v", err)
	}
	if err := b.WriteAll(ctx, "runs/r1/notes.txt", []byte("mine"), nil); err != nil {
		t.Fatal(err)
	}
	cfg := small(out)
	cfg.Options.WriteSamples = false
	var buf bytes.Buffer
	if err := run(ctx, cfg, &buf); err != nil {
		t.Fatalf("second run: %v\n%s", err, buf.String())
	}
	second, err := storage.VerifyManifest(ctx, out)
	if err != nil || second.RunID == first.RunID {
		t.Fatalf("second run: manifest %+v, %v", second, err)
	}
	keys := map[string]bool{}
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			break
		}
		keys[obj.Key] = true
		if !strings.HasPrefix(obj.Key, "runs/r1/") && obj.Key != "elsewhere/keep.txt" {
			t.Errorf("object %s outside the run's folder", obj.Key)
		}
		if strings.Contains(obj.Key, storage.StagingPrefix) || strings.HasSuffix(obj.Key, storage.LockKey) {
			t.Errorf("bookkeeping object %s left behind", obj.Key)
		}
	}
	for _, k := range []string{"runs/r1/notes.txt", "elsewhere/keep.txt", "runs/r1/manifest.json", "runs/r1/" + stages.ResultsPath(0, 0)} {
		if !keys[k] {
			t.Errorf("%s missing", k)
		}
	}
	if keys["runs/r1/"+stages.SamplePath(0, 0)] {
		t.Errorf("the first run's sample shard survived a run that wrote none")
	}

	// The lock is exclusive on S3 too.
	me := storage.LockInfo{RunID: "a", Host: "h", PID: 1, Started: time.Now(), Remote: true}
	if _, err := storage.AcquireLock(ctx, out, me); err != nil {
		t.Fatal(err)
	}
	me.RunID = "b"
	var le *storage.LockedError
	if _, err := storage.AcquireLock(ctx, out, me); !errors.As(err, &le) || le.Other.RunID != "a" {
		t.Errorf("second lock on s3 = %v, want LockedError naming run a", err)
	}
}

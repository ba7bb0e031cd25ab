package stages

import (
	"context"
	"fmt"
	"regexp"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/storage"
)

// ownedOutput matches every object key a run writes under --out (see the README's
// output layout): the files at the top, and the files of samples/, learned/, results/, tables/ and figures/
// under the names this package and stages/render give them.
var ownedOutput = regexp.MustCompile(`^(config\.json|export\.json|(tables|truth)\.(parquet|csv)|results\.parquet|learned\.parquet|summary\.json|` +
	`report\.html|verdict\.json|(learned|results|learned_grid|curves|buffers)/point-\d{4,}-part-\d{5,}\.parquet|` +
	`samples/point-\d{4,}-part-\d{5,}\.(parquet|csv)|(tables|truth|points)/point-\d{4,}\.(parquet|csv)|figures/[a-z0-9_]+\.(svg|png))$`)

// outputDirs are the folders a run writes into.
var outputDirs = []string{"buffers/", "curves/", "figures/", "learned/", "learned_grid/", "points/", "results/", "samples/", "tables/", "truth/"}

// OwnedOutput reports whether key (relative to --out) is a name a jemcheck run writes.
// Such a name is only ever replaced when the previous run's manifest lists it (see
// storage.CheckOwnership); anything else under --out is never touched.
func OwnedOutput(key string) bool { return ownedOutput.MatchString(key) }

// OutputLayout is the output layout for storage.CheckOwnership.
func OutputLayout() storage.Layout {
	return storage.Layout{Owned: OwnedOutput, Dirs: outputDirs, Others: OtherOutput}
}

// CompareOutputs are the names pipelines/compare writes, and LeaderboardOutputs those
// of pipelines/leaderboard (pick and report): jemcheck's outputs that no run of these
// stages writes.
var (
	CompareOutputs     = regexp.MustCompile(`^compare\.(html|json)$`)
	LeaderboardOutputs = regexp.MustCompile(`^(leaderboard\.(md|json)|leaderboard-page\.md|leaderboard-(cd|cost|ladder)-[a-z0-9-]+\.svg|picks\.(json|md)|tuned-[a-z0-9-]+\.yaml)$`)
)

// OtherOutput names the jemcheck tool that writes key when it is not a run's output
// (OwnedOutput): "compare" or "leaderboard"; "" for any other name.
func OtherOutput(key string) string {
	switch {
	case OwnedOutput(key):
		return ""
	case CompareOutputs.MatchString(key):
		return "compare"
	case LeaderboardOutputs.MatchString(key):
		return "leaderboard"
	}
	return ""
}

// OutBucket is the part of every DoFn that writes under --out, embedded in it: the
// bucket is opened in Setup and closed in Teardown, nil-safely (Teardown also runs
// after a Setup that failed). With Off set the DoFn writes nothing in this run and no
// bucket is opened.
type OutBucket struct {
	Out    string
	Off    bool
	bucket *blob.Bucket
}

// Setup opens the bucket.
func (o *OutBucket) Setup(ctx context.Context) error {
	if o.Off {
		return nil
	}
	b, err := storage.OpenBucket(ctx, o.Out)
	if err != nil {
		return fmt.Errorf("open %s: %w", o.Out, err)
	}
	o.bucket = b
	return nil
}

// Teardown closes the bucket if Setup opened it.
func (o *OutBucket) Teardown() error { return closeBucket(o.bucket) }

// closeBucket closes a DoFn's bucket in Teardown; nil when Setup failed before opening it.
func closeBucket(b *blob.Bucket) error {
	if b == nil {
		return nil
	}
	return b.Close()
}

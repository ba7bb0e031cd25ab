package stages

import "regexp"

// ownedOutput matches every object key a run writes under --out (see the README's
// output layout): the files at the top, and the files of samples/, tables/ and figures/
// under the names this package and stages/render give them.
var ownedOutput = regexp.MustCompile(`^(config\.json|tables\.parquet|results\.parquet|learned\.parquet|summary\.json|` +
	`report\.html|verdict\.json|samples/point-\d{4,}-part-\d{5,}\.parquet|tables/point-\d{4,}\.parquet|figures/[a-z0-9_]+\.(svg|png))$`)

// OwnedOutput reports whether key (relative to --out) is a name a jemcheck run writes.
// A new run removes such objects left by an earlier run first, so that a smaller run
// never leaves stale sample shards, tables or figures beside its own outputs; any
// other object under --out is left alone.
func OwnedOutput(key string) bool { return ownedOutput.MatchString(key) }

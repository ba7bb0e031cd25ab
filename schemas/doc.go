// Package schemas holds what jemcheck reads and writes: the Parquet rows (tables,
// samples, results, learned joints) and their codecs (io.go), the JSON files
// (summary.json, verdict.json, config.json) and the reader of user tables
// (--tables_from, Parquet or CSV, validated and bounded). Where these files live —
// locations, buckets, staging and publishing, the manifest and the lock — is package
// storage.
package schemas

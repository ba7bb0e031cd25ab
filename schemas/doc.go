// Package schemas holds what jemcheck reads and writes: the Parquet rows (tables,
// samples, results, learned joints), the JSON files (summary.json, verdict.json,
// manifest.json, config.json) and the reader of user tables (--tables_from, Parquet or
// CSV, validated and bounded); and the storage around them: every location is a
// gocloud.dev URL or a local path (storage.go), a run writes into a staging folder and
// publishes it with its manifest last (outdir.go), under a lock (lock.go).
package schemas

// Package schemas holds what jemcheck reads and writes: the Parquet rows (tables,
// samples, results, learned joints) and their codecs (io.go), the JSON files
// (summary.json, verdict.json, config.json), the grid point's values (Grid, the one
// home of the grid's axes) and the readers of user files, Parquet or CSV, validated and
// bounded: tables (--tables_from) and 2-D mixtures (ReadTasks, for --tasks_from). Where these files live —
// locations, buckets, staging and publishing, the manifest and the lock — is package
// storage.
package schemas

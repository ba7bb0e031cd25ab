// Package storage holds where jemcheck reads and writes: every location is a
// gocloud.dev URL or a local path, opened as a bucket (storage.go); a run writes into a
// staging folder and publishes it with its manifest.json last (outdir.go), under a lock
// (lock.go). What is written there (the Parquet and JSON formats) is package schemas;
// storage does not import it.
package storage

package main

import (
	"context"
	"fmt"

	"io"
	"slices"
	"strings"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
)

// run is one result row with the folder it came from and its curve.
type run struct {
	schemas.ResultRow
	Dir   string
	Curve []schemas.CurveRow
}

// unit is the pairing unit of a leaderboard: a task of a family under one run seed
// (replicate) — the same draws and initial parameters for every method, whichever
// folder or point trained it.
type unit struct {
	Task      string
	Replicate int64
	TableID   int64
}

func (r run) unit() unit { return unit{r.Task, r.Replicate, r.TableID} }

// readRuns reads every result row and curve of the run folders dirs (paths or URLs).
func readRuns(ctx context.Context, dirs []string) ([]run, error) {
	var out []run
	for _, dir := range dirs {
		b, err := storage.OpenExistingBucket(ctx, dir) // read only: a missing folder is not created
		if err != nil {
			return nil, launch.BadInput("%s: %v (not a finished jemcheck run's folder?)", dir, err)
		}
		rows, err := readAll[schemas.ResultRow](ctx, b, "results/")
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if len(rows) == 0 {
			b.Close()
			return nil, launch.BadInput("%s: no results/*.parquet (not a finished jemcheck run?)", dir)
		}
		curves, err := readAll[schemas.CurveRow](ctx, b, "curves/")
		b.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		byRun := map[[2]any][]schemas.CurveRow{}
		for _, c := range curves {
			k := [2]any{c.PointID, c.RunID}
			byRun[k] = append(byRun[k], c)
		}
		for _, r := range rows {
			out = append(out, run{ResultRow: r, Dir: dir, Curve: byRun[[2]any{r.PointID, r.RunID}]})
		}
	}
	return out, nil
}

// readAll reads every Parquet object under prefix, in key order.
func readAll[T any](ctx context.Context, b *blob.Bucket, prefix string) ([]T, error) {
	var keys []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		if strings.HasSuffix(obj.Key, ".parquet") {
			keys = append(keys, obj.Key)
		}
	}
	slices.Sort(keys)
	var out []T
	for _, k := range keys {
		rs, err := schemas.ReadParquet[T](ctx, b, k)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// optionValues are a row's values of its method's named options, as text: its
// method_options column, or for a row of an older file its legacy columns
// (methods.OptionsOf).
func optionValues(r schemas.ResultRow, keys []string) map[string]string {
	all := methods.OptionsOf(r)
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Command tvfloor prints the sampling floors of the 2-D TV columns of a finished run:
// the exact expected total-variation distance (prob.TVFloor) between the histogram of n
// exact draws of each task's p(x) and p(x) itself, on the coarse grid the TV columns
// pool to (16×16 on a 64×64 grid), for the long-run chains of the samples promise
// (samples_tv_*: 1,000 chains) and the replay buffer (buffer_tv_*: 10,000 samples).
// A TV at its floor is as close as n perfect samples get.
//
//	GOEXPERIMENT=simd go run ./scripts/tvfloor /tmp/s2d
//
// It reads truth.parquet (a control run) or truth/point-NNNN.parquet (a sweep).
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
	"gocloud.dev/blob"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tvfloor RUN_DIR")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "tvfloor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	b, err := storage.OpenExistingBucket(ctx, dir)
	if err != nil {
		return err
	}
	defer b.Close()
	var keys []string
	it := b.List(&blob.ListOptions{})
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		if o.Key == "truth.parquet" || (strings.HasPrefix(o.Key, "truth/") && strings.HasSuffix(o.Key, ".parquet")) {
			keys = append(keys, o.Key)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return fmt.Errorf("%s: no truth.parquet or truth/*.parquet", dir)
	}
	fmt.Printf("%-28s %6s %12s %12s\n", "truth file", "tasks", "floor n=1000", "floor n=10000")
	for _, k := range keys {
		rows, err := schemas.ReadParquet[schemas.TruthRow](ctx, b, k)
		if err != nil {
			return err
		}
		px := map[int64]map[int64]float64{} // task → cell → p(x)
		cells := int64(0)
		for _, r := range rows {
			if px[r.TaskID] == nil {
				px[r.TaskID] = map[int64]float64{}
			}
			px[r.TaskID][r.Cell] += r.P
			cells = max(cells, r.Cell+1)
		}
		G := 1
		for int64(G*G) < cells {
			G++
		}
		c := 1
		for d := min(G, 16); d > 1; d-- { // the TV columns' pooling (stages.tvPool)
			if G%d == 0 {
				c = d
				break
			}
		}
		var f1, f2 float64
		for _, m := range px {
			pool := make([]float64, c*c)
			for cell, v := range m {
				i, j := int(cell)/G, int(cell)%G
				pool[(i*c/G)*c+j*c/G] += v
			}
			f1 += prob.TVFloor(pool, 1000) / float64(len(px))
			f2 += prob.TVFloor(pool, 10000) / float64(len(px))
		}
		fmt.Printf("%-28s %6d %12.4f %12.4f\n", k, len(px), f1, f2)
	}
	return nil
}

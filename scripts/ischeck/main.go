// Command ischeck reads a block-task run's results/ (a control run or a sweep) and
// prints, per task and method, how the importance-sampled log Z (log_z_is ± log_z_is_se)
// agrees with the exact one (log_z): the runs, those refused (ESS < prob.MinESS), the
// mean difference, the mean standard error, the share of runs within 1.96 SE, the largest
// |difference| in SEs and the mean effective sample size.
//
//	GOEXPERIMENT=simd go run ./scripts/ischeck out/ladder-blocks-is
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ischeck RUN_DIR")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "ischeck:", err)
		os.Exit(1)
	}
}

type acc struct {
	runs, refused, within int
	diff, se, ess, worst  float64
	// the AIS cross-check (the report's tasks)
	ais, aisWithin int
	aisDiff, aisSE float64
	aisESS         float64
}

func run(ctx context.Context, dir string) error {
	b, err := storage.OpenExistingBucket(ctx, dir)
	if err != nil {
		return err
	}
	defer b.Close()
	by := map[string]*acc{}
	it := b.List(&blob.ListOptions{Prefix: "results/"})
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		if !strings.HasSuffix(o.Key, ".parquet") {
			continue
		}
		rows, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, o.Key)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if math.IsNaN(r.LogZ) {
				continue
			}
			k := r.Task + "\t" + r.Method
			a := by[k]
			if a == nil {
				a = &acc{}
				by[k] = a
			}
			a.runs++
			a.ess += r.ISESS
			if !math.IsNaN(r.LogZAIS) {
				d := r.LogZAIS - r.LogZ
				a.ais++
				a.aisDiff += d
				a.aisSE += r.LogZAISSE
				a.aisESS += r.AISESS
				if math.Abs(d) <= 1.96*r.LogZAISSE {
					a.aisWithin++
				}
			}
			if math.IsNaN(r.KLJointIS) {
				a.refused++
				continue
			}
			d := r.LogZIS - r.LogZ
			a.diff += d
			a.se += r.LogZISSE
			if math.Abs(d) <= 1.96*r.LogZISSE {
				a.within++
			}
			a.worst = max(a.worst, math.Abs(d)/r.LogZISSE)
		}
	}
	if len(by) == 0 {
		return fmt.Errorf("%s: no block-task results with log Z", dir)
	}
	var ks []string
	for k := range by {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	fmt.Println("| task | method | runs (refused) | mean IS − exact log Z | mean SE | within 1.96 SE | largest \\|z\\| | mean ESS of 20,000 | AIS runs: mean AIS − exact (SE), within 1.96 SE, mean ESS of 512 |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, k := range ks {
		a := by[k]
		used := float64(a.runs - a.refused)
		task, method, _ := strings.Cut(k, "\t")
		ais := "—"
		if a.ais > 0 {
			ais = fmt.Sprintf("%d: %+.4f (%.4f), %d of %d, ESS %.0f", a.ais, a.aisDiff/float64(a.ais), a.aisSE/float64(a.ais), a.aisWithin, a.ais, a.aisESS/float64(a.ais))
		}
		fmt.Printf("| `%s` | %s | %d (%d) | %+.4f | %.4f | %.0f%% | %.2f | %.0f | %s |\n", task, method, a.runs, a.refused,
			a.diff/used, a.se/used, 100*float64(a.within)/used, a.worst, a.ess/float64(a.runs), ais)
	}
	return nil
}

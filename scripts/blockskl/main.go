// Command blockskl recomputes, from a finished block-task run's files alone, every run's
// exact joint KL (prob.BlocksJointKL of the truth in truth.parquet and the run's block
// cell logits in learned/*.parquet), checks it against the kl_joint column of results/,
// and prints per method the mean joint KL and the Monte Carlo marginal and conditional
// KLs with their mean standard errors.
//
//	GOEXPERIMENT=simd go run ./scripts/blockskl /tmp/blk1
//
// With a second run directory, a plane-kind run of the same 2-D task, seed and options
// (blocks:1,T against T), it also prints the largest difference of kl_joint between
// the runs of the same run id: the one-block identity end to end.
//
//	GOEXPERIMENT=simd go run ./scripts/blockskl /tmp/blocks1 /tmp/plane
//
// It reads a control run (one point: truth.parquet).
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: blockskl RUN_DIR [PLANE_RUN_DIR]")
		os.Exit(2)
	}
	plane := ""
	if len(os.Args) == 3 {
		plane = os.Args[2]
	}
	if err := run(context.Background(), os.Args[1], plane); err != nil {
		fmt.Fprintln(os.Stderr, "blockskl:", err)
		os.Exit(1)
	}
}

func keys(ctx context.Context, b *blob.Bucket, prefix string) []string {
	var out []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		if strings.HasSuffix(o.Key, ".parquet") {
			out = append(out, o.Key)
		}
	}
	sort.Strings(out)
	return out
}

// readResults reads a run's result rows.
func readResults(ctx context.Context, b *blob.Bucket, dir string) ([]schemas.ResultRow, error) {
	var results []schemas.ResultRow
	for _, k := range keys(ctx, b, "results/") {
		rs, err := schemas.ReadParquet[schemas.ResultRow](ctx, b, k)
		if err != nil {
			return nil, err
		}
		results = append(results, rs...)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("%s: no results", dir)
	}
	return results, nil
}

func run(ctx context.Context, dir, planeDir string) error {
	b, err := storage.OpenExistingBucket(ctx, dir)
	if err != nil {
		return err
	}
	defer b.Close()
	results, err := readResults(ctx, b, dir)
	if err != nil {
		return err
	}
	r0 := results[0]
	spec, err := prob.ParseBlocksSpec(r0.Task)
	if err != nil {
		return fmt.Errorf("not a block task run: %w", err)
	}
	B, K, g := spec.B, int(r0.Classes), prob.Grid{G: int(r0.GridCells), Box: r0.Box}
	n := B * g.Cells() * K
	truth := map[int64][]float64{}
	trs, err := schemas.ReadParquet[schemas.TruthRow](ctx, b, "truth.parquet")
	if err != nil {
		return err
	}
	for _, r := range trs {
		if truth[r.TaskID] == nil {
			truth[r.TaskID] = make([]float64, n)
		}
		truth[r.TaskID][r.Cell*int64(K)+r.Y] = r.P
	}
	learned := map[string][]float64{}
	for _, k := range keys(ctx, b, "learned/") {
		ls, err := schemas.ReadParquet[schemas.LearnedRow](ctx, b, k)
		if err != nil {
			return err
		}
		for _, l := range ls {
			if learned[l.RunID] == nil {
				learned[l.RunID] = make([]float64, n)
			}
			learned[l.RunID][l.X*int64(K)+l.Y] = l.Logit
		}
	}
	type acc struct {
		n                                 int
		joint, marg, margSE, cond, condSE float64
		acc, bayes                        float64
		joints                            []float64
	}
	by := map[string]*acc{}
	worst := 0.0
	checked := 0
	for _, r := range results {
		a := by[r.Method]
		if a == nil {
			a = &acc{}
			by[r.Method] = a
		}
		a.n++
		a.joint += r.KLJoint
		a.joints = append(a.joints, r.KLJoint)
		a.marg += r.KLMarginal
		a.margSE += r.KLMarginalSE
		a.cond += r.KLConditional
		a.condSE += r.KLConditionalSE
		a.acc += r.Accuracy
		a.bayes += r.BayesAccuracy
		l, ok := learned[r.RunID]
		if !ok || truth[r.TableID] == nil {
			continue
		}
		bt := prob.BlocksTruthFromTable(truth[r.TableID], g, B, K)
		ls := make([][]float64, B)
		for i := range B {
			ls[i] = l[i*g.Cells()*K : (i+1)*g.Cells()*K]
		}
		kl := prob.BlocksJointKL(bt, ls)
		worst = max(worst, math.Abs(kl-r.KLJoint))
		checked++
	}
	fmt.Printf("%s: %d runs; joint KL recomputed from truth.parquet and learned/ for %d runs: max |Δ| = %.3g\n", r0.Task, len(results), checked, worst)
	fmt.Printf("%-9s %5s %10s %10s %22s %22s %9s %9s\n", "method", "runs", "kl_joint", "median", "kl_marginal ± se", "kl_conditional ± se", "accuracy", "bayes")
	ms := make([]string, 0, len(by))
	for m := range by {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	for _, m := range ms {
		a := by[m]
		f := float64(a.n)
		fmt.Printf("%-9s %5d %10.4f %10.4f %13.4f ± %6.4f %13.4f ± %6.4f %9.4f %9.4f\n", m, a.n, a.joint/f, prob.Median(a.joints),
			a.marg/f, a.margSE/f, a.cond/f, a.condSE/f, a.acc/f, a.bayes/f)
	}
	if planeDir == "" {
		return nil
	}
	pb, err := storage.OpenExistingBucket(ctx, planeDir)
	if err != nil {
		return err
	}
	defer pb.Close()
	prs, err := readResults(ctx, pb, planeDir)
	if err != nil {
		return err
	}
	plane := map[string]float64{}
	for _, r := range prs {
		plane[r.RunID] = r.KLJoint
	}
	worst = 0
	paired := 0
	for _, r := range results {
		if v, ok := plane[r.RunID]; ok {
			worst = max(worst, math.Abs(v-r.KLJoint))
			paired++
		}
	}
	fmt.Printf("against the plane run %s (%s): %d runs paired by run id, max |Δ kl_joint| = %.3g\n", planeDir, prs[0].Task, paired, worst)
	return nil
}

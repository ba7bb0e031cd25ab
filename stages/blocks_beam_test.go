package stages

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
	"github.com/jemcheck/jemcheck/verdict/verdicttest"
)

func TestMain(m *testing.M) { ptest.MainWithDefault(m, "prism") }

func init() {
	beam.RegisterFunction(blockShapeFn)
	beam.RegisterFunction(trainedShapeFn)
	beam.RegisterFunction(resultShapeFn)
	beam.RegisterFunction(learnedRunsFn)
	beam.RegisterFunction(rowOKFn)
	beam.RegisterFunction(explodeRowsFn)
	beam.RegisterFunction(rowRunFn)
	beam.RegisterFunction(summaryShapeFn)
	beam.RegisterFunction(summaryJSONFn)
}

func explodeRowsFn(rb ResultBlock, emit func(schemas.ResultRow)) {
	for _, r := range rb.Rows {
		emit(r)
	}
}

func rowRunFn(r schemas.ResultRow) string { return r.RunID }

// summaryShapeFn describes a summary: per point its tables and runs per method.
func summaryShapeFn(sum schemas.Summary) string {
	out := ""
	for _, ps := range sum.Points {
		out += fmt.Sprintf("p%d %d tables:", ps.PointID, ps.Tables)
		for _, m := range ps.Methods {
			out += fmt.Sprintf(" %s %d", m.Method, m.Runs)
		}
		out += "; "
	}
	return out
}

// blockShapeFn describes a block: point, index, first ordinal, tables, cells, counts.
func blockShapeFn(b Block) string {
	var n int64
	for _, c := range b.Counts {
		n += c
	}
	return fmtShape("p%d b%d first %d: %d tables, %d cells, %d draws", b.PointID, b.Index, b.First, b.Len(), len(b.P), n)
}

func trainedShapeFn(tb TrainedBlock) string {
	logits := 0
	for _, r := range tb.Runs {
		logits += len(r.Logits)
	}
	return fmtShape("p%d b%d: %d runs, %d logits", tb.Block.PointID, tb.Block.Index, len(tb.Runs), logits)
}

func resultShapeFn(rb ResultBlock) string {
	return fmtShape("p%d b%d: %d rows from %s to %s", rb.PointID, rb.Index, len(rb.Rows), rb.Rows[0].RunID, rb.Rows[len(rb.Rows)-1].RunID)
}

func learnedRunsFn(lb LearnedBlock) int { return len(lb.Runs) }

// rowOKFn: a converged run's split sums to its joint KL.
func rowOKFn(r schemas.ResultRow) bool {
	d := r.KLApproximation + r.KLOptimisationGap + r.KLEstimation - r.KLJoint
	return !r.Diverged && d < 1e-12 && d > -1e-12 && r.KLReferenceExpected > 0
}

// TestBlockComposites runs GenerateTables → SampleDatasets → Train → Evaluate on two
// points of a few blocks each and checks every composite's output elements.
func TestBlockComposites(t *testing.T) {
	p0, p1 := point(), point()
	p0.Tables, p0.Steps, p0.Samples = 5, 30, 100
	p1.ID, p1.Tables, p1.Steps, p1.Samples, p1.Methods = 1, 2, 30, 50, []string{"baseline", "jem"}
	points := []Point{p0, p1}
	opts := Options{Seed: 4, Out: "mem://blocks", TrainBatch: 6}

	p, s := beam.NewPipelineWithRoot()
	refs := beam.CreateList(s, tasks.BlockRefs(points, opts.TrainBatch))
	blocks := GenerateTables(s, opts, points, refs)
	passert.Equals(s, beam.ParDo(s, blockShapeFn, blocks),
		"p0 b0 first 0: 2 tables, 8 cells, 0 draws", "p0 b1 first 2: 2 tables, 8 cells, 0 draws",
		"p0 b2 first 4: 1 tables, 4 cells, 0 draws", "p1 b0 first 0: 2 tables, 8 cells, 0 draws")
	sampled := SampleDatasets(s, opts, points, blocks)
	passert.Equals(s, beam.ParDo(s, blockShapeFn, sampled),
		"p0 b0 first 0: 2 tables, 8 cells, 200 draws", "p0 b1 first 2: 2 tables, 8 cells, 200 draws",
		"p0 b2 first 4: 1 tables, 4 cells, 100 draws", "p1 b0 first 0: 2 tables, 8 cells, 100 draws")
	trained := Train(s, opts, points, sampled)
	passert.Equals(s, beam.ParDo(s, trainedShapeFn, trained),
		"p0 b0: 6 runs, 24 logits", "p0 b1: 6 runs, 24 logits", "p0 b2: 3 runs, 12 logits", "p1 b0: 4 runs, 16 logits")
	results, learned := Evaluate(s, opts, points, trained)
	passert.Equals(s, beam.ParDo(s, resultShapeFn, results),
		"p0 b0: 6 rows from p0000-t0000000-baseline to p0000-t0000001-oracle",
		"p0 b1: 6 rows from p0000-t0000002-baseline to p0000-t0000003-oracle",
		"p0 b2: 3 rows from p0000-t0000004-baseline to p0000-t0000004-oracle",
		"p1 b0: 4 rows from p0001-t0000000-baseline to p0001-t0000001-jem")
	passert.Equals(s, beam.ParDo(s, learnedRunsFn, learned), 6, 6, 3, 4)
	rows := beam.ParDo(s, explodeRowsFn, results)
	passert.Count(s, rows, "rows", 19)
	passert.True(s, rows, rowOKFn)
	passert.Equals(s, beam.ParDo(s, rowRunFn, beam.ParDo(s, explodeRowsFn, beam.ParDo(s, &figureRowsFn{N: 1}, results))),
		"p0000-t0000000-baseline", "p0000-t0000000-jem", "p0000-t0000000-oracle", "p0001-t0000000-baseline", "p0001-t0000000-jem")
	passert.Equals(s, beam.ParDo(s, summaryShapeFn, Aggregate(s, opts, points, "test", SummarizePoints(s, opts, points, results))),
		"p0 5 tables: baseline 5 jem 5 oracle 5; p1 2 tables: baseline 2 jem 2; ")
	ptest.RunAndValidate(t, p)
}

func fmtShape(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// TestAggregateFolded runs SummarizePoints and Aggregate on prism with every block folded
// (verdict.ExactMaxTables = 0): the accumulator crosses the runner's state coder and
// adds blocks in its order, and the summary equals the one accumulated in process.
func TestAggregateFolded(t *testing.T) {
	old := verdict.ExactMaxTables
	verdict.ExactMaxTables = 0
	defer func() { verdict.ExactMaxTables = old }()
	rows := verdicttest.RandomRows(600, 11)
	m := len(methods.Names())
	var blocks []ResultBlock
	for i := 0; i*50*m < len(rows); i++ {
		blocks = append(blocks, ResultBlock{Index: int64(i), First: int64(50 * i), Rows: rows[i*50*m : min(len(rows), (i+1)*50*m)]})
	}
	var acc PointAcc
	for _, b := range blocks {
		acc.Add(b)
	}
	pt := point()
	pt.Grid = verdict.GridOfRows(rows)
	want, err := json.Marshal(verdict.SummaryOf([]schemas.PointSummary{SummarizePoint(pt, acc, 1, DefaultThresholds())}, 1))
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	pt.Tables = int(acc.Tables)
	o := Options{Seed: 1, Thresholds: DefaultThresholds()}
	sum := Aggregate(s, o, []Point{pt}, "", SummarizePoints(s, o, []Point{pt}, beam.CreateList(s, blocks)))
	passert.Equals(s, beam.ParDo(s, summaryJSONFn, sum), string(want))
	ptest.RunAndValidate(t, p)
}

func summaryJSONFn(sum schemas.Summary) string {
	b, _ := json.Marshal(sum)
	return string(b)
}

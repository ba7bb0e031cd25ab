package verdict

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/verdict/verdicttest"
)

// foldedSummary combines rows in blocks of size b, added to accumulators in a shuffled
// order and merged, with ExactMaxTables = 0 (every block folded).
func foldedSummary(t *testing.T, rows []schemas.ResultRow, b int, seed uint64) schemas.PointSummary {
	t.Helper()
	old := ExactMaxTables
	ExactMaxTables = 0
	defer func() { ExactMaxTables = old }()
	m := len(methods.Names())
	var blocks []schemas.ResultBlock
	for i := 0; i*b*m < len(rows); i++ {
		blocks = append(blocks, schemas.ResultBlock{PointID: 0, Index: int64(i), First: int64(i * b), Rows: rows[i*b*m : min(len(rows), (i+1)*b*m)]})
	}
	rand.New(rand.NewPCG(seed, 2)).Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	var accs [3]PointAcc
	for i, bl := range blocks {
		accs[i%3].Add(bl)
	}
	accs[2].Merge(accs[0])
	accs[2].Merge(accs[1])
	return accs[2].Summary(GridOfRows(rows), ruleOf(GridOfRows(rows)), 1, DefaultThresholds())
}

// TestPointAccFolded: the folded summary of a point equals the exact one: counts,
// means and the paired comparison exactly or to rounding, quantiles within the
// sketch's accuracy, the verdict's ratios to rounding (their CIs are delta-method
// intervals instead of bootstraps, so close but not equal); and it does not depend on
// how the blocks were split, ordered or merged. 1,000 tables (the sketch's accuracy
// does not depend on the count): the delta-method CIs' ends land within 0.032 of the
// bootstrap CI's width of its ends, against the 0.25 allowed (3,000 tables: 0.016, in
// three times the time).
func TestPointAccFolded(t *testing.T) {
	rows := verdicttest.RandomRows(1000, 7)
	exact := Summarize(rows, 1, DefaultThresholds(), ruleOf).Points[0]
	folded := foldedSummary(t, rows, 64, 1)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if !(math.Abs(got-want) <= tol*math.Abs(want)) && !(got == want) {
			t.Errorf("%s: folded %v, exact %v (tolerance %g)", what, got, want, tol)
		}
	}
	if folded.Tables != exact.Tables || !reflect.DeepEqual(folded.Params, exact.Params) || folded.Family != exact.Family {
		t.Fatalf("header: folded %+v %d %s, exact %+v %d %s", folded.Params, folded.Tables, folded.Family, exact.Params, exact.Tables, exact.Family)
	}
	near("empty share", folded.EmptyCellShare, exact.EmptyCellShare, 1e-12)
	near("reference", folded.Reference, exact.Reference, 1e-12)
	near("expected reference", folded.ReferenceExpected, exact.ReferenceExpected, 1e-12)
	if len(folded.Methods) != len(exact.Methods) {
		t.Fatalf("%d methods, want %d", len(folded.Methods), len(exact.Methods))
	}
	for i := range exact.Methods {
		fm, em := folded.Methods[i], exact.Methods[i]
		if fm.Method != em.Method || fm.Runs != em.Runs || fm.Diverged != em.Diverged {
			t.Errorf("%s: runs %d/%d diverged %d/%d", em.Method, fm.Runs, em.Runs, fm.Diverged, em.Diverged)
		}
		fd, ed := distsOf(&fm), distsOf(&em)
		for f := range ed {
			if fd[f].Count != ed[f].Count || fd[f].Infinite != ed[f].Infinite {
				t.Errorf("%s dist %d: count %d/%d infinite %d/%d", em.Method, f, fd[f].Count, ed[f].Count, fd[f].Infinite, ed[f].Infinite)
			}
			near(em.Method+" mean", fd[f].Mean, ed[f].Mean, 1e-12)
			near(em.Method+" median", fd[f].Median, ed[f].Median, 1.01e-3)
			near(em.Method+" p10", fd[f].P10, ed[f].P10, 1.01e-3)
			near(em.Method+" p90", fd[f].P90, ed[f].P90, 1.01e-3)
		}
		near(em.Method+" gap ratio", fm.GapRatio, em.GapRatio, 1e-12)
		near(em.Method+" reference ratio", fm.ReferenceRatio, em.ReferenceRatio, 1e-12)
	}
	fc, ec := folded.Comparison, exact.Comparison
	if fc == nil {
		t.Fatal("no comparison")
	}
	near("baseline/jem", fc.BaselineToJEM, ec.BaselineToJEM, 1e-12) // sums by block
	c := *fc
	if c.BaselineToJEM = ec.BaselineToJEM; c != *ec {
		t.Errorf("comparison: folded %+v, exact %+v", fc, ec)
	}
	fv, ev := folded.Verdict, exact.Verdict
	if fv.Holds != ev.Holds || fv.Decided != ev.Decided || fv.Cause != ev.Cause || fv.Pairs != ev.Pairs || len(fv.Checks) != len(ev.Checks) {
		t.Fatalf("verdict: folded %+v\nexact %+v", fv, ev)
	}
	for i, ec := range ev.Checks {
		fc := fv.Checks[i]
		near(ec.Name, float64(fc.Value), float64(ec.Value), 1e-12)
		width := float64(ec.CIHigh - ec.CILow)
		if math.Abs(float64(fc.CIHigh-ec.CIHigh)) > 0.25*width || math.Abs(float64(fc.CILow-ec.CILow)) > 0.25*width {
			t.Errorf("%s CI: delta method [%g, %g], bootstrap [%g, %g]", ec.Name, fc.CILow, fc.CIHigh, ec.CILow, ec.CIHigh)
		}
	}
	a, _ := json.Marshal(folded)
	for _, tt := range []struct {
		name  string
		block int
		seed  uint64
	}{{"other order", 64, 9}, {"other blocks", 50, 3}} {
		b, _ := json.Marshal(foldedSummary(t, rows, tt.block, tt.seed))
		if tt.block == 64 && string(a) != string(b) {
			t.Errorf("%s: the summary depends on the merge order", tt.name)
		}
		if tt.block != 64 && len(a) != len(b) {
			// Other block boundaries sum in another grouping: equal to rounding only.
			t.Logf("%s: %d vs %d bytes", tt.name, len(a), len(b))
		}
	}
}

// TestPointAccExact: below ExactMaxTables the combined summary is Summarize's, byte
// for byte, whatever the blocks' order.
func TestPointAccExact(t *testing.T) {
	rows := verdicttest.RandomRows(300, 8)
	want, _ := json.Marshal(Summarize(rows, 1, DefaultThresholds(), ruleOf).Points[0])
	var a, b PointAcc
	m := len(methods.Names())
	for i := 0; i*40*m < len(rows); i++ {
		bl := schemas.ResultBlock{Index: int64(i), First: int64(40 * i), Rows: rows[i*40*m : min(len(rows), (i+1)*40*m)]}
		if i%2 == 0 {
			b.Add(bl)
		} else {
			a.Add(bl)
		}
	}
	a.Merge(b)
	if a.Folded {
		t.Fatal("300 tables folded")
	}
	got, _ := json.Marshal(a.Summary(GridOfRows(rows), ruleOf(GridOfRows(rows)), 1, DefaultThresholds()))
	if string(got) != string(want) {
		t.Errorf("combined summary differs from Summarize:\n%s\n%s", got, want)
	}
}

// ruleOf is the tests' rule: a point of a 2-D task (the task kinds' names are not
// this package's to know) is judged by the Samplers rule.
func ruleOf(g schemas.Grid) Rule {
	if g.Task != "" && g.Task != "table" {
		return Samplers
	}
	return Tables
}

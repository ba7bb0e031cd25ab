package table

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/verdict"
)

// source is one table point's tables: drawn from its generator, or the user's
// (--tables_from, read once when the source opens) in id order.
type source struct {
	ctx     context.Context // Open's, for reading the user's tables
	env     tasks.Env
	p       tasks.Point
	gen     prob.Generator
	user    []prob.Table
	trainer *models.Trainer // built on the first Train
}

// Open opens a table point's source.
func (Kind) Open(ctx context.Context, env tasks.Env, p tasks.Point) (tasks.Source, error) {
	s := &source{ctx: ctx, env: env, p: p}
	if env.Options.TablesFrom != "" { // read on the first Truth: only GenerateTables needs them
		return s, nil
	}
	g, err := prob.ParseGenerator(p.Generator)
	if err != nil {
		return nil, fmt.Errorf("generate tables: %w", err)
	}
	s.gen = g
	return s, nil
}

// Truth is the table of ordinal o: the user's o-th, or a draw of the generator seeded
// by the table (Kind.Seed).
func (s *source) Truth(o int64) (int64, []float64, error) {
	if from := s.env.Options.TablesFrom; from != "" && s.user == nil {
		ts, err := schemas.ReadTables(s.ctx, from)
		if err != nil {
			return 0, nil, fmt.Errorf("read tables: %w", err)
		}
		// ReadTables returns the tables sorted by id; sort again so the ordinals are in
		// id order whatever the reader does.
		slices.SortStableFunc(ts, func(a, b prob.Table) int { return cmp.Compare(a.ID, b.ID) })
		s.user = ts
	}
	if s.user != nil {
		if o >= int64(len(s.user)) {
			return 0, nil, fmt.Errorf("table %d of %d read from %s", o, len(s.user), s.env.Options.TablesFrom)
		}
		return s.user[o].ID, s.user[o].P, nil
	}
	p := s.p
	return o, s.gen.Draw(prob.NewRand(Kind{}.Seed(s.env.Options.Seed, p, o)), p.XValues, p.Classes), nil
}

// sampleChunk is the number of sample rows built and handed to the Parquet writer at a
// time: a block's draws are streamed, never held whole.
const sampleChunk = 1 << 16

// Sample draws each table's N draws as multinomial cell counts (whose cost does not
// depend on N) and, with a bucket, writes the draws themselves (tasks.Samples), table
// by table in ordinal order.
func (s *source) Sample(ctx context.Context, b *tasks.Block, bucket *blob.Bucket, key string) error {
	p := s.p
	b.Counts = make([]int64, 0, len(b.P))
	for i := range b.Len() {
		t := b.Table(p, i)
		b.Counts = append(b.Counts, prob.Multinomial(prob.NewRand(tasks.SampleSeed(s.env.Options.Seed, t)), int64(p.Samples), t.P)...)
	}
	if bucket == nil {
		return nil
	}
	rows := make([]schemas.SampleRow, 0, min(sampleChunk, b.Len()*p.Samples))
	return schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.SampleRow) error) error {
		for i := range b.Len() {
			d := b.Dataset(p, i)
			for _, c := range tasks.Samples(s.env.Options.Seed, d) {
				rows = append(rows, schemas.SampleRow{TableID: d.Table.ID, X: int64(int(c) / p.Classes), Y: int64(int(c) % p.Classes)})
				if len(rows) == cap(rows) {
					if err := write(rows); err != nil {
						return err
					}
					rows = rows[:0]
				}
			}
		}
		if len(rows) > 0 {
			return write(rows)
		}
		return nil
	})
}

// TablesPath is where a point's true tables go: tables.parquet for single-point runs,
// tables/point-NNNN.parquet when a sweep has several points.
func TablesPath(pointID int64, multiPoint bool) string {
	return tasks.PointFile("tables", pointID, multiPoint)
}

// WriteTruth writes the point's tables (columns table_id, x, y, p; sorted by table_id,
// x, y), streamed a block at a time.
func (s *source) WriteTruth(ctx context.Context, bucket *blob.Bucket, blocks []tasks.Block, multiPoint bool) (string, error) {
	p := s.p
	key := TablesPath(p.ID, multiPoint)
	err := schemas.WriteParquetStream(ctx, bucket, key, func(write func([]schemas.TableRow) error) error {
		for _, b := range blocks {
			ts := make([]prob.Table, b.Len())
			for i := range ts {
				t := b.Table(p, i)
				ts[i] = prob.Table{ID: t.ID, X: p.XValues, K: p.Classes, P: t.P}
			}
			if err := write(schemas.TableRows(ts)); err != nil {
				return err
			}
		}
		return nil
	})
	return key, err
}

func shapeKey(s models.Shape) string {
	return fmt.Sprintf("%dx%d/%s/%s/steps=%d/batch=%d", s.XValues, s.Classes, s.Encoding, s.Model, s.Steps, s.BatchSize)
}

// Train trains one run per table and method. A block's runs that share a training
// shape (every method but a minibatch point's oracle, which trains full-batch on the
// true table) are one training batch, trained in one call of the fused CPU kernels or
// one GoMLX graph (models.NewTrainer and --backend). Baseline runs minimise
// cross-entropy, jem runs the exact joint negative log-likelihood (Z by enumerating
// all cells), oracle runs the jem loss on the true table, pcd and pcd-exact the jem
// loss with their negatives for log Z's gradient.
func (s *source) Train(ctx context.Context, b tasks.Block) (out tasks.TrainedBlock, err error) {
	p, o := s.p, s.env.Options
	if s.trainer == nil {
		t, err := models.NewTrainer(o.Backend)
		if err != nil {
			return tasks.TrainedBlock{}, err
		}
		t.SetRunsPerBatch(o.TrainBatch)
		s.trainer = t
	}
	m := len(p.Methods)
	out = tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
	// The references' costly part, beside the training (their own goroutine: the
	// other core, where there is one); Evaluate takes them from the block.
	expected := make(chan []float64, 1)
	go func() { expected <- blockExpected(p, b, 0, b.Len()) }()
	defer func() { out.Expected = <-expected }()
	// One batch per training shape, in the order of the methods' first appearance.
	var shapes []models.Shape
	for _, meth := range p.Methods {
		if sh := Shape(p, meth); !slices.Contains(shapes, sh) {
			shapes = append(shapes, sh)
		}
	}
	for _, shape := range shapes {
		var idx []int // runs of this shape: i·m + j, table-major
		var runs []models.Run
		for i := range b.Len() {
			d := b.Dataset(p, i)
			for j, meth := range p.Methods {
				if Shape(p, meth) != shape {
					continue
				}
				idx = append(idx, i*m+j)
				runs = append(runs, s.run(d, meth))
			}
		}
		start := time.Now()
		outs, err := s.trainer.Train(ctx, shape, runs)
		if err != nil {
			return out, fmt.Errorf("%s, %d runs: %w", shapeKey(shape), len(runs), err)
		}
		elapsed := time.Since(start)
		perRun := 0.0
		if o.Timings {
			perRun = float64(elapsed.Microseconds()) / 1000 / float64(len(runs))
		}
		for k, res := range outs {
			r := idx[k]
			tr := tasks.TrainedRun{Logits: res.Logits, Loss: res.Loss, Diverged: res.Diverged, TrainMS: perRun, PxWeight: runs[k].PxWeight,
				BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN()}
			d := b.Dataset(p, r/m)
			if res.AvgLogits != nil {
				tr.KLJointAveraged = prob.KL(d.Table.P, prob.Softmax(res.AvgLogits))
			}
			if res.Buffer != nil {
				tr.BufferInBox = 1
				tr.BufferTVTruth, tr.BufferTVModel = bufferTV(p, res.Buffer, d.Table.P, res.Logits)
				if d.Table.Ordinal < int64(o.ReportTables) {
					tr.Buffer = make([]float32, 0, 2*len(res.Buffer))
					for _, x := range res.Buffer {
						tr.Buffer = append(tr.Buffer, float32(x), 0)
					}
				}
			}
			out.Runs[r] = tr
		}
		s.env.Progressf(ctx, "train: point %d block %d %s: %d runs in %v (%.0f runs/s)", p.ID, b.Index, shapeKey(shape), len(runs),
			elapsed.Round(time.Millisecond), float64(len(runs))/elapsed.Seconds())
	}
	return out, nil
}

// run builds the trainer's input for a table's run of a method.
func (s *source) run(d tasks.Dataset, method string) models.Run {
	p := d.Table.Point
	runSeed := s.env.Options.Seed
	r := models.Run{LR: p.LR, Seed: tasks.TrainSeed(runSeed, d.Table, method), PxWeight: p.PxWeight}
	if m, _ := methods.Lookup(method); m.NoPx {
		r.PxWeight = 0
	}
	if methods.Has(method, fresh) {
		r.Counts = slices.Clone(d.Table.P)
		return r
	}
	r.Counts = make([]float64, len(d.Counts))
	for i, c := range d.Counts {
		r.Counts[i] = float64(c)
	}
	if p.BatchSize > 0 {
		r.Samples = tasks.Samples(runSeed, d)
	}
	if h, ok := methods.Tables.Of(method); ok {
		_ = h(p.Grid, &r) // checked by Kind.Validate
	}
	return r
}

// fresh: the method trains on the true table itself (the oracle).
func fresh(m methods.Method) bool { return m.Fresh }

// bufferTV is the total-variation distance of a table run's negatives (x values) from
// the true p(x) and from the run's own q(x).
func bufferTV(p tasks.Point, buf []int32, truth, logits []float64) (tvTruth, tvModel float64) {
	x, k := p.XValues, p.Classes
	hist := make([]float64, x)
	for _, v := range buf {
		if v >= 0 && int(v) < x {
			hist[v]++
		}
	}
	for i := range hist {
		hist[i] /= float64(len(buf))
	}
	return prob.TotalVariation(hist, prob.Marginal(truth, x, k)), prob.TotalVariation(hist, prob.Marginal(prob.Softmax(logits), x, k))
}

// Evaluate measures every run (tasks.EvaluateRun) with its table's references, computed
// once per table for all its methods, and adds the tables' own columns: the
// first-order floor, the empirical table's KL, the empty cells and the error split. The
// block's tables are spread over the cores (each table's rows depend on it alone, so
// the result does not depend on how).
func (s *source) Evaluate(_ context.Context, tb tasks.TrainedBlock) (tasks.ResultBlock, tasks.LearnedBlock, error) {
	p := s.p
	m := len(p.Methods)
	rb := tasks.ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := tasks.LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]tasks.Learned, len(tb.Runs))}
	err := tasks.SpreadTasks(tb.Block.Len(), 64, func(lo, hi int) error {
		refs := blockRefs(p, tb, lo, hi)
		for i := lo; i < hi; i++ {
			for r := i * m; r < (i+1)*m; r++ {
				kernel.ClearUpper() // scalar float64 code: see kernel.ClearUpper
				lb.Runs[r] = EvaluateRunTo(&rb.Rows[r], tb.Trained(p, r), refs[i-lo])
			}
		}
		return nil
	})
	return rb, lb, err
}

// blockExpected are the exact expected KLs of the add-½ estimates of the joint (NaN
// where the family is not complete: the references do not use it) and of p(x) of
// tables lo..hi-1 of a block, two a table (prob.ExpectedKLSmoothed, bit for bit),
// computed for the tables at once (prob.ExpectedKLSmoothedMany): the references'
// costly part, a sum over the counts per cell.
func blockExpected(p tasks.Point, b tasks.Block, lo, hi int) []float64 {
	kernel.ClearUpper() // scalar float64 code: see kernel.ClearUpper
	x, k := p.XValues, p.Classes
	c, n := x*k, int64(p.Samples)
	px := make([]float64, 0, (hi-lo)*x)
	for i := lo; i < hi; i++ {
		px = append(px, prob.Marginal(b.P[i*c:(i+1)*c], x, k)...)
	}
	var joint []float64
	if verdict.FamilyOf(p.Grid).Complete() {
		joint = prob.ExpectedKLSmoothedMany(b.P[lo*c:hi*c], c, n, prob.SmoothingAdd)
	}
	marginal := prob.ExpectedKLSmoothedMany(px, x, n, prob.SmoothingAdd)
	out := make([]float64, 2*(hi-lo))
	for j := range hi - lo {
		out[2*j], out[2*j+1] = math.NaN(), marginal[j]
		if joint != nil {
			out[2*j] = joint[j]
		}
	}
	return out
}

// blockRefs are the references of tables lo..hi-1 of a trained block (tasks.NewRefs,
// bit for bit), with the expected KLs Train computed (TrainedBlock.Expected) or, when
// the block has none, computed here (blockExpected).
func blockRefs(p tasks.Point, tb tasks.TrainedBlock, lo, hi int) []*tasks.Refs {
	b := tb.Block
	var exp []float64
	if len(tb.Expected) == 2*b.Len() {
		exp = tb.Expected[2*lo : 2*hi]
	} else {
		exp = blockExpected(p, b, lo, hi)
	}
	fam := verdict.FamilyOf(p.Grid)
	x, k := p.XValues, p.Classes
	n := int64(p.Samples)
	out := make([]*tasks.Refs, hi-lo)
	for j := range out {
		kernel.ClearUpper()
		d := b.Dataset(p, lo+j)
		refExp := 0.0
		if fam.Complete() {
			refExp = exp[2*j]
		}
		out[j] = tasks.NewRefsFrom(fam, d.Table.P, d.Counts, n, prob.Marginal(d.Table.P, x, k), refExp, exp[2*j+1])
	}
	return out
}

// EvaluateRun is one table run's row and learned joint (refs nil: computed here).
func EvaluateRun(t tasks.Trained, refs *tasks.Refs) (schemas.ResultRow, tasks.Learned) {
	var row schemas.ResultRow
	l := EvaluateRunTo(&row, t, refs)
	return row, l
}

// EvaluateRunTo is EvaluateRun writing the row to *row (see tasks.EvaluateRunTo).
func EvaluateRunTo(row *schemas.ResultRow, t tasks.Trained, refs *tasks.Refs) tasks.Learned {
	d := t.Job.Dataset
	p := d.Table.Point
	if refs == nil {
		refs = tasks.NewRefs(verdict.FamilyOf(p.Grid), d.Table.P, d.Counts, int64(p.Samples))
	}
	l := tasks.EvaluateRunTo(row, t, refs)
	row.Floor = prob.Floor(p.XValues*p.Classes, int64(p.Samples))
	row.KLEmpirical = prob.KL(d.Table.P, prob.Empirical(d.Counts))
	row.EmptyCells = int64(prob.EmptyCells(d.Counts))
	tasks.SplitError(row, refs, d.Table.P, l.Q, methods.Has(t.Job.Method, fresh))
	return l
}

// Close releases the trainer's backend.
func (s *source) Close() error {
	if s.trainer != nil {
		s.trainer.Close()
		s.trainer = nil
	}
	return nil
}

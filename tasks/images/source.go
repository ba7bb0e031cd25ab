package images

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// source is one images point's tasks.
type source struct {
	env  tasks.Env
	p    tasks.Point
	spec spec
	mu   sync.Mutex
	cal  map[int64]*calibration // per task ordinal: the AIS schedule's check on the truth
}

// Open opens an images point's source.
func (Kind) Open(_ context.Context, env tasks.Env, p tasks.Point) (tasks.Source, error) {
	s, err := parseTask(p.Task)
	if err != nil {
		return nil, err
	}
	return &source{env: env, p: p, spec: s, cal: map[int64]*calibration{}}, nil
}

// Close: nothing to release.
func (s *source) Close() error { return nil }

// truth is task t's truth.
func (s *source) truth(t tasks.Table) (*mfa.Truth, error) {
	return mfa.New(tasks.TableSeed(s.env.Options.Seed, t), s.spec.mfaSpec())
}

func (s *source) table(o int64) tasks.Table { return tasks.Table{Point: s.p, ID: o, Ordinal: o} }

// Truth: the task's id; no truth on a support (CarriesTruth is false).
func (s *source) Truth(o int64) (int64, []float64, error) {
	if _, err := s.truth(s.table(o)); err != nil {
		return 0, nil, err
	}
	return o, nil, nil
}

// trainDraws are task t's truth, its draws (n×D) and classes, and n, the draws it trains
// on (the protocol's split: the rest are held out).
func (s *source) trainDraws(t tasks.Table) (*mfa.Truth, []float64, []int32, int, error) {
	tr, err := s.truth(t)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	x, y := s.draws(tr, t)
	n := len(y)
	if s.env.Options.Select != "" {
		n = s.env.Options.HoldoutSplit(n)
	}
	return tr, x, y, n, nil
}

// draws are task t's --samples exact draws (n×D, float64) and classes.
func (s *source) draws(tr *mfa.Truth, t tasks.Table) ([]float64, []int32) {
	return tr.Sample(prob.NewRand(tasks.SampleSeed(s.env.Options.Seed, t)), s.p.Samples)
}

// SampleRow is one draw of an images task (samples/*.parquet): its pixels row-major,
// and its held-out marker (1 on the draws the protocol holds out, tasks.Options.HeldOut).
type SampleRow struct {
	TaskID  int64     `parquet:"task_id" json:"task_id"`
	Draw    int64     `parquet:"draw" json:"draw"`
	Y       int64     `parquet:"y" json:"y"`
	X       []float64 `parquet:"x,list" json:"x"`
	Heldout int64     `parquet:"heldout" json:"heldout"`
}

// Sample writes the block's draws (task_id, draw, y, x[D]) when bucket is set; the
// draws are a function of the task's seed, drawn again where used.
func (s *source) Sample(ctx context.Context, b *tasks.Block, bucket *blob.Bucket, key string) error {
	if bucket == nil {
		return nil
	}
	D := s.spec.S * s.spec.S
	return schemas.WriteParquetStream(ctx, bucket, key, func(write func([]SampleRow) error) error {
		for i := range b.Len() {
			t := b.Table(s.p, i)
			tr, err := s.truth(t)
			if err != nil {
				return err
			}
			x, y := s.draws(tr, t)
			rows := make([]SampleRow, len(y))
			for j := range y {
				rows[j] = SampleRow{TaskID: t.ID, Draw: int64(j), Y: int64(y[j]), X: x[j*D : (j+1)*D], Heldout: s.env.Options.HeldOut(j, len(y))}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
}

// TruthFile is the key of task id's truth parameters (mfa.Params as JSON).
func TruthFile(pointID, taskID int64, multiPoint bool) string {
	if multiPoint {
		return fmt.Sprintf("truth/point-%04d/task-%06d.json", pointID, taskID)
	}
	return fmt.Sprintf("truth/task-%06d.json", taskID)
}

// WriteTruth writes every task's mfa.Params as JSON (TruthFile): with them the density
// can be recomputed independently (mfa.FromParams, or the formula of mfa.Params). It
// returns the folder's key.
func (s *source) WriteTruth(ctx context.Context, bucket *blob.Bucket, blocks []tasks.Block, multiPoint bool) (string, error) {
	for _, b := range blocks {
		for i := range b.Len() {
			t := b.Table(s.p, i)
			tr, err := s.truth(t)
			if err != nil {
				return "", err
			}
			data, err := json.Marshal(tr.Params())
			if err != nil {
				return "", err
			}
			if err := bucket.WriteAll(ctx, TruthFile(s.p.ID, t.ID, multiPoint), data, nil); err != nil {
				return "", err
			}
		}
	}
	if multiPoint {
		return fmt.Sprintf("truth/point-%04d/", s.p.ID), nil
	}
	return "truth/", nil
}

// flatten packs a CNN's parameters into one slice (TrainedRun.Theta).
func flatten(p cnn.Params) []float32 {
	var out []float32
	for _, t := range p.Tensors {
		out = append(out, t...)
	}
	return out
}

// unflatten is flatten's inverse for the point's model.
func (s *source) unflatten(theta []float32) (cnn.Params, error) {
	sp, err := cnn.Parse(s.p.Model)
	if err != nil {
		return cnn.Params{}, err
	}
	p := cnn.Params{Spec: sp, S: s.spec.S, K: s.spec.K}
	off := 0
	for _, d := range p.Shapes() {
		n := 1
		for _, v := range d {
			n *= v
		}
		if off+n > len(theta) {
			return cnn.Params{}, fmt.Errorf("images: %d parameters, the model needs more", len(theta))
		}
		p.Tensors = append(p.Tensors, theta[off:off+n])
		off += n
	}
	if off != len(theta) {
		return cnn.Params{}, fmt.Errorf("images: %d parameters, the model needs %d", len(theta), off)
	}
	return p, nil
}

// Train trains every run of a block: one cnn.Train per run (the runs in parallel over
// GOMAXPROCS), options from the point and the method's images hook; every method of a
// task starts from the same parameters (cnn.Init from the task's seed).
func (s *source) Train(ctx context.Context, b tasks.Block) (tasks.TrainedBlock, error) {
	if isMFA(s.p.Model) {
		return s.trainMFA(ctx, b)
	}
	p, o := s.p, s.env.Options
	start := time.Now()
	m := len(p.Methods)
	out := tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
	sp, err := cnn.Parse(p.Model)
	if err != nil {
		return out, err
	}
	S, K := s.spec.S, s.spec.K
	D := S * S
	type job struct {
		i, j int
		data cnn.Data
		held *heldout
		opts cnn.TrainOptions
	}
	var jobs []job
	for i := range b.Len() {
		t := b.Table(p, i)
		tr, x, y, n, err := s.trainDraws(t)
		if err != nil {
			return out, err
		}
		var held *heldout
		if o.Select != "" {
			held = newHeldout(tr, x[n*D:], y[n:])
		}
		data := cnn.Data{X: make([]float32, n*D), Y: make([]int, n), S: S, K: K}
		for k := range n * D {
			data.X[k] = float32(x[k])
		}
		for k := range n {
			data.Y[k] = int(y[k])
		}
		init, err := cnn.Init(sp, S, K, prob.Seed(tasks.TableSeed(o.Seed, t), prob.SeedString("init")))
		if err != nil {
			return out, err
		}
		for j, meth := range p.Methods {
			opts := cnn.TrainOptions{Seed: tasks.TrainSeed(o.Seed, t, meth), Init: &init, Backend: o.Backend}
			if err := hook(meth, p, &opts); err != nil {
				return out, err
			}
			jobs = append(jobs, job{i: i, j: j, data: data, held: held, opts: opts})
		}
	}
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for k, jb := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			var run cnnRun
			if jb.held != nil {
				run = cnnRun{held: jb.held, backend: o.Backend, perStep: jb.opts.GradEvalsPerStep(), sel: tasks.Selector{Rule: o.Select}}
				jb.opts.Observe, jb.opts.ObserveEvery = run.observe, o.CheckEvery(p.Steps)
			}
			params, st, err := cnn.Train(ctx, sp, jb.data, jb.opts)
			if err == nil {
				err = run.err
			}
			if err != nil {
				errs[k] = fmt.Errorf("train point %d block %d (%s): %w", p.ID, b.Index, p.Methods[jb.j], err)
				return
			}
			loss := math.NaN()
			if n := len(st.Loss); n > 0 {
				loss = float64(st.Loss[n-1])
			}
			tr := tasks.TrainedRun{Loss: loss, Diverged: st.Diverged, DivergedStep: int64(st.DivergedStep), Theta: flatten(params),
				BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN(),
				CPUSeconds: math.NaN(), TrainBatch: int64(min(jb.opts.Batch, len(jb.data.Y))), TrainLR: p.LR, HeldoutNLL: math.NaN(), HeldoutNLLFinal: math.NaN(),
				PxWeight: jb.opts.TermWeight(), Stats: st.MethodStats}
			if o.Timings {
				tr.TrainMS = float64(time.Since(t0).Microseconds()) / 1000
			}
			last := tasks.LastStep(p.Steps, st.Diverged, st.DivergedStep)
			tr.SelectedStep = int64(last)
			if jb.held != nil {
				run.finish(&tr, p.Methods[jb.j], last, params, p.Steps)
				if run.err != nil {
					errs[k] = fmt.Errorf("train point %d block %d (%s): held-out check: %w", p.ID, b.Index, p.Methods[jb.j], run.err)
					return
				}
			}
			out.Runs[jb.i*m+jb.j] = tr
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	s.env.Progressf(ctx, "train: point %d block %d (%s): %d runs in %v", p.ID, b.Index, p.Task, len(out.Runs), time.Since(start).Round(time.Millisecond))
	return out, nil
}

// Evaluate measures every run of a block against its task's truth (eval.go).
func (s *source) Evaluate(ctx context.Context, tb tasks.TrainedBlock) (tasks.ResultBlock, tasks.LearnedBlock, error) {
	if isMFA(s.p.Model) {
		return s.evaluateMFA(tb)
	}
	p := s.p
	rb := tasks.ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := tasks.LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]tasks.Learned, len(tb.Runs))}
	var set *evalSet
	for r := range tb.Runs {
		t := tb.Trained(p, r)
		tab := t.Job.Dataset.Table
		if r%len(p.Methods) == 0 {
			tr, err := s.truth(tab)
			if err != nil {
				return rb, lb, err
			}
			x, y := s.draws(tr, tab)
			n := len(x) / tr.D()
			if s.env.Options.Select != "" {
				n = s.env.Options.HoldoutSplit(n)
			}
			set, err = newEvalSet(tr, tasks.TableSeed(s.env.Options.Seed, tab), x[:n*tr.D()], y[:n])
			if err != nil {
				return rb, lb, err
			}
			set.chains, set.temps = s.env.Options.AISChains, s.env.Options.AISTemps
			set.cal = s.calibration(ctx, tab.Ordinal, set)
		}
		row := newRow(t, set)
		var res *result
		if params, err := s.unflatten(t.Run.Theta); err == nil && !t.Diverged {
			m := cnnModel{params, s.env.Options.Backend}
			r := set.measure(ctx, m, nil)
			r.fill(&row, set.cal)
			res = &r
		}
		finishRow(&row, t)
		if res != nil {
			res.fillZFree(&row)
		}
		rb.Rows[r] = row
		lb.Runs[r] = learned(p, t)
	}
	return rb, lb, nil
}

// learned is run t's entry of the learned block: no learned joint on images (the
// tables are images), its curve of checks (curves/).
func learned(p tasks.Point, t tasks.Trained) tasks.Learned {
	tab := t.Job.Dataset.Table
	return tasks.Learned{RunID: t.Job.RunID, PointID: p.ID, TableID: tab.ID, Ordinal: tab.Ordinal, Method: t.Job.Method,
		X: p.XValues, K: p.Classes, Task: p.Task, Curve: t.Run.Curve}
}

// calibration is task o's AIS calibration on its truth, cached.
func (s *source) calibration(ctx context.Context, o int64, set *evalSet) *calibration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cal[o]; ok {
		return c
	}
	c := set.calibrate(ctx)
	s.cal[o] = c
	return c
}

// newRow is a run's row with every float measure NaN, then the point's columns.
func newRow(t tasks.Trained, set *evalSet) schemas.ResultRow {
	d := t.Job.Dataset
	p := d.Table.Point
	row := schemas.ResultRow{}
	nanFloats(&row)
	row.RunID, row.TableID, row.Method, row.PointID = t.Job.RunID, d.Table.ID, t.Job.Method, p.ID
	row.FinalLoss, row.TrainMS, row.DivergedStep = t.Loss, t.TrainMS, t.Run.DivergedStep
	row.EmptyCells, row.Floor = 0, 0
	tasks.SetProtocol(&row, t.Run, p)
	row.Diverged = t.Diverged
	if set != nil {
		set.fillTask(&row)
	}
	return row
}

// finishRow sets the run's status and the point's and method's columns.
func finishRow(row *schemas.ResultRow, t tasks.Trained) {
	row.Diverged, row.Nonfinite = tasks.RunStatus(t.Diverged, nil, row.KLConditional)
	tasks.SetRunColumns(row, &t)
}

// nanFloats sets every float64 column of a row to NaN (a measure not taken).
func nanFloats(row *schemas.ResultRow) {
	v := reflect.ValueOf(row).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if fv := v.FieldByIndex(f.Index); f.Type.Kind() == reflect.Float64 && fv.CanSet() {
			fv.SetFloat(math.NaN())
		}
	}
}

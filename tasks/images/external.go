package images

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// A user's own classifier, exported to ONNX (pipelines/evaluate --onnx), judged on an
// images task as the kind judges its own CNNs: the same evaluation set, the same AIS
// calibration on the truth, the same measures (evalSet.measure) and columns
// (result.fill): kl_conditional, accuracy, ece, calibration_error_true, auroc_px,
// auroc_py exactly as for a trained CNN, kl_joint_lower only where the task's
// calibration accepts the schedule.

// A user's model applies to images tasks (given as an ONNX file, not as logits).
func init() { methods.ExternalKind(KindName) }

// MaxONNXBytes bounds a user's ONNX file.
const MaxONNXBytes = 256 << 20

// ProbeDraws is the number of exact draws of the first task, and as many uniform noise
// images, that CheckModel runs the model on before the run.
const ProbeDraws = 16

// onnxModel is a user's ONNX classifier as a model of the evaluation: its input is the
// task's S×S images row-major in the ONNX input's layout ([n, 1, S, S], [n, S·S], …:
// one channel, so every layout with S² values an example is the same flat order), its
// output the K logits.
type onnxModel struct {
	m    *cnn.ONNXModel
	D, K int
}

func (m onnxModel) logits(x []float64, n int) ([]float64, error) {
	return logitsChunked(x, n, m.D, m.K, m.m.Logits)
}

func (m onnxModel) Dim() int { return m.D }

func (m onnxModel) LogDensityBatch(x []float64, n int, out, grad []float64) {
	energyBatch(x, n, m.D, out, grad, m.m.Energy)
}

// maxCachedONNX bounds the models onnxModels keeps (with one model a task, each is
// read for its check and again for its task's evaluation).
const maxCachedONNX = 4

// onnxModels are the models read, by location and task spec.
var onnxModels struct {
	sync.Mutex
	byKey map[string]onnxModel
}

// loadONNX reads the ONNX classifier at loc (a path or a gocloud.dev URL, through the
// storage layer) and checks its input against the task: one example must be S² values.
func loadONNX(ctx context.Context, loc string, s spec) (onnxModel, error) {
	key := loc + "\x00" + s.String()
	onnxModels.Lock()
	defer onnxModels.Unlock()
	if m, ok := onnxModels.byKey[key]; ok {
		return m, nil
	}
	if len(onnxModels.byKey) >= maxCachedONNX { // one model a task: keep a few
		for k := range onnxModels.byKey {
			delete(onnxModels.byKey, k)
			break
		}
	}
	o, err := storage.OpenObject(ctx, loc, MaxONNXBytes)
	if storage.IsNotFound(err) {
		return onnxModel{}, fmt.Errorf("onnx %s: no such file", loc)
	}
	if err != nil {
		return onnxModel{}, fmt.Errorf("onnx %s: %w", loc, err)
	}
	data, err := io.ReadAll(o)
	o.Close()
	if err != nil {
		return onnxModel{}, fmt.Errorf("onnx %s: %w", loc, err)
	}
	om, err := cnn.ParseONNX(data, loc)
	if err != nil {
		return onnxModel{}, err // it names loc
	}
	D := s.S * s.S
	if om.PerExample != D {
		return onnxModel{}, fmt.Errorf("onnx %s: its input takes %d values an example, but the task %s has %d×%d = %d pixels an image "+
			"(export the model with an input of shape [n, 1, %d, %d] or [n, %d])", loc, om.PerExample, s, s.S, s.S, D, s.S, s.S, D)
	}
	m := onnxModel{m: om, D: D, K: s.K}
	if onnxModels.byKey == nil {
		onnxModels.byKey = map[string]onnxModel{}
	}
	onnxModels.byKey[key] = m
	return m, nil
}

// CheckModel reads the ONNX classifier at loc and checks it against the task of
// ordinal ord of point p: its input is S² values an image, it gives K logits an image,
// finite on ProbeDraws exact draws of the task and as many uniform noise images, and
// its input gradient (needed by the AIS of log Z) can be computed.
func (Kind) CheckModel(ctx context.Context, o tasks.Options, p tasks.Point, ord int64, loc string) error {
	s, err := parseTask(p.Task)
	if err != nil {
		return err
	}
	m, err := loadONNX(ctx, loc, s)
	if err != nil {
		return err
	}
	t := tasks.Table{Point: p, ID: ord, Ordinal: ord}
	tr, err := mfa.New(tasks.TableSeed(o.Seed, t), s.mfaSpec())
	if err != nil {
		return err
	}
	x, _ := tr.Sample(prob.NewRand(prob.Seed(tasks.TableSeed(o.Seed, t), prob.SeedString("onnx probe"))), ProbeDraws)
	rng := prob.NewRand(prob.Seed(o.Seed, prob.SeedString("onnx probe noise")))
	for range ProbeDraws * m.D {
		x = append(x, rng.Float64())
	}
	n := 2 * ProbeDraws
	f, err := m.m.Logits(toF32(x), n)
	if err != nil {
		return fmt.Errorf("onnx %s: %w", loc, err)
	}
	if len(f) != n*m.K {
		return fmt.Errorf("onnx %s: it gives %d outputs an image, but the task %s has %d classes: the model's output must be the %d logits f(x)[y], shape [n, %d]",
			loc, len(f)/n, s, m.K, m.K, m.K)
	}
	for i, v := range f {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			what := fmt.Sprintf("an exact draw of task %d", ord)
			if i/m.K >= ProbeDraws {
				what = "a uniform noise image"
			}
			return fmt.Errorf("onnx %s: its logit %d on %s is %v: the logits must be finite numbers", loc, i%m.K, what, v)
		}
	}
	lse, dx, err := m.m.Energy(toF32(x), n, true)
	if err != nil {
		return fmt.Errorf("onnx %s: its input gradient (the AIS of log Z needs ∇x LSE_y f(x)[y]): %w", loc, err)
	}
	for i, v := range append(lse, dx...) {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("onnx %s: LSE_y f(x)[y] or its input gradient is %v (value %d of the probe): it must be finite", loc, v, i)
		}
	}
	return nil
}

// EvaluateModel measures a user's ONNX model (loc) on the task of run t (an external
// method's run) as Evaluate measures a trained CNN: the task's evaluation set
// (newEvalSet: MCDraws exact draws, as many noise images, the AIS base fitted to the
// training draws), the task's cached calibration of the AIS schedule on the truth,
// measure and fill; kl_joint_lower only where the calibration accepts.
func (s *source) EvaluateModel(ctx context.Context, t tasks.Trained, loc string) (schemas.ResultRow, error) {
	if !methods.IsExternal(t.Job.Method) {
		return schemas.ResultRow{}, fmt.Errorf("images: method %s is not a user's model", t.Job.Method)
	}
	m, err := loadONNX(ctx, loc, s.spec)
	if err != nil {
		return schemas.ResultRow{}, err
	}
	tab := t.Job.Dataset.Table
	tr, err := s.truth(tab)
	if err != nil {
		return schemas.ResultRow{}, err
	}
	x, y := s.draws(tr, tab)
	n := len(y)
	if s.env.Options.Select != "" {
		n = s.env.Options.HoldoutSplit(n)
	}
	set, err := newEvalSet(tr, tasks.TableSeed(s.env.Options.Seed, tab), x[:n*tr.D()], y[:n])
	if err != nil {
		return schemas.ResultRow{}, fmt.Errorf("images: task %d: %w", tab.ID, err)
	}
	set.chains, set.temps = s.env.Options.AISChains, s.env.Options.AISTemps
	set.cal = s.calibration(ctx, tab.Ordinal, set)
	row := newRow(t, set)
	r := set.measure(ctx, m, nil)
	r.fill(&row, set.cal)
	finishRow(&row, t)
	r.fillZFree(&row)
	return row, nil
}

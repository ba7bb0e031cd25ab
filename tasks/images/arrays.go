package images

import (
	"context"
	"fmt"
	"math"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// An images task exported for a model trained outside jemcheck (pipelines/export):
// one .npz file per task (npz.go), which numpy reads without jemcheck, with the task's
// training draws and their held-out marker, the evaluation draws evaluate measures a
// classifier on with the truth's log p(x, y) there, and the truth's parameters as
// arrays (the same numbers as truth/task-NNNNNN.json). A user trains on the draws
// marked heldout == False, exports the classifier to ONNX and gives it to
// pipelines/evaluate --onnx, one model per task ({task} in the name).

// ONNXPlaceholder stands for a task's id in --onnx (pipelines/evaluate): a name pattern
// such as models/model-{task}.onnx names one model per task.
const ONNXPlaceholder = tasks.ONNXPlaceholder

// ONNXFolderModel is the model file of a task in a folder given to --onnx.
const ONNXFolderModel = "model-" + ONNXPlaceholder + ".onnx"

// ArraysPath is task id's .npz file: arrays/point-PPPP-task-NNNNNN.npz.
func (Kind) ArraysPath(p tasks.Point, taskID int64) string {
	return fmt.Sprintf("arrays/point-%04d-task-%06d.npz", p.ID, taskID)
}

// ArraysAbout names the arrays of a task's .npz file (N = --samples, M = MCDraws, C
// the truth's components over all classes, F their most factors).
func (Kind) ArraysAbout(p tasks.Point, o tasks.Options) map[string]string {
	s, _ := parseTask(p.Task)
	train, held := o.Split(p)
	img := fmt.Sprintf("%d, %d", s.S, s.S)
	return map[string]string{
		"task_id": "int64, shape (): the task's id (as in ids and the --onnx placeholder {task})",
		"x":       fmt.Sprintf("float64, shape (%d, %s): the task's exact training draws, in draw order, pixel (r, c) of an image at [r, c]", p.Samples, img),
		"y":       fmt.Sprintf("int64, shape (%d,): their classes 0..%d", p.Samples, s.K-1),
		"heldout": fmt.Sprintf("bool, shape (%d,): True on the last %d draws, held out of training; train on x[heldout == False] (the first %d), as jemcheck's methods do", p.Samples, held, train),
		"eval_x":  fmt.Sprintf("float64, shape (%d, %s): the %d fresh exact draws evaluate measures a classifier on (kl_conditional, accuracy, calibration, auroc)", MCDraws, img, MCDraws),
		"eval_y":  fmt.Sprintf("int64, shape (%d,): their classes", MCDraws),
		"eval_log_joint": fmt.Sprintf("float64, shape (%d, %d): the truth's log p(x, y) at eval_x for every class y (the Bayes posterior is its softmax over y)",
			MCDraws, s.K),
		"truth_pi":       fmt.Sprintf("float64, shape (%d,): the class probabilities π_y", s.K),
		"truth_class":    "int64, shape (C,): the class of each component (C components over all classes)",
		"truth_weight":   "float64, shape (C,): each component's weight w_yc within its class",
		"truth_mean":     fmt.Sprintf("float64, shape (C, %s): each component's mean μ", img),
		"truth_loadings": fmt.Sprintf("float64, shape (C, %d, F): each component's factor loadings Λ (D × F, zero columns past its own factors)", s.S*s.S),
		"truth_psi":      fmt.Sprintf("float64, shape (C, %s): each component's pixel noise variances ψ", img),
		"truth_formula":  "p(x, y) = truth_pi[y] · Σ_{c: truth_class[c] = y} truth_weight[c] · N(x.ravel(); truth_mean[c].ravel(), Λ_c Λ_cᵀ + diag truth_psi[c].ravel())",
	}
}

// ONNXAbout says how a classifier of the point's tasks is given to evaluate.
func (Kind) ONNXAbout(p tasks.Point) schemas.ExportONNX {
	s, _ := parseTask(p.Task)
	return schemas.ExportONNX{Input: fmt.Sprintf("[n, 1, %d, %d] (or [n, %d]) float32, the images row-major", s.S, s.S, s.S*s.S),
		Output:      fmt.Sprintf("[n, %d] float32: the logits f(x)[y]", s.K),
		Placeholder: ONNXPlaceholder,
		Evaluate: "pipelines/evaluate --from=EXPORT --onnx='models/model-" + ONNXPlaceholder + ".onnx' --out=OUT: one model per task, " +
			ONNXPlaceholder + " the task's id (or --onnx=FOLDER holding " + ONNXFolderModel + " per task)"}
}

// evalDraws are the MCDraws fresh exact draws of a task's evaluation (evalSet), from
// the task's seed.
func evalDraws(tr *mfa.Truth, seed uint64) ([]float64, []int32) {
	return tr.Sample(prob.NewRand(prob.Seed(seed, tagMC)), MCDraws)
}

// WriteArrays writes the .npz file of every task of block b (ArraysPath) and returns
// their keys.
func (s *source) WriteArrays(ctx context.Context, b tasks.Block, bucket *blob.Bucket) ([]string, error) {
	var keys []string
	for i := range b.Len() {
		t := b.Table(s.p, i)
		arrays, err := s.arrays(t)
		if err != nil {
			return keys, fmt.Errorf("images: task %d: %w", t.ID, err)
		}
		key := Kind{}.ArraysPath(s.p, t.ID)
		w, err := bucket.NewWriter(ctx, key, nil)
		if err != nil {
			return keys, fmt.Errorf("images: %s: %w", key, err)
		}
		if err := writeNPZ(w, arrays); err != nil {
			w.Close()
			return keys, fmt.Errorf("images: %s: %w", key, err)
		}
		if err := w.Close(); err != nil {
			return keys, fmt.Errorf("images: %s: %w", key, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// arrays are the arrays of task t's .npz file (ArraysAbout).
func (s *source) arrays(t tasks.Table) ([]npyArray, error) {
	tr, err := s.truth(t)
	if err != nil {
		return nil, err
	}
	S, K, D := s.spec.S, s.spec.K, s.spec.S*s.spec.S
	x, y := s.draws(tr, t)
	n := len(y)
	held := make([]bool, n)
	for j := range held {
		held[j] = s.env.Options.HeldOut(j, n) == 1
	}
	ex, ey := evalDraws(tr, tasks.TableSeed(s.env.Options.Seed, t))
	den, err := newDensity(tr)
	if err != nil {
		return nil, err
	}
	M := len(ey)
	lj := make([]float64, M*K)
	for i := range M {
		den.eval(ex[i*D:(i+1)*D], lj[i*K:(i+1)*K], nil)
	}
	par := tr.Params()
	var class []int64
	var weight, mean, psi []float64
	F := 0
	for _, c := range par.Classes {
		for _, comp := range c.Components {
			F = max(F, comp.Factors)
		}
	}
	var load []float64
	for yc, c := range par.Classes {
		for _, comp := range c.Components {
			class = append(class, int64(yc))
			weight = append(weight, comp.Weight)
			mean = append(mean, comp.Mean...)
			psi = append(psi, comp.Psi...)
			for d := range D {
				row := make([]float64, F) // zero past the component's own factors
				copy(row, comp.Loadings[d*comp.Factors:(d+1)*comp.Factors])
				load = append(load, row...)
			}
		}
	}
	C := len(class)
	for _, v := range [][]float64{x, ex, lj, weight, mean, psi, load, par.Pi} {
		for _, f := range v {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("a value of the task's arrays is %v", f)
			}
		}
	}
	return []npyArray{
		{"task_id", "<i8", []int{}, i8([]int64{t.ID})},
		{"x", "<f8", []int{n, S, S}, f8(x)},
		{"y", "<i8", []int{n}, i8(y)},
		{"heldout", "|b1", []int{n}, b1(held)},
		{"eval_x", "<f8", []int{M, S, S}, f8(ex)},
		{"eval_y", "<i8", []int{M}, i8(ey)},
		{"eval_log_joint", "<f8", []int{M, K}, f8(lj)},
		{"truth_pi", "<f8", []int{K}, f8(par.Pi)},
		{"truth_class", "<i8", []int{C}, i8(class)},
		{"truth_weight", "<f8", []int{C}, f8(weight)},
		{"truth_mean", "<f8", []int{C, S, S}, f8(mean)},
		{"truth_loadings", "<f8", []int{C, D, F}, f8(load)},
		{"truth_psi", "<f8", []int{C, S, S}, f8(psi)},
	}, nil
}

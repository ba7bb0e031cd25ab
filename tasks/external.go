package tasks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// External is a user's models' logits on a point's evaluation support, by method
// (methods.ExternalMethod of each model's name) and task id: Cells·K values a task,
// row-major cell·K+y, as a trained run's TrainedRun.Logits.
type External struct {
	Methods []string // the external methods, in the order the file first names them
	IDs     []int64  // the tasks the file covers, in ordinal order
	logits  map[string]map[int64][]float64
	model   bool // a model file (ModelExternal): runs without logits
}

// ModelExternal is a user's model given as a file (Options.ONNX) rather than as logits:
// its runs carry no logits, and the kind's ModelSource evaluates them.
func ModelExternal(methods []string, ids []int64) *External {
	return &External{Methods: methods, IDs: ids, model: true}
}

// ReadExternal reads the user's logits at loc (schemas.ScanLogits), checks them against
// point p (ids: its tasks' ids in ordinal order) and indexes them. Every model must
// give exactly one finite logit (−Inf, a cell of zero mass, is allowed) for every cell
// and class of each task it covers; the models must cover the same tasks, and these
// must be the point's first n tasks (all of them when all is set). unnamed names the
// model of rows no column names. Errors name the file, the row and what is wrong, for
// the user. It indexes row by row as it reads: a file is never held whole, a bad row
// is refused when it is read, and memory is the logits the support needs (at most
// schemas.MaxLogitsRows values), whatever the file's size. It also returns what was
// read (the files and the model names; no rows).
func ReadExternal(ctx context.Context, loc string, p Point, ids []int64, unnamed string, all bool) (*External, *schemas.Logits, error) {
	x, err := newLogitIndex(p, ids, unnamed, all)
	if err != nil {
		return nil, nil, err
	}
	l, err := schemas.ScanLogits(ctx, loc, schemas.LogitColumns{IDColumn: x.sup.IDColumn, CellColumn: x.sup.CellColumn}, x.add)
	if err != nil {
		return nil, nil, err
	}
	e, err := x.finish(l)
	return e, l, err
}

// logitIndex indexes logits row by row.
type logitIndex struct {
	sup      Support
	ids      []int64
	unnamed  string
	all      bool
	k, cells int64
	ord      map[int64]int
	names    []string       // the external method of each of the Logits' models so far
	byName   map[string]int // model index of each name in names
	rows     int64
	values   int64 // logits allocated, of all models and tasks
	e        *External
}

func newLogitIndex(p Point, ids []int64, unnamed string, all bool) (*logitIndex, error) {
	sup, _, err := SupportOf(p)
	if err != nil {
		return nil, err
	}
	x := &logitIndex{sup: sup, ids: ids, unnamed: unnamed, all: all, k: int64(p.Classes), cells: int64(sup.Cells),
		ord: make(map[int64]int, len(ids)), byName: map[string]int{}, e: &External{logits: map[string]map[int64][]float64{}}}
	for o, id := range ids {
		x.ord[id] = o
	}
	return x, nil
}

// add checks and indexes one row.
func (x *logitIndex) add(l *schemas.Logits, r schemas.LogitRow) error {
	for i := len(x.names); i < len(l.Models); i++ { // models new since the last row
		m := l.Models[i]
		if m == "" {
			m = x.unnamed
		}
		if !methods.ValidModelName(m) {
			return fmt.Errorf("logits %s: model name %s: use 1 to 40 letters, digits, '.', '_' or '-'", l.Files[0], methods.Quote(m))
		}
		name := methods.ExternalMethod(m)
		if j, dup := x.byName[name]; dup {
			return fmt.Errorf("logits %s: the models %s and %s have the same name", l.Files[0], methods.Quote(l.Models[j]), methods.Quote(l.Models[i]))
		}
		x.byName[name] = i
		x.names = append(x.names, name)
	}
	x.rows++
	sup, k, cells, e := x.sup, x.k, x.cells, x.e
	where := l.Where(r)
	_, ok := x.ord[r.ID]
	switch {
	case !ok:
		return fmt.Errorf("%s: %s %d is not a task of this point (%s)", where, sup.IDColumn, r.ID, idRange(x.ids))
	case r.Cell < 0 || r.Cell >= cells:
		return fmt.Errorf("%s: %s %d is outside the support: it has %d points, %s 0..%d", where, sup.CellColumn, r.Cell, cells, sup.CellColumn, cells-1)
	case r.Y < 0 || r.Y >= k:
		return fmt.Errorf("%s: y %d is not a class: the tasks have %d classes, y 0..%d", where, r.Y, k, k-1)
	case math.IsNaN(r.Logit) || math.IsInf(r.Logit, 1):
		return fmt.Errorf("%s: logit %v is not a finite number (−Inf, a cell of zero mass, is the only infinity allowed)", where, r.Logit)
	}
	m := x.names[r.Model]
	byID := e.logits[m]
	if byID == nil {
		byID = map[int64][]float64{}
		e.logits[m] = byID
		e.Methods = append(e.Methods, m)
	}
	lg := byID[r.ID]
	if lg == nil {
		// Each task a model covers needs all its cells·K logits, a row each: more
		// than a logits file's rows cannot be complete, so refuse before allocating.
		if x.values += cells * k; x.values > schemas.MaxLogitsRows {
			return fmt.Errorf("%s: the logits cover more (model, task) pairs than a file of at most %d rows can complete (%d logits each): "+
				"this row's model %s and task %d are one too many", where, schemas.MaxLogitsRows, cells*k, m, r.ID)
		}
		lg = make([]float64, cells*k)
		for i := range lg {
			lg[i] = math.NaN()
		}
		byID[r.ID] = lg
	}
	at := r.Cell*k + r.Y
	if !math.IsNaN(lg[at]) {
		return fmt.Errorf("%s: model %s gives task %d, %s %d, y %d a second logit", where, m, r.ID, sup.CellColumn, r.Cell, r.Y)
	}
	lg[at] = r.Logit
	return nil
}

// finish checks that every model covers the same first tasks completely.
func (x *logitIndex) finish(l *schemas.Logits) (*External, error) {
	sup, k, cells, e, ids, all := x.sup, x.k, x.cells, x.e, x.ids, x.all
	if x.rows == 0 {
		return nil, fmt.Errorf("logits %s: no rows", strings.Join(l.Files, ", "))
	}
	for _, m := range e.Methods {
		byID := e.logits[m]
		n := len(byID)
		switch {
		case all && n < len(ids):
			return nil, fmt.Errorf("logits: model %s covers %d of the %d tasks: %s %d is missing (the tasks come from a file: give logits for all of them)",
				m, n, len(ids), sup.IDColumn, firstMissing(ids, byID))
		case n < len(ids) && firstMissing(ids, byID) != ids[n]:
			return nil, fmt.Errorf("logits: model %s covers %d tasks but not the first %d: %s %d is missing (give logits for the first n tasks in id order, or all of them)",
				m, n, n, sup.IDColumn, firstMissing(ids, byID))
		case e.IDs != nil && n != len(e.IDs):
			return nil, fmt.Errorf("logits: model %s covers %d tasks, model %s %d: every model must cover the same tasks", e.Methods[0], len(e.IDs), m, n)
		}
		if e.IDs == nil {
			e.IDs = ids[:n]
		}
		for _, id := range e.IDs {
			if i := slices.IndexFunc(byID[id], math.IsNaN); i >= 0 {
				return nil, fmt.Errorf("logits: model %s gives task %d no logit at %s %d, y %d (every %s 0..%d and class 0..%d needs one)",
					m, id, sup.CellColumn, int64(i)/k, int64(i)%k, sup.CellColumn, cells-1, k-1)
			}
		}
	}
	return e, nil
}

// firstMissing is the first id of ids that byID lacks.
func firstMissing(ids []int64, byID map[int64][]float64) int64 {
	for _, id := range ids {
		if _, ok := byID[id]; !ok {
			return id
		}
	}
	return -1
}

// idRange describes a point's task ids for messages.
func idRange(ids []int64) string {
	if len(ids) > 0 && ids[0] == 0 && ids[len(ids)-1] == int64(len(ids)-1) {
		return fmt.Sprintf("ids 0..%d", len(ids)-1)
	}
	if len(ids) <= 6 {
		return fmt.Sprintf("ids %v", ids)
	}
	return fmt.Sprintf("%d ids from %d to %d", len(ids), ids[0], ids[len(ids)-1])
}

// Run is a user's model's run on task id: its logits, and NaN for what only a
// training run has.
func (e *External) Run(method string, id int64) (TrainedRun, error) {
	nan := math.NaN()
	if e.model {
		return TrainedRun{Loss: nan, PxWeight: nan, BufferInBox: nan, BufferTVTruth: nan, BufferTVModel: nan,
			KLJointAveraged: nan, RefGap: nan}, nil
	}
	lg, ok := e.logits[method][id]
	if !ok {
		return TrainedRun{}, fmt.Errorf("external model %s: no logits for task %d", method, id)
	}
	return TrainedRun{Logits: lg, Loss: nan, PxWeight: nan, BufferInBox: nan, BufferTVTruth: nan, BufferTVModel: nan,
		KLJointAveraged: nan, RefGap: nan}, nil
}

// TaskIDs are the ids of point p's tasks in ordinal order: the ordinals themselves
// for generated tasks, a file's ids (Source.Truth) for tasks from a file.
func TaskIDs(ctx context.Context, o Options, p Point) ([]int64, error) {
	ids := make([]int64, p.Tables)
	if o.TablesFrom == "" && o.TasksFrom == "" {
		for i := range ids {
			ids[i] = int64(i)
		}
		return ids, nil
	}
	src, err := MustOf(p.Task).Open(ctx, Env{Options: o}, p)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	for i := range ids {
		if ids[i], _, err = src.Truth(int64(i)); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// WithoutExternal is p without its external methods: the point its trainer sees.
func (p Point) WithoutExternal() Point {
	p.Methods = slices.DeleteFunc(slices.Clone(p.Methods), methods.IsExternal)
	return p
}

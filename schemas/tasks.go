package schemas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/models/prob"
)

// The reader of the user's own 2-D tasks (--tasks_from, issue 9): Gaussian mixtures,
// one row per component, read and validated like a tables file (the same formats,
// checks of hostile Parquet files and error style: see userFile).

// Limits of a tasks file (--tasks_from), enforced while it is read, as for a tables
// file.
const (
	// MaxTasksFileRows bounds the rows of a tasks file, one row per component: all
	// its tasks' components together. Validation holds about 100 bytes a row (the
	// parsed row and the task's copy of its component), so a file at the limit
	// needs about 1 GB besides its bytes.
	MaxTasksFileRows = 10_000_000
	// MaxTasksFileBytes bounds the size of a tasks file, which is read whole into
	// memory: 1 GiB, ample for MaxTasksFileRows rows of CSV.
	MaxTasksFileBytes = 1 << 30
)

// TasksWeightTolerance is how far from 1 the weights of one task may sum: the
// tolerance of prob.NewMixture, equal to that of a table's cells (prob.SumTolerance).
const TasksWeightTolerance = prob.MixtureTolerance

// The limits in force: variables only so that tests can lower them.
var (
	maxTasksRows  int64 = MaxTasksFileRows
	maxTasksBytes int64 = MaxTasksFileBytes
)

// TaskRow is one component of a user's 2-D task: the rows of a --tasks_from file.
// Weight is the joint weight of the component and its class (a task's weights sum to
// 1); the component is the isotropic Gaussian with mean (Mu0, Mu1) and standard
// deviation SD. Component numbers the components of a class (any distinct
// non-negative numbers).
type TaskRow struct {
	TaskID    int64   `parquet:"task_id" json:"task_id"`
	Y         int64   `parquet:"y" json:"y"`
	Component int64   `parquet:"component" json:"component"`
	Weight    float64 `parquet:"weight" json:"weight"`
	Mu0       float64 `parquet:"mu0" json:"mu0"`
	Mu1       float64 `parquet:"mu1" json:"mu1"`
	SD        float64 `parquet:"sd" json:"sd"`
}

// taskColumns are the columns of a tasks file, in TaskRow's order.
var taskColumns = []string{"task_id", "y", "component", "weight", "mu0", "mu1", "sd"}

// tasksFile is the tasks file of --tasks_from: one row per component.
var tasksFile = userFile{kind: "tasks", row: "component", columns: taskColumns, ints: 3,
	maxRows: &maxTasksRows, maxBytes: &maxTasksBytes}

// TaskRows flattens tasks into TaskRow components, tasks in the given order with
// ids[i] the id of tasks[i], each task's components (tasks[i].Components(0): for
// moons and circles, their quadrature) in class order, numbered from 0 within their
// class. ParseTasks of these rows gives the tasks back as mixtures.
func TaskRows(ids []int64, tasks []prob.Task2D) []TaskRow {
	if len(ids) != len(tasks) {
		panic(fmt.Sprintf("schemas: TaskRows of %d ids and %d tasks", len(ids), len(tasks)))
	}
	var rows []TaskRow
	for i, t := range tasks {
		comps := t.Components(0)
		slices.SortStableFunc(comps, func(a, b prob.Component) int { return cmp.Compare(a.Y, b.Y) })
		var n int64
		for j, c := range comps {
			if j > 0 && c.Y != comps[j-1].Y {
				n = 0
			}
			rows = append(rows, TaskRow{TaskID: ids[i], Y: int64(c.Y), Component: n,
				Weight: c.Weight, Mu0: c.Mu0, Mu1: c.Mu1, SD: c.SD})
			n++
		}
	}
	return rows
}

// ReadTasks reads the user's 2-D tasks from loc: a path or URL of a .csv or .parquet
// file (chosen by extension) with exactly the columns task_id, y, component, weight,
// mu0, mu1, sd (CSV: a header row, in any column order; Parquet: integer columns
// INT32 or INT64, the others DOUBLE or FLOAT), one row per component. The file must
// hold at most MaxTasksFileRows rows in at most MaxTasksFileBytes bytes, and:
//
//   - every value is finite, weight ≥ 0 and sd > 0, y ≥ 0 and component ≥ 0;
//   - (task_id, y, component) is unique;
//   - each task's classes are 0..K−1, each with a component and a positive weight
//     (K = its largest y + 1, 2 ≤ K ≤ prob.MaxTaskClasses), and every task has the
//     same K;
//   - each task's weights sum to 1 within TasksWeightTolerance.
//
// It returns the tasks (prob.NewMixture of each task's components, ordered by class
// and component, so the file's row order does not matter) sorted by id, and their
// ids: ids[i] is the task_id of tasks[i]. Errors name the file and the problem, with
// the CSV line or the Parquet row, or the task.
func ReadTasks(ctx context.Context, loc string) (tasks []prob.Task2D, ids []int64, err error) {
	key, o, err := tasksFile.open(ctx, loc)
	if err != nil {
		return nil, nil, err
	}
	defer o.Close()
	tasks, ids, err = parseTasks(key, objectSource(o))
	if err != nil {
		return nil, nil, fmt.Errorf("tasks file %s: %w", loc, err)
	}
	return tasks, ids, nil
}

// ParseTasks parses and validates the bytes of a tasks file as ReadTasks does; the
// extension of name (.csv or .parquet) chooses the format. It never panics, and it
// allocates in proportion to the rows it really reads, at most MaxTasksFileRows.
func ParseTasks(name string, data []byte) (tasks []prob.Task2D, ids []int64, err error) {
	return parseTasks(name, bytesSource(data))
}

// parseTasks parses the tasks file src, streamed (CSV) or read at offsets (Parquet).
func parseTasks(name string, src userSource) (tasks []prob.Task2D, ids []int64, err error) {
	rows, _, err := parseUserRows(tasksFile, name, src, newTaskRow)
	if err != nil {
		return nil, nil, err
	}
	return assembleTasks(rows)
}

// taskRow is one parsed row with where it came from: its CSV line or Parquet row.
type taskRow struct {
	TaskRow
	at int64
}

// newTaskRow makes a taskRow of the values of a row of tasksFile.
func newTaskRow(ints []int64, floats []float64, at int64) taskRow {
	return taskRow{TaskRow: TaskRow{TaskID: ints[0], Y: ints[1], Component: ints[2],
		Weight: floats[0], Mu0: floats[1], Mu1: floats[2], SD: floats[3]}, at: at}
}

func (r taskRow) key() rowKey { return rowKey{r.TaskID, r.Y, r.Component} }
func (r taskRow) pos() int64  { return r.at }

func (r taskRow) duplicate(unit string, first int64) error {
	return fmt.Errorf("%s %d: duplicate component (task %d, y=%d, component=%d), first at %s %d",
		unit, r.at, r.TaskID, r.Y, r.Component, unit, first)
}

// check checks the values of one row on their own; unit names where it came from
// ("line" or "row").
func (r taskRow) check(unit string) error {
	where := fmt.Sprintf("%s %d", unit, r.at)
	switch {
	case r.Y < 0:
		return fmt.Errorf("%s: y is negative (%d): classes are 0..K-1", where, r.Y)
	case r.Y >= prob.MaxTaskClasses:
		return fmt.Errorf("%s: y is %d: a task has at most %d classes (y in 0..%d)", where, r.Y, prob.MaxTaskClasses, prob.MaxTaskClasses-1)
	case r.Component < 0:
		return fmt.Errorf("%s: component is negative (%d)", where, r.Component)
	}
	for i, v := range [4]float64{r.Weight, r.Mu0, r.Mu1, r.SD} {
		name := taskColumns[3+i]
		switch {
		case math.IsNaN(v):
			return fmt.Errorf("%s: %s is NaN", where, name)
		case math.IsInf(v, 0):
			return fmt.Errorf("%s: %s is %v", where, name, v)
		}
	}
	switch {
	case r.Weight < 0:
		return fmt.Errorf("%s: weight is negative (%g)", where, r.Weight)
	case r.SD <= 0:
		return fmt.Errorf("%s: sd is %g, want > 0", where, r.SD)
	}
	return nil
}

// assembleTasks groups rows, each checked and none a duplicate (parseUserRows), into
// tasks sorted by id. It sorts rows in place.
func assembleTasks(rows []taskRow) ([]prob.Task2D, []int64, error) {
	if len(rows) == 0 {
		return nil, nil, errors.New("no tasks: the file has no rows")
	}
	// Sorted by task, class and component.
	slices.SortFunc(rows, func(a, b taskRow) int { return a.key().compare(b.key()) })
	var tasks []prob.Task2D
	var ids []int64
	var comps []prob.Component // scratch: NewMixture copies it
	for len(rows) > 0 {
		id := rows[0].TaskID
		n := 1
		for n < len(rows) && rows[n].TaskID == id {
			n++
		}
		run := rows[:n]
		rows = rows[n:]
		k := int(run[n-1].Y) + 1 // sorted by class; y checked in [0, MaxTaskClasses)
		var class int            // the next class expected
		mass := make([]float64, k)
		sum := 0.0
		comps = comps[:0]
		for _, r := range run {
			y := int(r.Y)
			if y > class {
				return nil, nil, fmt.Errorf("task %d has no component of class %d: its classes must be 0..K-1, K = max y + 1 = %d", id, class, k)
			}
			class = y + 1
			mass[y] += r.Weight
			sum += r.Weight
			comps = append(comps, prob.Component{Y: y, Weight: r.Weight, Mu0: r.Mu0, Mu1: r.Mu1, SD: r.SD})
		}
		switch {
		case k < 2:
			return nil, nil, fmt.Errorf("task %d has only class 0: want at least 2 classes (y in 0..K-1)", id)
		case len(tasks) > 0 && tasks[0].K != k:
			return nil, nil, fmt.Errorf("task %d has K=%d classes but task %d has K=%d: all tasks must have the same number of classes",
				id, k, ids[0], tasks[0].K)
		case math.Abs(sum-1) > TasksWeightTolerance: // summed in NewMixture's order: the same verdict
			return nil, nil, fmt.Errorf("task %d: weights sum to %.10g, want 1 within %g", id, sum, TasksWeightTolerance)
		}
		for y, m := range mass {
			if m == 0 {
				return nil, nil, fmt.Errorf("task %d: class %d has weight 0 (its components' weights are all 0), want > 0", id, y)
			}
		}
		t, err := prob.NewMixture(id, comps)
		if err != nil { // checked above: not reached
			return nil, nil, err
		}
		tasks = append(tasks, t)
		ids = append(ids, id)
	}
	return tasks, ids, nil
}

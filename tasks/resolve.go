package tasks

import (
	"reflect"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// TaskTable is the task of random joint tables.
const TaskTable = schemas.TaskTable

// TaskFile is the task of points whose 2-D tasks come from --tasks_from.
const TaskFile = "file"

// GeneratorFile marks tables read from --tables_from.
const GeneratorFile = "file"

// Defaults sets the defaults of the point's kind (Kind.Defaults) of the axes given
// reports as not set by the user; an unknown task is left for Validate to report.
func (p *Point) Defaults(given func(axis string) bool) {
	if k, err := Of(p.Task); err == nil {
		k.Defaults(p, given)
	}
}

// Resolve sets a point's derived values: options no method of the point reads (the
// method table's Options) are zeroed, so the result columns show only what applied,
// then its kind's (Kind.Resolve). Call it before Validate; an unknown task is left for
// Validate to report.
func (p *Point) Resolve() {
	if p.Task == "" {
		p.Task = TaskTable
	}
	for _, a := range schemas.AxisDefs { // a method's option no method of the point reads
		key := a.Key()
		if len(methods.Using(key)) > 0 && !methods.Uses(p.Methods, key) {
			if u, ok := a.Field.(interface{ Unset(*schemas.Grid) }); ok {
				u.Unset(&p.Grid)
			} else {
				a.Field.Set(&p.Grid, reflect.Zero(reflect.TypeOf(a.Field.Default())).Interface())
			}
		}
	}
	if k, err := Of(p.Task); err == nil {
		k.Resolve(p)
	}
}

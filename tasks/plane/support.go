package plane

import (
	"context"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// Support: the G×G evaluation grid's cells (learned_grid/'s task_id and cell), each
// at its centre.
func (Kind) Support(p tasks.Point) tasks.Support {
	return tasks.Support{IDColumn: "task_id", CellColumn: "cell", Cells: p.XValues, Columns: []string{"x0", "x1"},
		About: "cell c = i·G + j of the G×G grid over [−box, box]², centred at (x0, x1); q(x, y) is read as exp f(centre)[y] times the cell's area, normalised over the cells and classes"}
}

// WriteSupport writes the grid's cells and centres.
func (Kind) WriteSupport(ctx context.Context, b *blob.Bucket, p tasks.Point, key string) error {
	g := evalGrid(p)
	rows := make([]schemas.SupportRow2D, g.Cells())
	for c := range rows {
		rows[c] = schemas.SupportRow2D{Cell: int64(c), X0: g.Centre(c / g.G), X1: g.Centre(c % g.G)}
	}
	return schemas.WriteParquet(ctx, b, key, rows)
}

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
		About: "cell c = i·G + j of the G×G grid over [−box, box]², centred at (x0, x1); a cell's logit is the log of the model's mean of exp f(x)[y] over the cell (jemcheck's own runs use the 3×3 Gauss–Legendre rule: offsets ½ and ½ ± √(3/5)/2 of a cell width from the cell's corner, weights 5/18, 8/18, 5/18 per axis; f at the centre is the one-point rule), and q(cell, y) is its softmax over all cells and classes"}
}

// WriteSupport writes the grid's cells and centres.
func (Kind) WriteSupport(ctx context.Context, b *blob.Bucket, _ tasks.Options, p tasks.Point, key string) error {
	g := evalGrid(p)
	rows := make([]schemas.SupportRow2D, g.Cells())
	for c := range rows {
		rows[c] = schemas.SupportRow2D{Cell: int64(c), X0: g.Centre(c / g.G), X1: g.Centre(c % g.G)}
	}
	return schemas.WriteParquet(ctx, b, key, rows)
}

package table

import (
	"context"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// Support: a table's x values 0..X−1, its learned/ columns table_id and x.
func (Kind) Support(p tasks.Point) tasks.Support {
	return tasks.Support{IDColumn: "table_id", CellColumn: "x", Cells: p.XValues,
		About: "x is a value of a finite set 0..X-1 (the model sees it through the point's x encoding, or as a one-hot)"}
}

// WriteSupport writes the x values.
func (Kind) WriteSupport(ctx context.Context, b *blob.Bucket, _ tasks.Options, p tasks.Point, key string) error {
	rows := make([]schemas.SupportRow, p.XValues)
	for x := range rows {
		rows[x].X = int64(x)
	}
	return schemas.WriteParquet(ctx, b, key, rows)
}

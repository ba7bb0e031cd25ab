package blocks

import (
	"context"
	"fmt"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// Support: each task's NumEvalPoints evaluation points (EvalPoints), on which a model
// outside jemcheck gives its logits; they differ between tasks.
func (Kind) Support(p tasks.Point) tasks.Support {
	return tasks.Support{IDColumn: "task_id", CellColumn: "point", Cells: NumEvalPoints, Columns: []string{"block", "x0", "x1"}, PerTask: true,
		About: fmt.Sprintf("point i of a task is x in R^D, D = 2B, written one row per block b: (x0, x1) = (x_2b, x_2b+1); points 0..%d are exact draws of the truth (uniform within their grid cells), points %d..%d draws of ½ truth + ½ uniform on the box, for the importance-sampling estimate of log Z",
			MCDraws-1, MCDraws, NumEvalPoints-1)}
}

// SupportRowBlocks is one block of one evaluation point of a block task.
type SupportRowBlocks struct {
	TaskID int64   `parquet:"task_id" json:"task_id"`
	Point  int64   `parquet:"point" json:"point"`
	Block  int64   `parquet:"block" json:"block"`
	X0     float64 `parquet:"x0" json:"x0"`
	X1     float64 `parquet:"x1" json:"x1"`
}

// WriteSupport writes every task's evaluation points, task by task.
func (Kind) WriteSupport(ctx context.Context, b *blob.Bucket, o tasks.Options, p tasks.Point, key string) error {
	ids, err := tasks.TaskIDs(ctx, o, p)
	if err != nil {
		return err
	}
	return schemas.WriteParquetStream(ctx, b, key, func(write func([]SupportRowBlocks) error) error {
		for ord, id := range ids {
			set, err := EvalPoints(o.Seed, p, int64(ord))
			if err != nil {
				return fmt.Errorf("task %d: %w", id, err)
			}
			B := set.Dim / 2
			rows := make([]SupportRowBlocks, 0, (set.M+set.N)*B)
			for i := range set.M + set.N {
				for bb := range B {
					rows = append(rows, SupportRowBlocks{TaskID: id, Point: int64(i), Block: int64(bb),
						X0: set.X[i*set.Dim+2*bb], X1: set.X[i*set.Dim+2*bb+1]})
				}
			}
			if err := write(rows); err != nil {
				return err
			}
		}
		return nil
	})
}

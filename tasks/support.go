package tasks

import (
	"context"
	"fmt"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
)

// Support is a point's evaluation support as a user's model sees it (pipelines/export
// writes it, pipelines/evaluate reads a model's logits on it): every task of the point
// is evaluated on Cells points, numbered 0..Cells−1 in the column CellColumn, and a
// logits file names a task by IDColumn (the column the kind's own outputs use:
// "table_id" for tables, "task_id" for 2-D tasks).
type Support struct {
	IDColumn   string
	CellColumn string
	Cells      int
	// Columns are the columns of the support file (points/point-NNNN.parquet) after
	// CellColumn: the coordinates of each point ("x0", "x1"; "bits").
	Columns []string
	// About is one sentence on what a point of the support is, for export.json.
	About string
	// PerTask: the points differ between tasks (the support file then has IDColumn).
	PerTask bool
}

// Supporter is a kind whose tasks a user's model can be evaluated on (pipelines/export
// and pipelines/evaluate): its Support and the writer of its support file (the points
// of every task of the point, or their common points).
type Supporter interface {
	Support(p Point) Support
	WriteSupport(ctx context.Context, b *blob.Bucket, o Options, p Point, key string) error
}

// SupportOf is the support of point p, or an error naming the kind that has none.
func SupportOf(p Point) (Support, Supporter, error) {
	k, err := Of(p.Task)
	if err != nil {
		return Support{}, nil, err
	}
	s, ok := k.(Supporter)
	if !ok {
		return Support{}, nil, fmt.Errorf("%s have no evaluation support a model outside jemcheck can be evaluated on yet", k.Noun())
	}
	return s.Support(p), s, nil
}

// Arrayer is a kind an export writes as numpy arrays, one .npz file per task, where it
// has no finite support to give logits on (images: a user's model is judged as an ONNX
// classifier, pipelines/evaluate --onnx). Its sources are ArraySources.
type Arrayer interface {
	// ArraysPath is the .npz file of task id of point p.
	ArraysPath(p Point, taskID int64) string
	// ArraysAbout names each array of a task's file: its shape, dtype and meaning.
	ArraysAbout(p Point, o Options) map[string]string
	// ONNXAbout says how a user's classifier is given for the point's tasks.
	ONNXAbout(p Point) schemas.ExportONNX
}

// ArraySource is the Source of an Arrayer: it writes the .npz files of a block's tasks
// (Arrayer.ArraysPath) and returns their keys.
type ArraySource interface {
	WriteArrays(ctx context.Context, b Block, bucket *blob.Bucket) ([]string, error)
}

// Exportable checks that an export can write point p's tasks: its kind has an
// evaluation support (Supporter) or is written as arrays (Arrayer).
func Exportable(p Point) error {
	k, err := Of(p.Task)
	if err != nil {
		return err
	}
	if _, ok := k.(Arrayer); ok {
		return nil
	}
	_, _, err = SupportOf(p)
	return err
}

// SupportPath is the support file of a point: points/point-NNNN.parquet.
func SupportPath(pointID int64) string { return fmt.Sprintf("points/point-%04d.parquet", pointID) }

package tasks

import (
	"context"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// ONNXPlaceholder stands for a task's id in the location of a user's models
// (Options.ONNX, pipelines/evaluate --onnx): models/model-{task}.onnx names one model
// per task. A location without it is one model for every task.
const ONNXPlaceholder = "{task}"

// ModelLocation is the model of task id: loc with every ONNXPlaceholder replaced by
// the id in decimal (loc itself when it has none).
func ModelLocation(loc string, taskID int64) string {
	return strings.ReplaceAll(loc, ONNXPlaceholder, strconv.FormatInt(taskID, 10))
}

// ModelKind is a kind whose tasks judge a user's model given as a file (an ONNX
// classifier, Options.ONNX) rather than as logits on a support: images, where the
// support is R^D and the evaluation needs the model as a function (its logits on fresh
// exact draws, and the input gradient of LSE_y f(x)[y] for the AIS of log Z).
type ModelKind interface {
	// CheckModel reads the model at loc and checks it against the task of ordinal o
	// of point p before the run (its input size, its K logits, finite outputs, an
	// input gradient): the error, for the user, says what is wrong.
	CheckModel(ctx context.Context, opts Options, p Point, o int64, loc string) error
}

// ModelSource is the Source of a ModelKind: it evaluates the run t of a user's model
// (an external method's run, with no logits) with the model at loc (the task's own:
// ModelLocation), into the same columns as the kind's own runs.
type ModelSource interface {
	EvaluateModel(ctx context.Context, t Trained, loc string) (schemas.ResultRow, error)
}

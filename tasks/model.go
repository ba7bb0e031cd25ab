package tasks

import (
	"context"

	"github.com/jemcheck/jemcheck/schemas"
)

// ModelKind is a kind whose tasks judge a user's model given as a file (an ONNX
// classifier, Options.ONNX) rather than as logits on a support: images, where the
// support is R^D and the evaluation needs the model as a function (its logits on fresh
// exact draws, and the input gradient of LSE_y f(x)[y] for the AIS of log Z).
type ModelKind interface {
	// CheckModel reads the model at loc and checks it against point p before the run
	// (its input size, its K logits, finite outputs, an input gradient): the error,
	// for the user, says what is wrong.
	CheckModel(ctx context.Context, o Options, p Point, loc string) error
}

// ModelSource is the Source of a ModelKind: it evaluates the run t of a user's model
// (an external method's run, with no logits) with the model at loc, into the same
// columns as the kind's own runs.
type ModelSource interface {
	EvaluateModel(ctx context.Context, t Trained, loc string) (schemas.ResultRow, error)
}

package stages

import (
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	_ "github.com/jemcheck/jemcheck/tasks/all" // every task kind
	"github.com/jemcheck/jemcheck/verdict"
)

// The stages' configuration and elements are the Beam-free core's (package tasks); the
// stages are thin DoFn and composite wrappers over it.
type (
	Options      = tasks.Options
	Point        = tasks.Point
	BlockRef     = tasks.BlockRef
	Block        = tasks.Block
	TrainedBlock = tasks.TrainedBlock
	TrainedRun   = tasks.TrainedRun
	ResultBlock  = schemas.ResultBlock
	LearnedBlock = tasks.LearnedBlock
	Learned      = tasks.Learned
	CurvePoint   = tasks.CurvePoint
	Thresholds   = verdict.Thresholds
	PointAcc     = verdict.PointAcc
)

// DefaultThresholds are the verdict's documented defaults.
func DefaultThresholds() Thresholds { return verdict.DefaultThresholds() }

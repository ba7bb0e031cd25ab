package tasks

import "github.com/jemcheck/jemcheck/schemas"

// Point is one grid point of an experiment: its id, its values (schemas.Grid, the one
// home of the grid's axes), how many tables it draws and which methods train on them.
// The control pipeline has exactly one point; a sweep has the Cartesian product of its
// spec's axes. Points are the stages' configuration (DoFns hold them in exported
// fields); elements carry only a point id.
type Point struct {
	ID int64 `json:"point_id"`
	schemas.Grid
	Tables  int      `json:"tables"`  // tables drawn at this point
	Methods []string `json:"methods"` // subset of baseline, jem, oracle
}

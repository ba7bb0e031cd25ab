package plane

import (
	"testing"

	"github.com/jemcheck/jemcheck/internal/tasktest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// runPoint is the result rows of every task of a 2-D point run in one block.
func runPoint(t *testing.T, p tasks.Point, o tasks.Options) []schemas.ResultRow {
	t.Helper()
	_, _, rb, _ := tasktest.Run(t, p, o)
	return rb.Rows
}

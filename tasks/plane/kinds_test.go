package plane

// The table kind, for the tests that validate a point of either kind.
import _ "github.com/jemcheck/jemcheck/tasks/table"

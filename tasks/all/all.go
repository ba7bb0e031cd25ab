// Package all registers every task kind: a program imports it once (the stages do), and
// a new kind is one import line here.
package all

import (
	_ "github.com/jemcheck/jemcheck/methods/all"  // every training method
	_ "github.com/jemcheck/jemcheck/tasks/bits"   // binary tables in D dimensions
	_ "github.com/jemcheck/jemcheck/tasks/blocks" // block tasks in D = 2B dimensions
	_ "github.com/jemcheck/jemcheck/tasks/images" // labelled images with an exact density (CNN JEM)
	_ "github.com/jemcheck/jemcheck/tasks/plane"  // continuous 2-D densities
	_ "github.com/jemcheck/jemcheck/tasks/table"  // random joint tables
)

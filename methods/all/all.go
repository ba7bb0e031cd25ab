// Package all registers every training method (methods/<name>): import it for its side
// effect, as tasks/all registers the task kinds. A new method is its package and one
// line here.
package all

import (
	_ "github.com/jemcheck/jemcheck/methods/baseline"
	_ "github.com/jemcheck/jemcheck/methods/drl"
	_ "github.com/jemcheck/jemcheck/methods/dsm"
	_ "github.com/jemcheck/jemcheck/methods/ed"
	_ "github.com/jemcheck/jemcheck/methods/jarzynski"
	_ "github.com/jemcheck/jemcheck/methods/jem"
	_ "github.com/jemcheck/jemcheck/methods/jemconverged"
	_ "github.com/jemcheck/jemcheck/methods/mala"
	_ "github.com/jemcheck/jemcheck/methods/nce"
	_ "github.com/jemcheck/jemcheck/methods/oracle"
	_ "github.com/jemcheck/jemcheck/methods/pcd"
	_ "github.com/jemcheck/jemcheck/methods/pcdexact"
	_ "github.com/jemcheck/jemcheck/methods/sgld"
	_ "github.com/jemcheck/jemcheck/methods/shortrun"
	_ "github.com/jemcheck/jemcheck/methods/snl"
	_ "github.com/jemcheck/jemcheck/methods/tre"
)

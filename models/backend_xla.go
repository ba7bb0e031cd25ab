//go:build xla

package models

// The XLA backend (the GPU path) needs cgo and the PJRT plugins at run time; it is only
// linked in with `-tags xla`.
import _ "github.com/gomlx/gomlx/backends/xla"

// xlaCompiledIn reports whether the XLA backend is linked into this binary (build tag "xla").
const xlaCompiledIn = true

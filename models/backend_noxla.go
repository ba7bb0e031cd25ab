//go:build !xla

package models

// xlaCompiledIn reports whether the XLA backend is linked into this binary (build tag "xla").
const xlaCompiledIn = false

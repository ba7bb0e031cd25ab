// Package pcdexact is JEM with exact draws from q(x) for the log q(x) gradient: the
// sampler's gradient noise without its bias (tables).
package pcdexact

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/pcd"
)

// Name is the method's name.
const Name = "pcd-exact"

func init() {
	methods.Register(methods.Method{Name: Name, Order: 6, Sampler: true, KernelOnly: true, KeepsBuffer: true,
		Doc:   "JEM with exact draws from q(x) for the log q(x) gradient: the sampler's gradient noise without its bias",
		Hooks: []methods.Hook{methods.Tables.Hook(pcd.Table(true))}})
}

//go:build !linux

package kernel

// threadCPU is NaN where the OS gives no per-thread CPU clock this package reads.
func threadCPU() float64 { return nan }

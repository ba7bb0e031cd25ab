package launch

import (
	"os"
	"strings"
)

// Asynchronous preemption is turned off for every jemcheck binary (they all import
// launch): with GOEXPERIMENT=simd the runtime's asynchronous preemption restores the
// AVX-512 registers and leaves their upper state dirty, after which scalar float64 code
// on that thread (math.Exp, math.Erfc: the truth, the true densities of the promises)
// runs ~70× slower (models/kernel: BenchmarkScalarClean 560 ns an Exp with it on,
// 7.9 ns with GODEBUG=asyncpreemptoff=1). The kernels' loops call functions at every
// vector primitive, so goroutines are still preempted there. The runtime re-reads
// GODEBUG when it is set, and a user's own asyncpreemptoff setting wins.
func init() {
	g := os.Getenv("GODEBUG")
	if strings.Contains(g, "asyncpreemptoff=") {
		return
	}
	if g != "" {
		g += ","
	}
	os.Setenv("GODEBUG", g+"asyncpreemptoff=1")
}

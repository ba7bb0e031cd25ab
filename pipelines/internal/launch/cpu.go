package launch

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/cpu"

	"github.com/jemcheck/jemcheck/models/kernel"
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

// portableNote is the line a run of the portable build prints once on a CPU that has
// AVX-512, where the GOEXPERIMENT=simd build gives the same bits several times faster
// (docs/performance.md: 2×2 JEM 58,695 against 334,097 runs per CPU-second, 5.7×; an
// SGLD-JEM step 3.32 against 0.227 ms, 14.6×); "" otherwise.
func portableNote(build string, avx512 bool) string {
	if build != "portable" || !avx512 {
		return ""
	}
	return "note: this is the portable build; this CPU has AVX-512, on which the GOEXPERIMENT=simd build trains " +
		"5.7× (tables) to 15× (2-D samplers) faster with the same results: GOEXPERIMENT=simd go build -o bin/ ./pipelines/... " +
		"(docs/performance.md)"
}

var portableNoteOnce sync.Once

// notePortable prints portableNote once per process on w.
func notePortable(w io.Writer, pipeline string) {
	portableNoteOnce.Do(func() {
		if n := portableNote(kernel.Build, cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ); n != "" {
			fmt.Fprintf(w, "%s: %s\n", pipeline, n)
		}
	})
}

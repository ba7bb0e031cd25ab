package kernel

import "testing"

var sink float32

// BenchmarkPeakScalar is the scalar float32 multiply-add rate of one core (8
// independent chains), the ceiling of the portable build.
func BenchmarkPeakScalar(b *testing.B) {
	const iters = 1 << 16
	x, y := float32(0.999999), float32(1e-7)
	a0, a1, a2, a3, a4, a5, a6, a7 := float32(0), float32(1), float32(2), float32(3), float32(4), float32(5), float32(6), float32(7)
	start := cpuSeconds()
	for range b.N {
		for range iters {
			a0, a1, a2, a3 = madd(a0, x, y), madd(a1, x, y), madd(a2, x, y), madd(a3, x, y)
			a4, a5, a6, a7 = madd(a4, x, y), madd(a5, x, y), madd(a6, x, y), madd(a7, x, y)
		}
	}
	cpu := cpuSeconds() - start
	sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
	if cpu > 0 {
		b.ReportMetric(float64(b.N)*iters*8*2/cpu/1e9, "GFLOP/cpu_s")
	}
}

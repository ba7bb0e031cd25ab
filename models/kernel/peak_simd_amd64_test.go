//go:build goexperiment.simd && amd64

package kernel

import (
	"simd/archsimd"
	"testing"
)

// BenchmarkPeak measures this core's float32 arithmetic peak with AVX-512: 12
// independent 16-lane accumulators, fused multiply-add (fma: 2 FLOP per lane and
// instruction) and separate multiply and add (muladd: what the kernels use).
func BenchmarkPeak(b *testing.B) {
	if !SIMD {
		b.Skip("no AVX-512")
	}
	const iters = 1 << 16
	x, y := bc(0.999999), bc(1e-7)
	for _, fused := range []bool{true, false} {
		name := "muladd"
		if fused {
			name = "fma"
		}
		b.Run(name, func(b *testing.B) {
			var a [12]archsimd.Float32x16
			for i := range a {
				a[i] = bc(float32(i))
			}
			a0, a1, a2, a3, a4, a5 := a[0], a[1], a[2], a[3], a[4], a[5]
			a6, a7, a8, a9, a10, a11 := a[6], a[7], a[8], a[9], a[10], a[11]
			start := cpuSeconds()
			for range b.N {
				for range iters {
					if fused {
						a0, a1, a2, a3 = a0.MulAdd(x, y), a1.MulAdd(x, y), a2.MulAdd(x, y), a3.MulAdd(x, y)
						a4, a5, a6, a7 = a4.MulAdd(x, y), a5.MulAdd(x, y), a6.MulAdd(x, y), a7.MulAdd(x, y)
						a8, a9, a10, a11 = a8.MulAdd(x, y), a9.MulAdd(x, y), a10.MulAdd(x, y), a11.MulAdd(x, y)
					} else {
						a0, a1, a2, a3 = a0.Mul(x).Add(y), a1.Mul(x).Add(y), a2.Mul(x).Add(y), a3.Mul(x).Add(y)
						a4, a5, a6, a7 = a4.Mul(x).Add(y), a5.Mul(x).Add(y), a6.Mul(x).Add(y), a7.Mul(x).Add(y)
						a8, a9, a10, a11 = a8.Mul(x).Add(y), a9.Mul(x).Add(y), a10.Mul(x).Add(y), a11.Mul(x).Add(y)
					}
				}
			}
			cpu := cpuSeconds() - start
			s := a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Add(a8).Add(a9).Add(a10).Add(a11)
			var out [16]float32
			s.Store(&out)
			sink = out[0]
			if cpu > 0 {
				b.ReportMetric(float64(b.N)*iters*12*16*2/cpu/1e9, "GFLOP/cpu_s")
			}
		})
	}
}

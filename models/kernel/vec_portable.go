//go:build !(goexperiment.simd && amd64)

package kernel

// The portable build: the primitives are the scalar loops of vec_generic.go.

// SIMD reports whether the primitives run on vector instructions (the vector build,
// GOEXPERIMENT=simd on amd64, on a CPU with AVX-512).
const SIMD = false

// Build names the kernels' build: "portable" here, "avx512" in the vector build.
const Build = "portable"

func vAdd(dst, a, b []float32)                           { gAdd(dst, a, b) }
func vSub(dst, a, b []float32)                           { gSub(dst, a, b) }
func vMul(dst, a, b []float32)                           { gMul(dst, a, b) }
func vScaleAdd(dst, a []float32, s float32, b []float32) { gScaleAdd(dst, a, s, b) }
func vDot(a, b []float32) float32                        { return gDot(a, b) }
func vDot2(w, a []float32) (float32, float32)            { return gDot2(w, a) }
func vMulSub(dst, a, w []float32)                        { gMulSub(dst, a, w) }
func vExp(dst, a []float32)                              { gExp(dst, a) }
func vTanh(dst, a []float32)                             { gTanh(dst, a) }
func vSoftmax(dst, src []float32, G, L int)              { gSoftmax(dst, src, G, L) }
func vSoftmaxLSE(dst, lse, src []float32, G, L int)      { gSoftmaxLSE(dst, lse, src, G, L) }
func vAllFinite(a []float32) bool                        { return gAllFinite(a) }
func vRowSum(dst, src []float32, G, L int)               { gRowSum(dst, src, G, L) }
func vGradCE(dst, s, c, rw []float32, K, L int)          { gGradCE(dst, s, c, rw, K, L) }
func vGradMix(dst, s, q, c, rw, w []float32, K, L int)   { gGradMix(dst, s, q, c, rw, w, K, L) }
func vMMForward(z, h, W, b []float32, X, in, out, L int) {
	gMMForward(z, h, W, b, X, in, out, L)
}
func vMMGradW(dW, h, d []float32, X, in, out, L int) { gMMGradW(dW, h, d, X, in, out, L) }
func vMMBackTanh(dst, d, W, h []float32, X, in, out, L int) {
	gMMBackTanh(dst, d, W, h, X, in, out, L)
}
func vSumX(dst, d []float32, X, out, L int, weighted bool) { gSumX(dst, d, X, out, L, weighted) }
func vAdam(theta, m, v, g, lrT []float32, epsT float32, L int) {
	gAdam(theta, m, v, g, lrT, epsT, L)
}
func vGemmFwd(z, W, b, h []float32, in, out, P int)  { gGemmFwd(z, W, b, h, in, out, P) }
func vGemmBackIn(dh, W, d []float32, in, out, P int) { gGemmBackIn(dh, W, d, in, out, P) }
func vGemmGradW(dW, h, d []float32, in, out, P int)  { gGemmGradW(dW, h, d, in, out, P) }
func vGemmBackInTanh(dh, W, d, h []float32, in, out, P int) {
	gGemmBackInTanh(dh, W, d, h, in, out, P)
}
func vMulOneMinusSq(dst, a, h []float32) { gMulOneMinusSq(dst, a, h) }

func vSumP(dst, d []float32, out, P int) { gSumP(dst, d, out, P) }
func vAdamFlat(theta, m, v, g []float32, lrT, epsT float32) {
	gAdamFlat(theta, m, v, g, lrT, epsT)
}

// ClearUpper is a no-op in the portable build (see the vector build's).
func ClearUpper() {}

// Package avx clears the AVX upper register state for scalar float64 code. In the
// GOEXPERIMENT=simd build on amd64, scalar float64 code (math.Exp, math.Log) runs 10 to
// 100 times slower while the upper state is dirty (measured: 2M math.Exp in 167 ms against
// 17 ms, a binary table's truth at D = 18 in 1.47 s against 22 ms); pure-maths loops
// (models/prob) call ClearUpper after allocating and every few thousand iterations.
// models/kernel's ClearUpper is the same for its callers.
package avx

package mfa

import (
	"fmt"
	"testing"
)

func BenchmarkQuadKernel(b *testing.B) {
	for _, D := range []int{256, 784} {
		d := 9
		x, mu, ip, a, r := make([]float64, D), make([]float64, D), make([]float64, D), make([]float64, D*d), make([]float64, D)
		for i := range ip {
			ip[i] = 1
			x[i] = float64(i % 7)
		}
		for i := range a {
			a[i] = float64(i%5) * 0.01
		}
		b.Run(fmt.Sprintf("vector_D%d", D), func(b *testing.B) {
			for b.Loop() {
				quad(x, mu, ip, a, d, r)
			}
		})
		b.Run(fmt.Sprintf("scalar_D%d", D), func(b *testing.B) {
			for b.Loop() {
				quadScalar(x, mu, ip, a, d, r)
			}
		})
	}
}
